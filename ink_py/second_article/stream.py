"""One run's event stream in ``ink-py serve`` — the second article's §二 (the ``@Sse`` Observable) and §五.

The article's NestJS controller wraps LangChain's AsyncIterable in an RxJS Observable so
that a closed browser tab unsubscribes and stops the generation. Here the same duties are
done by hand, each in a few lines you can step through:

- **events out** — ``run_query`` runs the loop, whose ``on_event`` callback (on the request's
  own thread) writes every agent event (``sse_fields``) as a named SSE event (``sse_event``),
  one HTTP chunk each, and ends the stream with ``done`` or ``error``;
- **hang-up in** — ``SseChannel`` notices the browser left, by a write that fails *and* by
  a watcher thread that sees the socket read as closed (``peer_closed``), and aborts the
  run's AbortController: the provider's abort listener shuts the model connection, a read
  blocked on a slow model wakes, the loop stops, no further model request is made;
- **keep-alive** — while nothing else is sent (a slow model, a long tool) the watcher
  writes a ``: keep-alive`` comment every ``keep_alive_seconds``, so proxies keep the idle
  connection open and a vanished browser is noticed even by a write.

The events, JSON on one ``data:`` line, a blank line after each::

    event: text            {"text": "我先读一下"}
    event: thinking        {"text": "…"}                  reasoning text (DeepSeek & co.)
    event: tool_preparing  {"id": "call_1", "name": "read"}
    event: tool_start      {"id": "call_1", "name": "read", "args": {"path": "README.md"}}
    event: tool_end        {"id": "call_1", "name": "read", "ok": true, "size": 1934}
                           {"id": …, "name": …, "ok": false, "size": 41, "error": "Error: file not found: x.md"}
    event: done            {"stopReason": "completed", "turns": 2, "usage": {…}, "truncated": false, "maxTurns": 40,
                            "messages": 4, "abortReason": null}     messages: the conversation's length so far
    event: error           {"message": "could not reach the model server at …"}   (then the stream ends)

``tool_preparing`` is sent once per call; the raw argument fragments are not sent at all —
§五's "静默积累" (the same policy as ``ink-py --display filtered``): half a JSON object means
nothing to a reader, and ``tool_start`` brings the whole, parsed arguments a moment later.
§六 travels through unchanged: a tool error goes back to the model as a tool result it
can answer from, and a model that keeps calling tools is stopped by ``--max-turns``
(``done`` says ``"stopReason": "max_iterations"``).

Worked example — what one event looks like on the wire::

    >>> print(sse_event("text", {"text": "你好"}), end="")
    event: text
    data: {"text": "你好"}
    <BLANKLINE>
    >>> sse_fields({"type": "tool_call_delta", "id": "call_1", "jsonDelta": '{"pa'}) is None   # §五: kept quiet
    True
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import requests

from ..core.abort import AbortController
from ..core.loop import AgentEvent, run_agent_loop
from ..core.messages import AgentMessage
from ..core.tools.read import create_read_tool
from ..provider.types import LLMProvider, ProviderError
from ..terminal import first_line, terminal_safe

KEEP_ALIVE_SECONDS = 5.0  # longest silence on an open stream (well under common 30-60 s proxy timeouts)
WATCH_SECONDS = 0.2  # how often the watcher looks for a browser that hung up
ProviderFactory = Callable[[], LLMProvider]


# ── the wire format ─────────────────────────────────────────────────────────────────────


def sse_event(name: str, data: Any) -> str:
    """One named SSE event: JSON on a single ``data:`` line (json.dumps escapes newlines)."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def sse_fields(event: AgentEvent) -> tuple[str, dict[str, Any]] | None:
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


# ── one browser's stream: writes, keep-alives, hang-up detection ────────────────────────


class SseChannel:
    """The SSE response to one browser. Every write goes through one lock, because two
    threads write: the run (events) and the watcher (keep-alives). The first sign that
    the browser left — a failing write, or its socket reading as closed — aborts the run."""

    def __init__(
        self, wfile: Any, connection: socket.socket, controller: AbortController, keep_alive_seconds: float
    ) -> None:
        self._wfile = wfile
        self._connection = connection
        self._controller = controller
        self._keep_alive = keep_alive_seconds
        self._lock = threading.Lock()
        self._last_write = time.monotonic()
        self._finished = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="ink-relay-watcher", daemon=True)
        self.gone = False  # the browser hung up

    def start(self) -> None:
        self._watcher.start()

    def send(self, name: str, data: Any) -> None:
        self._write(sse_event(name, data))

    def finish(self) -> None:
        """Stop the watcher and end the chunked body (0-length chunk)."""
        self._finished.set()
        if self._watcher.is_alive():
            self._watcher.join()
        with self._lock:
            if not self.gone:
                try:
                    self._wfile.write(b"0\r\n\r\n")
                except OSError:
                    self.gone = True

    def _write(self, text: str) -> None:
        data = text.encode("utf-8")
        with self._lock:
            if self.gone:
                return  # the run is being aborted; its last few events have no one to go to
            try:
                self._wfile.write(b"%x\r\n%s\r\n" % (len(data), data))  # one HTTP chunk, sent at once
            except OSError:  # BrokenPipeError, ConnectionResetError: the browser hung up
                self._hang_up()
                return
            self._last_write = time.monotonic()

    def _hang_up(self) -> None:
        self.gone = True
        self._controller.abort("the browser closed the stream")  # the provider shuts the model connection

    def _watch(self) -> None:
        poll = min(WATCH_SECONDS, self._keep_alive)
        while not self._finished.wait(poll):
            if peer_closed(self._connection):
                with self._lock:
                    self._hang_up()
                return
            if time.monotonic() - self._last_write >= self._keep_alive:
                self._write(": keep-alive\n\n")  # a comment: EventSource ignores it, proxies see traffic


def peer_closed(connection: socket.socket) -> bool:
    """True if the other end has closed: the socket is readable but a peek finds no bytes.

    (An EventSource sends nothing after its request, so readable means closed or reset;
    a client that half-closes after sending its request is taken as gone, too.)
    """
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):  # reset by peer, or the socket is already closed here
        return True


# ── one run: the agent loop, its events into the channel ────────────────────────────────


class RunSettings(Protocol):
    """What a run needs from the relay (``RelayServer`` has these): the model, the tools' folder, the limits."""

    provider_factory: ProviderFactory  # one provider (one HTTP session) per run
    model: str
    workspace: str
    system: str
    max_turns: int
    max_tokens: int
    max_concurrent: int


def run_query(
    settings: RunSettings,
    query: str,
    channel: SseChannel,
    controller: AbortController,
    history: list[AgentMessage] | None = None,
) -> dict[str, Any]:
    """Run the agent on ``query`` after ``history``, streaming to ``channel``; end with ``done`` or ``error``."""
    history = [] if history is None else history

    def on_event(event: AgentEvent) -> None:
        fields = sse_fields(event)
        if fields is not None:
            channel.send(*fields)

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
        channel.send("error", {"message": str(err)})
        return {"query": query, "error": str(err)}
    except Exception as err:  # a bug in ink_py: one line for the browser, none of the internals
        message = f"internal error ({type(err).__name__}: {err})"
        print(f"ink-py serve: {terminal_safe(message)}", file=sys.stderr)  # the server's words: neutralised
        channel.send("error", {"message": message})
        return {"query": query, "error": message}
    reason = controller.signal.reason if result["stopReason"] == "aborted" else None
    done = {**result, "maxTurns": settings.max_turns, "messages": len(history), "abortReason": reason}
    channel.send("done", done)
    return {"query": query, "stopReason": result["stopReason"]}
