"""``ink-py serve``: the agent streamed to a browser page over SSE — the second article's §二, §六, §七.

::

    $ ink-py serve                       # the built-in scripted model; --base-url/--model for a real one
    http://127.0.0.1:8000/
    open http://127.0.0.1:8000/ in a browser · Ctrl-C stops

Two routes on a stdlib ``ThreadingHTTPServer`` (one thread per browser connection):

    GET /                       page.html — one EventSource, a send button, the answer as it arrives
    GET /chat/stream?query=…    runs the agent once and streams its events as SSE
                 …&session=ID   the same, continuing that conversation (the page sends one; 新对话 makes a new ID)

The article's NestJS controller (§二) wraps LangChain's AsyncIterable in an RxJS Observable
so that a closed browser tab unsubscribes and stops the generation. Here the same duties
are done by hand, each in a few lines you can step through:

- **events out** — the loop's ``on_event`` callback (on the request's own thread) writes
  every agent event as a named SSE event, one HTTP chunk each;
- **hang-up in** — ``SseChannel`` notices the browser left, by a write that fails *and* by
  a watcher thread that sees the socket read as closed, and aborts the run's
  AbortController: the provider's abort listener shuts the model connection, a read
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
    >>> question_from("query=%E8%AF%BB%E5%8F%96+README.md")
    '读取 README.md'

What differs from the article: threads and a callback instead of an async generator and
an Observable; the loop is ink_py's own (the same provider, read tool and parallel batch
as ``ink-py``); ``event: error`` shares its name with EventSource's connection-error event,
so the page tells them apart by ``event.data`` (see page.html). Beyond the article: the
relay listens on 127.0.0.1 unless told otherwise, refuses runs started by other sites
(``Sec-Fetch-Site``) or reached through a foreign host name (``Host``, DNS rebinding),
and answers a question over 4000 characters with 413 before any model is asked. It keeps
at most 100 conversations (the least recently used goes first), each up to 2 MB.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import ipaddress
import json
import os
import re
import select
import socket
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from ..arguments import CliParser, UsageError, port_number, positive_int
from ..bounded_server import BoundedHandler, BoundedServer
from ..cli import DEFAULT_SYSTEM, add_endpoint_arguments, create_provider, resolve_endpoint
from ..core.abort import AbortController, start_thread
from ..core.loop import DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, MAX_CONCURRENT_TOOLS, AgentEvent, run_agent_loop
from ..core.messages import AgentMessage
from ..core.tools.read import create_read_tool
from ..provider.types import LLMProvider, ProviderError
from ..terminal import first_line, terminal_safe

MAX_QUERY_CHARS = 4000  # a longer question gets 413, before any model is asked
KEEP_ALIVE_SECONDS = 5.0  # longest silence on an open stream (well under common 30-60 s proxy timeouts)
WATCH_SECONDS = 0.2  # how often the watcher looks for a browser that hung up
RUNS_KEPT = 100  # how many finished runs RelayServer.runs remembers
SESSIONS_KEPT = 100  # conversations remembered; the least recently used is forgotten first
MAX_SESSION_CHARS = 2_000_000  # a conversation this long (as JSON) takes no further questions
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
STREAM_PATH = "/chat/stream"
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
    kind = event["type"]
    if kind == "text_delta":
        return "text", {"text": event["text"]}
    if kind == "thinking_delta":
        return "thinking", {"text": event["text"]}
    if kind == "tool_call_start":
        return "tool_preparing", {"id": event["id"], "name": event["name"]}
    if kind == "tool_start":
        return "tool_start", {"id": event["toolCallId"], "name": event["name"], "args": event["args"]}
    if kind == "tool_end":
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


class BadRequest(Exception):
    """A client's mistake: answered with ``status`` and a JSON ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def question_from(query_string: str) -> str:
    """The ``query`` parameter of ``/chat/stream``, checked; BadRequest if unusable.

    >>> for qs in ("", "query=%20", "query=" + "x" * 4001):
    ...     try:
    ...         question_from(qs)
    ...     except BadRequest as bad:
    ...         print(bad.status, bad)
    400 missing ?query=… (the question to ask)
    400 the query is empty: ask a question
    413 the query is 4001 characters; at most 4000 are accepted
    """
    values = parse_qs(query_string, keep_blank_values=True, errors="replace").get("query")
    if values is None:
        raise BadRequest(400, "missing ?query=… (the question to ask)")
    query = values[0].strip()
    if not query:
        raise BadRequest(400, "the query is empty: ask a question")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(413, f"the query is {len(query)} characters; at most {MAX_QUERY_CHARS} are accepted")
    return query


def session_from(query_string: str) -> str | None:
    """The optional ``session`` parameter: the conversation to continue; BadRequest if malformed.

    >>> session_from("query=hi"), session_from("query=hi&session=3f2a9c1e-0b7d")
    (None, '3f2a9c1e-0b7d')
    """
    values = parse_qs(query_string, keep_blank_values=True, errors="replace").get("session")
    if values is None:
        return None
    if not _SESSION_ID.fullmatch(values[0]):
        raise BadRequest(400, "session must be 8 to 64 letters, digits, - or _")
    return values[0]


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


# ── the server ──────────────────────────────────────────────────────────────────────────


class RelayServer(BoundedServer):
    """The relay: settings every request shares, the runs in flight, and what finished ones ended with."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        provider_factory: ProviderFactory,
        model: str,
        workspace: str,
        system: str,
        max_turns: int,
        max_tokens: int,
        keep_alive_seconds: float,
        max_concurrent: int,
    ) -> None:
        super().__init__(address, _Handler)
        self.provider_factory = provider_factory  # one provider (one HTTP session) per run
        self.model = model
        self.workspace = workspace
        self.system = system
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.keep_alive_seconds = keep_alive_seconds
        self.max_concurrent = max_concurrent
        host, port = self.server_address[:2]
        self.url = f"http://{host}:{port}/"
        self.loopback = is_loopback(host)
        # {"query", "stopReason"} or {"query", "error"}, as runs end: for tests and the curious
        self.runs: deque[dict[str, Any]] = deque(maxlen=RUNS_KEPT)
        self._active: set[AbortController] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.sessions: OrderedDict[str, list[AgentMessage]] = OrderedDict()  # session id → its history
        self._busy: set[str] = set()  # sessions with a run in flight

    @contextmanager
    def conversation(self, session: str | None) -> Iterator[list[AgentMessage]]:
        """The history a run continues (appended in place), held for this run alone; BadRequest if busy.

        No session: a history of its own, forgotten afterwards (one question per stream, as before).
        """
        if session is None:
            yield []
            return
        with self._lock:
            if session in self._busy:
                raise BadRequest(409, "this conversation is still answering its previous question")
            history = self.sessions.pop(session, [])
            if len(json.dumps(history, ensure_ascii=False)) > MAX_SESSION_CHARS:
                self.sessions[session] = history
                raise BadRequest(413, "this conversation is too long to continue: start a new one (新对话)")
            self.sessions[session] = history  # most recently used last
            while len(self.sessions) > SESSIONS_KEPT:
                self.sessions.popitem(last=False)
            self._busy.add(session)
        try:
            yield history
        finally:
            self.release(session)

    def release(self, session: str | None) -> None:
        """The session's run is over: it may take its next question (before the stream's last byte goes)."""
        with self._lock:
            self._busy.discard(session or "")

    def start(self) -> RelayServer:
        """Serve on a daemon thread (tests, embedding); ``main`` serves on the main thread instead."""
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), name="ink-relay", daemon=True)
        start_thread(self._thread)  # Ctrl-C must reach the main thread, never this one
        return self

    def close(self) -> None:
        """Abort every run in flight, stop serving (if started with ``start``) and free the port."""
        with self._lock:
            active = list(self._active)
        for controller in active:
            controller.abort("the server is shutting down")
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def tracking(self, controller: AbortController) -> Iterator[None]:
        with self._lock:
            self._active.add(controller)
        try:
            yield
        finally:
            with self._lock:
                self._active.discard(controller)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client hung up between requests: not worth a traceback
        print(f"ink-py serve: internal error: {terminal_safe(repr(sys.exc_info()[1]))}", file=sys.stderr)


def make_relay_server(
    *,
    provider_factory: ProviderFactory,
    model: str,
    workspace: str | os.PathLike[str] = ".",
    host: str = "127.0.0.1",
    port: int = 0,
    system: str = DEFAULT_SYSTEM,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    keep_alive_seconds: float = KEEP_ALIVE_SECONDS,
    max_concurrent: int = MAX_CONCURRENT_TOOLS,
) -> RelayServer:
    """Bind the relay (OSError if the port is taken); call ``.start()`` or ``.serve_forever()``.

    ``provider_factory`` makes the provider for each run, e.g.
    ``lambda: OpenAICompletionsProvider(base_url, api_key)`` — what ``ink-py serve`` passes.
    """
    return RelayServer(
        (host, port),
        provider_factory=provider_factory,
        model=model,
        workspace=str(workspace),
        system=system,
        max_turns=max_turns,
        max_tokens=max_tokens,
        keep_alive_seconds=keep_alive_seconds,
        max_concurrent=max_concurrent,
    )


def run_query(
    server: RelayServer,
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
            provider=server.provider_factory(),
            model=server.model,
            system=server.system,
            tools=[create_read_tool(server.workspace)],
            history=history,  # the session's conversation (the loop never appends a partial reply)
            user_message=query,
            max_tokens=server.max_tokens,
            max_turns=server.max_turns,
            on_event=on_event,
            signal=controller.signal,  # ours alone: ctrl_c_aborts is for the terminal's main thread
            max_concurrent=server.max_concurrent,
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
    done = {**result, "maxTurns": server.max_turns, "messages": len(history), "abortReason": reason}
    channel.send("done", done)
    return {"query": query, "stopReason": result["stopReason"]}


class _Handler(BoundedHandler):  # beyond the article: timeouts and a bound on connections
    protocol_version = "HTTP/1.1"  # chunked SSE bodies; the page and errors keep the connection alive
    server_version = "ink-py-serve"
    server: RelayServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: one line per request would bury the URL the user needs

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if "Content-Length" in self.headers or "Transfer-Encoding" in self.headers:
            self.close_connection = True  # a GET with a body: it is never read, so don't reuse the connection
        refusal = foreign_request(self.headers, self.server.server_address[1], self.server.loopback)
        if refusal is not None:
            self._send_json(403, {"error": refusal})
        elif url.path in ("/", "/index.html"):
            page = page_html()
            self._send(200, "text/html; charset=utf-8", page.encode("utf-8"), page_headers(page))
        elif url.path == STREAM_PATH:
            self._stream(url.query)
        else:
            self._send_json(404, {"error": f"not found: {url.path} (try / or {STREAM_PATH}?query=…)"})

    def do_POST(self) -> None:
        self.close_connection = True  # the body is never read: don't reuse the connection
        self._send_json(405, {"error": f"use GET {STREAM_PATH}?query=… (EventSource only sends GET)"})

    def _stream(self, query_string: str) -> None:
        try:
            query = question_from(query_string)
            session = session_from(query_string)
            with self.server.conversation(session) as history:
                self._run(query, history, session)
        except BadRequest as bad:
            self._send_json(bad.status, {"error": str(bad)})

    def _run(self, query: str, history: list[AgentMessage], session: str | None) -> None:
        self.close_connection = True  # one run per connection
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Accel-Buffering", "no")  # nginx in front: pass each event on at once
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()

        controller = AbortController()  # this browser's run, and only it
        channel = SseChannel(self.wfile, self.connection, controller, self.server.keep_alive_seconds)
        with self.server.tracking(controller):
            channel.start()
            try:
                outcome = run_query(self.server, query, channel, controller, history)
            finally:
                self.server.release(session)  # the history is settled: a next question may come at once
                channel.finish()
        self.server.runs.append(outcome)

    def _send_json(self, status: int, value: Any) -> None:
        self._send(status, "application/json; charset=utf-8", json.dumps(value, ensure_ascii=False).encode("utf-8"))

    def _send(self, status: int, content_type: str, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def end_headers(self) -> None:
        self.send_header("X-Content-Type-Options", "nosniff")  # beyond the article: on every response
        super().end_headers()


def foreign_request(headers: Mapping[str, str], port: int, loopback: bool) -> str | None:
    """Why a request must be refused, or None. Bound to this machine, the relay answers
    only its own page, a typed URL and tools like curl: another site open in the same
    browser may not start runs (``Sec-Fetch-Site``), nor may a DNS name that was made to
    point at 127.0.0.1 read them (``Host``).

    >>> foreign_request({"Host": "127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}, 8000, True) is None
    True
    >>> foreign_request({"Host": "127.0.0.1:8000", "Sec-Fetch-Site": "cross-site"}, 8000, True)
    'requests from other sites are refused (Sec-Fetch-Site: cross-site)'
    >>> foreign_request({"Host": "evil.example:8000"}, 8000, True)
    'this relay only answers http://127.0.0.1:8000/ or http://localhost:8000/ (Host: evil.example:8000)'
    """
    site = headers.get("Sec-Fetch-Site")  # sent by browsers only; curl and requests send none
    if site is not None and site not in ("same-origin", "none"):  # "none": typed in the address bar
        return f"requests from other sites are refused (Sec-Fetch-Site: {site})"
    host = headers.get("Host")
    origin = headers.get("Origin")  # beyond the article: older browsers send Origin but no Sec-Fetch-Site
    if origin is not None and origin not in own_origins(host, port, loopback):
        return f"requests from other sites are refused (Origin: {origin[:200]})"
    if loopback and host is not None and host not in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        return f"this relay only answers http://127.0.0.1:{port}/ or http://localhost:{port}/ (Host: {host})"
    return None


def own_origins(host: str | None, port: int, loopback: bool) -> set[str]:
    """The origins of this relay's own page: the loopback names, or the Host it was reached by.

    >>> sorted(own_origins("127.0.0.1:8000", 8000, True))[0]
    'http://127.0.0.1:8000'
    """
    if loopback:
        return {f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"}
    return {f"http://{host}"} if host else set()


def page_headers(page: str) -> dict[str, str]:
    """Beyond the article: the page may run only its own inline script and style, talk only to
    this server, and never be framed (clickjacking).

    >>> page_headers("<script>x</script>")["Content-Security-Policy"].split("; ")[1]
    "script-src 'sha256-LXEWQrcmsEQBYnyp+6wy9chTD7GQPMTbAiWHF5IaSIE='"
    """
    scripts = " ".join(_hashes(page, "script")) or "'none'"
    styles = " ".join(_hashes(page, "style")) or "'none'"
    policy = (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; img-src data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return {"Content-Security-Policy": policy, "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}


def _hashes(page: str, tag: str) -> list[str]:
    """CSP hash sources for each inline ``<tag>…</tag>`` of the page."""
    bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.DOTALL)
    return [f"'sha256-{base64.b64encode(hashlib.sha256(b.encode('utf-8')).digest()).decode()}'" for b in bodies]


def page_html() -> str:
    """page.html, read on every request: edit it and reload the browser to see the change."""
    return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")


# ── ink-py serve ────────────────────────────────────────────────────────────────────────


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``ink-py serve`` flags; the endpoint rules and env fallbacks are ``ink-py``'s.

    >>> args = parse_args(["--port", "8000", "--max-turns", "5"])
    >>> args.host, args.port, args.max_turns
    ('127.0.0.1', 8000, 5)
    """
    parser = CliParser(
        prog="ink-py serve",
        description="Serve the agent to a browser page: GET / is the page, GET /chat/stream?query=… the SSE stream.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)")
    parser.add_argument("--port", type=port_number, default=8000, help="port to listen on (default 8000; 0: any)")
    parser.add_argument("--workspace", default=".", help="folder the read tool may read (default: current directory)")
    add_endpoint_arguments(parser)
    parser.add_argument(
        "--max-turns", type=positive_int, default=DEFAULT_MAX_TURNS, help="stop a run after this many replies"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """``ink-py serve``: print the URL first, serve until Ctrl-C, exit 0."""
    args = parse_args(argv)
    try:
        return serve(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def serve(args: argparse.Namespace) -> int:
    base_url, model, api_key, model_server = resolve_endpoint(args)  # the same rules as ink-py
    try:
        try:
            relay = make_relay_server(
                provider_factory=lambda: create_provider(args.api, base_url, api_key),
                model=model,
                workspace=args.workspace,
                host=args.host,
                port=args.port,
                max_turns=args.max_turns,
            )
        except OSError as err:
            raise UsageError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None
        print(relay.url, flush=True)  # the first line: scripts read the URL from here
        if model_server is not None:
            note = f"(no --base-url: a built-in scripted model at {model_server.base_url} is answering)"
            print(note, file=sys.stderr)
        if not is_loopback(args.host):
            print(f"warning: --host {args.host} lets other machines run the agent on {args.workspace}", file=sys.stderr)
        print(f"open {relay.url} in a browser · Ctrl-C stops", file=sys.stderr, flush=True)
        try:
            relay.serve_forever()
        except KeyboardInterrupt:
            pass  # Ctrl-C is how this command ends: no traceback
        finally:
            relay.close()
        return 0
    finally:
        if model_server is not None:
            model_server.close()


def is_loopback(host: str) -> bool:
    """
    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
