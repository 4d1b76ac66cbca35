"""One run's event stream — the second article's §二 (the ``@Sse`` Observable) and §五, as a WSGI body.

The article's controller maps LangChain's stream to an Observable of ``MessageEvent``s, and
NestJS unsubscribes when the browser leaves. Here ``SseBody`` is the body of ``/chat/stream``:
iterating it subscribes, each agent event mapped to an SSE string (``sse_fields``, ``sse_event``);
its ``close()`` unsubscribes — it aborts the run. ``Run`` is the ``from(...)``: the agent loop on a
thread of its own, its events through a bounded queue, a ``: keep-alive`` in each silence.
Sections: the wire format, the body, one run. The events and §五's quiet fragments: docs/modules.md.

    >>> print(sse_event("text", {"text": "你好"}), end="")
    event: text
    data: {"text": "你好"}
    <BLANKLINE>
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import requests

from ..core.abort import AbortController, start_thread
from ..core.loop import AgentEvent, run_agent_loop
from ..core.messages import AgentMessage
from ..core.tools.read import create_read_tool
from ..provider.types import LLMProvider, ProviderError
from ..terminal import first_line, terminal_safe

KEEP_ALIVE_SECONDS = 2.0  # longest silence on an open stream: a gone browser is found by the 2nd failed write
WATCH_SECONDS = 0.2  # how often a silent stream asks the server whether the browser hung up
QUEUED_EVENTS = 256  # events waiting for a slow browser; then the run waits (backpressure)
STALLED_READER_SECONDS = 30.0  # a browser that reads nothing for this long is taken as gone
STOP_WAIT_SECONDS = 10.0  # how long close() waits for an aborted run to wind down
KEEP_ALIVE = b": keep-alive\n\n"  # an SSE comment: EventSource ignores it, proxies see traffic
ProviderFactory = Callable[[], LLMProvider]
Send = Callable[[str, Any], None]  # send(event name, data)
Event = tuple[str, Any]


# ── the wire format ─────────────────────────────────────────────────────────────────────


def sse_event(name: str, data: Any) -> str:
    """One named SSE event: JSON on a single ``data:`` line (json.dumps escapes newlines)."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def sse_fields(event: AgentEvent) -> Event | None:
    """An agent event → (SSE event name, data), or None for what the browser is not sent.

    >>> sse_fields({"type": "tool_end", "result": {"toolCallId": "c1", "toolName": "read",
    ...                                            "content": "读", "isError": False}})
    ('tool_end', {'id': 'c1', 'name': 'read', 'ok': True, 'size': 3})
    """
    if event["type"] == "text_delta":
        return "text", {"text": event["text"]}
    if event["type"] == "thinking_delta":
        return "thinking", {"text": event["text"]}
    if event["type"] == "tool_call_start":
        return "tool_preparing", {"id": event["id"], "name": event["name"]}
    if event["type"] == "tool_start":
        return "tool_start", {"id": event["toolCallId"], "name": event["name"], "args": event["args"]}
    if event["type"] == "tool_end":
        result = event["result"]
        data: dict[str, Any] = {
            "id": result["toolCallId"],
            "name": result["toolName"],
            "ok": not result["isError"],
            "size": len(result["content"].encode("utf-8")),
        }
        if result["isError"]:
            data["error"] = first_line(result["content"], 300)
        return "tool_end", data
    return None  # tool_call_delta (§五: the raw JSON stays on the server) and message_end


def encoded(text: str) -> bytes:
    """UTF-8 for the wire. A lone surrogate (model text may carry one) sits inside a JSON string,
    so it is written as JSON's own escape — never an exception.

    >>> encoded(sse_event("text", {"text": "\\ud800"}))
    b'event: text\\ndata: {"text": "\\\\ud800"}\\n\\n'
    """
    return text.encode("utf-8", "backslashreplace")


# ── the body: subscribe by iterating, unsubscribe by close() ────────────────────────────


class SseBody:
    """The WSGI response body of one stream — the Python twin of ``from(stream).pipe(map(...))``."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def __iter__(self) -> Iterator[bytes]:
        yield KEEP_ALIVE  # at once: servers send the headers with the first bytes (EventSource's onopen)
        for event in self.run.events():  # from(stream)
            yield KEEP_ALIVE if event is None else encoded(sse_event(*event))  # .pipe(map(...))

    def close(self) -> None:
        """Called by the WSGI server when the response ends, or when the browser has gone: unsubscribe."""
        self.run.stop("the browser closed the stream")


class Run:
    """One question's agent run on a thread of its own; ``events()`` hands its events to the body."""

    def __init__(
        self,
        work: Callable[[Send], None],
        controller: AbortController,
        keep_alive_seconds: float = KEEP_ALIVE_SECONDS,
        disconnected: Callable[[], bool] = lambda: False,
    ) -> None:
        self.controller = controller
        self._keep_alive = keep_alive_seconds
        self._disconnected = disconnected  # the server's probe, where it has one (see relay.py)
        self._events: queue.Queue[Event | None] = queue.Queue(QUEUED_EVENTS)  # None: the run is over
        self._thread = threading.Thread(target=self._work, args=(work,), name="ink-relay-run", daemon=True)

    def start(self) -> Run:
        start_thread(self._thread)  # Ctrl-C must reach the main thread, never this one
        return self

    def events(self) -> Iterator[Event | None]:
        """The run's events as they come, ``None`` where a keep-alive is due; ends with the run,
        or as soon as the server's probe says the browser hung up (the run is then aborted)."""
        quiet_since = time.monotonic()
        while True:
            try:
                event = self._events.get(timeout=min(WATCH_SECONDS, self._keep_alive))
            except queue.Empty:
                if self._disconnected():
                    self.stop("the browser closed the stream")
                    return
                if time.monotonic() - quiet_since >= self._keep_alive:
                    quiet_since = time.monotonic()
                    yield None
                continue
            if event is None:
                return
            yield event
            quiet_since = time.monotonic()

    def stop(self, reason: str) -> None:
        """Abort the run if it is still going and wait (a bounded while) for it to wind down."""
        if self._thread.is_alive():
            self.controller.abort(reason)  # the provider's listener shuts the model connection
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join(STOP_WAIT_SECONDS)

    def _work(self, work: Callable[[Send], None]) -> None:
        try:
            work(self._send)
        except Exception as err:  # a bug in ink_py: one line on stderr, the stream still ends
            print(f"ink-py serve: internal error ({terminal_safe(repr(err))})", file=sys.stderr)
        finally:
            self._put(None)

    def _send(self, name: str, data: Any) -> None:
        self._put((name, data))

    def _put(self, item: Event | None) -> None:
        deadline = time.monotonic() + STALLED_READER_SECONDS
        while True:
            try:
                self._events.put(item, timeout=WATCH_SECONDS)
                return
            except queue.Full:  # beyond the article: a browser that does not read holds the run back
                if self.controller.signal.aborted:
                    return  # no one is reading any more: the event goes nowhere
                if time.monotonic() > deadline:
                    self.controller.abort("the browser stopped reading")
                    return


# ── one run: the agent loop, its events sent on ─────────────────────────────────────────


@dataclass
class RunSettings:
    """What every run of a relay shares: the model, the tools' folder, the limits."""

    provider_factory: ProviderFactory  # one provider (one HTTP session) per run
    model: str
    workspace: str
    system: str
    max_turns: int
    max_tokens: int
    max_concurrent: int
    keep_alive_seconds: float = KEEP_ALIVE_SECONDS


def run_query(
    settings: RunSettings,
    query: str,
    send: Send,
    controller: AbortController,
    history: list[AgentMessage] | None = None,
) -> tuple[dict[str, Any], Event]:
    """Run the agent on ``query`` after ``history``, each event through ``send``.

    Returns the run's record (``{"query", "stopReason"}`` or ``{"query", "error"}``) and the
    last event, ``done`` or ``error``, which the caller sends once the history is put away.
    """
    history = [] if history is None else history

    def on_event(event: AgentEvent) -> None:
        fields = sse_fields(event)
        if fields is not None:
            send(*fields)

    try:
        result = run_agent_loop(
            provider=settings.provider_factory(),
            model=settings.model,
            system=settings.system,
            tools=[create_read_tool(settings.workspace)],
            history=history,  # the session's conversation (the loop never appends a partial reply)
            user_message=query,
            max_tokens=settings.max_tokens,
            max_turns=settings.max_turns,
            on_event=on_event,
            signal=controller.signal,  # ours alone: ctrl_c_aborts is for the terminal's main thread
            max_concurrent=settings.max_concurrent,
        )
    except (ProviderError, requests.RequestException, OSError) as err:
        return {"query": query, "error": str(err)}, ("error", {"message": str(err)})
    except Exception as err:  # a bug in ink_py: one line for the browser, none of the internals
        message = f"internal error ({type(err).__name__}: {err})"
        print(f"ink-py serve: {terminal_safe(message)}", file=sys.stderr)  # the server's words: neutralised
        return {"query": query, "error": message}, ("error", {"message": message})
    reason = controller.signal.reason if result["stopReason"] == "aborted" else None
    done = {**result, "maxTurns": settings.max_turns, "messages": len(history), "abortReason": reason}
    return {"query": query, "stopReason": result["stopReason"]}, ("done", done)
