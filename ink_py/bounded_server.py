"""Limits for ink_py's two little HTTP servers (``ink-py serve`` and ``ink-py serve-model``).

Not in either article: a server on 127.0.0.1 still meets hostile clients (another local
user, a page in the browser, a stuck script). ``BoundedServer`` is a ``ThreadingHTTPServer``
that keeps three promises, whatever the clients do:

    MAX_HANDLERS            connections served at once; one more gets 503 and is closed
    HEAD_DEADLINE_SECONDS   a request line and headers must arrive within this, in total
                            (a client trickling one byte a second is cut off)
    SOCKET_TIMEOUT_SECONDS  longest wait for any one read or write on a connection

``BoundedHandler`` is the handler side (the deadline and the timeout); request bodies are
the handlers' own business: ``MAX_BODY_BYTES`` is the largest either server reads.

    >>> MAX_HANDLERS >= 200   # ink-py serve must carry 200 browsers at once
    True
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .core.abort import sigint_blocked

MAX_HANDLERS = 256  # threads serving connections at once
HEAD_DEADLINE_SECONDS = 10.0  # the whole request head (line + headers)
SOCKET_TIMEOUT_SECONDS = 30.0  # any single read or write
WATCHDOG_SECONDS = 0.25  # how often the one watchdog thread looks for late heads
MAX_BODY_BYTES = 8 * 1024 * 1024  # the largest request body read (a chat request with a long history)
_BUSY_BODY = b'{"error": "too many connections at once; try again"}'
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
    b"Retry-After: 1\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


class BoundedServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most ``max_handlers`` connections served at once."""

    daemon_threads = True
    max_handlers = MAX_HANDLERS
    request_queue_size = 128  # the listen backlog (socketserver's 5 drops a burst of browsers)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._closed = threading.Event()  # server_close() (a failed bind calls it too): the watchdog ends
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(self.max_handlers)
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

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            refuse_busy(request)
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
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def refuse_busy(request: socket.socket) -> None:
    """A short 503, written without waiting on a client that does not read."""
    try:
        request.settimeout(0.5)
        request.sendall(BUSY_RESPONSE)
        request.setblocking(False)
        request.recv(65536)  # what the client sent: closing with it unread would reset the connection
    except OSError:  # BlockingIOError: nothing was sent yet
        pass


class BoundedHandler(BaseHTTPRequestHandler):
    """A handler whose connection has a socket timeout and whose request heads have a deadline."""

    timeout = SOCKET_TIMEOUT_SECONDS  # StreamRequestHandler applies it to the connection

    server: BoundedServer

    def handle_one_request(self) -> None:
        self.server.expect_head(self.connection)  # cut off if the head is not complete in time (slowloris)
        try:
            super().handle_one_request()
        finally:
            self.server.head_done(self.connection)

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.server.head_done(self.connection)  # the head is in: what follows has its own bounds
        return parsed

    def body_length(self) -> int | None:
        """The request's Content-Length if it is a plain number within MAX_BODY_BYTES; None when
        there is no usable length. Raises ``BodyTooLarge`` for a longer body (answer 413)."""
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            return None
        size = int(length)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge(size)
        return size


class BodyTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"the request body is {size} bytes; at most {MAX_BODY_BYTES} are accepted")
