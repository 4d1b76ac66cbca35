"""The relay: the agent streamed to a browser page over SSE — the second article's §二, §六, §七.

One standard WSGI application (PEP 3333), ``RelayApp``, with three routes:

    GET ./                      page.html — one EventSource, a send button, the answer as it arrives
    GET ./chat/stream?query=…   runs the agent once and streams its events as SSE (stream.py)
                 …&session=ID   the same, continuing that conversation (sessions.py)
                 …&run=ID       beyond §七: the answer's id; asked again (Last-Event-ID or after=N),
                                it resumes that run instead of starting one (runs.py, follow.py)
    POST ./chat/stop?run=ID     stops that run, on whichever worker or host runs it (producer.py)

Any WSGI server runs it; ``create_app()`` takes its settings from the environment —
``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``INK_MODEL``, ``INK_API`` (the built-in scripted
model when there is no base URL, as ``ink-py`` does), ``INK_WORKSPACE`` (the folder the
read tool may read), ``INK_SESSION_DB`` or ``INK_REDIS_URL`` (where conversations and runs
live: stores.py), ``INK_RESUME_GRACE``, ``INK_RUN_TTL``, ``INK_ALLOWED_HOSTS`` (host names a
proxy in front passes on), the per-client quotas ``INK_MAX_…`` and ``FORWARDED_ALLOW_IPS``
(quotas.py, ink_py/peers.py)::

    gunicorn -k gthread --threads 64 'ink_py.second_article.relay:create_app()'
    waitress-serve --threads 64 --call ink_py.second_article.relay:create_app

The page's URLs are relative, so it works mounted under a prefix (``SCRIPT_NAME``).
``ink-py serve`` runs the same application on ``wsgi_server.py`` (standard library only).
What the relay refuses is ``guards.py``; docs/relay-wsgi.md says how to deploy it.

    >>> parse_args([]).port, STREAM_PATH, STOP_PATH
    (8000, '/chat/stream', '/chat/stop')
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from importlib import resources
from typing import TYPE_CHECKING, Any, TextIO

from ..arguments import CliParser, UsageError, cannot_listen, encodable_text, port_number, positive_int
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
from ..peers import Trusted, client_of, forwarded_warning
from ..runner import with_tool_choice
from ..terminal import one_line, terminal_safe
from .follow import Item, follow
from .guards import (
    BadRequest,
    answers_any_host,
    foreign_request,
    is_loopback,
    page_headers,
    parameters,
    prefix_location,
    question_from,
    resume_point,
    run_from,
    session_from,
)
from .producer import STOPPED, Event, Producers, Send
from .quotas import DEFAULTS, Counted, Quotas, Readers
from .runs import GONE, NO_SESSION, MemoryRuns, RunKey, RunLog, StoreError
from .sessions import UNAVAILABLE_RETRY_SECONDS, Conversations, SessionStore
from .stores import env_redis_url, open_stores, quotas_from, seconds_setting, trusted_from
from .stream import SEND_TIMEOUT_SECONDS, ProviderFactory, RunSettings, SseBody, run_query, watch_writes
from .wsgi_server import DISCONNECTED, WsgiServer

if TYPE_CHECKING:
    from ..scripted.server import ModelServer

RUNS_KEPT = 100  # how many finished runs RelayApp.runs remembers
APP_LOAD_ERROR = 4  # create_app's exit code for a bad setting (gunicorn's Arbiter.APP_LOAD_ERROR)
STREAM_PATH = "/chat/stream"
STOP_PATH = "/chat/stop"
NOSNIFF = ("X-Content-Type-Options", "nosniff")  # beyond the article: on every response
SSE_HEADERS = [
    ("Content-Type", "text/event-stream; charset=utf-8"),
    ("Cache-Control", "no-cache"),  # no proxy or browser cache keeps a stream
    ("X-Accel-Buffering", "no"),  # nginx in front: pass each event on at once
    NOSNIFF,
]
REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 403: "Forbidden", 404: "Not Found"}
REASONS |= {405: "Method Not Allowed", 409: "Conflict", 413: "Content Too Large", 414: "URI Too Long"}
REASONS |= {429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}
RUN_STORE_UNAVAILABLE = "the run store is unavailable"  # what a client is told; the server's log has why
StartResponse = Callable[..., Any]


# ── the application ─────────────────────────────────────────────────────────────────────


class RelayApp:
    """The relay as a WSGI application: ``app(environ, start_response)`` → the response body."""

    def __init__(
        self,
        settings: RunSettings,
        store: SessionStore | None = None,
        hosts: Iterable[str] = (),
        run_log: RunLog | None = None,
        quotas: Quotas = DEFAULTS,
        trusted: Trusted = (),
    ) -> None:
        self.settings = settings
        self.allowed_hosts = tuple(hosts)  # INK_ALLOWED_HOSTS: the Host names a proxy in front passes on
        self.store: SessionStore = store if store is not None else Conversations(quotas)
        self.run_log: RunLog = run_log if run_log is not None else MemoryRuns(quotas=quotas)  # beyond §七
        self.trusted = trusted  # FORWARDED_ALLOW_IPS: the proxies whose X-Forwarded-For names the client
        self.readers = Readers(quotas.readers_per_run)  # beyond §七: per client quotas (quotas.py)
        self.warned_forwarded = False
        self.producers = Producers(self.run_log)
        # {"query", "stopReason"} or {"query", "error"}, as runs end: for tests and the curious
        self.runs: deque[dict[str, Any]] = deque(maxlen=RUNS_KEPT)
        self.closers: list[Callable[[], None]] = []  # run by close(): the built-in model, if any

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            body = self._route(environ, start_response)
            return watch_writes(body, environ, self.settings.send_timeout)  # beyond §二: a stuck reader is dropped
        except BadRequest as bad:
            if bad.detail:
                log(environ, bad.detail)  # beyond §七: the store's trouble for the log, never for the client
            allow = "POST" if environ.get("PATH_INFO") == STOP_PATH else "GET"
            headers = [("Allow", allow)] * (bad.status == 405)
            headers += [("Retry-After", str(bad.retry_after))] * (bad.retry_after is not None)
            return json_reply(start_response, bad.status, {"error": str(bad)}, headers)
        except StoreError as err:  # the run store failed before the response began
            log(environ, f"{RUN_STORE_UNAVAILABLE}: {err}")
            retry = [("Retry-After", str(UNAVAILABLE_RETRY_SECONDS))]
            return json_reply(start_response, 503, {"error": RUN_STORE_UNAVAILABLE}, retry)

    def _route(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", ""), environ["REQUEST_METHOD"]
        if method != ("POST" if path == STOP_PATH else "GET"):
            if path == STOP_PATH:
                raise BadRequest(405, f"use POST {STOP_PATH}?run=…&session=… (what the page's stop button sends)")
            raise BadRequest(405, f"use GET {STREAM_PATH}?query=… (EventSource only sends GET)")
        refusal = foreign_request(  # the POST of chat/stop too: navigator.sendBeacon sends the page's Origin
            request_headers(environ),
            int(environ.get("SERVER_PORT") or 0),
            not answers_any_host(environ.get("SERVER_NAME", ""), self.allowed_hosts),
            environ.get("wsgi.url_scheme", "http"),
            self.allowed_hosts,
        )
        if refusal is not None:
            raise BadRequest(403, refusal)
        if path == "":  # mounted at /prefix and asked for /prefix: the page's relative URLs need the /
            location = prefix_location(environ.get("SCRIPT_NAME", ""))  # never a way off-site
            start_response("308 Permanent Redirect", [("Location", location), ("Content-Length", "0"), NOSNIFF])
            return []
        if path in ("/", "/index.html"):
            page = page_html()
            body = page.encode("utf-8")
            headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))]
            start_response("200 OK", [*headers, ("Cache-Control", "no-cache"), *page_headers(page).items(), NOSNIFF])
            return [body]
        if path == STREAM_PATH:
            return self._stream(environ, start_response)
        if path == STOP_PATH:
            return self._stop(environ, start_response)
        where = (environ.get("SCRIPT_NAME", "") + path).encode("latin-1", "replace").decode("utf-8", "replace")
        raise BadRequest(404, f"not found: {where[:200]} (try ./ or ./chat/stream?query=…)")  # PEP 3333: bytes

    def _stream(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        params = parameters(environ.get("QUERY_STRING", ""))  # beyond §七: 414 before parsing, then parsed once
        query = question_from(params) if "query" in params else None  # 400 / 413 before any model is asked
        session = session_from(params)
        run = run_from(params) or str(uuid.uuid4())  # beyond §七: a request without one gets one
        after = resume_point(params, environ.get("HTTP_LAST_EVENT_ID"))  # beyond §七: a reconnect, a reload
        key = (session or NO_SESSION, run)  # another session's run id names another (unknown) run
        found = self.run_log.status(key)
        if found.state == "unknown":
            if after is not None:  # a resume never starts a run, whatever else the URL says: once, the end
                return self._events(start_response, run, iter([(None, "error", {"message": GONE})]))
            query = query if query is not None else question_from(params)  # 400: a new run needs one
            client = self._client(environ)
            token = self.run_log.claim(key, client)  # beyond §七: 429 beyond the client's runs, 503 when full
            if token is not None:
                self._start(key, token, query, session, client)
            after = 0  # the run's own first reader, or one that lost the race to start it: from the start
        elif after is not None and after >= found.last and found.state == "ended":
            start_response("204 No Content", [("Cache-Control", "no-cache"), NOSNIFF])
            return []  # WHATWG: 204 tells EventSource to stop reconnecting
        elif after is not None and after > found.last:
            message = f"no event {after} in this answer yet (it has {found.last}): the id is not one it sent"
            return self._events(start_response, run, iter([(None, "error", {"message": message})]))
        counted_out = self.readers.enter(key)  # beyond §七: 429 beyond INK_MAX_READERS_PER_RUN
        probe = environ.get(DISCONNECTED) or environ.get("waitress.client_disconnected") or never
        items = follow(self.run_log, key, after or 0, self.settings.keep_alive_seconds, probe, partial(log, environ))
        return self._events(start_response, run, Counted(items, counted_out))

    def _events(self, start_response: StartResponse, run: str, items: Iterator[Item]) -> SseBody:
        start_response("200 OK", [*SSE_HEADERS, ("Ink-Run", run)])  # the run's id, for curl and scripts
        return SseBody(items)

    def _client(self, environ: Mapping[str, Any]) -> str:
        """Who asks (ink_py/peers.py); an X-Forwarded-For from a proxy no one said to trust: one warning."""
        if not self.warned_forwarded and (warning := forwarded_warning(environ, self.trusted)) is not None:
            self.warned_forwarded = True
            print(warning, file=sys.stderr, flush=True)
        return client_of(environ, self.trusted)

    def _start(self, key: RunKey, token: int, query: str, session: str | None, client: str) -> None:
        """Start the run ``key`` claimed with ``token``: hold its conversation, run the agent (producer.py)."""
        try:
            history = self.store.hold(session, client) if session is not None else []  # 409, 429
        except BaseException:
            self.run_log.forget(key, token)  # never started: the same id may ask again
            raise
        controller = AbortController()  # this run's, and only its

        def answer(send: Send) -> Event:  # on the run's own thread
            try:
                record, last = run_query(self.settings, query, send, controller, history)
            finally:
                if session is not None:
                    self._put_away(session, history)  # before `done`: a next question may come at once
            self.runs.append(record)
            return last

        self.producers.start(key, token, controller, answer)

    def _stop(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Beyond §七: ``POST chat/stop?run=R&session=S`` — the page's stop button and beforeunload."""
        params = parameters(environ.get("QUERY_STRING", ""))
        session, run = session_from(params), run_from(params)
        if run is None:
            raise BadRequest(400, f"missing ?run=… (the answer to stop): POST {STOP_PATH}?run=…&session=…")
        state = self.run_log.stop((session or NO_SESSION, run), STOPPED)
        if state == "unknown":  # or another session's: the same answer, nothing of it touched
            raise BadRequest(404, f"no answer {run} in this session (it ended over INK_RUN_TTL ago, or never ran)")
        return json_reply(start_response, 202 if state == "running" else 200, {"run": run, "state": state})

    def _put_away(self, session: str, history: list[AgentMessage]) -> None:
        try:
            self.store.release(session, history)
        except Exception as err:  # the store failed: the answer was shown, this turn is not kept
            print(f"ink-py serve: could not keep conversation {session}: {terminal_safe(str(err))}", file=sys.stderr)

    def close(self) -> None:
        """Abort every run in flight (each writes its last event), close the stores and what ``closers`` lists."""
        self.producers.close()
        self.store.close()
        self.run_log.close()
        for closer in self.closers:
            closer()


def never() -> bool:
    """The hang-up probe of a server that has none: a failed write tells instead."""
    return False


def log(environ: Mapping[str, Any], line: str) -> None:
    """One line for the server's log (``wsgi.errors``), neutralised: a store's words may hold anything."""
    errors: TextIO = environ.get("wsgi.errors") or sys.stderr
    errors.write(f"ink-py serve: {terminal_safe(one_line(line))[:500]}\n")
    errors.flush()


def request_headers(environ: Mapping[str, Any]) -> dict[str, str]:
    """The headers the guards read, from their CGI names."""
    names = {"Host": "HTTP_HOST", "Origin": "HTTP_ORIGIN", "Sec-Fetch-Site": "HTTP_SEC_FETCH_SITE"}
    return {name: environ[key] for name, key in names.items() if key in environ}


def json_reply(
    start_response: StartResponse, status: int, value: Any, headers: list[tuple[str, str]] | None = None
) -> list[bytes]:
    body = json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace")
    start_response(
        f"{status} {REASONS.get(status, 'Error')}",
        [
            ("Content-Type", "application/json; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-cache"),
            *(headers or []),
            NOSNIFF,
        ],
    )
    return [body]


def page_html() -> str:
    """page.html, read on every request: edit it and reload the browser to see the change."""
    return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")


def create_app() -> RelayApp:
    """The relay for any WSGI server, its settings from the environment (see the module's docstring).

    A setting it cannot use is one ``error: …`` line and exit code 4, before any request:
    gunicorn's "the application failed to load", on which it stops rather than start the
    worker again and again.
    """
    try:
        return app_for(parse_args([f"--workspace={os.environ.get('INK_WORKSPACE') or '.'}"]))[0]
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        raise SystemExit(APP_LOAD_ERROR) from None


def app_for(args: argparse.Namespace) -> tuple[RelayApp, ModelServer | None]:
    """The application for ``ink-py serve``'s flags (``create_app``: for the environment's), and
    the built-in scripted model it started, if no endpoint was configured (``app.close()`` stops it)."""
    check_tool_choice(args.tool_choice, ["read"])  # the relay's one tool
    base_url, model, api_key, model_server = resolve_endpoint(args)  # the same rules as ink-py
    try:
        settings = run_settings(
            provider_factory=lambda: with_tool_choice(create_provider(args.api, base_url, api_key), args.tool_choice),
            model=model,
            workspace=args.workspace,
            max_turns=args.max_turns,
            max_tokens=args.max_tokens,
            max_concurrent=1 if args.serial_tools else MAX_CONCURRENT_TOOLS,
            send_timeout=seconds_setting(os.environ, "INK_SEND_TIMEOUT", SEND_TIMEOUT_SECONDS, 1, 3600),
        )
        hosts = [name.strip() for name in os.environ.get("INK_ALLOWED_HOSTS", "").split(",") if name.strip()]
        quotas, trusted = quotas_from(os.environ), trusted_from(os.environ)  # UsageError: exit 4, before any request
        store, run_log = open_stores(env_redis_url(args.redis), os.environ, quotas)
        app = RelayApp(settings, store, hosts, run_log, quotas, trusted)
    except BaseException:
        if model_server is not None:
            model_server.close()
        raise
    if model_server is not None:
        app.closers.append(model_server.close)
    return app, model_server


# ── ink-py serve: the application on the standard library's server ──────────────────────


class RelayServer(WsgiServer):
    """``ink-py serve``: the relay's application on a bounded, zero-dependency WSGI server."""

    app: RelayApp

    def __init__(self, address: tuple[str, int], app: RelayApp) -> None:
        super().__init__(address, app, app.settings.send_timeout)
        host, port = self.host_and_port
        self.url = f"http://{host}:{port}/"
        self._thread: threading.Thread | None = None

    @property
    def runs(self) -> deque[dict[str, Any]]:
        return self.app.runs

    @property
    def max_turns(self) -> int:
        return self.app.settings.max_turns

    @property
    def sessions(self) -> OrderedDict[str, list[AgentMessage]]:
        """The conversations kept in memory, session id → its history (least recently used first)."""
        store = self.app.store
        assert isinstance(store, Conversations), "INK_SESSION_DB keeps them in its file"
        return store.histories

    def start(self) -> RelayServer:
        """Serve on a daemon thread (tests, embedding); ``main`` serves on the main thread instead."""
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), name="ink-relay", daemon=True)
        start_thread(self._thread)  # Ctrl-C must reach the main thread, never this one
        return self

    def close(self) -> None:
        """Abort every run in flight, stop serving (if started with ``start``) and free the port."""
        self.app.close()
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_relay_server(
    *,
    provider_factory: ProviderFactory,
    model: str,
    workspace: str | os.PathLike[str] = ".",
    host: str = "127.0.0.1",
    port: int = 0,
    store: SessionStore | None = None,
    run_log: RunLog | None = None,
    quotas: Quotas = DEFAULTS,
    trusted: Trusted = (),
    **more: Any,
) -> RelayServer:
    """Bind the relay (OSError if the port is taken); call ``.start()`` or ``.serve_forever()``.

    ``provider_factory`` makes the provider for each run, e.g.
    ``lambda: OpenAICompletionsProvider(base_url, api_key)``; ``more`` are RunSettings'
    (``max_turns=3``, ``keep_alive_seconds=0.05`` …).
    """
    settings = run_settings(provider_factory=provider_factory, model=model, workspace=str(workspace), **more)
    return RelayServer((host, port), RelayApp(settings, store, run_log=run_log, quotas=quotas, trusted=trusted))


def run_settings(**given: Any) -> RunSettings:
    """RunSettings with ink-py's defaults for what is not ``given``."""
    defaults = {"system": DEFAULT_SYSTEM, "max_turns": DEFAULT_MAX_TURNS, "max_tokens": DEFAULT_MAX_TOKENS}
    return RunSettings(**{**defaults, "max_concurrent": MAX_CONCURRENT_TOOLS, **given})


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``ink-py serve`` flags; the endpoint rules and env fallbacks are ``ink-py``'s.

    >>> args = parse_args(["--port", "8000", "--max-turns", "5"])
    >>> args.host, args.port, args.max_turns
    ('127.0.0.1', 8000, 5)
    """
    parser = CliParser(
        prog="ink-py serve",
        description="Serve the agent to a browser page: GET / is the page, GET /chat/stream?query=… the SSE stream.",
        epilog="environment: INK_SESSION_DB=FILE keeps conversations in a SQLite file; INK_RESUME_GRACE, "
        "INK_RUN_TTL, INK_SEND_TIMEOUT, the per-client limits INK_MAX_…, FORWARDED_ALLOW_IPS (see docs/relay-wsgi.md)",
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
    parser.add_argument(
        "--redis",
        metavar="URL",
        type=encodable_text,
        help="keep conversations and answers in Redis (redis://HOST:PORT/DB; default: INK_REDIS_URL, else memory)",
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
    app, model_server = app_for(args)
    try:
        relay = RelayServer((args.host, args.port), app)
    except OSError as err:
        app.close()
        raise UsageError(cannot_listen(args.host, args.port, err)) from None
    print(relay.url, flush=True)  # the first line: scripts read the URL from here
    built_in = model_server.base_url if model_server is not None else ""
    for note in endpoint_notes(args, built_in, model_server):  # as ink-py: the environment's settings named
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


if __name__ == "__main__":
    raise SystemExit(main())
