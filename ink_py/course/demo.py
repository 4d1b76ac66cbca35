"""``ink-py demo``: the article's §3 step-through ("从参数片段到完整回复"), in the terminal.

The article's page has a 下一步 button: each press delivers one SSE event, and the
page shows what arrived, what the access layer holds, whether anything has gone to
the Agent loop, and which lines of code ran. This module does the same with the
*real* code: it feeds ``assemble_stream`` a body that hands out one SSE frame per
read and, each time the assembler asks for the next read — the moment everything
the previous frame caused has happened — it looks inside the running generator::

    ink-py demo                 the "读取 README" scenario, one step per Enter (q quits)
    ink-py demo interleaved     any name from ``ink-py demo --list``
    ink-py demo --file DIR/001-response.sse     a body saved by ``ink-py --record DIR``
    ink-py demo --api anthropic-messages       the same story in another wire dialect (or openai-responses)
    ink-py demo --no-pause | less               every step at once (also when stdin is no terminal)

How one step is taken (``record_steps``):

- the body is a generator: before handing out frame k it closes step k (step 1 is
  "等待第一条事件"); the last step is taken when the assembler yields
  ``message_end``, raises, or returns;
- *what the access layer holds* is ``f_locals`` of the running ``assemble_stream``
  generator's frame (``text_parts``, ``tool_by_index``, ``tool_raw_by_index``,
  ``saw_finish``, ``stop_reason`` …), deep-copied: nothing is recomputed here;
- *which lines ran* is recorded while it runs, for ``assemble_stream`` and the helpers
  that matter only (``sys.monitoring`` on Python 3.12+, else ``sys.settrace`` chained to
  any tracer already there), and the code shown is ``inspect.getsourcelines`` of those
  very functions, with their real line numbers;
- for ``abort`` the body aborts the AbortController after its frames and raises
  ``ConnectionResetError``, as a socket shut by the abort would; ``abort_safe``
  swallows it (§4.2).

Everything runs on the main thread, so a breakpoint in ``assemble_stream`` stops
while the steps are recorded (before the first one is printed). Under debugpy on
Python 3.11 and older, pydevd warns once that ``sys.settrace`` was called; its
breakpoints keep working.

Worked example::

    >>> steps = record_steps(split_frames(fixture_path("article/readme.sse").read_bytes()))
    >>> [step["title"] for step in steps]   # doctest: +NORMALIZE_WHITESPACE
    ['等待第一条事件', '保存文本,先交给显示层', '建立 index 0 的工具请求',
     '继续拼接 index 0 的工具请求', '记下结束原因,继续读到流结束', '解析参数,交出完整回复']
    >>> "".join(steps[3]["state"]["tool_raw_by_index"][0]), steps[3]["outcome"]
    ('{"path":"README.md"}', 'pending')

What differs from the article's page: the code is Python's (the page shows a trimmed
TypeScript copy), ``[DONE]`` or a keep-alive frame gets a step of its own, and a frame
that ends the stream (``[DONE]``, a server error) shares its step with the end.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, TypedDict

from ..arguments import CliParser, port_number
from ..core.abort import AbortController
from ..provider import anthropic_messages, base, openai_completions, openai_responses, shared
from ..provider.shared import DONE
from ..runner import EXIT_COMPLETED, EXIT_ERROR, EXIT_INTERRUPTED
from ..scripted.scenarios import SCENARIOS, fixture_path, fixtures_dir
from ..terminal import terminal_safe, wants_colour
from .stubs import CLOSE, OPEN

# The functions whose lines a step shows: the article's core loop and the helpers it calls.
TRACED: list[Callable[..., Any]] = [
    openai_completions.assemble_stream,
    shared.abort_safe,  # shows its lines when an abort (or a read error) ends the stream
    openai_completions.map_finish_reason,
    base.finish_tool_arguments,
    shared.safe_parse_json,
    openai_completions.merge_usage,
    base.finished_message,  # the fallbacks of the last step
]
# assemble_stream's locals a step keeps (the access layer's state, §2).
STATE_NAMES = (
    "text_parts",
    "thinking_parts",
    "tool_by_index",
    "tool_raw_by_index",
    "saw_finish",
    "saw_done",
    "stop_reason",
    "usage",
    "blocks",
    "sse",
)
ABORT_SCENARIOS = {"abort"}  # these fixtures end where the user presses Ctrl-C


class Dialect(TypedDict):
    """What ``--api`` changes: whose assemble_stream runs, which lines and locals a step shows."""

    module: Any  # the provider module: its assemble_stream runs
    folder: str  # fixtures/<folder>/ holds its copy of the article's scenarios
    traced: list[Callable[..., Any]]
    state: tuple[str, ...]


_BLOCK_STATE = ("parts_by_index", "block_by_index", "stop_reason", "usage", "blocks", "sse")
DIALECTS: dict[str, Dialect] = {
    "openai-completions": {"module": openai_completions, "folder": "article", "traced": TRACED, "state": STATE_NAMES},
    "anthropic-messages": {
        "module": anthropic_messages,
        "folder": "anthropic",
        "traced": [
            anthropic_messages.assemble_stream,
            shared.abort_safe,
            anthropic_messages.open_block,
            anthropic_messages.finish_block,
            base.finish_tool_arguments,
            shared.safe_parse_json,
            anthropic_messages.map_stop_reason,
            anthropic_messages.merge_usage,
            base.finished_message,
        ],
        "state": ("finished", "saw_stop", *_BLOCK_STATE),
    },
    "openai-responses": {
        "module": openai_responses,
        "folder": "responses",
        "traced": [
            openai_responses.assemble_stream,
            shared.abort_safe,
            openai_responses.open_item,
            base.finish_tool_arguments,
            shared.safe_parse_json,
            openai_responses.map_status,
            openai_responses.merge_usage,
            base.finished_message,
        ],
        "state": ("index_by_item", "saw_end", *_BLOCK_STATE),
    },
}
END_FLAGS = ("saw_finish", "saw_done", "saw_stop", "saw_end")  # the locals that say the end marker came


class Step(TypedDict):
    title: str
    received: str  # "nothing" (step 1), "event", "frame" (a frame with no event), "end" or "abort"
    event: dict[str, Any] | None  # the SseEvent in assemble_stream's `sse` this step, copied
    frame: str  # this step's raw frame, as text ("" if none)
    state: dict[str, Any]  # STATE_NAMES from assemble_stream's frame, deep-copied
    emitted: list[dict[str, Any]]  # the LLMEvents assemble_stream yielded during the step
    outcome: str  # "pending" (more to come), "message_end", "error", "aborted" or "ended" (none of those)
    error: str | None
    lines: dict[str, list[int]]  # function name → line numbers that ran during the step
    api: str  # the dialect whose assemble_stream ran (DIALECTS)


# ── feeding the assembler one frame per read ─────────────────────────────────────────


def split_frames(body: bytes) -> list[bytes]:
    """Cut a raw SSE body into frames, each keeping the blank line that ends it.

    >>> split_frames(b'data: 1\\n\\n: ping\\r\\n\\r\\ndata: [DONE]')
    [b'data: 1\\n\\n', b': ping\\r\\n\\r\\n', b'data: [DONE]']
    """
    line_end = rb"(?:\r\n|\r(?!\n)|\n)"
    frames, start = [], 0
    for match in re.finditer(line_end + line_end, body):
        frames.append(body[start : match.end()])
        start = match.end()
    if body[start:].strip():
        frames.append(body[start:])  # the body ended inside an event
    return frames


def record_steps(frames: list[bytes], abort_after: int | None = None, api: str = "openai-completions") -> list[Step]:
    """Run the real ``assemble_stream`` of ``api``'s dialect over ``frames``; keep one Step per SSE frame.

    With ``abort_after=N`` the user aborts once N frames have been read.
    """
    dialect = DIALECTS[api]
    controller = AbortController()
    steps: list[Step] = []
    emitted: list[dict[str, Any]] = []  # yielded since the last step
    sent: list[bytes] = []  # the frame handed out since the last step, if any
    last_sse: list[Any] = [None]  # the `sse` object seen at the last step (identity tells "new event")

    def close_step(received: str, outcome: str = "pending", error: str | None = None) -> None:
        f_locals = frame.f_locals  # the live frame of the assembler (or, once it ended, its last state)
        state = {name: copy.deepcopy(f_locals[name]) for name in dialect["state"] if name in f_locals}
        sse = f_locals.get("sse")
        raw = sent.pop().decode("utf-8", "replace") if sent else ""
        if sse is not None and sse is not last_sse[0]:
            received = "event"  # a new event reached assemble_stream's `sse` during this step
        elif raw:
            received = "frame"  # bytes arrived, but no event came of them (yet)
        last_sse[0] = sse
        step: Step = {
            "title": "",
            "received": received,
            "event": state.get("sse") if received == "event" else None,
            "frame": raw,
            "state": state,
            "emitted": emitted.copy(),
            "outcome": outcome,
            "error": error,
            "lines": {name: sorted(numbers) for name, numbers in lines.items()},
            "api": api,
        }
        step["title"] = step_title(step, first=not steps)
        steps.append(step)
        emitted.clear()
        lines.clear()

    def body() -> Iterator[bytes]:
        for count, data in enumerate(frames):
            if abort_after is not None and count >= abort_after:
                break
            # The assembler asks for the next read: the previous frame is fully handled.
            close_step("nothing")
            sent.append(data)
            yield data
        close_step("nothing")
        if abort_after is not None:
            controller.abort()  # the user's Ctrl-C …
            raise ConnectionResetError("the connection was closed by the abort")  # … shuts the socket

    assembler = dialect["module"].assemble_stream(body(), controller.signal)
    frame = assembler.gi_frame  # held: its locals stay readable after the generator ends
    final = "abort" if abort_after is not None else "end"
    with lines_that_run(dialect["traced"]) as lines:
        try:
            for event in assembler:
                emitted.append(copy.deepcopy(event))
                if event["type"] == "message_end":  # the generator is paused at this yield
                    close_step(final, "message_end")
                    assembler.close()
                    return steps
        except Exception as err:  # what the real code raised is part of the demo
            close_step(final, "error", f"{type(err).__name__}: {err}")
            return steps
        close_step(final, "aborted" if controller.signal.aborted else "ended")
    return steps


@contextmanager
def lines_that_run(functions: list[Callable[..., Any]]) -> Iterator[dict[str, set[int]]]:
    """While active, the yielded dict collects function name → numbers of its lines that ran.

    Python 3.12+: ``sys.monitoring`` LINE events on just these code objects, in a tool
    slot of our own, so a debugger (debugpy uses the debugger slot there, and refuses
    ``sys.settrace``) is untouched. Older Pythons: ``sys.settrace``, chained to any tracer
    already installed (pdb, an IDE), which keeps working; restored on exit.
    """
    names: dict[CodeType, str] = {f.__code__: f.__name__ for f in functions}
    lines: dict[str, set[int]] = {}  # insertion order: the order the functions first ran

    def record(code: CodeType, number: int) -> None:
        lines.setdefault(names[code], set()).add(number)

    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tool = next((t for t in (3, 4, monitoring.PROFILER_ID) if monitoring.get_tool(t) is None), None)
        if tool is None:
            yield lines  # every slot is taken: steps show no code, all else works
            return
        monitoring.use_tool_id(tool, "ink-py demo")
        monitoring.register_callback(tool, monitoring.events.LINE, record)
        for code in names:
            monitoring.set_local_events(tool, code, monitoring.events.LINE)
        try:
            yield lines
        finally:
            for code in names:
                monitoring.set_local_events(tool, code, 0)
            monitoring.register_callback(tool, monitoring.events.LINE, None)
            monitoring.free_tool_id(tool)
        return

    previous = sys.gettrace()

    def on_line(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            record(frame.f_code, frame.f_lineno)
        return on_line

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        theirs = previous(frame, event, arg) if previous is not None else None
        if frame.f_code not in names:
            return theirs
        return on_line if theirs is None else chain(theirs, on_line)

    sys.settrace(on_call)
    try:
        yield lines
    finally:
        sys.settrace(previous)


def chain(theirs: Any, mine: Callable[..., Any]) -> Callable[..., Any]:
    """One local trace function calling two: a debugger's, then ours."""

    def both(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal theirs
        if theirs is not None:
            theirs = theirs(frame, event, arg)
        mine(frame, event, arg)
        return both

    return both


# ── what a step is called ────────────────────────────────────────────────────────────


def step_title(step: Step, first: bool = False) -> str:
    """The step's headline, from what happened in it (the article's wording)."""
    state, outcome = step["state"], step["outcome"]
    if first and step["received"] == "nothing":
        return "等待第一条事件"
    if outcome == "error":
        no_finish = not any(state.get(flag) for flag in END_FLAGS)
        return "缺少结束原因,拒绝交付" if no_finish and step["received"] not in ("event", "frame") else "出错,拒绝交付"
    parts: list[str] = []
    if step["received"] == "event":
        parts += event_title_parts(step)
    elif step["received"] == "frame":
        parts.append("收到半个事件,先留在 buffer 里" if not complete(step["frame"]) else "收到注释或保活,没有事件")
    calls = any(block["type"] == "toolCall" for block in state.get("blocks") or [])
    ending = {
        "message_end": "解析参数,交出完整回复" if calls else "拼好文本,交出完整回复",
        "aborted": "用户中断,结束接收",
        "ended": "流结束,没有交出回复",
    }.get(outcome)
    if ending:
        parts.append(ending)
    return ";".join(parts) or "没有新内容"


def complete(frame: str) -> bool:
    """Does the frame end with the blank line that closes an SSE event?"""
    return frame.replace("\r\n", "\n").replace("\r", "\n").endswith("\n\n")


def event_title_parts(step: Step) -> list[str]:
    data = (step["event"] or {}).get("data")
    if data == DONE:
        return ["收到结束标记 [DONE]"]
    by_index = step["state"].get("tool_by_index") or step["state"].get("block_by_index") or {}
    index_of = {block["id"]: index for index, block in by_index.items() if block["type"] == "toolCall"}
    parts: list[str] = []
    for event in step["emitted"]:
        index = index_of.get(event.get("id"), "?")
        part = {
            "text_delta": "保存文本,先交给显示层",
            "thinking_delta": "保存思考内容,交给显示层",
            "tool_call_start": f"建立 index {index} 的工具请求",
            "tool_call_delta": f"继续拼接 index {index} 的工具请求",
        }.get(event["type"])
        if event["type"] == "tool_call_delta" and f"建立 index {index} 的工具请求" in parts:
            continue  # the first fragment came with the call itself
        if part is not None and part not in parts:
            parts.append(part)
    data = data if isinstance(data, dict) else {}
    kind = data.get("type") or (step["event"] or {}).get("event")  # the other dialects name their events
    choices = data.get("choices")
    if choices and isinstance(choices[0], dict) and choices[0].get("finish_reason") is not None:
        parts.append("记下结束原因,继续读到流结束")
    elif kind == "message_delta" and (data.get("delta") or {}).get("stop_reason"):
        parts.append("记下结束原因,继续读到 message_stop")
    elif kind in ("message_stop", "response.completed", "response.incomplete"):
        parts.append(f"收到结束事件 {kind}")
    elif kind == "content_block_stop":
        what = "解析它的参数" if data.get("index") in index_of.values() else "拼好它的文本"
        parts.append(f"index {data.get('index')} 的块结束,{what}")
    elif not parts and kind == "content_block_start":
        parts.append(f"打开 index {data.get('index')} 的 {(data.get('content_block') or {}).get('type')} 块")
    elif not parts and kind == "response.output_item.added":
        parts.append(f"打开 output_index {data.get('output_index')} 的 {(data.get('item') or {}).get('type')} 项")
    elif kind == "response.function_call_arguments.done":
        parts.append("收到整串参数(.done),以它为准")
    elif not parts and kind in ("message_start", "response.created"):
        parts.append("回复开始" + (",记下用量" if (data.get("message") or {}).get("usage") else ""))
    elif not parts and kind == "ping":
        parts.append("收到 ping,没有新内容")
    elif not parts and data.get("usage"):
        parts.append("记下用量")
    return parts or ["收到事件,没有新内容"]


# ── one step, as text ────────────────────────────────────────────────────────────────


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
    (then the code that ran in this step and not in ``previous`` comes first)."""
    title = style.bold(f"━━ 步骤 {number} / {total}  {step['title']}")
    blocks = panel_blocks(step, style)
    traced = DIALECTS[step["api"]]["traced"]
    code = code_text(step["lines"], style, context, traced)
    heading = style.bold("执行的代码") + style.dim("(▶ 本步执行过的行,来自运行中的 ink_py)")
    if height is None:
        panels = [line for name, lines in blocks for line in ("", name, *lines)]
        return "\n".join([title, *panels, "", heading, *code])
    before = previous["lines"] if previous is not None else {}
    return "\n".join(fit_screen(title, blocks, heading, code, height, style, step["lines"], before, traced))


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
    traced: list[Callable[..., Any]] = TRACED,
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
    traced: list[Callable[..., Any]] = TRACED,
) -> list[str]:
    """At most ``budget`` rows of the code that ran: first the lines the previous step did not run
    (the loop's head runs every step; what this event caused is the news), then the others."""
    functions = {f.__name__: f for f in traced}
    fresh = [(name, n) for name, numbers in ran.items() for n in numbers if n not in set(before.get(name, []))]
    rest = [(name, n) for name, numbers in ran.items() for n in numbers if n in set(before.get(name, []))]
    chosen: set[tuple[str, int]] = set()
    for item in fresh + rest:
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


def received_text(step: Step) -> list[str]:
    kind = step["received"]
    if kind == "nothing":
        return ["尚未收到事件(HTTP 请求已成功;从完整的 SSE 事件开始,不模拟网络字节拆分)"]
    if kind == "end":
        return ["响应流读取结束(body 没有更多字节)"]
    if kind == "abort":
        return ["AbortSignal: aborted = true", "(正在等待的读取因连接被关闭而抛出 ConnectionResetError)"]
    if kind == "frame":
        if not complete(step["frame"]):
            why = "还不是完整事件(没有结尾的空行):parse_sse 把它留在 buffer 里,等下一次读取"
        elif step["outcome"] == "error":
            why = "parse_frame 无法解析这一帧(见下方错误)"
        else:
            why = "parse_frame 没有产出事件(注释或保活)"
        return [repr(step["frame"]), why]
    event = step["event"] or {}
    name = "" if event.get("event") == "message" else f"event: {event.get('event')}\n"
    lines = [name + ("[DONE]" if event.get("data") == DONE else pretty_json(event.get("data")))]
    if not step["frame"]:  # no new bytes: the event was the unterminated rest of the buffer
        lines.append("(响应流读取结束;parse_sse 解析了 buffer 里剩下的、没有空行结尾的事件)")
    return lines


def state_text(step: Step) -> list[str]:
    state = step["state"]
    lines: list[str] = []
    for label, name in (("文本", "text_parts"), ("思考", "thinking_parts")):
        if state.get(name):
            lines.append(f"{name} = {fragments(state[name])}")
            if len(state[name]) > 1:
                lines.append(f"  {label}拼起来: {clip(''.join(state[name]))}")
    for index, block in (state.get("tool_by_index") or {}).items():
        raw = (state.get("tool_raw_by_index") or {}).get(index, [])
        lines.append(f"tool_by_index[{index}]: id {block['id']} · name {block['name']}")
        lines.append(f"  tool_raw_by_index[{index}] = {fragments(raw)}")
        if len(raw) > 1:
            lines.append(f"  参数拼起来: {clip(''.join(raw))}")
        if block["arguments"]:  # set at ④, after the stream ended
            lines.append(f"  arguments(④ 解析后)= {json.dumps(block['arguments'], ensure_ascii=False)}")
    for index, block in (state.get("block_by_index") or {}).items():  # the other dialects: one block per index
        raw = (state.get("parts_by_index") or {}).get(index, [])
        call = block["type"] == "toolCall"
        lines.append(f"block_by_index[{index}]: " + (f"toolCall id {block['id']} · name {block['name']}" if call
                     else block["type"]))  # fmt: skip
        lines.append(f"  parts_by_index[{index}] = {fragments(raw)}")
        if len(raw) > 1:
            lines.append(f"  拼起来: {clip(''.join(raw))}")
        if call and block["arguments"]:  # set at the block's end (Messages) or at ④
            lines.append(f"  arguments(解析后)= {json.dumps(block['arguments'], ensure_ascii=False)}")
    if state.get("index_by_item"):
        lines.append(f"index_by_item = {json.dumps(state['index_by_item'])}  (item_id → output_index)")
    if not lines:
        lines.append("尚无文本或工具参数")
    if state.get("blocks"):  # the reply's blocks in order; tool_by_index holds the same objects (§2.2)
        kinds = [f"toolCall {b['id']}" if b["type"] == "toolCall" else b["type"] for b in state["blocks"]]
        lines.append(f"blocks: {' · '.join(kinds)}")
    flag = next((name for name in END_FLAGS if name in state and name != "saw_done"), "saw_finish")
    ends = [f"{flag} = {state.get(flag)}", f"stop_reason = {state.get('stop_reason')!r}"]
    if state.get("saw_done"):
        ends.append("saw_done = True")
    lines.append(" · ".join(ends))
    usage = state.get("usage") or {}
    if any(usage.values()):
        lines.append(f"usage = {json.dumps(usage)}")
    return lines


def loop_text(step: Step) -> list[str]:
    if step["outcome"] == "pending":
        return ["尚未产出 message_end;片段不会作为完整消息写入 history。"]
    if step["outcome"] == "aborted":
        return ["不产出 message_end(已中断):abort_safe 把读取失败当作取消,回复不交给循环,循环随之停止。"]
    if step["outcome"] == "error":
        return [visible(f"{step['error']}"), "不产出 message_end;错误向上交给调用方,这条回复不写入 history。"]
    if step["outcome"] == "ended":
        return ["流结束了,却没有产出 message_end。"]
    message = next(e["message"] for e in step["emitted"] if e["type"] == "message_end")
    lines = ["message_end:", pretty_json(message)]
    calls = [b for b in message["blocks"] if b["type"] == "toolCall"]
    if message["stopReason"] == "max_tokens" and calls:
        lines.append("注意:stopReason = max_tokens,参数可能不完整:循环不执行其中任何调用,逐个回报错误(§4.4)。")
    elif message["stopReason"] == "max_tokens":
        lines.append("注意:stopReason = max_tokens,回答达到输出上限:循环结束时标记 truncated(§4.4)。")
    elif any("_parseError" in b["arguments"] for b in calls):
        lines.append("注意:参数解析失败(_parseError):循环的 prepare_tool_call 拒绝执行这个调用(§4.3)。")
    return lines


def event_line(event: dict[str, Any]) -> str:
    details = {k: v for k, v in event.items() if k != "type"}
    return f"{event['type']:<16} " + "  ".join(f"{k}={visible(str(v))}" for k, v in details.items())


def visible(text: str) -> str:
    """``text`` with control characters (ESC, CR, newlines …) written as escapes: a recording's bytes
    are untrusted, and must not move a terminal's cursor or colour it.

    >>> print(visible("红" + chr(27) + "[31m" + chr(10)))
    红\\x1b[31m\\n
    """
    return "".join(
        char if not unicodedata.category(char).startswith("C") or char == "\u200d" else repr(char)[1:-1]
        for char in text
    )


def fragments(parts: list[str], keep: int = 4) -> str:
    """A fragment list as Python shows it, shortened when long.

    >>> fragments(["a", "b", "c", "d", "e", "f"])
    "[… 2 段 …, 'c', 'd', 'e', 'f'](共 6 段)"
    """
    if len(parts) <= keep:
        return repr(parts)
    return f"[… {len(parts) - keep} 段 …, {', '.join(map(repr, parts[-keep:]))}](共 {len(parts)} 段)"


def clip(text: str, limit: int = 240) -> str:
    return visible(text if len(text) <= limit else "…" + text[-limit:])


def pretty_json(value: Any, width: int = 76) -> str:
    """JSON with small parts kept on one line, and single-item wrappers opened in place.

    >>> print(pretty_json({"choices": [{"delta": {"content": "我先读一下", "role": "assistant"}}]}, width=40))
    {"choices": [{"delta": {
      "content": "我先读一下",
      "role": "assistant"
    }}]}
    """

    def show(item: Any, column: int, pad: str) -> str:
        flat = json.dumps(item, ensure_ascii=False)
        if not isinstance(item, dict | list) or not item or column + display_width(flat) <= width:
            return flat
        if len(item) == 1:  # {"choices": [ … ]}: open the only child on this line, keep the indent
            if isinstance(item, dict):
                [(key, child)] = item.items()
                head = "{" + json.dumps(key, ensure_ascii=False) + ": "
                return head + show(child, column + display_width(head), pad) + "}"
            return "[" + show(item[0], column + 1, pad) + "]"
        inner = pad + "  "
        if isinstance(item, dict):
            rows = [f"{inner}{json.dumps(k, ensure_ascii=False)}: " for k in item]
            rows = [row + show(v, display_width(row), inner) for row, v in zip(rows, item.values(), strict=True)]
            return "{\n" + ",\n".join(rows) + f"\n{pad}}}"
        return "[\n" + ",\n".join(inner + show(v, len(inner), inner) for v in item) + f"\n{pad}]"

    return show(value, 0, "")


def display_width(text: str) -> int:
    """Terminal columns: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def code_text(
    lines_by_function: dict[str, list[int]], style: Style, context: int, traced: list[Callable[..., Any]] = TRACED
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


def code_view(api: str = "openai-completions") -> dict[str, Any]:
    """Each function traced for ``api``: its real source, file, first line number (markers blanked)."""
    code = {}
    for function in DIALECTS[api]["traced"]:
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
    recordings: list[tuple[str, str, bytes, int | None]], api: str = "openai-completions"
) -> dict[str, dict[str, Any]]:
    """name → {label, steps} for each (name, label, body, abort_after): what ``--web`` serves.

    >>> page = web_pages([("readme", "读取 README", fixture_path("article/readme.sse").read_bytes(), None)])
    >>> [step["title"] for step in page["readme"]["steps"]][:2]
    ['等待第一条事件', '保存文本,先交给显示层']
    """
    pages = {}
    for name, label, body, abort_after in recordings:
        steps = record_steps(split_frames(body), abort_after, api)
        pages[name] = {"label": label, "steps": [step_view(step) for step in steps]}
    return pages


# ── the command ──────────────────────────────────────────────────────────────────────


def build_parser() -> CliParser:
    parser = CliParser(
        prog="ink-py demo",
        description="Step through the article's §3 demo: one SSE event per step, fed to the real assemble_stream.",
        epilog="Enter: next step · q then Enter: quit. Without a terminal on stdin, every step is printed at once.",
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
    parser.add_argument("--no-pause", action="store_true", help="print every step without waiting for Enter")
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
        abort_after = len(split_frames(data)) if name in ABORT_SCENARIOS else None  # abort after the last frame
    try:
        return present(record_steps(split_frames(data), abort_after, args.api), label, args)
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
    return serve(pages, code_view(args.api), args.port)


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
    return web_pages(recordings, args.api)


def present(steps: list[Step], label: str, args: argparse.Namespace) -> int:
    """Print the steps, waiting for Enter between them when a person is at the terminal.

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
            print(style.dim("[Enter 下一步 · q 退出] "), end="", file=sys.stderr, flush=True)
            answer = sys.stdin.readline()
            if answer == "" or answer.strip().lower() in ("q", "quit"):
                return EXIT_COMPLETED
    return EXIT_COMPLETED


CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen


def shown_path(path: Path) -> str:
    root = fixtures_dir().parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
