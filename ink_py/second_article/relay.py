"""``ink-py serve``: the agent streamed to a browser page over SSE — the second article's §二, §六, §七.

::

    $ ink-py serve                       # the built-in scripted model; --base-url/--model for a real one
    http://127.0.0.1:8000/
    open http://127.0.0.1:8000/ in a browser · Ctrl-C stops

Two routes on a stdlib ``ThreadingHTTPServer`` (one thread per browser connection):

    GET /                       page.html — one EventSource, a send button, the answer as it arrives
    GET /chat/stream?query=…    runs the agent once and streams its events as SSE
                 …&session=ID   the same, continuing that conversation (the page sends one; 新对话 makes a new ID)

This module is the HTTP server and the command; one run's event stream (the article's
``@Sse`` Observable, the events, hang-ups, keep-alives) is ``stream.py``, the conversations
``sessions.py``, the refusals and the page's headers ``guards.py``.

What differs from the article: threads and a callback instead of an async generator and
an Observable; the loop is ink_py's own (the same provider, read tool and parallel batch
as ``ink-py``); ``event: error`` shares its name with EventSource's connection-error event,
so the page tells them apart by ``event.data`` (see page.html).

    >>> parse_args([]).port, STREAM_PATH
    (8000, '/chat/stream')
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from ..arguments import CliParser, UsageError, cannot_listen, encodable_text, port_number, positive_int
from ..bounded_server import BoundedHandler, BoundedServer
from ..cli import (
    DEFAULT_SYSTEM,
    add_endpoint_arguments,
    check_tool_choice,
    create_provider,
    endpoint_notes,
    resolve_endpoint,
)
from ..core.abort import AbortController, start_thread
from ..core.loop import DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, MAX_CONCURRENT_TOOLS
from ..core.messages import AgentMessage
from ..runner import with_tool_choice
from ..terminal import terminal_safe
from .guards import BadRequest, foreign_request, is_loopback, page_headers, question_from, session_from
from .sessions import Conversations
from .stream import KEEP_ALIVE_SECONDS, ProviderFactory, SseChannel, run_query

RUNS_KEPT = 100  # how many finished runs RelayServer.runs remembers
STREAM_PATH = "/chat/stream"


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
        host, port = self.host_and_port
        self.url = f"http://{host}:{port}/"
        self.loopback = is_loopback(host)
        # {"query", "stopReason"} or {"query", "error"}, as runs end: for tests and the curious
        self.runs: deque[dict[str, Any]] = deque(maxlen=RUNS_KEPT)
        self._active: set[AbortController] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.conversations = Conversations()  # the page's sessions, each continuing its history

    @property
    def sessions(self) -> OrderedDict[str, list[AgentMessage]]:
        """The conversations kept, session id → its history (least recently used first): for tests and the curious."""
        return self.conversations.histories

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
        refusal = foreign_request(self.headers, self.server.host_and_port[1], self.server.loopback)
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
            with self.server.conversations.hold(session) as history:
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
                self.server.conversations.release(session)  # history settled: a next question may come at once
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
    parser.add_argument("--max-tokens", type=positive_int, default=DEFAULT_MAX_TOKENS, help="output limit per reply")
    parser.add_argument(
        "--tool-choice",
        type=encodable_text,
        default="auto",
        metavar="auto|required|none|NAME",
        help="what the model is told about calling tools, as in ink-py (NAME: forced on a run's first turn only)",
    )
    parser.add_argument(
        "--serial-tools", action="store_true", help="run tool calls one at a time (default: reads run side by side)"
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
    check_tool_choice(args.tool_choice, ["read"])  # the relay's one tool
    base_url, model, api_key, model_server = resolve_endpoint(args)  # the same rules as ink-py
    try:
        try:
            relay = make_relay_server(
                provider_factory=lambda: with_tool_choice(
                    create_provider(args.api, base_url, api_key), args.tool_choice
                ),
                model=model,
                workspace=args.workspace,
                host=args.host,
                port=args.port,
                max_turns=args.max_turns,
                max_tokens=args.max_tokens,
                max_concurrent=1 if args.serial_tools else MAX_CONCURRENT_TOOLS,
            )
        except OSError as err:
            raise UsageError(cannot_listen(args.host, args.port, err)) from None
        print(relay.url, flush=True)  # the first line: scripts read the URL from here
        for note in endpoint_notes(args, base_url, model_server):  # as ink-py: the environment's settings named
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


if __name__ == "__main__":
    raise SystemExit(main())
