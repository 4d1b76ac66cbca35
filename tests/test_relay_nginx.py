"""The nginx configuration of docs/relay-wsgi.md, as written there, in front of a real gunicorn.

The ``nginx`` block of the section "Slow clients and the proxy in front" is read from the page
and run unprivileged (``master_process off``, its files in the test's folder, a free port), its
upstream pointed at a gunicorn with few threads; a test may shorten a timeout or a limit, and
each such change must find the directive it changes in the page. What it must do: slow request
heads cost nginx, not gunicorn's threads (the page answers), and are closed at
``client_header_timeout`` however steadily they trickle; a 4 MiB request line stops at nginx
(414) while a long question passes to the relay; ``limit_conn`` answers 429 past its count of
open streams; a reader that never reads is dropped by ``send_timeout``. Skips, saying why, when
nginx or gunicorn is not installed (``apt-get install nginx``; ``pip install -e '.[ci]'``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from ink_py.course.checks.helpers import sse

from .helpers import ROOT
from .raw_servers import SSE_HEAD, RawServer, end_process, sse_server
from .test_relay_wsgi import Served, lots_of_text, model_env, needs
from .test_relay_wsgi import serve as serve  # noqa: F401  (the fixture: gunicorn as a process)
from .test_relay_wsgi import workspace as workspace  # noqa: F401

WAIT = 15.0  # an upper bound on waiting for a server, never a speed check
NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
SECTION = "## Slow clients and the proxy in front"


def documented_config(changes: dict[str, str]) -> str:
    """The page's nginx block, each key of ``changes`` (which must be in it) replaced by its value."""
    page = (ROOT / "docs" / "relay-wsgi.md").read_text(encoding="utf-8")
    block = page.split(SECTION, 1)[1].split("\n## ", 1)[0].split("```nginx\n", 1)[1].split("```", 1)[0]
    for old, new in changes.items():
        assert old in block, f"docs/relay-wsgi.md's nginx block no longer says {old!r}"
        block = block.replace(old, new)
    return block


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Nginx:
    """nginx as a process of this test: the documented block inside a minimal, unprivileged http {}."""

    def __init__(self, block: str, folder: Path) -> None:
        folder.mkdir()
        temp = "\n".join(f"    {kind}_temp_path {folder}/{kind};" for kind in ("client_body", "proxy", "fastcgi"))
        temp += f"\n    uwsgi_temp_path {folder}/uwsgi;\n    scgi_temp_path {folder}/scgi;"
        config = folder / "nginx.conf"
        config.write_text(
            f"daemon off;\nmaster_process off;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log info;\n"
            f"events {{ worker_connections 512; }}\nhttp {{\n    access_log off;\n{temp}\n{block}\n}}\n"
        )
        self.log = folder / "error.log"
        argv = [str(NGINX), "-p", str(folder), "-c", str(config), "-e", str(self.log)]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.url = ""

    def logged(self, words: str) -> bool:
        """Whether nginx's error log comes to say ``words`` (it logs at info level here) within WAIT."""
        deadline = time.monotonic() + WAIT
        while words not in self.log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def wait(self, port: int) -> None:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"nginx did not start:\n{self.log.read_text(errors='replace')}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        end_process(self.process, WAIT)


@pytest.fixture
def behind_nginx(serve: Callable[..., Served], tmp_path: Path) -> Iterator[Callable[..., Nginx]]:  # noqa: F811
    """``behind_nginx(changes, threads=…, **settings)``: gunicorn running the relay behind the
    documented nginx (its ``url``). Both stopped at the end (gunicorn by ``serve``)."""
    if NGINX is None:
        pytest.skip("needs nginx (apt-get install nginx)")
    needs("gunicorn")
    started: list[Nginx] = []

    def start(changes: dict[str, str] | None = None, *, threads: int = 4, **settings: str) -> Nginx:
        relay = serve("gunicorn", threads=threads, INK_ALLOWED_HOSTS="127.0.0.1", **settings)  # Host $host
        port = free_port()
        block = documented_config(
            {"listen 80;": f"listen 127.0.0.1:{port};", "server 127.0.0.1:8000;": f"server {relay.url[7:-1]};"}
            | (changes or {})
        )
        started.append(Nginx(block, tmp_path / f"nginx-{len(started)}"))
        started[-1].wait(port)
        started[-1].url = f"http://127.0.0.1:{port}/"
        return started[-1]

    yield start
    for nginx in started:
        nginx.stop()


def slow_head(port: int) -> socket.socket:
    """A connection from 127.0.0.2 that has sent the start of a request head."""
    conn = socket.socket()
    try:
        conn.bind(("127.0.0.2", 0))
    except OSError:
        conn.close()
        pytest.skip("127.0.0.2 is not an address of this machine (Linux routes all of 127/8 to lo)")
    conn.settimeout(WAIT)
    conn.connect(("127.0.0.1", port))
    conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    return conn


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].strip("/"))


def test_slow_heads_cost_nginx_not_gunicorns_threads(behind_nginx) -> None:
    url = behind_nginx(threads=4).url
    slow = [slow_head(port_of(url)) for _ in range(40)]  # ten times gunicorn's threads
    try:
        for conn in slow:
            conn.sendall(b"X")  # one byte now and then
        pages = [requests.get(url, timeout=WAIT) for _ in range(10)]
        assert [page.status_code for page in pages] == [200] * 10
    finally:
        for conn in slow:
            conn.close()


def test_a_trickled_head_is_closed_at_client_header_timeout_in_total(behind_nginx) -> None:
    url = behind_nginx({"client_header_timeout 10s;": "client_header_timeout 1s;"}).url
    conn = slow_head(port_of(url))
    rest = b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"  # a byte every 0.1 s: 20 s to finish, each read in time
    sent = 0
    try:
        while sent < len(rest):
            conn.sendall(rest[sent : sent + 1])
            sent += 1
            time.sleep(0.1)  # the trickle itself
    except OSError:
        pass  # closed by nginx
    assert sent < len(rest), "nginx waited for the whole trickle"
    conn.close()


def test_a_huge_request_line_stops_at_nginx_and_a_long_question_passes(behind_nginx) -> None:
    url = behind_nginx().url
    with socket.create_connection(("127.0.0.1", port_of(url)), timeout=WAIT) as conn:
        try:
            conn.sendall(b"GET /chat/stream?query=" + b"a" * (4 << 20) + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        except OSError:
            pass  # nginx answered and closed before the rest was sent
        huge = conn.recv(65536)
    assert huge.startswith(b"HTTP/1.1 414 ")  # gunicorn with --limit-request-line 0 would read and run all of it
    long = requests.get(f"{url}chat/stream?query={quote('字' * 4001)}", timeout=WAIT)  # a 36 KB request line
    assert long.status_code == 413 and "at most 4000" in long.json()["error"]  # the relay's own answer


def test_limit_conn_answers_429_past_its_count_of_open_streams(behind_nginx) -> None:
    def first_word_then_silence(conn: socket.socket, model: RawServer) -> None:
        model.read_request(conn)
        conn.sendall(SSE_HEAD + sse({"choices": [{"index": 0, "delta": {"content": "一"}}]}))
        model.wait_for_hang_up(conn, 60)

    with RawServer(first_word_then_silence) as model:
        url = behind_nginx({"limit_conn ink_conn 32;": "limit_conn ink_conn 2;"}, **model_env(model)).url
        streams = [requests.get(f"{url}chat/stream?query=hi", stream=True, timeout=WAIT) for _ in range(2)]
        try:
            assert [stream.status_code for stream in streams] == [200, 200]
            third = requests.get(f"{url}chat/stream?query=hi", timeout=WAIT)
            assert third.status_code == 429
        finally:
            for stream in streams:
                stream.close()


def test_a_reader_that_never_reads_is_dropped_by_send_timeout(behind_nginx) -> None:
    with sse_server(lots_of_text) as model:
        changes = {"send_timeout 30s;": "send_timeout 1s;"}
        nginx = behind_nginx(changes, **model_env(model, INK_SEND_TIMEOUT="600"))  # only nginx's timeout here
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.settimeout(WAIT)
        reader.connect(("127.0.0.1", port_of(nginx.url)))
        reader.sendall(b"GET /chat/stream?query=hi HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try:
            received = reader.recv(1024)
            assert received.startswith(b"HTTP/1.1 200 ")  # then it reads no more
            assert nginx.logged("client timed out"), "nginx did not drop the reader"
            try:
                while piece := reader.recv(1 << 20):  # what the buffers held, then the end
                    received += piece
            except ConnectionResetError:
                pass
            assert b"event: text" in received and b"event: done" not in received  # cut off, not finished
        finally:
            reader.close()
