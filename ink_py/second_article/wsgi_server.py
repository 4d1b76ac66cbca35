"""The zero-dependency WSGI server behind ``ink-py serve`` — wsgiref's job, on ink_py's bounded server.

Any WSGI server (gunicorn, waitress) runs the relay's application; ``ink-py serve`` must
need nothing but the standard library, so this module serves one (PEP 3333) on
``BoundedServer``, which keeps its promises whatever the clients do: at most
``MAX_HANDLERS`` connections (503 beyond), ``INK_MAX_CONNECTIONS_PER_CLIENT`` of them from
one client (429 beyond; a proxy in ``FORWARDED_ALLOW_IPS`` is exempt), a request head
within 10 s and read strictly (strict_http.py), ``INK_SEND_TIMEOUT`` for any one read or
write, no request body over ``MAX_BODY_BYTES`` (413, unread). What it adds to wsgiref's
``simple_server``:

- every method reaches the application (the relay answers 405 with ``Allow``), and a HEAD
  response goes out without its body;
- HTTP/1.1: a body of known length keeps the connection; one without is sent chunked,
  each piece the application yields going out at once, and then the connection closes;
- the body's ``close()`` is called however the response ends — done, a failed write
  (the browser left), or an error — which is how the relay's reader unsubscribes;
- ``environ["ink_py.client_disconnected"]``: a probe the application may call while it has
  nothing to send, true once the browser's socket reads as closed (``peer_closed``).

    >>> environ = {}
    >>> add_headers(environ, [("Host", "127.0.0.1:8000"), ("X_Smuggled", "1"), ("Content-Type", "text/plain")])
    >>> environ
    {'HTTP_HOST': '127.0.0.1:8000', 'CONTENT_TYPE': 'text/plain'}
"""

from __future__ import annotations

import io
import os
import select
import socket
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from ..bounded_server import SOCKET_TIMEOUT_SECONDS, BodyTooLarge, BoundedHandler, BoundedServer
from ..peers import Trusted
from ..terminal import terminal_safe
from .stores import count_setting, trusted_from

DISCONNECTED = "ink_py.client_disconnected"  # the environ key of the hang-up probe
MAX_CONNECTIONS_PER_CLIENT = 32  # INK_MAX_CONNECTIONS_PER_CLIENT's default: a few browsers behind one address
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class WsgiServer(BoundedServer):
    """A BoundedServer that answers every request by calling one WSGI application.

    ``send_timeout`` bounds any one read or write (``INK_SEND_TIMEOUT``: a reader that takes
    nothing for that long is dropped); the cap per client comes from the environment.
    """

    def __init__(self, address: tuple[str, int], app: WsgiApp, send_timeout: float = SOCKET_TIMEOUT_SECONDS) -> None:
        self.max_per_client, self.trusted = connection_settings(os.environ)  # UsageError before the port is taken
        super().__init__(address, WsgiHandler)
        self.app = app
        self.send_timeout = send_timeout

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client hung up between requests: not worth a traceback
        print(f"ink-py serve: internal error: {terminal_safe(repr(sys.exc_info()[1]))}", file=sys.stderr)


def connection_settings(environ: Mapping[str, str]) -> tuple[int, Trusted]:
    """``INK_MAX_CONNECTIONS_PER_CLIENT`` (0: no cap) and the peers it spares, ``FORWARDED_ALLOW_IPS``.

    >>> connection_settings({"FORWARDED_ALLOW_IPS": "10.0.0.5"})
    (32, (IPv4Network('10.0.0.5/32'),))
    """
    cap = count_setting(environ, "INK_MAX_CONNECTIONS_PER_CLIENT", 0, 100_000)
    return (MAX_CONNECTIONS_PER_CLIENT if cap is None else cap), trusted_from(environ)


class WsgiHandler(BoundedHandler):
    """Every request goes to the application, whatever its method."""

    protocol_version = "HTTP/1.1"
    server_version = "ink-py-serve"
    server: WsgiServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.send_timeout)  # INK_SEND_TIMEOUT (the relay's watchdog elsewhere)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: one line per request would bury the URL the user needs

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:  # not http.server's 501: the application answers any method (the relay: 405 with Allow)
            setattr(self, f"do_{self.command}", self.run_app)
        return parsed

    def end_headers(self) -> None:
        self.send_header("X-Content-Type-Options", "nosniff")  # http.server's own errors (400, 413) too
        super().end_headers()

    def send_head(self, status: str, headers: list[tuple[str, str]], chunked: bool) -> None:
        """The application's status line and headers; for a body of unknown length, chunked framing."""
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason)
        for name, value in headers:
            if name.lower() != "x-content-type-options":  # end_headers says it, once
                self.send_header(name, value)
        if chunked:
            self.close_connection = True  # one stream per connection
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
        self.end_headers()

    def run_app(self) -> None:
        try:
            length = self.body_length()
        except BodyTooLarge as big:
            self.send_error(413, str(big))  # and the connection closes: the body stays unread
            return
        response = Response(self)
        body_input = BodyInput(self.rfile, length)
        body = self.server.app(self.environ(body_input), response.start)
        try:
            for data in body:
                response.write(data)
            response.finish()
        except OSError:  # BrokenPipe, ConnectionReset, a timed-out write: the browser is gone
            self.close_connection = True
        finally:
            if body_input.remaining:
                self.close_connection = True  # what the application left unread would pass for a request
            close = getattr(body, "close", None)
            if close is not None:
                close()  # PEP 3333: always — for the relay, this aborts a run whose browser left

    def environ(self, body_input: BodyInput) -> dict[str, Any]:
        """The request as PEP 3333 describes it."""
        target = urlsplit(self.path)
        host, port = self.server.host_and_port
        environ: dict[str, Any] = {
            "REQUEST_METHOD": self.command,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(target.path, "latin-1"),  # PEP 3333: the bytes, one character each
            "QUERY_STRING": target.query,
            "SERVER_NAME": host,
            "SERVER_PORT": str(port),
            "SERVER_PROTOCOL": self.request_version,
            "REMOTE_ADDR": self.client_address[0],
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": body_input,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            DISCONNECTED: lambda: peer_closed(self.connection),
        }
        add_headers(environ, self.headers.items())
        if target.netloc:  # GET http://host/… (absolute-form): RFC 9112 §3.2.2, the target's host is the Host
            environ["HTTP_HOST"] = target.netloc
        return environ


def add_headers(environ: dict[str, Any], headers: Iterable[tuple[str, str]]) -> None:
    """Request headers as CGI variables; a name with ``_`` is dropped (it would pass for one with ``-``)."""
    for name, value in headers:
        if "_" in name:
            continue
        key = name.upper().replace("-", "_")
        key = key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"
        environ[key] = f"{environ[key]},{value}" if key in environ else value


class Response:
    """One response: the status and headers go out with the first bytes; no length means chunked."""

    def __init__(self, handler: WsgiHandler) -> None:
        self.handler = handler
        self.status = ""
        self.headers: list[tuple[str, str]] = []
        self.sent = False
        self.chunked = False

    def start(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        if exc_info is not None and self.sent:
            raise exc_info[1].with_traceback(exc_info[2])  # PEP 3333: too late to change the status
        self.status, self.headers = status, list(headers)
        return self.write

    def write(self, data: bytes) -> None:
        if not self.sent:
            self._send_head()
        if data and self.handler.command != "HEAD":  # a HEAD response: the head alone
            wire = b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data
            self.handler.wfile.write(wire)  # unbuffered: one piece, sent at once

    def finish(self) -> None:
        if not self.sent:
            self._send_head()
        if self.chunked and self.handler.command != "HEAD":
            self.handler.wfile.write(b"0\r\n\r\n")

    def _send_head(self) -> None:
        self.sent = True
        self.chunked = not any(name.lower() == "content-length" for name, _ in self.headers)
        self.handler.send_head(self.status, self.headers, self.chunked)


class BodyInput(io.RawIOBase):
    """``wsgi.input``: the request body, read only if the application asks, never past its length."""

    def __init__(self, rfile: Any, length: int) -> None:
        self.rfile = rfile
        self.remaining = length

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.rfile.read(min(len(buffer), self.remaining))
        self.remaining -= len(data)
        buffer[: len(data)] = data
        return len(data)


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
