"""``ink-py serve``: the agent streamed over SSE (second article §二, §六, §七), over real HTTP.

Every test starts the relay on 127.0.0.1 port 0 and reads ``/chat/stream`` with
``requests`` (``stream=True``) and ink_py's own ``parse_sse``. The model behind it is the
built-in scripted model, or ``FakeModelServer`` when a test must control each reply (a
pause, a loop of failing calls), or a raw socket that never answers. Covers: the page, the
README question's events, the wire format, keep-alive, a browser that leaves (before the
model's headers, mid-reply, or as a write fails) aborting the run, §六's iteration limit and
tool errors fed back, model errors, the command, and sessions. What the relay refuses
(other sites, bad questions, odd requests) is tests/test_relay_guards.py's.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.core.abort import AbortController
from ink_py.course.checks.fake_server import FakeModelServer, Pause, Reply
from ink_py.course.checks.helpers import sse, text_reply, tool_reply
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.provider.shared import parse_sse
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article import relay as relay_module
from ink_py.second_article.follow import follow
from ink_py.second_article.producer import NO_READER, Producers
from ink_py.second_article.relay import RelayServer, make_relay_server
from ink_py.second_article.runs import MemoryRuns
from ink_py.second_article.stream import RETRY, SseBody
from ink_py.second_article.wsgi_server import peer_closed

from .helpers import ROOT, cli_env, ctrl_c_reaches_children
from .raw_servers import RawServer

README = "# demo\n\nA tiny project.\n\n```sh\npip install -e .\ndemo --help\n```\n"
README_QUESTION = "读取 README.md,告诉我项目怎样启动"
EVENT_NAMES = {"text", "thinking", "tool_preparing", "tool_start", "tool_end", "done", "error"}
WAIT_SECONDS = 10.0  # an upper bound on waiting for another thread, never a speed check
GRACE = 0.3  # INK_RESUME_GRACE for the tests of a browser that leaves and does not come back


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


@pytest.fixture
def scripted_model() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as model:
        yield model


def start_relay(
    base_url: str, workspace: Path, api_key: str | None = None, ink: Any = None, **settings: Any
) -> RelayServer:
    """A relay on 127.0.0.1 (port 0) in front of the model at ``base_url``, started; the caller closes it.
    Given ``ink``, the relay and its provider are that implementation's (a student's copy under --impl)."""
    make, provider = (
        (make_relay_server, OpenAICompletionsProvider)
        if ink is None
        else (ink.relay.make_relay_server, ink.openai_completions.OpenAICompletionsProvider)
    )
    return make(
        provider_factory=lambda: provider(base_url, api_key),
        model="test-model",
        workspace=workspace,
        **settings,
    ).start()


@pytest.fixture
def relay_for(workspace: Path) -> Iterator[Callable[..., RelayServer]]:
    """Start a relay in front of a base URL; every relay started is closed at the end."""
    relays: list[RelayServer] = []

    def start(base_url: str, **settings: Any) -> RelayServer:
        relays.append(start_relay(base_url, settings.pop("workspace", workspace), **settings))
        return relays[-1]

    yield start
    for server in relays:
        server.close()


@pytest.fixture
def relay(relay_for: Callable[..., RelayServer], scripted_model: ModelServer) -> RelayServer:
    return relay_for(scripted_model.base_url)


def open_stream(server: RelayServer, query: str) -> requests.Response:
    response = requests.get(f"{server.url}chat/stream", params={"query": query}, stream=True, timeout=WAIT_SECONDS)
    assert response.status_code == 200, response.text
    return response


def read_all(response: requests.Response) -> tuple[str, list[dict[str, Any]]]:
    """The whole stream: its raw text and its events, parsed by ink_py's parse_sse."""
    reads = list(response.iter_content(chunk_size=None))
    return b"".join(reads).decode("utf-8"), list(parse_sse(reads))


def named(events: list[dict[str, Any]], name: str) -> list[Any]:
    return [event["data"] for event in events if event["event"] == name]


def streamed_text(events: list[dict[str, Any]]) -> str:
    return "".join(data["text"] for data in named(events, "text"))


def wait_until(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


# ── the page ────────────────────────────────────────────────────────────────────────────


def test_the_page_is_served_and_needs_nothing_from_outside(relay: RelayServer) -> None:
    response = requests.get(relay.url, timeout=WAIT_SECONDS)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    page = response.text
    for element in ("query", "send", "output", "tools", "status"):
        assert f'id="{element}"' in page
    assert "let es = null" in page and "new EventSource(" in page
    assert "es.close()" in page and "beforeunload" in page
    assert "innerHTML" not in page  # model text only ever becomes text nodes
    assert README_QUESTION in page and "发送" in page
    assert re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page) is None  # no CDN, nothing external
    assert "https://" not in page and "http://" not in page


def test_the_pages_code_quoted_in_the_docs_is_the_pages_own() -> None:
    """docs/second-article.md sets the page's onerror beside the seed's: the quote must stay true."""
    docs = (ROOT / "docs" / "second-article.md").read_text(encoding="utf-8")
    page = (ROOT / "ink_py" / "second_article" / "page.html").read_text(encoding="utf-8")
    quotes = re.findall(r"```js\n// ink_py/second_article/page\.html · [^\n]*\n(.*?)```", docs, re.S)
    assert quotes, "the page's onerror is no longer quoted"
    for quote in quotes:
        assert quote in page, quote


# ── the README question, end to end ─────────────────────────────────────────────────────


def test_the_readme_question_streams_text_tool_activity_and_done(relay: RelayServer, scripted_model) -> None:
    response = open_stream(relay, README_QUESTION)
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["Connection"] == "close"  # one run per connection
    _, events = read_all(response)

    names = [event["event"] for event in events]
    assert set(names) <= EVENT_NAMES
    assert names.count("tool_preparing") == names.count("tool_start") == names.count("tool_end") == 1
    assert names.index("text") < names.index("tool_preparing") < names.index("tool_start") < names.index("tool_end")
    assert names[-1] == "done" and names.count("done") == 1

    [start] = named(events, "tool_start")
    call = {"id": start["id"], "name": "read"}
    assert named(events, "tool_preparing") == [call]  # announced; its JSON fragments are not sent (§五)
    assert start == {**call, "args": {"path": "README.md"}}
    size = len(README.rstrip("\n").encode())  # read drops the final newline
    assert named(events, "tool_end") == [{**call, "ok": True, "size": size}]

    text = streamed_text(events)
    assert text.startswith("我先读一下 README.md。")
    assert "README.md 的标题是「demo」" in text and "pip install -e .\ndemo --help" in text
    [done] = named(events, "done")
    assert done["stopReason"] == "completed" and done["turns"] == 2 and done["truncated"] is False
    assert done["usage"]["inputTokens"] > 0 and done["maxTurns"] == relay.max_turns
    assert len(scripted_model.requests) == 2
    wait_until(lambda: relay.runs, "the run's record")
    assert list(relay.runs) == [{"query": README_QUESTION, "stopReason": "completed"}]


def test_every_frame_is_one_numbered_named_event_with_one_json_data_line(relay: RelayServer) -> None:
    raw, _ = read_all(open_stream(relay, "读取 README.md\n然后用两行回答"))  # a newline in the question, too
    assert raw.startswith("retry: 1000\n\n") and raw.endswith("\n\n")  # retry: once, first
    ids = []
    for frame in raw[len("retry: 1000\n\n") : -2].split("\n\n"):
        lines = frame.split("\n")
        if lines == [": keep-alive"]:
            continue
        assert len(lines) == 3, frame
        ids.append(int(lines[0].removeprefix("id: ")))
        assert lines[1].removeprefix("event: ") in EVENT_NAMES
        assert lines[2].startswith("data: ") and isinstance(json.loads(lines[2].removeprefix("data: ")), dict)
    assert ids == list(range(1, len(ids) + 1))  # 1, 2, 3 … within the run: what Last-Event-ID sends back


# ── keep-alive, and a browser that leaves ───────────────────────────────────────────────


def test_a_keep_alive_comment_arrives_while_the_model_is_thinking(relay_for) -> None:
    thinking = Pause()
    with FakeModelServer([Reply(parts=[thinking, text_reply("想好了。")])]) as model:
        server = relay_for(model.base_url, keep_alive_seconds=0.05)
        response = open_stream(server, "你好")
        received = b""
        chunks = response.iter_content(chunk_size=None)
        while b": keep-alive\n\n" not in received:  # the model has sent nothing yet
            received += next(chunks)
        thinking.event.set()  # now let it answer
        received += b"".join(chunks)
    raw = received.decode("utf-8")
    assert raw.index(": keep-alive") < raw.index("event: text")
    events = list(parse_sse([received]))  # comments are skipped by parse_sse
    assert streamed_text(events) == "想好了。"
    assert named(events, "done")[0]["stopReason"] == "completed"


def test_closing_the_stream_aborts_the_run_after_the_grace_and_closes_the_model_connection(relay_for) -> None:
    stalled = Pause(limit=30.0)  # the model goes silent mid-reply, its connection open
    rest = [sse({"choices": [{"index": 0, "delta": {"content": piece}}]}) for piece in ("二", "三")]
    reply = Reply(parts=[sse({"choices": [{"index": 0, "delta": {"content": "一"}}]}), stalled, *rest])
    with FakeModelServer([reply, Reply(parts=[text_reply("never asked")])]) as model:
        # found by the watcher, not a keep-alive; no one comes back within the grace
        server = relay_for(model.base_url, keep_alive_seconds=60.0, run_log=MemoryRuns(grace=GRACE))
        response = open_stream(server, "讲个长故事")
        for event in parse_sse(response.iter_content(chunk_size=None)):
            if event["event"] == "text":
                break  # the first words are on screen: now the browser closes the stream
        response.close()

        wait_until(lambda: server.runs, "the run to end")
        assert list(server.runs) == [{"query": "讲个长故事", "stopReason": "aborted"}]
        assert stalled.released_in_time is None  # the run ended while the model was still silent
        stalled.event.set()  # the model speaks again, into a connection the relay has closed
        wait_until(lambda: stalled.client_gone, "the model to see its connection closed")
        assert len(model.requests) == 1  # no further model request


def test_a_browser_that_leaves_before_the_model_answers_ends_the_run(relay_for) -> None:
    def silent(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        server.wait_for_hang_up(conn, 30)

    with RawServer(silent) as model:
        server = relay_for(model.base_url, run_log=MemoryRuns(grace=GRACE))
        response = open_stream(server, "hi")
        assert model.got_request.wait(WAIT_SECONDS)
        response.close()  # the tab is closed while the model has not even sent its headers
        wait_until(lambda: server.runs, "the run to end")
        assert list(server.runs) == [{"query": "hi", "stopReason": "aborted"}]  # not: waited for the model
        assert len(model.requests) == 1  # and no further model request was made


def test_closing_the_body_unsubscribes_and_the_run_goes_on_until_the_grace_ends() -> None:
    runs, key, controller, word = MemoryRuns(grace=GRACE), ("session-1", "run-0001"), AbortController(), []

    def work(send) -> tuple[str, dict[str, Any]]:  # a model that says one word, then goes silent until aborted
        send("text", {"text": "一"})
        controller.signal.wait(WAIT_SECONDS)
        word.append(controller.signal.reason)
        return "done", {"stopReason": "aborted"}

    Producers(runs).start(key, runs.claim(key) or 0, controller, work)
    body = SseBody(follow(runs, key, 0, keep_alive=60.0))
    pieces = iter(body)
    assert next(pieces) == RETRY  # the headers go out at once
    assert next(pieces) == 'id: 1\nevent: text\ndata: {"text": "一"}\n\n'.encode()
    body.close()  # what every WSGI server does once a write has failed: the unsubscribe
    assert not controller.signal.aborted  # not yet: the browser may come back within the grace
    wait_until(lambda: word, "the run to end")
    assert word == [NO_READER]  # no one came back
    wait_until(lambda: runs.status(key).state == "ended", "its last event")
    assert [name for _, name, _ in runs.read(key, 0, 0).events] == ["text", "done"]


@pytest.mark.parametrize(
    ("their_side", "closed"),
    [("open", False), ("sent bytes", False), ("closed", True), ("half-closed", True)],
)
def test_peer_closed_tells_a_gone_browser_from_a_quiet_one(their_side: str, closed: bool) -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        if their_side == "sent bytes":
            theirs.sendall(b"GET / HTTP/1.1\r\n")  # readable, but not gone
        elif their_side == "closed":
            theirs.close()
        elif their_side == "half-closed":
            theirs.shutdown(socket.SHUT_WR)  # nothing more will come: taken as gone
        assert peer_closed(ours) is closed


# ── §六: the iteration limit, and tool errors fed back to the model ─────────────────────


def test_a_model_that_keeps_calling_a_failing_tool_stops_at_max_turns(relay_for) -> None:
    again = [Reply(parts=[tool_reply((f"call_{n}", "read", '{"path": "missing.md"}'))]) for n in range(1, 4)]
    with FakeModelServer(again) as model:
        server = relay_for(model.base_url, max_turns=3)
        _, events = read_all(open_stream(server, "读取 missing.md"))
    ends = named(events, "tool_end")
    assert [end["ok"] for end in ends] == [False, False]  # the third call is never run
    assert all(end["error"] == "Error: file not found: missing.md" for end in ends)
    [done] = named(events, "done")
    assert (done["stopReason"], done["turns"], done["maxTurns"]) == ("max_iterations", 3, 3)
    assert len(model.requests) == 3


def test_a_tool_error_reaches_the_model_and_its_answer_reaches_the_page(relay, scripted_model) -> None:
    _, events = read_all(open_stream(relay, "读取 missing.md,告诉我项目怎样启动"))
    [end] = named(events, "tool_end")
    assert end["ok"] is False and end["error"] == "Error: file not found: missing.md"
    second = scripted_model.requests[1]["messages"]
    assert second[-1]["role"] == "tool" and "file not found: missing.md" in second[-1]["content"]
    assert "读取 missing.md 失败,工具返回:「Error: file not found: missing.md」" in streamed_text(events)
    assert named(events, "done")[0]["stopReason"] == "completed"


# ── model failures ──────────────────────────────────────────────────────────────────────


def test_a_model_error_becomes_an_error_event_and_ends_the_stream(relay_for) -> None:
    refusal = Reply(status=400, parts=[b'{"error": {"message": "model not found"}}'], framing="length")
    with FakeModelServer([refusal]) as model:
        server = relay_for(model.base_url)
        _, events = read_all(open_stream(server, "你好"))
    assert [event["event"] for event in events] == ["error"]
    assert "API error 400" in events[0]["data"]["message"] and "model not found" in events[0]["data"]["message"]
    wait_until(lambda: server.runs, "the run's record")
    assert "API error 400" in server.runs[0]["error"]


def test_an_unreachable_model_is_an_error_event_not_a_hang(relay_for, monkeypatch) -> None:
    monkeypatch.setattr("ink_py.provider.transport.backoff_seconds", lambda attempt: 0.0)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens here
        server = relay_for(f"http://127.0.0.1:{port}/v1")
        _, events = read_all(open_stream(server, "你好"))
    assert [event["event"] for event in events] == ["error"]
    assert "is the server running? (connection refused" in events[0]["data"]["message"]


# ── the command ─────────────────────────────────────────────────────────────────────────


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = relay_module.main(argv)
    except SystemExit as exit:
        code = exit.code  # type: ignore[assignment]
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workspace", "/no/such/folder"], "error: --workspace /no/such/folder: not a folder"),
        (["--base-url", "http://127.0.0.1:9/v1"], "error: name the model to use"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--scenario", "abort"], "error: --scenario only"),
        (["--port", "70000"], "error: argument --port: 70000 is not between 0 and 65535"),
        (["--max-turns", "0"], "error: argument --max-turns: must be at least 1"),
        (["--scenario", "nope"], "error: argument --scenario: invalid choice"),
    ],
)
def test_bad_flags_are_one_error_line(argv, message, capsys, monkeypatch) -> None:
    for name in ("OPENAI_BASE_URL", "INK_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    code, err = run_main(argv, capsys)
    assert code == 1
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_without_redis_py_a_redis_url_is_one_error_line_naming_the_install(tmp_path: Path) -> None:
    code = "import sys; sys.modules['redis'] = None  # as if not installed\n"
    code += "from ink_py.second_article.relay import create_app; create_app()"
    env = cli_env(INK_REDIS_URL="redis://127.0.0.1:9/0", INK_WORKSPACE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 4  # create_app's exit code for a setting it cannot use: gunicorn halts
    assert done.stderr == "error: a Redis URL needs redis-py: pip install -e '.[redis]'\n"


def test_a_port_in_use_is_one_error_line(capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, err = run_main(["--port", str(taken.getsockname()[1])], capsys)
    assert code == 1 and "error: cannot listen on 127.0.0.1:" in err and "Traceback" not in err


def test_ink_py_serve_prints_its_url_first_and_ctrl_c_ends_it_quietly(workspace: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    with ctrl_c_reaches_children():
        process = subprocess.Popen(
            [sys.executable, "-m", "ink_py", "serve", "--port", "0", "--workspace", str(workspace)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        assert "new EventSource(" in requests.get(url, timeout=WAIT_SECONDS).text
        stream = requests.get(f"{url}chat/stream", params={"query": README_QUESTION}, stream=True)
        first = next(parse_sse(stream.iter_content(chunk_size=None)))  # the built-in model answers…
        assert first["event"] == "text" and first["data"]["text"]
        stream.close()  # …and need not be heard out
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0
    assert "Traceback" not in err and "built-in scripted model" in err


# ── a conversation: ?session=ID carries the history ─────────────────────────────────────


def ask_in(server: RelayServer, query: str, session: str | None) -> list[dict[str, Any]]:
    params = {"query": query, **({"session": session} if session else {})}
    response = requests.get(f"{server.url}chat/stream", params=params, stream=True, timeout=WAIT_SECONDS)
    assert response.status_code == 200, response.text
    return read_all(response)[1]


def test_a_session_continues_the_conversation_and_another_starts_afresh(relay: RelayServer, scripted_model) -> None:
    first = ask_in(relay, README_QUESTION, "session-one")
    assert named(first, "done")[0]["messages"] == 4  # user, assistant (read), toolResult, assistant
    follow_up = ask_in(relay, "它的标题是什么?", "session-one")
    assert "没有再读一次" in streamed_text(follow_up) and not named(follow_up, "tool_start")
    assert named(follow_up, "done")[0]["messages"] == 6
    fresh = ask_in(relay, "它的标题是什么?", "session-two")  # 新对话: nothing read yet, so it reads
    assert named(fresh, "tool_start") and "没有再读一次" not in streamed_text(fresh)
    alone = ask_in(relay, "它的标题是什么?", None)  # no session: one question per stream, as before
    assert named(alone, "tool_start") and named(alone, "done")[0]["messages"] == 4
    assert len(relay.sessions["session-one"]) == 6 and "session-two" in relay.sessions


def test_an_aborted_reply_leaves_nothing_partial_in_the_session(relay_for, workspace) -> None:
    with start_model_server(port=0, scenario="slow", delay=0) as model:
        server = relay_for(model.base_url, run_log=MemoryRuns(grace=GRACE))
        response = requests.get(
            f"{server.url}chat/stream", params={"query": "慢慢说", "session": "session-abort"}, stream=True, timeout=10
        )
        next(response.iter_content(chunk_size=None))  # the stream has begun
        response.close()  # the browser leaves mid-answer
        wait_until(lambda: server.runs, "the aborted run's record")
    assert server.runs[0]["stopReason"] == "aborted"
    assert server.sessions["session-abort"] == [{"role": "user", "content": "慢慢说"}]  # §4.2


def test_one_session_answers_one_question_at_a_time(relay_for) -> None:
    with start_model_server(port=0, scenario="slow", delay=0) as model:
        server = relay_for(model.base_url)
        params = {"query": "慢慢说", "session": "session-busy"}
        first = requests.get(f"{server.url}chat/stream", params=params, stream=True, timeout=10)
        next(first.iter_content(chunk_size=None))
        second = requests.get(f"{server.url}chat/stream", params=params, timeout=10)
        assert second.status_code == 409 and "still answering" in second.json()["error"]
        first.close()


def test_sessions_are_bounded(relay: RelayServer, monkeypatch) -> None:
    monkeypatch.setattr("ink_py.second_article.sessions.SESSIONS_KEPT", 2)
    for name in ("session-a1", "session-b2", "session-c3"):
        ask_in(relay, "你好", name)
    assert list(relay.sessions) == ["session-b2", "session-c3"]  # the least recently used went first
    monkeypatch.setattr("ink_py.second_article.sessions.MAX_SESSION_CHARS", 10)
    response = requests.get(
        f"{relay.url}chat/stream", params={"query": "再问", "session": "session-c3"}, timeout=WAIT_SECONDS
    )
    assert response.status_code == 413 and "新对话" in response.json()["error"]


def test_done_says_why_a_run_was_aborted(relay_for) -> None:
    with start_model_server(port=0, scenario="slow", delay=0) as model:
        server = relay_for(model.base_url)
        response = open_stream(server, "慢慢说")
        reads = response.iter_content(chunk_size=None)
        first = next(reads)
        server.close()  # the server stops while the browser is still reading
        rest = b"".join(reads)
    events = list(parse_sse([first, rest]))
    assert named(events, "done")[0]["abortReason"] == "the server is shutting down"
