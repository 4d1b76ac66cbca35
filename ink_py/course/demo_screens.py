"""One step of ``ink-py demo`` as terminal text: the panels, then the code that ran.

``render_step`` gives a step whole (a pipe, ``--no-pause``) or, with ``height``, as one
screen: ``fit_screen`` gives the panels their headings and first lines, the code the rows
left, and cuts every line to the terminal's width. The code is the real source of the
functions that ran (``inspect``), ▶ on the lines that ran, with their real numbers.

- the screen: ``Style``, ``render_step``, ``panel_blocks``, ``fit_screen``, ``compact_code``;
- the code: ``code_text``, ``source_window``, ``numbered``, ``source_label``, ``cut``.

    >>> cut("▶   90 │ for sse in abort_safe(parse_sse(body), signal):", 24)
    '▶   90 │ for sse in abo…'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..terminal import terminal_safe
from .demo_dialects import assembler, loop_head, traced_functions
from .demo_panels import display_width, event_line, loop_text, received_text, state_text
from .demo_steps import Step
from .stubs import CLOSE, OPEN

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen

# ── one step, one screen ─────────────────────────────────────────────────────────────


class Style:
    """ANSI styles when colour is on; every method is the identity otherwise."""

    def __init__(self, color: bool, width: int | None = None) -> None:
        self.color = color
        self.width = width  # cut code lines to the terminal's width; None: never cut

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def ran(self, text: str) -> str:
        return self._wrap("1;7", text)  # reverse video: the article's highlight band


def render_step(
    step: Step,
    number: int,
    total: int,
    style: Style,
    context: int = 0,
    height: int | None = None,
    previous: Step | None = None,
) -> str:
    """Everything step ``number`` shows, as lines of text; with ``height``, cut to fit that many rows
    (then the code this step's event made run comes first: not the main loop's head, which every
    event runs, nor the lines ``previous`` ran)."""
    title = style.bold(f"━━ 步骤 {number} / {total}  {step['title']}")
    blocks = panel_blocks(step, style)
    traced = traced_functions(assembler(step["api"]), every=True)  # whatever ran is found by name
    code = code_text(step["lines"], style, context, traced)
    heading = style.bold("执行的代码") + style.dim(f"(▶ 本步执行过的行,来自{running_package(step['api'])})")
    if height is None:
        panels = [line for name, lines in blocks for line in ("", name, *lines)]
        return "\n".join([title, *panels, "", heading, *code])
    before = previous["lines"] if previous is not None else {}
    return "\n".join(fit_screen(title, blocks, heading, code, height, style, step["lines"], before, traced))


def running_package(api: str) -> str:
    """Whose code runs, as the heading says it: 运行中的 ink_py, or the student's copy (你的副本 my_ink)."""
    package = assembler(api).__module__.partition(".")[0]
    return "运行中的 ink_py" if package == "ink_py" else f"你的副本 {package}"


def panel_blocks(step: Step, style: Style) -> list[tuple[str, list[str]]]:
    """The article's panels, (heading, lines): what arrived, what the access layer holds, what went on."""
    blocks = [
        (style.bold("本次收到"), indent(received_text(step))),
        (style.bold("接入层暂存") + style.dim("(assemble_stream 的局部变量)"), indent(state_text(step))),
    ]
    shown = [e for e in step["emitted"] if e["type"] != "message_end"]
    if shown:
        blocks.append((style.bold("交给显示层"), indent([event_line(e) for e in shown])))
    blocks.append((style.bold("交给 Agent 循环"), indent(loop_text(step))))
    # json.dumps leaves C1 controls (U+0080–U+009F) raw: every panel line is made terminal-safe too.
    return [(heading, [terminal_safe(line) for line in lines]) for heading, lines in blocks]


def fit_screen(
    title: str,
    blocks: list[tuple[str, list[str]]],
    heading: str,
    code: list[str],
    height: int,
    style: Style,
    ran: dict[str, list[int]],
    before: dict[str, list[int]],
    traced: Sequence[Callable[..., Any]],
) -> list[str]:
    """One screen of ``height`` rows: the panels first, each with its heading and first lines; the
    code gets the rows left (at least a few), the lines that ran before their comments and context.

    Every line is cut to the terminal's width: a wrapped line would take two rows.
    """
    code_rows = min(len(code), max(3, height // 4))  # the code window's least share
    room = height - 1 - 1 - code_rows  # the title, the code's heading
    needs = [1 + len(lines) for _, lines in blocks]  # heading + lines
    spaced = sum(needs) + len(blocks) + 1 <= room  # blank lines between panels, if they fit
    room -= len(blocks) + 1 if spaced else 0
    # Each panel gets its heading and one line; what is left goes to the panels in order of need:
    # what reached the loop, then the access layer's state, then what arrived, then the display.
    given = [min(need, 3) for need in needs]
    order = sorted(range(len(blocks)), key=lambda i: (i != len(blocks) - 1, i != 1, i))
    while sum(given) < room and any(given[i] < needs[i] for i in order):
        for i in order:  # one row at a time, round the panels: a long one never starves the rest
            if given[i] < needs[i] and sum(given) < room:
                given[i] += 1
    out = [cut(title, style.width)]
    for (name, lines), rows in zip(blocks, given, strict=True):
        shown = lines[: rows - 1]
        if len(shown) < len(lines):
            shown = [*shown[:-1], style.dim(f"  …(还有 {len(lines) - len(shown) + 1} 行)")]
        out += ([""] if spaced else []) + [cut(name, style.width), *[cut(line, style.width) for line in shown]]
    out += [""] if spaced else []
    budget = max(1, height - len(out) - 1)
    if len(code) > budget:
        code = compact_code(ran, before, style, budget, traced)
    return [*out, cut(heading, style.width), *code]


def compact_code(
    ran: dict[str, list[int]],
    before: dict[str, list[int]],
    style: Style,
    budget: int,
    traced: Sequence[Callable[..., Any]],
) -> list[str]:
    """At most ``budget`` rows of the code that ran: first the lines this step's event made run —
    neither the main loop's head (``loop_head``: every event runs it) nor those the previous step
    ran — then the others (the article's widget highlights what the step's event did)."""
    functions = {f.__name__: f for f in traced}
    head = loop_head(traced[0])  # the assembler's

    def news(item: tuple[str, int]) -> tuple[bool, bool]:
        name, number = item
        return name == traced[0].__name__ and number in head, number in before.get(name, [])

    everything = [(name, n) for name, numbers in ran.items() for n in numbers]
    chosen: set[tuple[str, int]] = set()
    for item in sorted(everything, key=news):  # stable: within each kind, in source order
        rows = len(chosen) + 1 + len({name for name, _ in chosen | {item}}) + 1  # + labels + the "more" line
        if rows > budget:
            break
        chosen.add(item)
    out: list[str] = []
    for name, numbers in ran.items():
        mine = {n for n in numbers if (name, n) in chosen}
        if not mine:
            continue
        source, first = inspect.getsourcelines(functions[name])
        out.append(style.dim(f"  {source_label(functions[name])} · {name}()"))
        out += [numbered(source, first, n, mine, style) for n in sorted(mine)]
    hidden = sum(len(numbers) for numbers in ran.values()) - len(chosen)
    if hidden:
        out.append(style.dim(f"  …(另有 {hidden} 行也执行了;终端再高一些就能看到)"))
    return out


def indent(lines: list[str], by: str = "  ") -> list[str]:
    return [by + line for line in "\n".join(lines).split("\n")]


# ── the code that ran ────────────────────────────────────────────────────────────────


def code_text(
    lines_by_function: dict[str, list[int]], style: Style, context: int, traced: Sequence[Callable[..., Any]]
) -> list[str]:
    """The functions that ran, in the order they first ran, each a window of its real source."""
    functions = {f.__name__: f for f in traced}
    out: list[str] = []
    for name, numbers in lines_by_function.items():
        out.append(style.dim(f"  {source_label(functions[name])} · {name}()"))
        out += source_window(functions[name], set(numbers), style, context)
    return out or ["  (本步没有执行被跟踪的代码)"]


def source_window(function: Callable[..., Any], ran: set[int], style: Style, context: int) -> list[str]:
    """``function``'s source lines that ran (▶) with their real numbers; long gaps become ⋮."""
    source, first = inspect.getsourcelines(function)  # the very code that ran, not a copy
    last = first + len(source) - 1
    show = {n for line in ran for n in range(line - context, line + context + 1) if first <= n <= last}
    for line in ran:  # and the comments right above an executed line: ①②③④ and the why
        above = line - 1
        while above > first and source[above - first].strip().startswith("#"):
            show.add(above)
            above -= 1
    marker = {n for n in range(first, last + 1) if is_marker(source[n - first])}  # course scaffolding
    out: list[str] = []
    previous = None
    for n in sorted(show - marker):
        if previous is not None and n - previous == 2 and previous + 1 in marker:
            pass  # only an exercise marker lies between: not the article's code, not worth a ⋮
        elif previous is not None and n - previous == 2:  # one hidden line: show it, it costs no more than ⋮
            out.append(numbered(source, first, previous + 1, ran, style))
        elif previous is not None and n - previous > 2:
            out.append(style.dim("        ⋮"))
        out.append(numbered(source, first, n, ran, style))
        previous = n
    return out


def is_marker(line: str) -> bool:
    """An exercise marker line (``# exercise N ▼ …`` / ``# exercise N ▲``): never shown as code."""
    return bool(OPEN.match(line.rstrip("\n")) or CLOSE.match(line.rstrip("\n")))


def numbered(source: list[str], first: int, n: int, ran: set[int], style: Style) -> str:
    text = source[n - first].rstrip("\n")
    if n in ran:
        return style.ran(cut(f"▶ {n:>4} │ {text}", style.width))
    return style.dim(cut(f"  {n:>4} │ {text}", style.width))


def source_label(function: Callable[..., Any]) -> str:
    path = Path(inspect.getsourcefile(function) or "?").resolve()
    package_root = Path(__file__).resolve().parents[2]  # the checkout: labels read ink_py/…
    return str(path.relative_to(package_root)) if path.is_relative_to(package_root) else str(path)


def cut(line: str, width: int | None) -> str:
    if width is None or display_width(line) <= width:
        return line
    while display_width(line) > width - 1:
        line = line[:-1]
    return line + "…"
