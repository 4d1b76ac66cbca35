"""Hostile HTTP clients against ``ink-py serve`` (the relay) and ``ink-py serve-model``.

Issue 12's problem 12 (slowloris, a 1 TB Content-Length, concurrent handlers, the page's
headers, a foreign Origin), the relay's part of 4 and 5 (the key in the browser's status
line; a browser that leaves before the model's headers), and the "already safe" list:
200 concurrent streams, XSS payloads shown as text, traversal and odd methods refused.
Everything listens on 127.0.0.1, port 0; every wait is bounded.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py import bounded_server
from ink_py.course.demo_web import DemoServer
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.provider.shared import parse_sse
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article.relay import RelayServer, make_relay_server

from .helpers import text_reply
from .hostile import HostileServer, sse_server

WAIT = 10.0  # an upper bound on waiting for another thread, never a speed check
KEY = "sk-SECRET1234567890abcdefghij"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# demo\n\nrun `make`\n")
    return tmp_path


@pytest.fixture
def scripted_model() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as model:
        yield model


def relay_in_front_of(base_url: str, workspace: Path, api_key: str | None = None) -> RelayServer:
    return make_relay_server(
        provider_factory=lambda: OpenAICompletionsProvider(base_url, api_key), model="m", workspace=workspace
    ).start()


def events_of(response: requests.Response) -> list[dict[str, Any]]:
    return list(parse_sse(response.iter_content(chunk_size=None)))


def raw_request(port: int, data: bytes, limit: float = WAIT) -> bytes:
    """Send ``data`` as is and return all the server answers before closing."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as conn:
        conn.sendall(data)
        reply = b""
        try:
            while piece := conn.recv(65536):
                reply += piece
        except (TimeoutError, ConnectionResetError):
            pass
        return reply


# ── 12. slowloris, a huge body, the bound on handlers ───────────────────────────────────


@pytest.mark.parametrize("which", ["relay", "serve-model", "demo --web"])
def test_slowloris_clients_are_bounded_and_cut_off(
    which: str, workspace: Path, scripted_model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_server, "HEAD_DEADLINE_SECONDS", 1.0)
    monkeypatch.setattr(bounded_server.BoundedServer, "max_handlers", 20)
    with start_model_server(port=0, delay=0) as model:
        if which == "relay":
            server: Any = relay_in_front_of(scripted_model.base_url, workspace)
        elif which == "demo --web":
            server = DemoServer({}, {}).start()
        else:
            server = model
        port = int(re.search(r":(\d+)/", server.base_url + "/" if which == "serve-model" else server.url).group(1))
        before = threading.active_count()
        slow = []
        for _ in range(60):
            conn = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
            conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
            slow.append(conn)
        time.sleep(0.3)
        peak = threading.active_count() - before
        busy = 0
        for conn in slow:  # the ones over the bound were answered 503 and closed at once
            conn.settimeout(0.05)
            try:
                got = conn.recv(100)
                busy += got.startswith(b"HTTP/1.1 503")
            except TimeoutError:
                pass
        cut = 0
        for conn in slow:  # the rest are cut off at the head deadline
            conn.settimeout(WAIT)
            try:
                while conn.recv(65536):
                    pass
                cut += 1
            except (TimeoutError, ConnectionResetError):
                cut += 1
            conn.close()
        assert peak <= 20 + 3, f"{peak} threads for 60 slow clients"  # the handlers, the watchdog
        assert busy >= 60 - 20 and cut == 60
        path = "/v1/models" if which == "serve-model" else "/"
        headers = {"Host": f"127.0.0.1:{port}"}
        assert requests.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=WAIT).status_code == 200
        if which != "serve-model":
            server.close()


def test_a_1_tb_content_length_gets_413_and_no_traceback(
    scripted_model: ModelServer, capfd: pytest.CaptureFixture[str]
) -> None:
    port = int(scripted_model.base_url.rsplit(":", 1)[1].split("/")[0])
    reply = raw_request(
        port,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000000000000\r\n\r\n{",
    )
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"at most 8388608" in reply
    assert "Traceback" not in capfd.readouterr().err
    ok = requests.post(f"{scripted_model.base_url}/chat/completions", json={"messages": []}, timeout=WAIT)
    assert ok.status_code in (200, 400)  # still serving


def test_idle_connections_time_out(scripted_model: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_server.BoundedHandler, "timeout", 0.5)
    port = int(scripted_model.base_url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as conn:
        conn.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")  # keep-alive: then silence
        start = time.monotonic()
        data = b""
        while piece := conn.recv(65536):
            data += piece
        assert data.startswith(b"HTTP/1.1 200") and time.monotonic() - start < WAIT


# ── 12. the page's headers; a foreign Origin ────────────────────────────────────────────


def test_the_page_may_run_only_its_own_script_and_is_never_framed(workspace: Path, scripted_model: ModelServer):
    relay = relay_in_front_of(scripted_model.base_url, workspace)
    try:
        page = requests.get(relay.url, timeout=WAIT)
        missing = requests.get(relay.url + "nowhere", timeout=WAIT)
    finally:
        relay.close()
    policy = page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "'unsafe-inline'" not in policy and re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", policy)
    assert page.headers["X-Content-Type-Options"] == "nosniff" and page.headers["X-Frame-Options"] == "DENY"
    assert missing.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://evil.example", 403),
        ("null", 403),  # a sandboxed frame or a file:// page
        ("http://127.0.0.1:1", 403),  # another local port is another origin
        ("SAME", 200),
    ],
)
def test_a_foreign_origin_is_refused_even_without_sec_fetch_site(
    workspace: Path, scripted_model: ModelServer, origin: str, status: int
) -> None:
    relay = relay_in_front_of(scripted_model.base_url, workspace)
    try:
        own = relay.url.rstrip("/")
        headers = {"Origin": own if origin == "SAME" else origin}  # and no Sec-Fetch-Site: an older browser
        response = requests.get(f"{relay.url}chat/stream?query=hi", headers=headers, timeout=WAIT)
    finally:
        relay.close()
    assert response.status_code == status
    if status == 403:
        assert "Origin" in response.json()["error"]


# ── 4 and 5 in the relay: the key in the status line; a browser gone before the headers ──


def test_the_browser_status_line_never_shows_an_echoed_key(workspace: Path) -> None:
    with sse_server(b'data: {"error": {"message": "' + b"e" * 470 + KEY.encode() + b'"}}\n\n') as model:
        relay = relay_in_front_of(model.base_url, workspace, api_key=KEY)
        try:
            events = events_of(requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=WAIT))
        finally:
            relay.close()
    [error] = [e["data"]["message"] for e in events if e["event"] == "error"]
    assert "the server reported an error" in error and KEY[:9] not in error


def test_a_browser_that_leaves_before_the_model_answers_ends_the_run(workspace: Path) -> None:
    def silent(conn: socket.socket, server: HostileServer) -> None:
        server.read_request(conn)
        server.wait_for_hang_up(conn, 30)

    with HostileServer(silent) as model:
        relay = relay_in_front_of(model.base_url, workspace)
        try:
            response = requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=WAIT)
            assert model.got_request.wait(WAIT)
            response.close()  # the tab is closed while the model has not even sent its headers
            deadline = time.monotonic() + WAIT
            while not relay.runs and time.monotonic() < deadline:
                time.sleep(0.02)
            assert list(relay.runs) == [{"query": "hi", "stopReason": "aborted"}]  # before: waited for the model
            assert len(model.requests) == 1  # and no further model request was made
        finally:
            relay.close()


# ── already safe: 200 streams at once, XSS as text, traversal and odd methods ───────────


def test_200_concurrent_streams_all_complete(workspace: Path) -> None:
    with sse_server(text_reply("hello")) as model:
        relay = relay_in_front_of(model.base_url, workspace)
        try:

            def one(_: int) -> list[str]:
                response = requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=30)
                return [e["event"] for e in events_of(response)]

            with ThreadPoolExecutor(200) as pool:
                outcomes = list(pool.map(one, range(200)))
        finally:
            relay.close()
    assert all(names[-1] == "done" and "text" in names for names in outcomes)


def test_xss_payloads_travel_as_json_text_and_the_page_never_parses_them(workspace: Path) -> None:
    payload = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'</textarea>"
    with sse_server(text_reply(payload)) as model:
        relay = relay_in_front_of(model.base_url, workspace)
        try:
            response = requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=WAIT)
            events = events_of(response)
            page = requests.get(relay.url, timeout=WAIT).text
        finally:
            relay.close()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert {"event": "text", "data": {"text": payload}} in events
    script = page.split("<script>")[1]
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script
    assert "createTextNode" in script or "textContent" in script


@pytest.mark.parametrize(
    ("request_line", "status"),
    [
        (b"GET /../../etc/passwd HTTP/1.1", b"404"),
        (b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1", b"404"),
        (b"GET /page.html/../../relay.py HTTP/1.1", b"404"),
        (b"PUT / HTTP/1.1", b"501"),
        (b"DELETE /chat/stream HTTP/1.1", b"501"),
        (b"TRACE / HTTP/1.1", b"501"),
        (b"BREW / HTTP/1.1", b"501"),
        (b"POST /chat/stream?query=hi HTTP/1.1", b"405"),
    ],
)
def test_traversal_and_odd_methods_are_refused(
    workspace: Path, scripted_model: ModelServer, request_line: bytes, status: bytes
) -> None:
    relay = relay_in_front_of(scripted_model.base_url, workspace)
    try:
        port = relay.server_address[1]
        reply = raw_request(port, request_line + b"\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0\r\n\r\n" % port)
    finally:
        relay.close()
    assert reply.split(b" ")[1] == status, reply[:200]
    assert b"root:" not in reply and b"import " not in reply
    if status != b"501":
        assert "error" in json.loads(reply.split(b"\r\n\r\n", 1)[1])
