"""Running one prompt in the terminal — mirrors Ink's ``src/runner.ts`` (printRunStats).

The edge where events become pixels: ``run_prompt`` wires a provider and tools to the
loop, turns Ctrl-C into an abort (``ctrl_c_aborts``), shows every event as it arrives
(``Display``), writes the optional trace and ends with Ink's summary (``print_run_stats``).
The answer goes to stdout; tool lines, notices and the summary go to stderr, so
``ink-py … > answer.txt`` keeps just the answer. Colour only on a terminal, never with
NO_COLOR. Display policies: ``ink`` shows tool arguments as they stream in; ``filtered``
is the second article §五's "静默积累" (a call is announced, its raw JSON is not).

    >>> print_run_stats({"stopReason": "completed", "turns": 2, "truncated": False,
    ...     "usage": {"inputTokens": 412, "outputTokens": 97, "cacheReadTokens": 0}}, "m", 40, sys.stdout)
    — m · 2 turns · in 412 / out 97 tokens
"""

from __future__ import annotations

import json
import signal as signals
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from .arguments import encodable_text
from .core.abort import AbortController
from .core.loop import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS,
    MAX_CONCURRENT_TOOLS,
    AgentEvent,
    RunResult,
    run_agent_loop,
)
from .core.messages import AgentMessage, Usage, add_usage, empty_usage
from .core.tools.types import Tool
from .provider.transport import notices_of_slow_headers
from .provider.types import LLMEvent, LLMProvider, LLMRequest
from .terminal import first_line, human_size, one_line, paint, plural, shorten, terminal_safe, wants_colour

EMPTY_REPLY_NOTICE = "the model sent an empty reply (no text, no tool calls)"
EXIT_COMPLETED, EXIT_ERROR, EXIT_TRUNCATED, EXIT_MAX_TURNS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def run_prompt(
    *,
    provider: LLMProvider,
    model: str,
    system: str,
    prompt: str,
    tools: list[Tool],
    max_turns: int = DEFAULT_MAX_TURNS,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_concurrent: int = MAX_CONCURRENT_TOOLS,
    display: str = "ink",
    trace: IO[str] | None = None,
    tool_choice: str = "auto",
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    history: list[AgentMessage] | None = None,
) -> int:
    """Run the agent on one prompt and return the process exit code (errors propagate).

    ``history`` (appended in place) carries a conversation across prompts, as ``ink-py chat``
    does; by default each prompt starts a new one.
    """
    out, err = out or sys.stdout, err or sys.stderr
    controller = AbortController()
    shown = Display(out, err, display)

    def on_event(event: AgentEvent) -> None:
        shown.show(event)
        if trace is not None:
            write_trace(trace, event)

    history = [] if history is None else history
    start = len(history)  # this prompt's messages begin here (ink-py chat keeps the earlier ones)
    provider = with_tool_choice(provider, tool_choice)
    try:
        with ctrl_c_aborts(controller, shown), notices_of_slow_headers(shown.notice):  # beyond Ink: a slow server
            result = run_agent_loop(
                provider=provider,
                model=model,
                system=system,
                tools=tools,
                history=history,
                user_message=prompt,
                max_tokens=max_tokens,
                max_turns=max_turns,
                on_event=on_event,
                signal=controller.signal,
                max_concurrent=max_concurrent,
            )
    except BaseException as error:  # beyond printRunStats: a failed run's trace ends with run_end too
        shown.end_line()  # and the error line starts a line of its own
        if trace is not None:
            failed = {"stopReason": "error", "error": one_line(str(error)) or type(error).__name__}
            write_trace(trace, run_end_record(failed, history[start:], model))
        raise
    shown.end_line()
    this_run = history[start:]
    if trace is not None:
        write_trace(trace, run_end_record(dict(result), this_run, model))
    without_usage = replies_without_usage(this_run)
    print_run_stats(result, model, max_turns, err, shown.colour, without_usage, aborted_mid_reply=shown.mid_reply)
    return exit_code(result)


class ToolChoice:
    """Beyond §2 (Ink always sends "auto"): ``ink-py --tool-choice`` on every request.

    A tool's name forces that tool on the first request only, then "auto" — forced on
    every turn, the model could never answer. "required" and "none" hold for every turn.
    """

    def __init__(self, provider: LLMProvider, choice: str) -> None:
        self.provider, self.choice = provider, choice

    def stream(self, request: LLMRequest) -> Iterator[LLMEvent]:
        choice = self.choice
        if choice not in ("auto", "required", "none"):
            self.choice = "auto"  # a named tool was forced once
        return self.provider.stream({**request, "toolChoice": choice})


def with_tool_choice(provider: LLMProvider, choice: str) -> LLMProvider:
    """``provider`` whose requests carry ``choice`` (``ToolChoice``); "auto", Ink's own, needs no wrapper."""
    return provider if choice == "auto" else ToolChoice(provider, choice)


def replies_without_usage(history: list[AgentMessage]) -> tuple[int, int]:
    """``(replies whose server reported no usage, replies)`` — an all-zero usage is not a report:
    every request has a system prompt, so a real count is never 0 input tokens."""
    replies = [m for m in history if m["role"] == "assistant"]
    return sum(1 for m in replies if not any(m["usage"].values())), len(replies)


def run_end_record(result: dict[str, Any], history: list[AgentMessage], model: str) -> dict[str, Any]:
    """The trace's last line; ``usage`` is null when no reply's usage was reported."""
    unreported, replies = replies_without_usage(history)
    record: dict[str, Any] = {"type": "run_end", "turns": replies, **result, "model": model}
    record["usage"] = None if unreported == replies else summed_usage(history)  # beyond §2: no invented zeros
    if 0 < unreported < replies:
        record["repliesWithoutUsage"] = unreported
    return record


def summed_usage(history: list[AgentMessage]) -> Usage:
    total = empty_usage()
    for message in history:
        if message["role"] == "assistant":
            add_usage(total, message["usage"])
    return total


def exit_code(result: RunResult) -> int:
    if result["stopReason"] == "aborted":
        return EXIT_INTERRUPTED
    if result["stopReason"] == "max_iterations":
        return EXIT_MAX_TURNS
    return EXIT_TRUNCATED if result["truncated"] else EXIT_COMPLETED


def print_run_stats(
    result: RunResult,
    model: str,
    max_turns: int,
    err: IO[str],
    colour: bool = False,
    without_usage: tuple[int, int] = (0, 0),
    *,
    aborted_mid_reply: bool = False,
) -> None:
    """Ink's closing line: ``— <model> · <turns> turns · in <n> / out <m> tokens``, plus why it stopped.

    ``without_usage`` is ``(replies with no usage report, replies)`` (replies_without_usage).
    ``aborted_mid_reply``: the abort came while a reply was streaming; that reply is
    counted and named (its tokens are never reported: the stream ended without usage).
    """
    usage = result["usage"]
    unreported, replies = without_usage
    turns = result["turns"] + (1 if aborted_mid_reply and result["stopReason"] == "aborted" else 0)
    line = f"— {model} · {plural(turns, 'turn')} · "
    if replies and unreported == replies:
        line += "usage not reported by the server"  # beyond printRunStats: no invented zeros
    else:
        line += f"in {usage['inputTokens']} / out {usage['outputTokens']} tokens"
        if usage["cacheReadTokens"]:
            line += f" (+{usage['cacheReadTokens']} cached)"
        if unreported:
            line += f" (usage not reported for {unreported} of {replies} replies)"
    if result["stopReason"] == "aborted" and turns > result["turns"]:  # beyond §4.2: name the cut-off reply
        line += f" (aborted during turn {turns}: that reply was not kept)"
    elif result["stopReason"] == "aborted":
        line += " (aborted)"
    elif result["stopReason"] == "max_iterations":
        line += f" (stopped: reached max turns ({max_turns}))"
    print(paint(line, "2", colour), file=err)
    if result["truncated"]:  # §4.4: completed, yet the answer is not whole
        notice = "the answer was cut at the output limit (max_tokens); send another message to continue"
        print(paint(notice, "33", colour), file=err)


class Display:
    """Shows agent events as they arrive, keeping stdout and stderr lines from running together."""

    def __init__(self, out: IO[str], err: IO[str], policy: str = "ink") -> None:
        self.out, self.err, self.policy = out, err, policy
        self.colour = wants_colour(err)  # colour goes to the status lines on stderr
        self.open_line: IO[str] | None = None  # the stream whose last line is unfinished, if any
        self.in_thinking = False
        self.reply_shown = False  # did the current reply show anything yet?
        self.mid_reply = False  # a reply has begun streaming and has not ended yet
        self.calls: dict[str, tuple[int, str]] = {}  # this reply's tool calls: id → (number, name) of its latest
        self.started = 0  # calls started in this reply (a server may repeat an id: counted, not merged)
        self.shown_call = ""  # the call whose arguments the open line is showing

    def show(self, event: AgentEvent) -> None:
        kind = event["type"]
        self.mid_reply = kind in ("text_delta", "thinking_delta", "tool_call_start", "tool_call_delta")
        if kind in ("text_delta", "thinking_delta", "tool_call_start"):
            self.reply_shown = True
        if event["type"] == "text_delta":
            if self.in_thinking:
                self.end_line()
                self.in_thinking = False
            self.write(self.out, event["text"])
        elif event["type"] == "thinking_delta":
            self.in_thinking = True
            self.write(self.err, event["text"], "2;3")
        elif event["type"] == "tool_call_start":
            self.end_line()
            self.started += 1
            self.calls[event["id"]] = (self.started, event["name"])
            self.shown_call = event["id"]
            if self.policy == "filtered":  # second article §五: announce, do not show raw JSON
                self.write(self.err, f"  … preparing a {event['name'] or 'tool'} call", "2")
            else:
                self.write(self.err, f"  ↳ {self.call_label(event['id'])} ", "2")
        elif event["type"] == "tool_call_delta" and self.policy != "filtered":
            if event["id"] != self.shown_call and event["id"] in self.calls:
                # beyond §2.2: fragments of calls interleave; each switch gets its own, numbered line
                self.end_line()
                self.shown_call = event["id"]
                self.write(self.err, f"  ↳ {self.call_label(event['id'])} …", "2")
            self.write(self.err, event["jsonDelta"], "2")
        elif event["type"] == "message_end":
            self.end_line()
            self.calls, self.shown_call, self.started = {}, "", 0
            if not self.reply_shown:  # beyond §2: a 200 reply with nothing in it is not an answer
                self.write(self.err, f"notice: {EMPTY_REPLY_NOTICE}\n", "33")
            self.reply_shown = False
        elif event["type"] == "tool_start":
            self.end_line()
            args = json.dumps(event["args"], ensure_ascii=False)
            self.write(self.err, f"→ {event['name']} {shorten(args, 100)}\n", "36")
        elif event["type"] == "tool_end":
            result = event["result"]
            if result["isError"]:
                self.write(self.err, f"← {result['toolName']} error: {first_line(result['content'], 120)}\n", "31")
            else:
                self.write(self.err, f"← {result['toolName']} ok · {human_size(result['content'])}\n", "32")

    def notice(self, line: str) -> None:
        """One line of ink_py's own about the run (a server slow to answer), on stderr."""
        self.end_line()
        self.write(self.err, f"({line})\n", "2")

    def call_label(self, call_id: str) -> str:
        """``read``, or ``read #2`` once a reply has more than one call."""
        number, name = self.calls[call_id]
        return f"{name} #{number}" if self.started > 1 else name

    def write(self, stream: IO[str], text: str, colour_code: str = "") -> None:
        if not text:
            return
        if stream is self.err:
            self.out.flush()  # keep the two streams in order on one terminal
        text = terminal_safe(text)  # beyond Ink: the model's bytes never drive the terminal
        body, newline = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        stream.write((paint(body, colour_code, self.colour) if colour_code else body) + newline)
        stream.flush()
        self.open_line = None if newline else stream

    def end_line(self) -> None:
        """Finish an unfinished line (on the stream it is on) before a new kind of output."""
        if self.open_line is not None:
            self.write(self.open_line, "\n")


# json.dumps leaves C1 controls and U+2028/U+2029 raw: escaped too, so `tail -f` and
# str.splitlines() see one harmless line per record (they only ever occur inside strings).
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in [*range(0x80, 0xA0), 0x2028, 0x2029]}


def write_trace(trace: IO[str], record: Any) -> None:
    """One JSON line per event, written as it happens (``tail -f`` works)."""
    trace.write(encodable_text(json.dumps(record, ensure_ascii=False)).translate(_JSON_ESCAPES) + "\n")
    trace.flush()


@contextmanager
def ctrl_c_aborts(controller: AbortController, display: Display) -> Iterator[None]:
    """First Ctrl-C aborts the run through the signal; a second one stops at once."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers exist only on the main thread (e.g. inside a web server)
        return
    if signals.getsignal(signals.SIGINT) is signals.SIG_IGN:
        yield  # beyond §4.2: started with Ctrl-C ignored (a script's `ink-py … &`), it stays ignored (POSIX)
        return

    def on_sigint(signum: int, frame: Any) -> None:
        if controller.signal.aborted:
            raise KeyboardInterrupt  # pressed twice: stop waiting for a clean abort
        display.end_line()
        display.write(display.err, "aborting… (press Ctrl-C again to quit at once)\n", "33")
        controller.abort("interrupted")  # wakes a blocked read: the provider closes its socket

    previous = signals.signal(signals.SIGINT, on_sigint)
    try:
        yield
    finally:
        signals.signal(signals.SIGINT, previous)
