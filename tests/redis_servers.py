"""A real ``redis-server`` for the tests, and the parts the resume tests share.

``RedisServer`` starts Debian's ``redis-server`` on a free port of 127.0.0.1 in a temporary
folder (``--save '' --appendonly no``: nothing written to disk), and can be killed mid-test;
``NEEDS_REDIS`` is the one-line reason a module's tests skip where the server or redis-py is
absent (``.ci/run`` installs both, so nothing skips there). ``events_of`` reads an SSE body
with its ``id:`` lines (ink_py's own parse_sse drops them); ``cut_after`` reads a stream until
it has some events, then closes the socket, as a network that drops would. ``SlowProxy`` is a
TCP proxy that holds every piece it forwards for a while: a slow Redis. ``module_redis`` makes a
module's ``redis_server`` fixture.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from .raw_servers import RawServer

REDIS_SERVER = shutil.which("redis-server")
NEEDS_REDIS = (
    "needs redis-server (apt-get install redis-server)" if REDIS_SERVER is None
    else "needs redis-py (pip install -e '.[redis]')" if importlib.util.find_spec("redis") is None
    else None
)  # fmt: skip
WAIT_SECONDS = 20.0  # an upper bound on waiting for a server, never a speed check


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """``redis-server`` on 127.0.0.1, in ``folder``; ``url`` reaches it, ``client()`` talks to it.
    ``settings``: more of its flags (``"--maxmemory", "16mb"`` …)."""

    def __init__(self, folder: Path, *settings: str) -> None:
        assert REDIS_SERVER is not None
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()  # redis-server refuses --port 0
        self.url = f"redis://127.0.0.1:{self.port}/0"
        argv = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += settings
        self.log = folder / "redis.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen([*argv, "--dir", str(folder)], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                if self.client().ping():
                    return
            except Exception as err:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.log.read_text(errors="replace")
                    raise AssertionError(f"redis-server did not start:\n{log}") from err
                time.sleep(0.05)

    def client(self) -> Any:
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(WAIT_SECONDS)

    def keys_and_ttls(self) -> dict[str, int]:
        """Every key and its PTTL in milliseconds (-1: no expiry)."""
        client = self.client()
        return {key.decode(): int(client.pttl(key)) for key in client.scan_iter(count=1000)}


def module_redis() -> Any:
    """A module's ``redis_server`` fixture: one real redis-server for all its tests, killed after them
    (``redis_server = module_redis()`` at module level)."""

    @pytest.fixture(scope="module")
    def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
        server = RedisServer(tmp_path_factory.mktemp("redis"))
        yield server
        server.kill()

    return redis_server


def events_of(raw: bytes) -> list[dict[str, Any]]:
    """The SSE events in ``raw``: {"id": int | None, "event", "data"}; comments and retry: skipped."""
    found = []
    for frame in raw.decode("utf-8").split("\n\n"):
        fields: dict[str, str] = {}
        for line in frame.split("\n"):
            name, _, value = line.partition(": ")
            if name in ("id", "event", "data"):
                fields[name] = value
        if "data" in fields:
            event_id = int(fields["id"]) if "id" in fields else None
            found.append({"id": event_id, "event": fields.get("event", "message"), "data": json.loads(fields["data"])})
    return found


def read_events(response: requests.Response) -> list[dict[str, Any]]:
    return events_of(b"".join(response.iter_content(chunk_size=None)))


def read_until(pieces: Iterator[bytes], count: int) -> bytes:
    """Read ``pieces`` (a stream's) until ``count`` events have come whole; what follows is left to read."""
    received = b""
    for piece in pieces:
        received += piece
        if len(events_of(received[: received.rfind(b"\n\n") + 2])) >= count:  # a half-received event is not had
            return received
    raise AssertionError(f"the stream ended before {count} events")


def cut_after(response: requests.Response, count: int) -> list[dict[str, Any]]:
    """Read ``response`` until ``count`` events have come whole, then close the socket: a dropped connection."""
    received = read_until(response.iter_content(chunk_size=None), count)
    response.close()
    return events_of(received[: received.rfind(b"\n\n") + 2])


def pipe(source: socket.socket, sink: socket.socket, delay: Callable[[], float] = lambda: 0.0) -> None:
    """Pass what ``source`` sends on to ``sink`` (each piece ``delay()`` seconds late) until either closes."""
    try:
        while piece := source.recv(65536):
            time.sleep(delay())
            sink.sendall(piece)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class SlowProxy:
    """127.0.0.1:``port`` → ``target``: every piece forwarded after ``delay`` seconds (a slow network).
    ``down`` carries what the target sends back; a subclass may do otherwise (drop it)."""

    def __init__(self, target: int, delay: float = 0.0) -> None:
        self.target, self.delay = target, delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.admit(client):
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=pipe, args=(client, upstream, lambda: self.delay), daemon=True).start()
            threading.Thread(target=self.down, args=(upstream, client), daemon=True).start()

    def admit(self, client: socket.socket) -> bool:
        """Whether to carry this connection (a subclass may refuse it: closed at once)."""
        return True

    def down(self, upstream: socket.socket, client: socket.socket) -> None:
        pipe(upstream, client, lambda: self.delay)

    def close(self) -> None:
        self.closed.set()
        self.listener.close()


def model_switch(routes: dict[bytes, int], default: int) -> RawServer:
    """A model URL that hands each connection to the model whose marker (``b"[slow]"`` …) its first
    request holds, else to ``default`` (ports), then passes bytes both ways: one URL, several models."""

    def switch(conn: socket.socket, server: RawServer) -> None:
        request = b""
        while b"\r\n\r\n" not in request and (piece := conn.recv(65536)):
            request += piece
        head = request.split(b"\r\n\r\n")[0].lower()
        length = int(head.split(b"content-length:")[1].split(b"\r\n")[0]) if b"content-length:" in head else 0
        while len(request) - len(head) - 4 < length and (piece := conn.recv(65536)):
            request += piece
        port = next((port for marker, port in routes.items() if marker in request), default)
        with socket.create_connection(("127.0.0.1", port)) as upstream:
            upstream.sendall(request)
            back = threading.Thread(target=pipe, args=(upstream, conn), daemon=True)
            back.start()
            pipe(conn, upstream)
            back.join(WAIT_SECONDS)

    return RawServer(switch)
