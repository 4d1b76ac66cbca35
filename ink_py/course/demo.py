"""``ink-py demo``: the article's §3 step-through ("从参数片段到完整回复"), in the terminal or a page.

The article's page has a 下一步 button: each press delivers one SSE event, and the page
shows what arrived, what the access layer holds, whether anything has gone to the Agent
loop, and which lines of code ran. This command does the same with the *real* code
(``demo_steps`` records the steps, ``demo_screens`` draws them, ``demo_web`` serves them)::

    ink-py demo                 the "读取 README" scenario, one step per key (q quits)
    ink-py demo interleaved     any name from ``ink-py demo --list``
    ink-py demo --file DIR/001-response.sse     a body saved by ``ink-py --record DIR``
    ink-py demo --api anthropic-messages       the same story in another wire dialect (or openai-responses)
    ink-py demo --no-pause | less               every step at once (also when stdin is no terminal)
    ink-py demo --web                           the page, on 127.0.0.1
    ink-py demo --all-lines                     the guards and helpers the article's widget leaves out, too

- the page: ``step_view``, ``code_view``, ``web_pages`` (the steps as JSON for ``--web``);
- the command: ``build_parser``, ``main``, ``web_recordings``, ``present``.

    >>> build_parser().parse_args(["interleaved", "--api", "openai-responses", "--no-pause"]).api
    'openai-responses'
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from ..arguments import CliParser, port_number
from ..runner import EXIT_COMPLETED, EXIT_ERROR, EXIT_INTERRUPTED
from ..scripted.scenarios import SCENARIOS, fixture_path, fixtures_dir
from ..terminal import wants_colour
from .demo_dialects import DIALECTS, assembler, traced_functions
from .demo_panels import display_width, event_line, loop_text, received_text, state_text
from .demo_screens import CLEAR, Style, cut, is_marker, render_step, source_label
from .demo_steps import Step, record_steps, split_frames
from .keypress import read_key, wants_to_quit

ABORT_SCENARIOS = {"abort"}  # these fixtures end where the user presses Ctrl-C


# ── the page: the same steps as JSON for ``--web`` (served by demo_web.py) ────────────


def step_view(step: Step) -> dict[str, Any]:
    """What the page shows for one step: the panels as lines of text, the lines that ran."""
    return {
        "title": step["title"],
        "received": received_text(step),
        "state": state_text(step),
        "display": [event_line(e) for e in step["emitted"] if e["type"] != "message_end"],
        "loop": loop_text(step),
        "outcome": step["outcome"],
        "lines": step["lines"],
    }


def code_view(api: str = "openai-completions", every: bool = False) -> dict[str, Any]:
    """Each function traced for ``api``: its real source, file, first line number (markers blanked)."""
    code = {}
    for function in traced_functions(assembler(api), every):
        source, first = inspect.getsourcelines(function)
        lines = [line.rstrip("\n") for line in source]
        code[function.__name__] = {
            "file": source_label(function),
            "first": first,
            "lines": lines,
            "hidden": [first + i for i, line in enumerate(lines) if is_marker(line)],  # course scaffolding
        }
    return code


def web_pages(
    recordings: list[tuple[str, str, bytes, int | None]], api: str = "openai-completions", every: bool = False
) -> dict[str, dict[str, Any]]:
    """name → {label, steps} for each (name, label, body, abort_after): what ``--web`` serves.

    >>> page = web_pages([("readme", "读取 README", fixture_path("article/readme.sse").read_bytes(), None)])
    >>> [step["title"] for step in page["readme"]["steps"]][:2]
    ['等待第一条事件', '保存文本,先交给显示层']
    """
    pages = {}
    for name, label, body, abort_after in recordings:
        steps = record_steps(split_frames(body), abort_after, api, every)
        pages[name] = {"label": label, "steps": [step_view(step) for step in steps]}
    return pages


# ── the command ──────────────────────────────────────────────────────────────────────


def build_parser() -> CliParser:
    parser = CliParser(
        prog="ink-py demo",
        description="Step through the article's §3 demo: one SSE event per step, fed to the real assemble_stream.",
        epilog="Any key: next step · q: quit. Without a terminal on stdin, every step is printed at once.",
    )
    parser.add_argument("scenario", nargs="?", help="a scenario from --list (default: readme)")
    parser.add_argument("--list", action="store_true", help="print the scenario names, one per line, and exit")
    parser.add_argument(
        "--file",
        metavar="PATH",
        action="append",
        help="step through a recorded body, e.g. DIR/001-response.sse (with --web: as often as you like)",
    )
    parser.add_argument("--web", action="store_true", help="serve the step-through as a page on 127.0.0.1")
    parser.add_argument("--port", type=port_number, default=8770, help="--web: the port (default 8770; 0: any)")
    parser.add_argument(
        "--api",
        default=os.environ.get("INK_API", "openai-completions"),
        metavar="|".join(DIALECTS),
        help="the wire dialect of the body (env INK_API; default openai-completions)",
    )
    parser.add_argument("--no-pause", action="store_true", help="print every step without waiting for a key")
    parser.add_argument(
        "--all-lines",
        action="store_true",
        help="also the code the article's widget leaves out: parse_sse, the guards (guarded, check_chunk …), usage",
    )
    parser.add_argument(
        "--context", type=int, default=0, metavar="N", help="extra source lines around each executed line (default 0)"
    )
    return parser


def list_scenarios() -> list[str]:
    """``--list``: the name first, so ``cut -d' ' -f1`` gives the names.

    >>> print(list_scenarios()[2])
    missing-finish  缺少结束原因                §4.1  the body ends without finish_reason: an error, never a message
    """
    rows = []
    for name, scenario in SCENARIOS.items():
        title = scenario["title"] + " " * max(0, 26 - display_width(scenario["title"]))
        rows.append(f"{name:<15} {title}  {scenario['section']:<5} {scenario['summary']}")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        print("\n".join(list_scenarios()))
        return EXIT_COMPLETED
    if args.web:
        return web(args)
    if args.file and args.scenario:
        return fail("give a scenario or --file, not both")
    if args.file and len(args.file) > 1:
        return fail("one --file at a time in the terminal (the page of --web takes several)")
    if args.context < 0:
        return fail("--context must be 0 or more")
    if args.api not in DIALECTS:
        return fail(f"--api {args.api}: choose one of {', '.join(DIALECTS)} (or fix INK_API)")
    if args.file:
        try:
            data = read_recording(args.file[0])
        except OSError as err:
            return fail(f"--file {args.file[0]}: {err.strerror or err}")
        label, abort_after = args.file[0], None
    else:
        name = args.scenario or "readme"
        if name not in SCENARIOS:
            return fail(f"unknown scenario {name!r} (choose from: {', '.join(SCENARIOS)})")
        try:
            path = fixture_path(SCENARIOS[name]["fixture"].replace("article/", DIALECTS[args.api]["folder"] + "/"))
            data = path.read_bytes()
        except OSError as err:  # an install without its fixtures
            return fail(str(err))
        label = f"{SCENARIOS[name]['title']}({SCENARIOS[name]['section']})· {shown_path(path)}"
        label += f" · {DIALECTS[args.api]['notes'][name]}" if name in DIALECTS[args.api]["notes"] else ""
        abort_after = len(split_frames(data)) if name in ABORT_SCENARIOS else None  # abort after the last frame
    try:
        return present(record_steps(split_frames(data), abort_after, args.api, args.all_lines), label, args)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `ink-py demo --no-pause | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush stays quiet
        return EXIT_COMPLETED


MAX_RECORDING = 8 << 20  # bytes: a recorded body is untrusted, and every step of it is kept


def read_recording(path: str) -> bytes:
    with open(path, "rb") as file:
        data = file.read(MAX_RECORDING + 1)
    if len(data) > MAX_RECORDING:
        raise OSError(f"larger than {MAX_RECORDING >> 20} MiB; the demo steps through one reply")
    return data


def web(args: argparse.Namespace) -> int:
    """``--web``: record every scenario (and each ``--file``) now, then serve the page until Ctrl-C."""
    from .demo_web import serve

    try:
        pages = web_recordings(args)
    except OSError as err:
        return fail(str(err))
    return serve(pages, code_view(args.api, args.all_lines), args.port)


def web_recordings(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The page's recordings: each ``--file``, then the scenarios (the one named, if any, first)."""
    recordings: list[tuple[str, str, bytes, int | None]] = []
    for number, path in enumerate(args.file or [], 1):
        try:
            recordings.append((f"file-{number}", f"--file {path}", read_recording(path), None))
        except OSError as err:
            raise OSError(f"--file {path}: {err.strerror or err}") from None
    first = args.scenario or "readme"
    if first not in SCENARIOS:
        raise OSError(f"unknown scenario {first!r} (choose from: {', '.join(SCENARIOS)})")
    if args.api not in DIALECTS:
        raise OSError(f"--api {args.api}: choose one of {', '.join(DIALECTS)} (or fix INK_API)")
    for name in sorted(SCENARIOS, key=lambda n: n != first):
        scenario = SCENARIOS[name]
        data = fixture_path(scenario["fixture"].replace("article/", DIALECTS[args.api]["folder"] + "/")).read_bytes()
        abort_after = len(split_frames(data)) if name in ABORT_SCENARIOS else None
        recordings.append((name, f"{name} · {scenario['title']}({scenario['section']})", data, abort_after))
    if args.scenario is not None:  # the page opens on the first: the scenario named, else a --file
        recordings.sort(key=lambda r: r[0] != first)
    return web_pages(recordings, args.api, args.all_lines)


def present(steps: list[Step], label: str, args: argparse.Namespace) -> int:
    """Print the steps, waiting for a key between them when a person is at the terminal.

    On a terminal each step is one screen: cleared first, then the panels, then as much
    of the code as fits. Anything else (a pipe, a file, ``--no-pause``) gets every step
    in full, one after another.
    """
    pause = not args.no_pause and sys.stdin is not None and sys.stdin.isatty()
    screen = pause and sys.stdout.isatty()
    color = wants_colour(sys.stdout)
    size = shutil.get_terminal_size()
    style = Style(color, size.columns if sys.stdout.isatty() else None)
    intro = [
        style.bold(f"ink-py demo · {label}"),
        "每一步把一条 SSE 事件交给真实的 assemble_stream,在它读下一条之前停下,看它的局部变量。",
    ]
    if not screen:
        print("\n".join(intro))
    for number, step in enumerate(steps, 1):
        if screen:
            print(CLEAR + cut(intro[0], style.width))  # the label stays on top of every screen
            previous = steps[number - 2] if number > 1 else None
            shown = render_step(step, number, len(steps), style, args.context, size.lines - 2, previous)
            print(shown, flush=True)
        else:
            print()
            print(render_step(step, number, len(steps), style, args.context), flush=True)
        if pause and number < len(steps):
            print(style.dim("[任意键 下一步 · q 退出] "), end="", file=sys.stderr, flush=True)
            key = read_key(sys.stdin)  # one key, no Enter: the terminal is restored however it ends
            print(file=sys.stderr)
            if wants_to_quit(key):
                return EXIT_COMPLETED
    return EXIT_COMPLETED


def shown_path(path: Path) -> str:
    root = fixtures_dir().parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
