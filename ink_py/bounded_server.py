"""Limits for ink_py's two little HTTP servers (``ink-py serve`` and ``ink-py serve-model``).

Not in either article: a server on 127.0.0.1 still meets hostile clients (another local
user, a page in the browser, a stuck script). ``BoundedServer`` is a ``ThreadingHTTPServer``
that keeps its promises, whatever the clients do:

    MAX_HANDLERS            connections served at once; one more gets 503 and is closed
    max_per_client          connections at once from one client (its address; IPv6: its /64);
                            one more gets 429 and is closed, before it takes a handler (0: no cap)
    HEAD_DEADLINE_SECONDS   a request line and headers must arrive within this, in total
                            (a client trickling one byte a second is cut off)
    SOCKET_TIMEOUT_SECONDS  longest wait for any one read or write on a connection

``BoundedHandler`` is the handler side: the deadline, the timeout, a head read strictly
(strict_http.py: one framing only, else one JSON error line and the connection closed); request
bodies are the handlers' own business: ``MAX_BODY_BYTES`` is the largest either server reads.

    >>> MAX_HANDLERS >= 200   # ink-py serve must carry 200 browsers at once
    True
"""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Hashable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .core.abort import sigint_blocked
from .peers import Trusted, address, client_key, is_trusted
from .strict_http import HeadError, head_problem, read_fields, request_line_problem

MAX_HANDLERS = 256  # threads serving connections at once
HEAD_DEADLINE_SECONDS = 10.0  # the whole request head (line + headers)
SOCKET_TIMEOUT_SECONDS = 30.0  # any single read or write
WATCHDOG_SECONDS = 0.25  # how often the one watchdog thread looks for late heads
MAX_BODY_BYTES = 8 * 1024 * 1024  # the largest request body read (a chat request with a long history)


def short_response(status: bytes, message: str) -> bytes:
    """A whole response written by the accepting thread: one JSON line, try again in a second."""
    body = json.dumps({"error": message}).encode()
    return (
        b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\nRetry-After: 1\r\n"
        b"X-Content-Type-Options: nosniff\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body)
    )


BUSY_RESPONSE = short_response(b"503 Service Unavailable", "too many connections at once; try again")
TOO_MANY_RESPONSE = short_response(
    b"429 Too Many Requests", "too many connections at once from your address; close one and try again"
)


class CountedByKey:
    """How many of something each key holds at once — a client's connections here, a run's readers in the
    relay (quotas.Readers) — each key at most ``limit``; thread-safe.

    >>> held = CountedByKey()
    >>> held.enter("127.0.0.2", 1), held.enter("127.0.0.2", 1), held.leave("127.0.0.2"), held.enter("127.0.0.2", 1)
    (True, False, None, True)
    """

    def __init__(self) -> None:
        self.held: Counter[Hashable] = Counter()
        self._lock = threading.Lock()

    def enter(self, key: Hashable, limit: int) -> bool:
        """Count one more for ``key``, or False (and nothing counted) when it holds ``limit`` already."""
        with self._lock:
            if self.held[key] >= limit:
                return False
            self.held[key] += 1
            return True

    def leave(self, key: Hashable) -> None:
        with self._lock:
            self.held[key] -= 1
            if not self.held[key]:
                del self.held[key]  # a key that holds nothing takes no memory


class BoundedServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most ``max_handlers`` connections served at once."""

    daemon_threads = True
    max_handlers = MAX_HANDLERS
    max_per_client = 0  # connections at once per client address (0: no cap); ink-py serve sets it
    trusted: Trusted = ()  # peers exempt from max_per_client: proxies that carry many clients
    request_queue_size = 128  # the listen backlog (socketserver's 5 drops a burst of browsers)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._closed = threading.Event()  # server_close() (a failed bind calls it too): the watchdog ends
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(self.max_handlers)
        self._clients = CountedByKey()  # client (client_key) → its connections being served
        self._heads: dict[socket.socket, float] = {}  # connections still sending a head → deadline
        self._heads_lock = threading.Lock()
        self._watchdog: threading.Thread | None = None

    @property
    def host_and_port(self) -> tuple[str, int]:
        """Where it listens: ``("127.0.0.1", 8765)`` (socketserver types the host as str or bytes)."""
        host, port = self.server_address[:2]
        return (host.decode() if isinstance(host, bytes | bytearray) else str(host)), int(port)

    def expect_head(self, connection: socket.socket) -> None:
        """Cut ``connection`` unless its request head is complete within HEAD_DEADLINE_SECONDS."""
        with self._heads_lock:
            self._heads[connection] = time.monotonic() + HEAD_DEADLINE_SECONDS
            if self._watchdog is None:  # one thread watches every connection's deadline
                self._watchdog = threading.Thread(target=self._watch_heads, name="ink-head-watchdog", daemon=True)
                self._watchdog.start()

    def head_done(self, connection: socket.socket) -> None:
        with self._heads_lock:
            self._heads.pop(connection, None)

    def _watch_heads(self) -> None:
        while not self._closed.wait(WATCHDOG_SECONDS):
            now = time.monotonic()
            with self._heads_lock:
                late = [conn for conn, deadline in self._heads.items() if deadline <= now]
                for conn in late:
                    del self._heads[conn]
            for conn in late:
                try:
                    conn.shutdown(socket.SHUT_RDWR)  # the handler's blocked read returns at once
                except OSError:
                    pass

    def server_close(self) -> None:
        super().server_close()
        self._closed.set()

    def counted_client(self, client_address: Any) -> str | None:
        """The client a connection counts against (``client_key``), or None when nothing is counted:
        no cap, a peer in ``trusted``, or no address at all."""
        host = str(client_address[0]) if isinstance(client_address, tuple) and client_address else ""
        peer = address(host.split("%")[0]) if self.max_per_client else None  # a zone (%eth0) is no part of it
        return None if peer is None or is_trusted(peer, self.trusted) else client_key(peer)

    def _enter(self, client: str | None) -> bool:
        return client is None or self._clients.enter(client, self.max_per_client)

    def _leave(self, client: str | None) -> None:
        if client is not None:
            self._clients.leave(client)

    def process_request(self, request: Any, client_address: Any) -> None:
        client = self.counted_client(client_address)
        if not self._enter(client):  # beyond the slots: one client cannot take them all (slowloris)
            refuse(request, TOO_MANY_RESPONSE)
            self.shutdown_request(request)
            return
        if not self._slots.acquire(blocking=False):
            self._leave(client)
            refuse(request, BUSY_RESPONSE)
            self.shutdown_request(request)
            return
        started = False
        try:
            with sigint_blocked():  # the handler's thread inherits the block: Ctrl-C goes to the main thread
                super().process_request(request, client_address)  # starts the handler's thread
                started = True
        except BaseException:
            # A Ctrl-C held back by the block is raised as it ends, once the thread runs: the slot is
            # the thread's (released twice, a ValueError would replace the Ctrl-C and be swallowed).
            if not started:
                self._slots.release()
                self._leave(client)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()
            self._leave(self.counted_client(client_address))


def refuse(request: socket.socket, response: bytes) -> None:
    """A short refusal, written without waiting on a client that does not read."""
    try:
        request.settimeout(0.5)
        request.sendall(response)
        request.setblocking(False)
        request.recv(65536)  # what the client sent: closing with it unread would reset the connection
    except OSError:  # BlockingIOError: nothing was sent yet
        pass


class BoundedHandler(BaseHTTPRequestHandler):
    """A handler whose connection has a socket timeout, whose request heads have a deadline and
    are read strictly, and whose own errors are one JSON line."""

    timeout = SOCKET_TIMEOUT_SECONDS  # StreamRequestHandler applies it to the connection

    server: BoundedServer
    raw_requestline: bytes  # set by http.server's handle_one_request

    def handle_one_request(self) -> None:
        self.server.expect_head(self.connection)  # cut off if the head is not complete in time (slowloris)
        try:
            super().handle_one_request()
        finally:
            self.server.head_done(self.connection)

    def parse_request(self) -> bool:
        """http.server's parse, of a head ``head_problem`` found unambiguous (else the refusal is sent)."""
        fields: list[bytes] = []
        problem = request_line_problem(self.raw_requestline)  # a bad one: its headers are not waited for
        try:
            if problem is None:
                fields = read_fields(self.rfile)
                problem = head_problem(self.raw_requestline, fields)
        except HeadError as err:
            problem = err.status, str(err)
        self.server.head_done(self.connection)  # the head is in: what follows has its own bounds
        if problem is not None:
            self.command, self.request_version, self.requestline = "", "HTTP/1.1", ""
            self.send_error(*problem)  # and the connection is closed: what follows is not a request
            return False
        rfile, self.rfile = self.rfile, io.BytesIO(b"".join(fields))  # http.server reads the lines checked
        try:
            return super().parse_request()
        finally:
            self.rfile = rfile

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (413, 414, 431, the head's) as one JSON line; the connection closes."""
        self.close_connection = True
        body = json.dumps(self.error_json(message or self.responses.get(code, ("error",))[0]), ensure_ascii=False)
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(body.encode())))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body.encode())

    def error_json(self, message: str) -> Any:
        """The JSON of an error: ``{"error": message}`` (serve-model: OpenAI's shape)."""
        return {"error": message}

    def body_length(self) -> int:
        """The request's Content-Length (ASCII digits: the head was checked), 0 without one.
        Raises ``BodyTooLarge`` past MAX_BODY_BYTES (answer 413)."""
        length = self.headers.get("Content-Length", "0")
        digits = length.lstrip("0") or "0"
        if len(digits) > len(str(MAX_BODY_BYTES)) or int(digits) > MAX_BODY_BYTES:  # int() of 5000 digits raises
            raise BodyTooLarge(length)
        return int(digits)


class BodyTooLarge(Exception):
    def __init__(self, length: str) -> None:
        shown = length if len(length) <= 20 else f"{length[:20]}… ({len(length)} digits)"
        super().__init__(f"the request body is {shown} bytes; at most {MAX_BODY_BYTES} are accepted")
