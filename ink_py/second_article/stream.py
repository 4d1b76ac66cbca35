"""One run's event stream — the second article's §二 (the ``@Sse`` Observable) and §五, as a WSGI body.

The article's controller maps LangChain's stream to an Observable of ``MessageEvent``s, and
NestJS unsubscribes when the browser leaves. Here ``SseBody`` is the body of ``/chat/stream``:
iterating it subscribes, each event of the run's log (follow.py) written as an SSE string with
its ``id:`` (``sse_fields``, ``sse_event``; ``retry:`` once, first), a ``: keep-alive`` in each
silence. Its ``close()`` unsubscribes: this reader stops following. Beyond §二 the run (producer.py)
goes on ``INK_RESUME_GRACE`` seconds, so that a browser that lost its connection picks the answer
up again (``Last-Event-ID``), and a reader that takes nothing for ``INK_SEND_TIMEOUT`` is dropped
(``watch_writes``). Sections: the wire format, the body, a reader that does not read, one run. The
events and §五's quiet fragments: docs/modules.md.

    >>> print(sse_event("text", {"text": "你好"}, 7), end="")
    id: 7
    event: text
    data: {"text": "你好"}
    <BLANKLINE>
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from ..core.abort import AbortController, start_thread
from ..core.loop import AgentEvent, run_agent_loop
from ..core.messages import AgentMessage
from ..core.tools.read import create_read_tool
from ..provider.types import LLMProvider, ProviderError
from ..terminal import first_line, terminal_safe
from .follow import Item

KEEP_ALIVE_SECONDS = 2.0  # longest silence on an open stream: a gone browser is found by the 2nd failed write
KEEP_ALIVE = b": keep-alive\n\n"  # an SSE comment: EventSource ignores it, proxies see traffic
RETRY = b"retry: 1000\n\n"  # beyond §七: EventSource reconnects 1 s after a drop (its default is about 3 s)
SEND_TIMEOUT_SECONDS = 30.0  # INK_SEND_TIMEOUT's default: a write the reader has not taken by then drops it
WATCH_WRITES_SECONDS = 0.25  # how often the one watchdog of a process looks at the writes in progress
ProviderFactory = Callable[[], LLMProvider]
Send = Callable[[str, Any], None]  # send(event name, data)
Event = tuple[str, Any]


# ── the wire format ─────────────────────────────────────────────────────────────────────


def sse_event(name: str, data: Any, event_id: int | None = None) -> str:
    """One named SSE event: JSON on a single ``data:`` line (json.dumps escapes newlines), after
    its ``id:`` if it has one (beyond §二: what EventSource sends back as ``Last-Event-ID``)."""
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


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

    def __init__(self, items: Iterator[Item]) -> None:
        self.items = items  # follow(): the run's events, None where a keep-alive is due

    def __iter__(self) -> Iterator[bytes]:
        yield RETRY  # at once: servers send the headers with the first bytes (EventSource's onopen)
        for item in self.items:  # from(stream)
            yield KEEP_ALIVE if item is None else encoded(sse_event(item[1], item[2], item[0]))  # .pipe(map(...))

    def close(self) -> None:
        """Called by the WSGI server when the response ends, or when the browser has gone: unsubscribe."""
        close = getattr(self.items, "close", None)
        if close is not None:
            close()  # beyond §二: this reader stops following; the run goes on for INK_RESUME_GRACE
        self.items = iter(())


# ── a reader that does not read: dropped after INK_SEND_TIMEOUT, under any server ────────


class WatchedBody:
    """An ``SseBody`` whose server's writes are watched: one that the reader has not taken within
    ``send_timeout`` (its receive window stays shut) shuts the connection down, so the server's
    blocked write fails and the server closes the body, as for a browser that left."""

    def __init__(self, body: SseBody, connection: socket.socket, send_timeout: float) -> None:
        self.body = body
        self.connection = connection
        self.send_timeout = send_timeout
        self.writing_since: float | None = None  # while the server writes a piece of ours

    def __iter__(self) -> Iterator[bytes]:
        _watched(self, True)
        for piece in self.body:
            self.writing_since = time.monotonic()
            yield piece  # the server writes it (gunicorn: sendall; waitress: its buffer, then a wait)
            self.writing_since = None

    def cut(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)  # the blocked write returns EPIPE at once
        except OSError:
            pass

    def close(self) -> None:
        _watched(self, False)
        self.body.close()


def watch_writes(body: Iterable[bytes], environ: Mapping[str, Any], send_timeout: float) -> Iterable[bytes]:
    """The relay's response body, an ``SseBody`` watched where the server lends the connection.

    gunicorn and waitress have no send timeout of their own: a blocked write waits for good
    (gunicorn's thread in ``sendall``, waitress's past ``--outbuf-high-watermark``). ``ink-py
    serve`` lends no socket: its own socket timeout is INK_SEND_TIMEOUT (wsgi_server.py).

    >>> watch_writes([b"page"], {}, 30.0)
    [b'page']
    """
    connection = client_socket(environ)
    if isinstance(body, SseBody) and connection is not None:
        return WatchedBody(body, connection, send_timeout)
    return body


def client_socket(environ: Mapping[str, Any]) -> socket.socket | None:
    """The connection, where the WSGI server lends it: gunicorn's ``gunicorn.socket``, waitress's
    channel's (the owner of ``waitress.client_disconnected``, given with ``--channel-request-lookahead=1``)."""
    connection = environ.get("gunicorn.socket")
    if connection is None:
        channel = getattr(environ.get("waitress.client_disconnected"), "__self__", None)
        connection = getattr(channel, "socket", None)
    return connection if isinstance(connection, socket.socket) else None


_WATCH: dict[str, Any] = {"bodies": set(), "lock": threading.Lock(), "pid": 0}


def _watched(body: WatchedBody, watch: bool) -> None:
    with _WATCH["lock"]:
        if not watch:
            _WATCH["bodies"].discard(body)
            return
        _WATCH["bodies"].add(body)
        if _WATCH["pid"] != os.getpid():  # one watchdog per process (gunicorn forks its workers)
            _WATCH["pid"] = os.getpid()
            start_thread(threading.Thread(target=_cut_stalled_writes, name="ink-send-watchdog", daemon=True))


def _cut_stalled_writes() -> None:
    while True:
        time.sleep(WATCH_WRITES_SECONDS)
        now = time.monotonic()
        with _WATCH["lock"]:
            late = [body for body in _WATCH["bodies"] if now - (body.writing_since or now) > body.send_timeout]
            _WATCH["bodies"].difference_update(late)
        for body in late:
            body.cut()


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
    send_timeout: float = SEND_TIMEOUT_SECONDS  # INK_SEND_TIMEOUT: a reader that takes nothing this long is dropped


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
