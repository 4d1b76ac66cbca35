"""Raw TCP servers and a measured child process: what the tests of bad servers and bad clients share.

``run_measured`` runs ``python -m ink_py …`` (or any argv) as a child and reports its exit
code, output, peak memory (VmHWM of that child since its exec: polled, and written at exit
by tests/memprobe/sitecustomize.py) and how long it ran — memory is never allocated in the
test process itself; ``ink_py_against`` runs the CLI that way against a server, and
``one_error_line`` reads its one ``error:`` line. ``RawServer`` listens on 127.0.0.1 (port 0), accepts connections
and hands each socket to a function on its own thread, behaving as badly as a test asks;
``stop()`` closes all. ``sse_server`` and ``silent_server`` are the two usual ones;
``raw_request`` is a client that sends bytes as they are; ``end_process`` stops a server's process.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .helpers import ROOT, ctrl_c_reaches_children

INK_PY = [sys.executable, "-m", "ink_py"]


@dataclass
class Measured:
    code: int  # exit code; -N when killed by signal N
    out: str
    err: str
    peak_mib: float  # the child's peak resident memory since its exec (VmHWM)
    seconds: float  # from start to exit
    killed: bool  # the time limit was reached
    signalled: bool = False  # a SIGINT was sent


def run_measured(
    argv: list[str],
    *,
    cwd: Path | str = ROOT,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    sigint_when: Callable[[int], bool] | None = None,
    sigint_on: bytes | None = None,
) -> Measured:
    """Run ``argv``; optionally send SIGINT when ``sigint_when(pid)`` first holds (polled every
    millisecond) or once its stderr shows ``sigint_on``: the moment it needs, never a time from the
    start (a Ctrl-C in the interpreter's start-up is a fatal error). ``seconds`` then counts from it."""
    peak_file = tempfile.NamedTemporaryFile(delete=False)
    peak_file.close()
    probe = str(Path(__file__).parent / "memprobe")
    # this checkout first: a child tests the code beside these tests, not an editable install's
    python_path = os.pathsep.join(p for p in (probe, str(ROOT), os.environ.get("PYTHONPATH")) if p)
    full_env = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": python_path,
        "INK_TEST_PEAK_FILE": peak_file.name,
        **(env or {}),
    }
    peak_kib = 0
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        with ctrl_c_reaches_children():
            process = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        killed = False
        signalled_at: float | None = None
        deadline = start + timeout
        while True:
            pid, status, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            peak_kib = max(peak_kib, _high_water_kib(process.pid))
            now = time.monotonic()
            if signalled_at is None and (
                (sigint_when is not None and sigint_when(process.pid))
                or (sigint_on is not None and sigint_on in os.pread(err.fileno(), 1 << 20, 0))
            ):
                os.kill(process.pid, signal.SIGINT)
                signalled_at = now
            if now > deadline and not killed:
                os.kill(process.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.001)
        ended = time.monotonic()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen consistent
        out.seek(0)
        err.seek(0)
        try:
            peak_kib = max(peak_kib, int(Path(peak_file.name).read_text() or 0))
        finally:
            os.unlink(peak_file.name)
        return Measured(
            code=process.returncode,
            out=out.read().decode("utf-8", "replace"),
            err=err.read().decode("utf-8", "replace"),
            peak_mib=peak_kib / 1024,
            seconds=ended - (signalled_at if signalled_at is not None else start),
            killed=killed,
            signalled=signalled_at is not None,
        )


def end_process(process: subprocess.Popen[Any], wait: float) -> None:
    """SIGTERM, then SIGKILL if it has not ended within ``wait`` seconds; reaped either way."""
    process.terminate()
    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _high_water_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class RawServer:
    """A TCP server on 127.0.0.1 whose every connection is handed to ``serve(sock, server)``."""

    def __init__(self, serve: Callable[[socket.socket, RawServer], None]) -> None:
        self._serve = serve
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.stopping = threading.Event()
        self.got_request = threading.Event()  # a handler may set it once the request is in
        self.closed_by_client = threading.Event()  # a handler may set it when the client hangs up
        self.requests: list[bytes] = []
        self._sockets: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if self.stopping.is_set():  # stop()'s wake-up connection (or one after it)
                conn.close()
                return
            self._sockets.append(conn)
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        try:
            self._serve(conn, self)
        except OSError:
            pass  # the client went away: that is what many of these tests provoke
        finally:
            conn.close()

    def read_request(self, conn: socket.socket) -> bytes:
        """Read one HTTP request (head and Content-Length body); record it; set got_request."""
        data = b""
        while b"\r\n\r\n" not in data:
            piece = conn.recv(65536)
            if not piece:
                return data
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            piece = conn.recv(65536)
            if not piece:
                break
            body += piece
        self.requests.append(head + b"\r\n\r\n" + body)
        self.got_request.set()
        return head

    def wait_for_hang_up(self, conn: socket.socket, limit: float) -> bool:
        """Block until the client closes (True) or ``limit`` seconds pass (False)."""
        conn.settimeout(limit)
        try:
            while conn.recv(65536):
                pass
        except TimeoutError:
            return False
        except OSError:
            pass
        self.closed_by_client.set()
        return True

    def stop(self) -> None:
        """Wake the accept thread and wait for it, then close: a thread left in accept() would take
        the connections of the next server given the same descriptor (a whole-suite run hung so)."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
        except OSError:
            pass
        self._thread.join(5)
        self._listener.close()
        for conn in self._sockets:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def sse_server(body: bytes | Callable[[socket.socket], None]) -> RawServer:
    """A server answering every request with ``body`` after an SSE head, then closing."""

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD)
        if callable(body):
            body(conn)
        else:
            conn.sendall(body)

    return RawServer(serve)


def silent_server() -> RawServer:
    """Reads the request, then says nothing until the client leaves."""

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        server.wait_for_hang_up(conn, 60)

    return RawServer(serve)


def raw_request(port: int, data: bytes, limit: float = 10.0) -> bytes:
    """Send ``data`` as is to 127.0.0.1:``port`` and return all the server answers before closing."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as conn:
        conn.sendall(data)
        reply = b""
        try:
            while piece := conn.recv(65536):
                reply += piece
        except (TimeoutError, ConnectionResetError):
            pass
        return reply


def ink_py_against(server: RawServer, workspace: Path, *extra: str, key: str = "", **kwargs: Any) -> Measured:
    """``ink-py --base-url <server> --model m --workspace <workspace> …``, measured (OPENAI_API_KEY=``key``)."""
    argv = [*INK_PY, "--base-url", server.base_url, "--model", "m", "--workspace", str(workspace), *extra]
    return run_measured(argv, env={"OPENAI_API_KEY": key}, **kwargs)


def one_error_line(err: str) -> str:
    """The one ``error: …`` line of ``err``, which holds no traceback."""
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]
