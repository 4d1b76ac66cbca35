"""The relay's WSGI application (``relay:create_app()``) under gunicorn and waitress, as real processes.

Each test starts the server as its own process on 127.0.0.1 (port 0, read back from its
log), with its settings in the environment as a deployer gives them: the page and a
stream end to end, mounted under a path prefix too; a browser that leaves after the first
text stops the model request within a few seconds (found by a failed keep-alive write);
a reader that never reads is dropped after ``INK_SEND_TIMEOUT`` (and ``ink-py serve`` beside
them), so its thread serves others; a foreign Origin or Host gets 403; bad input is refused
before any model is asked and no error shows the key; with ``gunicorn -w 2`` and
``INK_SESSION_DB`` a conversation's follow-ups see its history whichever worker answers.
Skips, saying why, when gunicorn or waitress is not installed (``pip install -e '.[ci]'``);
gunicorn does not run on Windows.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py import bounded_server
from ink_py.course.checks.helpers import sse
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.provider.shared import parse_sse
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article.relay import make_relay_server

from .helpers import ROOT
from .raw_servers import SSE_HEAD, RawServer, end_process, sse_server
from .test_relay import README, README_QUESTION, named, read_all, streamed_text

WAIT_SECONDS = 15.0  # an upper bound on waiting for a process, never a speed check
APP = "ink_py.second_article.relay:create_app"
KEY = "sk-wsgi-SECRET-0123456789abcdef"
COMMANDS = {  # how a deployer starts each server (port 0: any free one, read back from the log)
    "gunicorn": [
        sys.executable,
        "-m",
        "gunicorn",
        "-k",
        "gthread",
        "--threads=8",
        "--limit-request-line",
        "0",
        "-b",
        "127.0.0.1:0",
        f"{APP}()",
    ],  # a 4000-character question is a 36 KB URL: 4094 is too few
    "waitress": [
        *(sys.executable, "-m", "waitress", "--threads=8", "--channel-request-lookahead=1"),
        *("--outbuf-high-watermark=262144", "--listen=127.0.0.1:0", "--call", APP),
    ],  # as docs/relay-wsgi.md runs it
}
LISTENING = re.compile(r"(?:Listening at|Serving on):? http://127\.0\.0\.1:(\d+)")


def needs(server: str) -> None:
    if importlib.util.find_spec(server) is None:
        pytest.skip(f"needs {server} (pip install {server}, or pip install -e '.[ci]')")
    if server == "gunicorn" and sys.platform == "win32":
        pytest.skip("gunicorn does not run on Windows")


class Served:
    """A WSGI server process running the relay; ``url`` is where it answers."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + WAIT_SECONDS
        while not (found := LISTENING.search(log.read_text(errors="replace"))):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{argv[2]} did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.05)
        self.port = int(found[1])
        self.url = f"http://127.0.0.1:{self.port}/"
        time.sleep(0.3)  # gunicorn logs "Listening" before its workers have loaded the application
        requests.get(self.url, timeout=WAIT_SECONDS)  # and one that answers means it is ready

    def stop(self) -> str:
        end_process(self.process, WAIT_SECONDS)
        return self.log.read_text(errors="replace")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "README.md").write_text(README, encoding="utf-8")
    return folder


@pytest.fixture
def serve(tmp_path: Path, workspace: Path) -> Iterator[Callable[..., Served]]:
    """``serve("gunicorn", OPENAI_BASE_URL=…, extra=[…])``: the relay under that server; stopped at the end."""
    started: list[Served] = []

    def start(server: str, *, extra: tuple[str, ...] = (), threads: int = 8, **settings: str) -> Served:
        needs(server)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(ROOT),
            "INK_WORKSPACE": str(workspace),
            "INK_SCRIPTED_DELAY": "0",
            "HOME": str(tmp_path),  # gunicorn's control socket goes there, not into the real home
            **settings,
        }
        command = [f"--threads={threads}" if arg == "--threads=8" else arg for arg in COMMANDS[server]]
        argv = command[:3] + list(extra) + command[3:]
        started.append(Served(argv, env, tmp_path / f"{server}-{len(started)}.log"))
        return started[-1]

    yield start
    for served in started:
        log = served.stop()
        assert "Traceback" not in log, log


def model_env(model: ModelServer | RawServer, **more: str) -> dict[str, str]:
    return {"OPENAI_BASE_URL": model.base_url, "INK_MODEL": "test-model", **more}


both = pytest.mark.parametrize("server", ["gunicorn", "waitress"])


# ── the page and a stream ───────────────────────────────────────────────────────────────


@both
def test_the_page_and_the_readme_question_end_to_end(server: str, serve) -> None:
    relay = serve(server)  # no OPENAI_BASE_URL: the built-in scripted model, as with ink-py serve
    page = requests.get(relay.url, timeout=WAIT_SECONDS)
    assert page.status_code == 200 and 'new EventSource("chat/stream?query="' in page.text  # relative
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"

    response = requests.get(f"{relay.url}chat/stream", params={"query": README_QUESTION}, stream=True, timeout=30)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache" and response.headers["X-Accel-Buffering"] == "no"
    _, events = read_all(response)
    assert [e["event"] for e in events if e["event"] != "text"] == ["tool_preparing", "tool_start", "tool_end", "done"]
    assert "README.md 的标题是「demo」" in streamed_text(events)
    assert named(events, "done")[0]["stopReason"] == "completed"


@both
def test_mounted_under_a_path_prefix_the_page_and_its_stream_are_found(server: str, serve) -> None:
    if server == "waitress":
        relay = serve(server, extra=("--url-prefix=/ink",))
    else:
        relay = serve(server, SCRIPT_NAME="/ink")  # gunicorn takes the prefix from the environment
    bare = requests.get(f"{relay.url}ink", allow_redirects=False, timeout=WAIT_SECONDS)
    assert bare.status_code == 308 and bare.headers["Location"] == "/ink/"  # so that relative URLs resolve
    assert "new EventSource(" in requests.get(f"{relay.url}ink/", timeout=WAIT_SECONDS).text
    stream = requests.get(f"{relay.url}ink/chat/stream", params={"query": "你好"}, stream=True, timeout=30)
    assert named(read_all(stream)[1], "done")
    missing = requests.get(f"{relay.url}ink/nowhere", timeout=WAIT_SECONDS)
    assert missing.status_code == 404 and "not found: /ink/nowhere" in missing.json()["error"]


# ── a browser that leaves ───────────────────────────────────────────────────────────────


@both
def test_a_browser_that_leaves_and_does_not_come_back_stops_the_model_request(server: str, serve) -> None:
    def first_word_then_silence(conn: socket.socket, model: RawServer) -> None:
        model.read_request(conn)
        conn.sendall(SSE_HEAD + sse({"choices": [{"index": 0, "delta": {"content": "一"}}]}))
        model.wait_for_hang_up(conn, 60)  # the model thinks on, its connection open

    with RawServer(first_word_then_silence) as model:
        relay = serve(server, **model_env(model, INK_RESUME_GRACE="0.5"))
        response = requests.get(f"{relay.url}chat/stream", params={"query": "讲个长故事"}, stream=True, timeout=30)
        for event in parse_sse(response.iter_content(chunk_size=None)):
            if event["event"] == "text":
                break  # the first words are on screen: now the browser leaves
        response.close()
        # a keep-alive every 2 s: the second write after the hang-up fails, close() unsubscribes; no reader
        # for INK_RESUME_GRACE, the run is aborted
        assert model.closed_by_client.wait(WAIT_SECONDS), "the model request was still open"
        assert len(model.requests) == 1  # and no further model request was made


# ── a reader that never reads ───────────────────────────────────────────────────────────


def lots_of_text(conn: socket.socket) -> None:
    """A model that streams about 9 MB of text at once: far more than the sockets' buffers hold."""
    piece = sse({"choices": [{"index": 0, "delta": {"content": "字" * 2000}}]})
    for _ in range(1500):
        conn.sendall(piece)
    conn.sendall(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) + b"data: [DONE]\n\n")


def answers_page(url: str, deadline: float) -> bool:
    """Whether ``url`` answers 200 before ``deadline``, asking again while it is busy (503) or refuses."""
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=max(deadline - time.monotonic(), 0.1)).status_code == 200:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.1)  # busy: ask again
    return False


@pytest.mark.parametrize("server", ["ink-py serve", "gunicorn", "waitress"])
def test_a_reader_that_never_reads_is_dropped_after_the_send_timeout(
    server: str, serve, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread (one handler slot), taken by a reader that reads the head and then nothing: with
    ``INK_SEND_TIMEOUT=1`` the page answers again, well before the 30 s default, and the reader's
    stream was cut off (no last chunk), not finished."""
    with sse_server(lots_of_text) as model:
        if server == "ink-py serve":
            monkeypatch.setattr(bounded_server.BoundedServer, "max_handlers", 1)
            relay = make_relay_server(
                provider_factory=lambda: OpenAICompletionsProvider(model.base_url, None),
                model="test-model",
                workspace=workspace,
                send_timeout=1.0,  # what app_for reads from INK_SEND_TIMEOUT
            ).start()
            url, port = relay.url, relay.host_and_port[1]
        else:
            served = serve(server, threads=1, **model_env(model, INK_SEND_TIMEOUT="1"))
            url, port = served.url, served.port
        try:
            reader = socket.socket()
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window, soon shut
            reader.settimeout(WAIT_SECONDS)
            reader.connect(("127.0.0.1", port))
            reader.sendall(b"GET /chat/stream?query=hi HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
            received = reader.recv(1024)
            assert received.startswith(b"HTTP/1.1 200 "), received  # the head: then it reads no more
            assert answers_page(url, time.monotonic() + WAIT_SECONDS), "the reader still holds the only thread"
            try:
                while piece := reader.recv(1 << 20):  # what the buffers held, then the end
                    received += piece
            except ConnectionResetError:
                pass
            reader.close()
            assert b"event: text" in received and not received.endswith(b"0\r\n\r\n")  # cut off, not finished
            assert b"event: done" not in received
        finally:
            if server == "ink-py serve":
                relay.close()


# ── what is refused ─────────────────────────────────────────────────────────────────────


@both
def test_foreign_sites_and_bad_input_are_refused_before_any_model_is_asked(server: str, serve) -> None:
    with sse_server(b"") as model:
        relay = serve(server, **model_env(model, OPENAI_API_KEY=KEY))
        stream = f"{relay.url}chat/stream"
        refusals = [
            (requests.get(stream, params={"query": "hi"}, headers={"Origin": "http://evil.example"}), 403, "Origin"),
            (requests.get(stream, params={"query": "hi"}, headers={"Host": "evil.example"}), 403, "only answers"),
            (
                requests.get(stream, params={"query": "hi"}, headers={"Sec-Fetch-Site": "cross-site"}),
                403,
                "other sites",
            ),
            (requests.get(stream, params={"query": "字" * 4001}), 413, "at most 4000"),
            (requests.get(f"{stream}?query=" + "%E5%AD%97" * 25_000), 414, "at most 65536"),  # unparsed
            (requests.get(stream, params={"query": "hi", "session": "bad id!!"}), 400, "session must be"),
            (requests.get(stream, params={"query": " "}), 400, "empty"),
            (requests.post(stream, data=b"x" * 100_000), 405, "use GET"),
        ]
        for response, status, words in refusals:
            assert response.status_code == status, (status, response.text)
            assert words in response.json()["error"]
        assert model.requests == []  # not one of them reached the model


@both
def test_no_error_text_shows_the_key(server: str, serve) -> None:
    echo = b'data: {"error": {"message": "bad key ' + KEY.encode() + b'"}}\n\n'
    with sse_server(echo) as model:
        relay = serve(server, **model_env(model, OPENAI_API_KEY=KEY))
        response = requests.get(f"{relay.url}chat/stream", params={"query": "hi"}, stream=True, timeout=30)
        raw, events = read_all(response)
    assert [e["event"] for e in events] == ["error"]
    assert KEY not in raw and KEY[:12] not in raw and json.dumps(KEY)[1:-1] not in raw
    assert b"Bearer " + KEY.encode() in model.requests[0]  # it was sent where it belongs


def test_a_setting_it_cannot_use_is_one_error_line_and_the_server_stops(tmp_path: Path) -> None:
    needs("gunicorn")
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env |= {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "INK_WORKSPACE": str(tmp_path)}  # no INK_MODEL
    done = subprocess.run(COMMANDS["gunicorn"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0  # gunicorn halts ("App failed to load") instead of starting workers forever
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert lines[:1] == [
        "error: OPENAI_BASE_URL=http://127.0.0.1:9/v1 (from the environment) points ink-py at that endpoint, "
        "which needs a model: --model NAME (or set INK_MODEL); or `unset OPENAI_BASE_URL` to use the built-in "
        "scripted model"
    ]
    assert "Traceback" not in done.stderr


# ── several workers, one conversation ───────────────────────────────────────────────────


def test_with_two_gunicorn_workers_follow_ups_see_the_history_whichever_worker_answers(serve, tmp_path: Path) -> None:
    config = tmp_path / "name_the_worker.py"  # each worker asks the model under its own name: who answered
    config.write_text("import os\n\ndef post_fork(server, worker):\n    os.environ['INK_MODEL'] = f'w{os.getpid()}'\n")
    with start_model_server(port=0, delay=0) as model:
        relay = serve(
            "gunicorn",
            extra=("-w", "2", "-c", str(config)),
            OPENAI_BASE_URL=model.base_url,
            INK_SESSION_DB=str(tmp_path / "conversations.db"),
        )

        def ask(query: str) -> list[dict[str, Any]]:
            params = {"query": query, "session": "session-shared"}
            headers = {"Connection": "close"}  # a new connection each time: either worker may take it
            response = requests.get(f"{relay.url}chat/stream", params=params, headers=headers, stream=True, timeout=30)
            assert response.status_code == 200, response.text
            return read_all(response)[1]

        first = ask(README_QUESTION)
        assert named(first, "tool_start") and named(first, "done")[0]["messages"] == 4
        workers = set()
        for number in range(1, 41):  # until both workers have answered a follow-up (each is a coin toss)
            follow_up = ask("它的标题是什么?")
            assert "没有再读一次" in streamed_text(follow_up) and not named(follow_up, "tool_start")
            assert named(follow_up, "done")[0]["messages"] == 4 + 2 * number  # the whole history, every time
            workers.add(model.requests[-1]["model"])
            if len(workers) == 2 and number >= 3:
                break
        assert len(workers) == 2, "one worker answered every follow-up"
