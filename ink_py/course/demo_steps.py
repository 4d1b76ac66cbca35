"""The steps of ``ink-py demo``: the real ``assemble_stream`` fed one SSE frame per read.

Each time the assembler asks for the next read — the moment everything the previous frame
caused has happened — a step is closed: what arrived, the assembler's state (its running
generator frame's locals, deep-copied: nothing is recomputed), what it yielded, and which
lines of the traced functions ran (``demo_dialects`` finds both from its source).

- feeding the assembler: ``split_frames``, ``record_steps``, ``lines_that_run``;
- what a step is called: ``step_title`` (the article's wording).

    >>> from ink_py.scripted.scenarios import fixture_path
    >>> steps = record_steps(split_frames(fixture_path("article/readme.sse").read_bytes()))
    >>> [step["title"] for step in steps]   # doctest: +NORMALIZE_WHITESPACE
    ['等待第一条事件', '保存文本,先交给显示层', '建立 index 0 的工具请求',
     '继续拼接 index 0 的工具请求', '记下结束原因,继续读到流结束', '解析参数,交出完整回复']
    >>> "".join(steps[3]["state"]["tool_raw_by_index"][0]), steps[3]["outcome"]
    ('{"path":"README.md"}', 'pending')
"""

from __future__ import annotations

import ast
import copy
import inspect
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from types import CodeType, FrameType
from typing import Any, TypedDict

from ..core.abort import AbortController
from ..provider.shared import DONE
from .demo_dialects import assembler, assembler_locals, function_tree, traced_functions


class Step(TypedDict):
    title: str
    received: str  # "nothing" (step 1), "event", "frame" (a frame with no event), "end" or "abort"
    event: dict[str, Any] | None  # the SseEvent in the main loop's variable (`sse`) this step, copied
    frame: str  # this step's raw frame, as text ("" if none)
    state: dict[str, Any]  # assemble_stream's state locals (assembler_locals) from its frame, deep-copied
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


def record_steps(
    frames: list[bytes], abort_after: int | None = None, api: str = "openai-completions", every: bool = False
) -> list[Step]:
    """Run the real ``assemble_stream`` of ``api``'s dialect over ``frames``; keep one Step per SSE frame.

    - the body is a generator: before handing out frame k it closes step k (step 1 is
      "等待第一条事件"); the last step is taken when the assembler yields ``message_end``,
      raises, or returns;
    - *what the access layer holds* is the state locals of the running generator's frame
      (``text_parts``, ``tool_by_index`` … whatever ``assembler_locals`` finds), deep-copied;
    - *which lines ran* is recorded while it runs (``lines_that_run``), for the assembler and
      the helpers ``traced_functions`` finds (``every``: also those the article's widget leaves out);
      an ``except`` line counts only if its handler ran (``handled``): a generator's close passes it;
    - with ``abort_after=N`` the user aborts once N frames have been read: the body aborts the
      AbortController and raises ``ConnectionResetError``, as a socket shut by the abort would;
      ``abort_safe`` swallows it (§4.2).

    Unlike the article's page, ``[DONE]`` or a keep-alive frame gets a step of its own, and a
    frame that ends the stream (``[DONE]``, a server error) shares its step with the end.
    Everything runs on this thread, so a breakpoint in ``assemble_stream`` stops while the
    steps are recorded.
    """
    function = assembler(api)
    held = assembler_locals(function)  # which locals are state, which one is the event
    controller = AbortController()
    steps: list[Step] = []
    emitted: list[dict[str, Any]] = []  # yielded since the last step
    sent: list[bytes] = []  # the frame handed out since the last step, if any
    last_sse: list[Any] = [None]  # the event object seen at the last step (identity tells "new event")

    def close_step(received: str, outcome: str = "pending", error: str | None = None) -> None:
        f_locals = frame.f_locals  # the live frame of the assembler (or, once it ended, its last state)
        state = copy.deepcopy({name: f_locals[name] for name in held.state if name in f_locals})
        sse = f_locals.get(held.event) if held.event else None
        raw = sent.pop().decode("utf-8", "replace") if sent else ""
        if sse is not None and sse is not last_sse[0]:
            received = "event"  # a new event reached the main loop's variable during this step
        elif raw:
            received = "frame"  # bytes arrived, but no event came of them (yet)
        last_sse[0] = sse
        step: Step = {
            "title": "",
            "received": received,
            "event": copy.deepcopy(sse) if received == "event" else None,
            "frame": raw,
            "state": state,
            "emitted": emitted.copy(),
            "outcome": outcome,
            "error": error,
            "lines": handled(lines, traced),
            "api": api,
        }
        step["title"] = step_title(step, first=not steps, before=steps[-1]["state"] if steps else None)
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

    generator = function(body(), controller.signal)
    frame = generator.gi_frame  # held: its locals stay readable after the generator ends
    final = "abort" if abort_after is not None else "end"
    traced = traced_functions(function, every)
    with lines_that_run(traced) as lines:
        try:
            for event in generator:
                emitted.append(copy.deepcopy(event))
                if event["type"] == "message_end":  # the generator is paused at this yield
                    close_step(final, "message_end")
                    generator.close()
                    return steps
        except Exception as err:  # what the real code raised is part of the demo
            close_step(final, "error", f"{type(err).__name__}: {err}")
            return steps
        close_step(final, "aborted" if controller.signal.aborted else "ended")
    return steps


def handled(lines: dict[str, set[int]], functions: Sequence[Callable[..., Any]]) -> dict[str, list[int]]:
    """Function name → the numbers of its lines that ran, without an ``except`` line whose handler did
    not run: Python reports that line when it *tests* an exception against the clause — a generator
    closed at the end of a stream tests ``GeneratorExit`` against ``except Exception:`` and passes on.
    Only a handler that ran caught anything."""
    by_name = {function.__name__: function for function in functions}
    shown = {}
    for name, numbers in lines.items():
        kept = set(numbers)
        for clause, handler in except_clauses(by_name[name]) if name in by_name else ():
            if clause in kept and not kept & handler:
                kept.discard(clause)
        if kept:
            shown[name] = sorted(kept)
    return shown


@cache
def except_clauses(function: Callable[..., Any]) -> tuple[tuple[int, frozenset[int]], ...]:
    """(the line of each ``except`` clause, the lines of its handler), numbered as in the file."""
    tree = function_tree(function)
    if tree is None:
        return ()
    offset = inspect.getsourcelines(function)[1] - 1
    return tuple(
        (node.lineno + offset, frozenset(range(node.body[0].lineno + offset, (node.end_lineno or 0) + offset + 1)))
        for node in ast.walk(tree)
        if isinstance(node, ast.ExceptHandler)
    )


@contextmanager
def lines_that_run(functions: Sequence[Callable[..., Any]]) -> Iterator[dict[str, set[int]]]:
    """While active, the yielded dict collects function name → numbers of its lines that ran.

    Python 3.12+: ``sys.monitoring`` LINE events on just these code objects, in a tool
    slot of our own, so a debugger (debugpy uses the debugger slot there, and refuses
    ``sys.settrace``) is untouched. Older Pythons: ``sys.settrace``, chained to any tracer
    already installed (pdb, an IDE), which keeps working; restored on exit. (Under debugpy
    there, pydevd warns once that ``sys.settrace`` was called; its breakpoints keep working.)
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

    previous: Any = sys.gettrace()  # a debugger's tracer, if one is installed

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


def step_title(step: Step, first: bool = False, before: dict[str, Any] | None = None) -> str:
    """The step's headline, from what happened in it (the article's wording); ``before`` is the
    state the previous step ended with: what the end of the stream finished is told only if it
    was finished in this step (Messages parses a call's arguments at its block's end, earlier)."""
    state, outcome = step["state"], step["outcome"]
    if first and step["received"] == "nothing":
        return "等待第一条事件"
    if outcome == "error":
        no_finish = not any(state[flag] for flag in end_flags(state))
        return "缺少结束原因,拒绝交付" if no_finish and step["received"] not in ("event", "frame") else "出错,拒绝交付"
    parts: list[str] = []
    if step["received"] == "event":
        parts += event_title_parts(step)
    elif step["received"] == "frame":
        parts.append("收到半个事件,先留在 buffer 里" if not complete(step["frame"]) else "收到注释或保活,没有事件")
    if outcome == "message_end":
        message = next(e["message"] for e in step["emitted"] if e["type"] == "message_end")
        done = finished_now(message["blocks"], (before or {}).get("blocks") or [])
        parts.append(f"{done},交出完整回复" if done else "交出完整回复")
    elif outcome in ("aborted", "ended"):
        parts.append("用户中断,结束接收" if outcome == "aborted" else "流结束,没有交出回复")
    return ";".join(parts) or "没有新内容"


def finished_now(blocks: list[dict[str, Any]], before: list[dict[str, Any]]) -> str:
    """What the last step did to the reply's blocks that the previous one had not: 解析参数 (a call's
    arguments set), else 拼好文本 (a text joined), else ""."""
    arguments = {block["id"]: block["arguments"] for block in before if block["type"] == "toolCall"}
    texts = [block["text"] for block in before if block["type"] == "text"]
    if any(b["type"] == "toolCall" and b["arguments"] and b["arguments"] != arguments.get(b["id"]) for b in blocks):
        return "解析参数"
    if any(block["type"] == "text" and block["text"] and block["text"] not in texts for block in blocks):
        return "拼好文本"
    return ""


def end_flags(state: dict[str, Any]) -> list[str]:
    """The state's bool locals, in the assembler's order: the flags that say an end marker came
    (``saw_finish``, ``saw_done`` …)."""
    return [name for name, value in state.items() if isinstance(value, bool)]


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
