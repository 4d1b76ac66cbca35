"""Random and mutated request heads against a real ``ink-py serve`` and ``ink-py serve-model``.

Seeded (``random.Random(SEED)``: the same heads every run; a failure prints the head that
caused it) and bounded: ``CASES`` heads per server, each on its own connection from
127.0.0.1, half-closed after sending so that every server ends its answer with the
connection. Each head starts as a valid request and is mutated: bytes changed, inserted or
cut, header lines doubled or dropped, CRLF made LF or CR, lines folded, NULs, non-ASCII,
Content-Length and Transfer-Encoding values the strict reader refuses, a value of 70 KB —
or is random bytes. What must hold: every answer starts with a well-formed status line
(or the server closes without one), none is 500, the server's stderr never says "internal
error" or shows a traceback, and afterwards it still answers a normal request.
"""

from __future__ import annotations

import random
import re
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from .helpers import ROOT
from .raw_servers import INK_PY, end_process

SEED = 20_33_6  # issue 33, item 6
CASES = 4000  # per server: a few seconds each
WAIT = 10.0  # an upper bound on one answer; only a hung server reaches it
STATUS_LINE = re.compile(rb"HTTP/1\.1 [1-5][0-9]{2} [^\r\n]*\r\n")
ANY_STATUS = re.compile(rb"^HTTP/1\.1 ([0-9]{3}) ", re.MULTILINE)

SEEDS = {
    "serve": [
        b"GET / HTTP/1.1\r\nHost: {host}\r\nAccept: text/html\r\nUser-Agent: fuzz\r\n\r\n",
        b"GET /chat/stream?run=abcdefgh&after=3 HTTP/1.1\r\nHost: {host}\r\nLast-Event-ID: 2\r\n\r\n",
        b"POST /chat/stop?run=abcdefgh&session=s1234567 HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\n"
        b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        b"GET /nowhere?x=%E5%AD%97 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        b"OPTIONS * HTTP/1.1\r\nHost: {host}\r\n\r\n",
    ],
    "serve-model": [
        b"GET /v1/models HTTP/1.1\r\nHost: {host}\r\n\r\n",
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        b'Content-Length: 53\r\n\r\n{"messages": [{"role": "user", "content": "hi"}]}\r\n\r\n',
        b"POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n{}",
    ],
}
PIECES = [
    b"\r", b"\n", b"\r\n", b"\r\n\r\n", b"\x00", b" ", b"\t", b"\x0b", b":", b"\x7f", b"\xff", b"\xa0",
    "²".encode("latin-1"), "字".encode(), b"%00", b"..", b"//", b",", b"0", b"9" * 30,
    b"Content-Length: 5\r\n", b"Transfer-Encoding: chunked\r\n", b"Host: x\r\n", b"Expect: 100-continue\r\n",
    b"\r\n GET / HTTP/1.1", b"0\r\n\r\nGET / HTTP/1.1\r\nHost: {host}\r\n\r\n", b"HTTP/1.1", b"HTTP/2.0",
]  # fmt: skip
LENGTHS = [b"\xb2", b"\xb9", b"1\xb2", b"+1", b" 1", b"0x1", b"-1", b"1e3", b"5, 5", b"", b"9" * 5000, b"00000000002"]
CODINGS = [b"chunked", b"gzip", b"chunked, gzip", b"gzip, chunked", b"Chunked", b"\x0bchunked", b" chunked ", b"x"]


def mutated(rng: random.Random, seed: bytes) -> bytes:
    """``seed`` after one to three random mutations (or, once in 50, random bytes)."""
    if rng.random() < 0.02:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    data = bytearray(seed)
    for _ in range(rng.randint(1, 3)):
        rng.choice(MUTATIONS)(rng, data)
    return bytes(data)


def _flip(rng: random.Random, data: bytearray) -> None:
    if data:
        at = rng.randrange(len(data))
        data[at : at + 1] = rng.choice(PIECES)[:1] if rng.random() < 0.7 else bytes([rng.randrange(256)])


def _insert(rng: random.Random, data: bytearray) -> None:
    at = rng.randrange(len(data) + 1)
    data[at:at] = rng.choice(PIECES)


def _cut(rng: random.Random, data: bytearray) -> None:
    if data:
        at = rng.randrange(len(data))
        del data[at : at + rng.randint(1, 12)]


def _lines(data: bytearray) -> list[bytes]:
    return bytes(data).split(b"\r\n")


def _double_or_drop_a_line(rng: random.Random, data: bytearray) -> None:
    lines = _lines(data)
    if len(lines) > 2:
        at = rng.randrange(1, len(lines) - 1)
        lines[at:at] = [lines[at]] if rng.random() < 0.5 else []  # doubled ...
        if len(lines) == len(_lines(data)):
            del lines[at]  # ... or dropped
        data[:] = b"\r\n".join(lines)


def _line_ends(rng: random.Random, data: bytearray) -> None:
    end = rng.choice([b"\n", b"\r", b"\r\r\n", b"\n\r"])
    data[:] = bytes(data).replace(b"\r\n", end, rng.choice([1, 2, -1]))


def _fold(rng: random.Random, data: bytearray) -> None:
    lines = _lines(data)
    if len(lines) > 2:
        at = rng.randrange(1, len(lines) - 1)
        lines[at] = rng.choice([b" ", b"\t"]) + lines[at]
        data[:] = b"\r\n".join(lines)


def _framing_header(rng: random.Random, data: bytearray) -> None:
    name, value = rng.choice([(b"Content-Length", rng.choice(LENGTHS)), (b"Transfer-Encoding", rng.choice(CODINGS))])
    at = max(bytes(data).find(b"\r\n") + 2, 0)
    data[at:at] = name + rng.choice([b": ", b":", b" : ", b":\t"]) + value + b"\r\n"


def _huge(rng: random.Random, data: bytearray) -> None:
    if rng.random() < 0.1:  # rare: each is 70 KB on the wire
        at = bytes(data).find(rng.choice([b"HTTP/1", b"\r\n\r\n", b": "]))
        data[max(at, 0) : max(at, 0)] = rng.choice([b"a", b"%", "字".encode()]) * 70_000


MUTATIONS: list[Callable[[random.Random, bytearray], None]] = [
    _flip, _flip, _insert, _insert, _cut, _double_or_drop_a_line, _line_ends, _fold, _framing_header,
    _framing_header, _huge,
]  # fmt: skip


def answer(port: int, data: bytes) -> bytes:
    """Send ``data`` as is, half-close, and read until the server closes (its answer to all of it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as conn:
        try:
            conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)
        except OSError:  # it answered (400, 414, 431) and closed before all was sent, or reset the connection
            pass
        reply = b""
        try:
            while piece := conn.recv(65536):
                reply += piece
        except ConnectionResetError:  # closed with our unread bytes still in its buffer: what was sent still counts
            pass
        return reply


class Server:
    """``ink-py serve`` or ``ink-py serve-model`` as a process; its stderr kept in a file."""

    def __init__(self, argv: list[str], folder: Path) -> None:
        self.stderr = folder / "stderr.log"
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "INK_SCRIPTED_DELAY": "0", "HOME": str(folder)}
        with open(self.stderr, "wb") as err:
            self.process = subprocess.Popen(
                [*INK_PY, *argv], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL
            )
        assert self.process.stdout is not None
        url = self.process.stdout.readline().decode().strip()  # the first line: where it listens
        assert url.startswith("http://127.0.0.1:"), (url, self.stderr.read_text())
        self.port = int(url.split(":")[2].split("/")[0])

    def stop(self) -> str:
        end_process(self.process, WAIT)
        assert self.process.stdout is not None
        self.process.stdout.close()
        return self.stderr.read_text(errors="replace")


@pytest.fixture(params=["serve", "serve-model"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Server]]:
    argv = ["serve", "--port", "0"] if request.param == "serve" else ["serve-model", "--port", "0", "--delay", "0"]
    running = Server(argv, tmp_path)
    try:
        yield request.param, running
    finally:
        running.stop()


def test_thousands_of_mutated_heads_get_no_internal_error(server: tuple[str, Server]) -> None:
    which, running = server
    rng = random.Random(f"{SEED}-{which}")
    seeds = [seed.replace(b"{host}", b"127.0.0.1:%d" % running.port) for seed in SEEDS[which]]
    statuses: dict[int, int] = {}
    for number in range(CASES):
        data = mutated(rng, rng.choice(seeds))
        reply = answer(running.port, data)
        assert not reply or STATUS_LINE.match(reply), f"case {number}: {data[:400]!r} got {reply[:200]!r}"
        for status in ANY_STATUS.findall(reply):
            assert status != b"500", f"case {number}: {data[:400]!r} got {reply[:400]!r}"
            statuses[int(status)] = statuses.get(int(status), 0) + 1
    path = "/" if which == "serve" else "/v1/models"
    after = requests.get(f"http://127.0.0.1:{running.port}{path}", timeout=WAIT)
    assert after.status_code == 200  # still serving
    stderr = running.stop()
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    assert statuses.get(400, 0) > CASES // 3 and sum(statuses.values()) >= CASES * 0.9, statuses  # the heads were hit
