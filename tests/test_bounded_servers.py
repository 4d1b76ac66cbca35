"""Every server ink_py starts (``serve``, ``serve-model``, ``demo --web``) against clients that hold on.

bounded_server.py's bounds, from outside: clients that send a request head slowly and never
finish it are answered 503 past the bound on handlers and cut off at the head deadline; under
``ink-py serve`` one client address gets at most ``INK_MAX_CONNECTIONS_PER_CLIENT`` (429 beyond),
so a slowloris from 127.0.0.2 leaves the page answering 127.0.0.1, and a proxy listed in
``FORWARDED_ALLOW_IPS`` is not capped; a 1 TB Content-Length gets 413; an idle keep-alive
connection times out — and the bounds never refuse real work (200 streams through the relay at
once). Everything listens on 127.0.0.1, port 0; every wait is bounded.
"""

from __future__ import annotations

import json
import re
import select
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py import bounded_server
from ink_py.course.checks.helpers import text_reply
from ink_py.course.demo_web import DemoServer
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article.quotas import Quotas

from .raw_servers import raw_request, sse_server
from .test_relay import read_all, run_main, start_relay

WAIT = 10.0  # an upper bound on waiting for another thread, never a speed check


@pytest.fixture
def scripted_model() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as model:
        yield model


def port_of(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture
def handlers(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The handlers the servers run, each while it holds a slot: how many ran, run "now", and at "most" at once."""
    count = {"ran": 0, "now": 0, "most": 0}
    lock = threading.Lock()
    serve = socketserver.ThreadingMixIn.process_request_thread  # BoundedServer's runs inside its slot

    def counted(server: Any, request: Any, client_address: Any) -> None:
        with lock:
            count["ran"], count["now"] = count["ran"] + 1, count["now"] + 1
            count["most"] = max(count["most"], count["now"])
        try:
            serve(server, request, client_address)
        finally:
            with lock:
                count["now"] -= 1

    monkeypatch.setattr(socketserver.ThreadingMixIn, "process_request_thread", counted)
    return count


def ending(conn: socket.socket) -> bytes:
    """All a connection receives until it is closed (or reset: a server that closed with our bytes unread)."""
    received = b""
    try:
        while piece := conn.recv(65536):
            received += piece
    except ConnectionResetError:
        pass
    conn.close()
    return received


@pytest.mark.parametrize("which", ["relay", "serve-model", "demo --web"])
def test_slowloris_clients_are_bounded_and_cut_off(
    which: str, tmp_path: Path, scripted_model: ModelServer, monkeypatch: pytest.MonkeyPatch, handlers: dict[str, int]
) -> None:
    monkeypatch.setattr(bounded_server, "HEAD_DEADLINE_SECONDS", 1.0)
    monkeypatch.setattr(bounded_server.BoundedServer, "max_handlers", 20)
    with start_model_server(port=0, delay=0) as model:
        if which == "relay":
            server: Any = start_relay(scripted_model.base_url, tmp_path)
        elif which == "demo --web":
            server = DemoServer({}, {}).start()
        else:
            server = model
        port = int(re.search(r":(\d+)/", server.base_url + "/" if which == "serve-model" else server.url).group(1))
        slow = []
        for _ in range(60):
            conn = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
            conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
            slow.append(conn)
        ends = [ending(conn) for conn in slow]  # each within WAIT: a 503 at once, or cut at the head deadline
        busy = sum(end.startswith(b"HTTP/1.1 503") for end in ends)
        assert handlers["most"] == 20, handlers  # never more at once than the bound, and it was reached
        assert busy == 60 - handlers["ran"] and busy > 0  # a client past it got a 503, not silence
        assert [end for end in ends if not end.startswith(b"HTTP/1.1 503")] == [b""] * handlers["ran"]  # cut
        deadline = time.monotonic() + WAIT
        while handlers["now"] and time.monotonic() < deadline:
            time.sleep(0.01)  # the cut handlers' threads end (a client sees the cut before its slot is free)
        path = "/v1/models" if which == "serve-model" else "/"
        headers = {"Host": f"127.0.0.1:{port}"}
        assert requests.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=WAIT).status_code == 200
        if which != "serve-model":
            server.close()


def test_a_closed_server_leaves_no_thread_behind() -> None:
    before = set(threading.enumerate())
    with start_model_server(port=0, delay=0) as model:
        assert requests.get(f"{model.base_url}/models", timeout=WAIT).status_code == 200  # a head: the watchdog starts
        watchdogs = [t for t in set(threading.enumerate()) - before if t.name == "ink-head-watchdog"]
    for thread in watchdogs:
        thread.join(WAIT)
    assert watchdogs and not [t for t in watchdogs if t.is_alive()]  # it ended with the server


def slow_client(port: int, source: str) -> socket.socket:
    """A connection from ``source`` (Linux routes all of 127/8 to lo) that sends half a request head."""
    conn = socket.socket()
    try:
        conn.bind((source, 0))
    except OSError:
        conn.close()
        pytest.skip(f"{source} is not an address of this machine (Linux routes all of 127/8 to lo)")
    conn.settimeout(WAIT)
    conn.connect(("127.0.0.1", port))
    conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % port)  # and one byte now and then
    return conn


def refused(connections: list[socket.socket], expected: int) -> dict[socket.socket, bytes]:
    """The connections refused at once and their answers, waiting until ``expected`` have come."""
    answers: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + WAIT
    while len(answers) < expected and time.monotonic() < deadline:
        readable, _, _ = select.select([c for c in connections if c not in answers], [], [], 0.1)
        for conn in readable:
            answers[conn] = conn.recv(65536)
    return answers


def finish(conn: socket.socket) -> bytes:
    """End a slow client's head at last; its whole answer."""
    conn.sendall(b"1\r\nConnection: close\r\n\r\n")
    reply = b""
    while piece := conn.recv(65536):
        reply += piece
    return reply


def test_a_slowloris_from_one_address_leaves_the_page_answering(tmp_path: Path, scripted_model: ModelServer) -> None:
    relay = start_relay(scripted_model.base_url, tmp_path)  # INK_MAX_CONNECTIONS_PER_CLIENT: its default, 32
    port = relay.host_and_port[1]
    slow = [slow_client(port, "127.0.0.2") for _ in range(270)]
    try:
        answers = refused(slow, 270 - 32)  # at once, without taking a handler
        assert all(a.startswith(b"HTTP/1.1 429 Too Many Requests\r\n") for a in answers.values())
        assert all(b"\r\nRetry-After: 1\r\n" in a for a in answers.values())
        assert "from your address" in json.loads(next(iter(answers.values())).split(b"\r\n\r\n")[1])["error"]
        held = [conn for conn in slow if conn not in answers]
        for conn in held:
            conn.sendall(b"x")  # the slowloris goes on: one byte now and then
        pages = [requests.get(relay.url, timeout=WAIT) for _ in range(10)]
        assert [page.status_code for page in pages] == [200] * 10  # 127.0.0.1 is another client
        assert len(held) == 32 and all(finish(conn).startswith(b"HTTP/1.1 200 ") for conn in held)  # held, alive
    finally:
        for conn in slow:
            conn.close()
        relay.close()


def test_a_trusted_proxy_is_not_capped_and_others_are(
    tmp_path: Path, scripted_model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INK_MAX_CONNECTIONS_PER_CLIENT", "4")
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.0.0.0/8, 127.0.0.2")  # the proxy carries many clients
    relay = start_relay(scripted_model.base_url, tmp_path)
    port = relay.host_and_port[1]
    proxied = [slow_client(port, "127.0.0.2") for _ in range(12)]
    direct = [slow_client(port, "127.0.0.3") for _ in range(5)]
    try:
        over = refused(direct, 1)  # the fifth from 127.0.0.3
        assert len(over) == 1 and next(iter(over.values())).startswith(b"HTTP/1.1 429 ")
        answers = [finish(conn) for conn in proxied + [conn for conn in direct if conn not in over]]
        assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answers)  # none of the proxy's twelve refused
    finally:
        for conn in proxied + direct:
            conn.close()
        relay.close()


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("INK_MAX_CONNECTIONS_PER_CLIENT", "²", "INK_MAX_CONNECTIONS_PER_CLIENT='²': give a whole number from 0 to"),
        ("INK_MAX_CONNECTIONS_PER_CLIENT", "-1", "INK_MAX_CONNECTIONS_PER_CLIENT='-1': give a whole number from 0 to"),
        ("FORWARDED_ALLOW_IPS", "127.0.0.1,proxy.example", "'proxy.example' is not an IP address or network"),
        ("INK_SEND_TIMEOUT", "0", "INK_SEND_TIMEOUT='0': give a number of seconds from 1 to 3600"),
    ],
)
def test_a_connection_setting_it_cannot_use_is_one_error_line(
    name: str, value: str, words: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv(name, value)
    code, err = run_main(["--port", "0"], capsys)
    assert code == 1 and err.startswith("error: ") and words in err and err.count("\n") == 1, err


def test_a_1_tb_content_length_gets_413_and_no_traceback(
    scripted_model: ModelServer, capfd: pytest.CaptureFixture[str]
) -> None:
    reply = raw_request(
        port_of(scripted_model.base_url),
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
    with socket.create_connection(("127.0.0.1", port_of(scripted_model.base_url)), timeout=WAIT) as conn:
        conn.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")  # keep-alive: then silence
        start = time.monotonic()
        data = b""
        while piece := conn.recv(65536):
            data += piece
        assert data.startswith(b"HTTP/1.1 200") and time.monotonic() - start < WAIT


def test_200_concurrent_streams_all_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INK_MAX_CONNECTIONS_PER_CLIENT", "0")  # 200 browsers, all from 127.0.0.1
    with sse_server(text_reply("hello")) as model:
        relay = start_relay(model.base_url, tmp_path, quotas=Quotas(runs_per_client=200))  # one address: 200 runs
        try:

            def one(_: int) -> list[str]:
                response = requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=30)
                return [e["event"] for e in read_all(response)[1]]

            with ThreadPoolExecutor(200) as pool:
                outcomes = list(pool.map(one, range(200)))
        finally:
            relay.close()
    assert all(names[-1] == "done" and "text" in names for names in outcomes)
