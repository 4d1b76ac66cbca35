"""The scripted model over HTTP: Chat Completions, Responses and Messages on 127.0.0.1.

With no ``--base-url``, ``ink-py`` starts this server on a background thread and talks to it
through the same provider code a real endpoint gets (real sockets, chunked SSE, CRLF frames,
reads that cut a character), so the demo needs no network and no key; ``ink-py serve-model``
runs it alone, for ``curl -N`` or any client, each dialect as its provider sends it
(tests/test_client_matrix.py runs eleven). Sections: ``ModelServer`` and
``start_model_server``, the handler (its routes), ``pace``, the command. What to answer is
decided in ``script``; how it is written in ``turn``, the encoders (``chat_wire``,
``messages_wire``, ``responses_wire``), ``dialects`` and ``wire``; routes: docs/modules.md.

    >>> vars(parse_args(["--scenario", "slow"]))   # the command's settings (delay None: INK_SCRIPTED_DELAY's)
    {'host': '127.0.0.1', 'port': 0, 'scenario': 'slow', 'delay': None}
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from ..arguments import CliParser, UsageError, cannot_listen, non_negative_float, port_number
from ..bounded_server import BodyTooLarge, BoundedHandler, BoundedServer
from ..core.abort import start_thread
from .chat_wire import build_reply
from .dialects import build_dialect_reply
from .response_store import ResponseStore, new_store
from .script import DEFAULT_SCENARIO, MODEL_ID, scenario_names
from .wire import MESSAGES, RESPONSES, SSE_TYPE, Reply, error_body, error_reply, json_reply

DEFAULT_DELAY = 0.02  # seconds between writes: enough to watch the stream arrive ...
PAUSES_PER_REPLY = 75  # ... but a longer reply's pauses shrink to add up to 75 delays (1.5 s at 0.02)
DELAY_VARIABLE = "INK_SCRIPTED_DELAY"  # the delay for every built-in model (serve-model: --delay too)
REQUESTS_KEPT = 8  # request bodies remembered (ModelServer.requests): at most 8 × MAX_BODY_BYTES
PACING = (
    f"the built-in model pauses {DELAY_VARIABLE} seconds between writes (default {DEFAULT_DELAY}, 0: none); "
    f"a longer reply's pauses shrink to add up to {PAUSES_PER_REPLY} of them ({PAUSES_PER_REPLY * DEFAULT_DELAY:g} s "
    "at the default)"
)
HOLD_COMMENT_SECONDS = 10.0  # the abort scenario's silence: an SSE comment this often, so no read times out
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
DIALECT_PATHS = {  # the same script in the two other dialects (scripted/dialects.py)
    "/v1/messages": MESSAGES, "/messages": MESSAGES, "/v1/responses": RESPONSES, "/responses": RESPONSES,
}  # fmt: skip
MODELS_PATHS = ("/v1/models", "/models")


class ModelServer:
    """A running scripted model: ``base_url``, the last ``REQUESTS_KEPT`` ``requests`` it received, the
    Responses it ``kept``, ``close()``."""

    def __init__(self, httpd: _Server, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        host, port = httpd.host_and_port
        self.base_url = f"http://{host}:{port}/v1"
        self.requests: deque[Any] = httpd.received  # the latest request bodies, in arrival order
        self.kept = httpd.kept  # the Responses it keeps (response_store)

    def close(self) -> None:
        """Stop serving and drop open connections (a held or streaming reply ends at once)."""
        if self._httpd.stopping.is_set():
            return
        self._httpd.stopping.set()  # wakes handlers pausing between writes or holding a connection
        self._httpd.shutdown()
        self._httpd.server_close()
        for conn in list(self._httpd.connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes a handler waiting for a keep-alive request
            except OSError:
                pass
        self._thread.join()

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_model_server(
    host: str = "127.0.0.1",
    port: int = 0,
    scenario: str = DEFAULT_SCENARIO,
    delay: float = DEFAULT_DELAY,
    kept: ResponseStore | None = None,
) -> ModelServer:
    """Serve on a daemon thread and return at once. Raises ValueError for an unknown scenario,
    OSError when the port cannot be bound. ``delay``: seconds between writes (``pace``); ``kept``:
    where the Responses it answers are kept (default: a new store, ``response_store``'s bounds)."""
    if scenario not in scenario_names():
        raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(scenario_names())}")
    httpd = _Server((host, port), _Handler)
    httpd.scenario, httpd.delay = scenario, delay
    if kept is not None:
        httpd.kept = kept
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), name="ink-scripted-model", daemon=True)
    start_thread(thread)  # Ctrl-C must reach the main thread, never this one
    return ModelServer(httpd, thread)


class _Server(BoundedServer):
    """ThreadingHTTPServer (daemon threads, bounded: see bounded_server) plus the settings and
    records the handlers share."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.scenario = DEFAULT_SCENARIO
        self.delay = DEFAULT_DELAY
        self.received: deque[Any] = deque(maxlen=REQUESTS_KEPT)  # beyond a window, memory would grow for ever
        self.kept = new_store()  # the Responses answered, for previous_response_id and item_reference: bounded
        self.stopping = threading.Event()
        self.connections: set[socket.socket] = set()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client hung up: not worth a traceback
        super().handle_error(request, client_address)


class _Handler(BoundedHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies
    server_version = "ink-scripted-model"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self) -> None:
        self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the terminal belongs to the agent's output

    def do_GET(self) -> None:
        path = self._path()
        if path in MODELS_PATHS:
            self._send_json(200, {"object": "list", "data": [_model_entry(MODEL_ID)]})
        elif path.startswith(tuple(p + "/" for p in MODELS_PATHS)):
            self._send_json(200, _model_entry(path.rsplit("/", 1)[1]))  # any id: one scripted model
        else:
            self._send_json(404, error_body(f"Invalid URL (GET {path})"))

    def do_POST(self) -> None:
        try:
            raw = self._read_body()  # read first, so a keep-alive connection stays in step
        except BodyTooLarge as err:  # beyond the article: never read, and the connection is dropped
            self.close_connection = True
            self._send_json(413, error_body(str(err)))
            return
        path = self._path()
        if path not in CHAT_PATHS and path not in DIALECT_PATHS:
            self._send_json(404, error_body(f"Invalid URL (POST {path})"))
            return
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as err:
            self._send_json(400, error_body(f"We could not parse the JSON body of your request: {err}"))
            return
        self.server.received.append(body)
        try:
            if path in DIALECT_PATHS:
                dialect, created = DIALECT_PATHS[path], int(time.time())
                reply = build_dialect_reply(body, dialect, self.server.scenario, created, self.server.kept)
            else:
                reply = build_reply(body, self.server.scenario, int(time.time()))
        except Exception as err:  # a bug in the script must not leave the client hanging
            reply = error_reply(500, f"the scripted model failed: {err!r}")
        self._send(reply)

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def _read_body(self) -> bytes:
        return self.rfile.read(self.body_length())  # BodyTooLarge past MAX_BODY_BYTES; no length: no body

    def error_json(self, message: str) -> Any:
        return error_body(message)  # a malformed head, as OpenAI's servers say a malformed request

    def _send_json(self, status: int, value: Any) -> None:
        self._send(json_reply(status, value))

    def _send(self, reply: Reply) -> None:
        self.send_response(reply["status"])
        self.send_header("Content-Type", reply["content_type"])
        streaming = reply["content_type"] == SSE_TYPE
        if streaming:
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(sum(len(w) for w in reply["writes"])))
        self.end_headers()
        if not streaming:
            self.wfile.write(b"".join(reply["writes"]))
            return
        pause = pace(reply, self.server.delay)
        try:
            for number, piece in enumerate(reply["writes"]):
                if number and pause > 0 and self.server.stopping.wait(pause):
                    self.close_connection = True  # the server is closing: drop the reply half-sent
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))  # one write, one HTTP chunk
            if reply["hold"] and not self._hold():
                self.close_connection = True  # the client gave up (or the server closed)
                return
            self.wfile.write(b"0\r\n\r\n")  # the last chunk: the body is complete
        except OSError:
            self.close_connection = True  # the client hung up mid-reply: nothing to say to it

    def _hold(self) -> bool:
        """Stay silent like a stalled model until the client leaves (then False) or the server closes.

        Silent to the parser, that is: an SSE comment now and then keeps any read timeout away,
        so the only way out is the one §4.2 teaches — the user aborts.
        """
        last_comment = time.monotonic()
        while not self.server.stopping.is_set():
            if time.monotonic() - last_comment >= HOLD_COMMENT_SECONDS:
                comment = b": the abort scenario waits for the client to abort\n\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(comment), comment))
                last_comment = time.monotonic()
            readable, _, _ = select.select([self.connection], [], [], 0.1)
            if not readable:
                continue
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return False  # readable and empty: the client closed its end
            except OSError:
                return False
            self.server.stopping.wait(0.1)  # the client sent bytes early; keep waiting, don't spin
        return not self.server.stopping.is_set()


def pace(reply: Reply, delay: float) -> float:
    """Seconds between this reply's writes: ``delay``, shrunk so that they add up to at most
    ``PAUSES_PER_REPLY`` delays — the one pacing of the built-in model, wherever it answers.

    >>> reply = {"status": 200, "content_type": SSE_TYPE, "writes": [b"x"] * 751, "pause": None, "hold": False}
    >>> pace(reply, 0.02), pace({**reply, "writes": [b"x"] * 10}, 0.02), pace(reply, 0.2)
    (0.002, 0.02, 0.02)
    """
    if reply["pause"] is not None:
        return reply["pause"]  # the slow scenario keeps its own pace
    gaps = len(reply["writes"]) - 1
    return delay if gaps <= PAUSES_PER_REPLY else delay * PAUSES_PER_REPLY / gaps


def delay_setting() -> float:
    """``INK_SCRIPTED_DELAY`` in seconds, or the default; UsageError naming the variable.

    >>> delay_setting() if DELAY_VARIABLE not in os.environ else DEFAULT_DELAY
    0.02
    """
    setting = os.environ.get(DELAY_VARIABLE)
    if setting is None:
        return DEFAULT_DELAY
    try:
        delay = float(setting)
    except ValueError:
        raise UsageError(f"{DELAY_VARIABLE}={setting}: not a number of seconds") from None
    if not delay >= 0:  # also refuses nan
        raise UsageError(f"{DELAY_VARIABLE}={setting}: must be 0 seconds or more")
    return delay


def _model_entry(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "ink_py"}


# ── ink-py serve-model ──────────────────────────────────────────────────────────────────


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = CliParser(
        prog="ink-py serve-model",
        description="Serve ink_py's scripted model over HTTP in all three dialects: Chat Completions "
        "(POST /v1/chat/completions), Responses (POST /v1/responses) and Anthropic Messages (POST /v1/messages).",
        epilog=f"pacing: {PACING}.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=0, help="port to listen on (default 0: any free port)")
    parser.add_argument("--scenario", default=DEFAULT_SCENARIO, choices=scenario_names(), help="what it answers")
    parser.add_argument(
        "--delay",
        type=non_negative_float,
        default=None,
        help=f"seconds between writes (default: {DELAY_VARIABLE}, else {DEFAULT_DELAY}; 0: none)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """``ink-py serve-model``: print the base URL first, serve until Ctrl-C, exit 0."""
    args = parse_args(argv)
    try:
        delay = delay_setting() if args.delay is None else args.delay
        server = start_model_server(args.host, args.port, args.scenario, delay)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: {cannot_listen(args.host, args.port, err)}", file=sys.stderr)
        return 1
    try:
        print(server.base_url, flush=True)  # the first line: scripts read the URL from here
        print(f"try: ink-py --base-url {server.base_url} --model {MODEL_ID}", flush=True)  # a command that works
        print(
            f"or:  curl -N {server.base_url}/chat/completions "
            """-d '{"stream": true, "messages": [{"role": "user", "content": "read README.md"}]}'   (Ctrl-C stops)""",
            flush=True,
        )
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0  # Ctrl-C is how this command ends: no traceback
    finally:
        server.close()


if __name__ == "__main__":
    raise SystemExit(main())
