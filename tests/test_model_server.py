"""The built-in scripted model (ink_py/scripted/), over real HTTP on 127.0.0.1 (port 0, no delay).

Covers: the default task end to end through ink_py's own provider, the abort scenario's reply
held open, the retry after a refused call, the writes (§2.1's two reads; fixtures cut awkwardly)
and the pauses, the non-streaming and error replies, the official ``openai`` package as a client, and
``ink-py serve-model`` as a process.
What the script answers is tests/test_scripted_answers.py's; the other dialects' own wire,
tests/test_dialect_model.py's; each scenario as its provider sends it, tests/test_scenario_wire.py's.
"""

from __future__ import annotations

import json
import re
import shlex
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
from hypothesis import given
from hypothesis import strategies as st

from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.scripted import chat_wire, wire
from ink_py.scripted import server as model_server
from ink_py.scripted.server import DEFAULT_DELAY, PAUSES_PER_REPLY, ModelServer, pace, start_model_server
from ink_py.scripted.wire import MESSAGES, RESPONSES

from .helpers import ROOT, cli_env, ctrl_c_reaches_children
from .test_cli import ink_py

READ_TOOL = {
    "name": "read",
    "description": "Read a text file in the workspace.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
OPENAI_READ_TOOL = {"type": "function", "function": READ_TOOL}
README_TEXT = "# ink_py\n\nA teaching reference.\n\n```sh\n$ pip install -e .\nink-py --help\n```\n"
RETRY_ERROR = "Error: the arguments of read were not valid JSON. Send the call again with complete JSON arguments."
PATHS = {"openai-completions": "/chat/completions", MESSAGES: "/messages", RESPONSES: "/responses"}


@pytest.fixture
def serve() -> Iterator[Callable[..., ModelServer]]:
    servers: list[ModelServer] = []

    def start(scenario: str = "readme") -> ModelServer:
        servers.append(start_model_server(port=0, scenario=scenario, delay=0))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def request_for(prompt: str, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An LLMRequest as the loop builds it."""
    return {
        "model": "ink-scripted",
        "system": "You are a coding agent.",
        "messages": [{"role": "user", "content": prompt}, *(messages or [])],
        "tools": [READ_TOOL],
    }


def tool_result(call_id: str, content: str, is_error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "results": [{"toolCallId": call_id, "toolName": "read", "content": content, "isError": is_error}],
    }


def turn(server: ModelServer, request: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One turn through ink_py's provider: its events and the assembled message."""
    events = list(OpenAICompletionsProvider(server.base_url).stream(request))  # type: ignore[arg-type]
    assert events[-1]["type"] == "message_end"
    return events, events[-1]["message"]


def wire_body(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"model": "ink-scripted", "messages": [{"role": "user", "content": prompt}], **extra}


# ── the default task, through ink_py's own client ───────────────────────────────────────


def test_readme_task_end_to_end(serve: Callable[..., ModelServer]) -> None:
    server = serve()
    request = request_for("读取 README.md,告诉我项目怎样启动")
    events, message = turn(server, request)

    text, call = message["blocks"]
    assert text == {"type": "text", "text": "我先读一下 README.md。"}
    assert call["type"] == "toolCall" and call["name"] == "read"
    assert call["arguments"] == {"path": "README.md"}
    assert message["stopReason"] == "tool_use"
    assert message["usage"]["outputTokens"] > 0  # the usage chunk arrived
    fragments = [e["jsonDelta"] for e in events if e["type"] == "tool_call_delta"]
    assert fragments == ['{"path":"REA', 'DME.md"}']  # §2.1, §2.2

    request["messages"] += [message, tool_result(call["id"], README_TEXT)]
    events, message = turn(server, request)
    answer = message["blocks"][0]["text"]
    assert message["stopReason"] == "end_turn"
    assert "「ink_py」" in answer
    for command in ("pip install -e .", "ink-py --help"):
        assert command in answer
    assert sum(e["type"] == "text_delta" for e in events) > 3  # streamed in pieces
    sent = server.requests[-1]
    assert sent["messages"][-1] == {"role": "tool", "tool_call_id": call["id"], "content": README_TEXT}


def test_a_prompt_naming_another_file_reads_that_file(serve: Callable[..., ModelServer]) -> None:
    _, message = turn(serve(), request_for("看看 docs/intro.md 里写了什么"))
    assert message["blocks"][0]["text"] == "我先读一下 docs/intro.md。"
    assert message["blocks"][1]["arguments"] == {"path": "docs/intro.md"}


def test_a_refused_call_is_sent_again(serve: Callable[..., ModelServer]) -> None:
    server = serve("invalid-json")
    request = request_for("读取 README.md")
    _, message = turn(server, request)  # the fixture: arguments that do not parse
    bad_call = message["blocks"][0]
    assert "_parseError" in bad_call["arguments"]

    request["messages"] += [message, tool_result(bad_call["id"], RETRY_ERROR, is_error=True)]
    _, message = turn(server, request)
    again = [block for block in message["blocks"] if block["type"] == "toolCall"]
    assert len(again) == 1 and again[0]["name"] == "read"
    assert again[0]["arguments"] == {"path": "README.md"}
    assert again[0]["id"] != bad_call["id"]
    assert message["stopReason"] == "tool_use"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
ROLES = st.sampled_from(["user", "assistant", "tool", "system", 3])
MESSAGE = st.fixed_dictionaries({"role": ROLES}, optional={"content": JSON, "tool_calls": JSON, "tool_call_id": JSON})


TOOL_CHOICE = st.sampled_from(["auto", "none", "required", {"type": "function", "function": {"name": "read"}}]) | JSON
BODY_FIELDS = {
    "messages": st.lists(MESSAGE, max_size=4) | JSON,
    "tools": JSON,
    "stream": st.booleans(),
    "tool_choice": TOOL_CHOICE,
    "max_tokens": st.integers(min_value=-2, max_value=60) | JSON,
}


@given(
    st.fixed_dictionaries({}, optional={**BODY_FIELDS, "model": JSON, "stream_options": JSON}),
    st.sampled_from(["readme", "interleaved", "missing-finish", "length-text"]),
)
def test_any_request_body_gets_a_reply(body: dict[str, Any], scenario: str) -> None:
    reply = chat_wire.build_reply(body, scenario, created=0)
    assert reply["status"] in (200, 400) and all(reply["writes"])


# ── the wire: a held reply, chunk shapes, HTTP chunks ─────────────────────────────────


def test_the_held_reply_never_ends_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_server, "HOLD_COMMENT_SECONDS", 0.05)
    with start_model_server(scenario="abort", delay=0) as server:
        body = {"stream": True, "messages": [{"role": "user", "content": "读取 README.md"}]}
        with requests.post(f"{server.base_url}/chat/completions", json=body, stream=True, timeout=5) as response:
            received, deadline = b"", time.monotonic() + 1.0
            while time.monotonic() < deadline:
                piece = response.raw.read1(65536)
                assert piece, "the held body ended: the client would call it a broken stream"
                received += piece
    assert b": the abort scenario waits for the client to abort" in received  # comments keep read timeouts away


def test_a_stream_is_shaped_like_openai(serve: Callable[..., ModelServer]) -> None:
    server = serve()
    body = wire_body("读取 README.md", stream=True, stream_options={"include_usage": True}, tools=[OPENAI_READ_TOOL])
    response = requests.post(f"{server.base_url}/chat/completions", json=body, timeout=5)
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["Transfer-Encoding"] == "chunked"
    raw = response.content
    assert raw.endswith(b"data: [DONE]\n\n")
    frames = raw.decode("utf-8").split("\n\n")[:-1]
    chunks = [json.loads(frame.removeprefix("data: ")) for frame in frames[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "ink-scripted" for c in chunks)
    assert chunks[0]["id"].startswith("chatcmpl-")
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    opening = next(c for c in chunks if c["choices"] and "tool_calls" in c["choices"][0]["delta"])
    call = opening["choices"][0]["delta"]["tool_calls"][0]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert call["function"] == {"name": "read", "arguments": '{"path":"REA'}  # §2.1's event: name and first fragment
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == [] and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_each_event_is_a_write_of_its_own_but_the_two_article_reads(serve: Callable[..., ModelServer]) -> None:
    """Real servers flush one event per write; the built-in model does too, except the two reads
    §2.1 walks through: the call's event ends its first read at `{"index":0,` and brings
    `{"path":"REA` in the second, and a Chinese character arrives in two reads."""
    server = serve()
    port = int(server.base_url.split(":")[2].split("/")[0])
    payload = json.dumps(wire_body("读取 README.md", stream=True)).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
        )
        raw = b""
        while data := conn.recv(65536):
            raw += data
    rest = raw.split(b"\r\n\r\n", 1)[1]
    pieces = []
    while True:  # undo the chunked framing, keeping each chunk apart
        size, rest = rest.split(b"\r\n", 1)
        if int(size, 16) == 0:
            break
        pieces.append(rest[: int(size, 16)])
        rest = rest[int(size, 16) + 2 :]
    body = b"".join(pieces)
    frames = [frame + b"\n\n" for frame in body.split(b"\n\n")[:-1]]
    assert pieces == wire.article_writes(frames, chat_wire.HALF_EVENT)
    assert len(pieces) == len(frames) + 2  # one write per event, and the two cuts
    cut = next(i for i, piece in enumerate(pieces) if not piece.endswith(b"\n\n"))
    assert 0xE0 <= pieces[cut][-1] and 0x80 <= pieces[cut + 1][0] < 0xC0  # 我 arrives in two reads
    half = next(i for i, piece in enumerate(pieces) if piece.endswith(b'"tool_calls":[{"index":0,'))
    assert pieces[half].startswith(b"data: {")  # §2.1's first read: no "\n\n" yet, nothing to parse
    assert pieces[half + 1].startswith(b'"id":"call_') and b'"arguments":"{\\"path\\":\\"REA"}' in pieces[half + 1]
    assert b'"arguments":"DME.md\\"}"' in pieces[half + 2]  # §2.2: the next event brings the rest


# ── splitting and pacing ────────────────────────────────────────────────────────────────


@given(st.binary(max_size=400), st.integers(min_value=1, max_value=80))
def test_split_pieces_join_back_to_the_input(data: bytes, stride: int) -> None:
    pieces = wire.split_awkwardly(data, stride)
    assert b"".join(pieces) == data
    assert all(pieces)


def test_split_cuts_inside_characters_and_between_cr_and_lf() -> None:
    body = b'data: {"content":"\xe6\x88\x91\xe5\x85\x88\xe8\xaf\xbb README.md\xe3\x80\x82"}\r\n\r\n' * 3
    pieces = wire.split_awkwardly(body)
    cuts = [sum(len(p) for p in pieces[:n]) for n in range(1, len(pieces))]
    assert any(0x80 <= body[cut] < 0xC0 for cut in cuts)  # the next write opens with a continuation byte
    assert any(body[cut - 1 : cut + 1] == b"\r\n" for cut in cuts)
    assert wire.split_awkwardly(body) == pieces  # deterministic


def test_the_slow_scenario_takes_about_twenty_seconds_in_small_pieces() -> None:
    reply = chat_wire.build_reply(wire_body("hi", stream=True), "slow", created=0)
    assert reply["pause"] is not None and 0.1 <= reply["pause"] <= 0.2
    assert reply["pause"] * len(reply["writes"]) == pytest.approx(wire.SLOW_SECONDS)


def test_the_default_runs_pauses_add_up_to_a_few_seconds_however_long_the_readme() -> None:
    """The README task's two replies, planned from the real README.md: the pauses the server will make."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    question = {"role": "user", "content": "读取 README.md,告诉我项目怎样启动"}
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "README.md"}'}}
    turn_1 = {"stream": True, "messages": [question]}
    turn_2 = {
        "stream": True,
        "messages": [question, {"role": "assistant", "content": "", "tool_calls": [call]}]
        + [{"role": "tool", "tool_call_id": "c1", "content": readme * 3}],  # even a README three times as long
    }
    total = 0.0
    for body in (turn_1, turn_2):
        reply = chat_wire.build_reply(body, "readme", created=0)
        pause = pace(reply, DEFAULT_DELAY)
        assert pause > 0  # it still streams: every write is its own moment on the screen
        total += pause * (len(reply["writes"]) - 1)
    assert len(chat_wire.build_reply(turn_2, "readme", 0)["writes"]) > 2 * PAUSES_PER_REPLY  # the cap keeps it short
    assert total <= 2 * PAUSES_PER_REPLY * DEFAULT_DELAY  # 1.5 s a reply


@pytest.mark.parametrize("delay", [0.0, 0.005, DEFAULT_DELAY, 0.1])
def test_one_pacing_rule_for_any_delay(delay: float) -> None:
    """A short reply pauses ``delay`` between writes; a long one's pauses shrink to add up to
    PAUSES_PER_REPLY delays — the same rule in ink-py, chat, serve and serve-model."""
    short = {"status": 200, "content_type": "text/event-stream", "writes": [b"x"] * 10, "pause": None, "hold": False}
    long = {**short, "writes": [b"x"] * 5000}
    assert pace(short, delay) == delay
    assert pace(long, delay) * 4999 == pytest.approx(PAUSES_PER_REPLY * delay)


# ── other routes and replies ────────────────────────────────────────────────────────────


def test_stream_false_returns_a_chat_completion(serve: Callable[..., ModelServer]) -> None:
    server = serve()
    response = requests.post(f"{server.base_url}/chat/completions", json=wire_body("读取 setup.cfg"), timeout=5)
    completion = response.json()
    assert response.headers["Content-Type"] == "application/json"
    assert completion["object"] == "chat.completion" and completion["model"] == "ink-scripted"
    choice = completion["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "我先读一下 setup.cfg。"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {"path": "setup.cfg"}
    assert completion["usage"]["total_tokens"] > 0


def test_models_bad_json_and_unknown_paths(serve: Callable[..., ModelServer]) -> None:
    server = serve()
    models = requests.get(f"{server.base_url}/models", timeout=5).json()
    assert models["object"] == "list"
    assert models["data"] == [{"id": "ink-scripted", "object": "model", "created": 0, "owned_by": "ink_py"}]

    bad = requests.post(f"{server.base_url}/chat/completions", data=b"{not json", timeout=5)
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"
    assert set(bad.json()["error"]) == {"message", "type", "param", "code"}

    for method, path in (("GET", "/nothing"), ("POST", "/completions"), ("GET", "/chat/completions")):
        missing = requests.request(method, f"{server.base_url}{path}", timeout=5)
        assert missing.status_code == 404 and "error" in missing.json()
    root = server.base_url.removesuffix("/v1")
    assert requests.post(f"{root}/chat/completions", json=wire_body("hi"), timeout=5).status_code == 200


# ── the official openai package as a client ─────────────────────────────────────────────


def test_the_openai_package_streams_a_tool_call_and_an_answer(serve: Callable[..., ModelServer]) -> None:
    openai = pytest.importorskip("openai", reason="needs the openai package (pip install -r .ci/requirements.txt)")
    server = serve()
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "读取 README.md,告诉我项目怎样启动"}]

    stream = client.chat.completions.create(
        model="ink-scripted",
        messages=messages,
        tools=[OPENAI_READ_TOOL],
        stream=True,
        stream_options={"include_usage": True},
    )
    calls: dict[int, dict[str, str]] = {}
    finish, usage = None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for fragment in choice.delta.tool_calls or []:
                call = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = fragment.id or call["id"]
                if fragment.function is not None:
                    call["name"] += fragment.function.name or ""
                    call["arguments"] += fragment.function.arguments or ""
    assert finish == "tool_calls" and usage is not None and usage.total_tokens > 0
    assert [c["name"] for c in calls.values()] == ["read"]
    assert json.loads(calls[0]["arguments"]) == {"path": "README.md"}

    function = {"name": "read", "arguments": calls[0]["arguments"]}
    tool_calls = [{"id": calls[0]["id"], "type": "function", "function": function}]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": README_TEXT},
    ]
    stream = client.chat.completions.create(
        model="ink-scripted", messages=messages, tools=[OPENAI_READ_TOOL], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "「ink_py」" in text and "pip install -e ." in text


# ── ink-py serve-model ──────────────────────────────────────────────────────────────────


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX-only")
def test_serve_model_prints_its_url_then_a_command_that_works_and_ctrl_c_ends_it(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Demo project\n\n```sh\nmake run\n```\n", encoding="utf-8")
    with ctrl_c_reaches_children():
        process = subprocess.Popen(
            [sys.executable, "-m", "ink_py", "serve-model", "--port", "0", "--delay", "0"],
            cwd=tmp_path,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        suggestion = process.stdout.readline()
        assert suggestion.startswith("try: ink-py ") and "--base-url" in suggestion
        done = ink_py(*shlex.split(suggestion.removeprefix("try: ink-py ")), cwd=tmp_path)
        assert done.returncode == 0 and "Demo project" in done.stdout, done.stderr
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert "Traceback" not in err


def test_serve_model_reports_a_busy_port_and_an_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert model_server.main(["--port", str(busy.getsockname()[1])]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1

    # Usage mistakes exit 1 with one line (issue 10: exit 2 means only "answer truncated").
    for argv, words in [
        (["--scenario", "nope"], ("nope", "readme", "slow")),
        (["--port", "not-a-number"], ("not-a-number",)),
        (["--port", "99999"], ("99999", "between 0 and 65535")),
        (["--delay", "-1"], ("must be 0 or more",)),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            model_server.main(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 1 and err.startswith("error: ") and err.count("\n") == 1
        assert all(word in err for word in words) and "Traceback" not in err


# ── issue 22: one pacing, three dialects said, a busy port's way out; issue 19.6: a bounded window ──


def serve_model(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ink_py", "serve-model", *args],
        env=cli_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_model_help_names_all_three_dialects_and_the_pacing() -> None:
    done = serve_model("--help")
    text = " ".join(done.stdout.split())
    assert done.returncode == 0
    assert "/v1/chat/completions" in text and "/v1/responses" in text and "/v1/messages" in text
    assert "Anthropic Messages" in text and "Chat Completions endpoint." not in text
    assert "INK_SCRIPTED_DELAY" in text and "75" in text  # the one pacing rule, the same as ink-py's


def test_serve_model_reads_the_same_delay_setting_as_ink_py() -> None:
    done = serve_model("--port", "0", INK_SCRIPTED_DELAY="fast")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: INK_SCRIPTED_DELAY=fast: not a number of seconds\n"


@pytest.mark.parametrize("command", [["serve-model"], ["serve"]])
def test_a_port_in_use_suggests_port_0(command: list[str], tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", *command, "--port", str(port)],
            cwd=tmp_path,
            env=cli_env(INK_SCRIPTED_DELAY="0"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use — another program has that port; "
        "--port 0 picks a free one"
    )


def test_the_server_keeps_only_a_window_of_request_bodies(serve: Callable[..., ModelServer]) -> None:
    server = serve()
    for number in range(model_server.REQUESTS_KEPT + 12):
        body = {"stream": False, "messages": [{"role": "user", "content": f"request {number}"}]}
        assert requests.post(server.base_url + "/chat/completions", json=body, timeout=10).status_code == 200
    kept = [body["messages"][0]["content"] for body in server.requests]
    assert kept == [f"request {n}" for n in range(12, model_server.REQUESTS_KEPT + 12)]  # the latest, in order


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc (Linux)")
def test_serve_model_memory_stays_bounded_under_large_requests() -> None:
    """Issue 19.6's measurement, smaller: 7 MB bodies; after the window fills, memory stops growing."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ink_py", "serve-model", "--port", "0", "--delay", "0"],
        env=cli_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        text = "读取 README.md " + "word " * (7 * 2**20 // 5)
        body = json.dumps({"stream": False, "messages": [{"role": "user", "content": text}]}).encode()
        session = requests.Session()

        def post(times: int) -> int:
            for _ in range(times):
                reply = session.post(url + "/chat/completions", data=body, timeout=60)
                assert reply.status_code == 200
            status = Path(f"/proc/{process.pid}/status").read_text()
            return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) // 1024  # type: ignore[union-attr]

        filled = post(model_server.REQUESTS_KEPT + 2)
        later = post(10)  # before the window: +10 bodies (≈ 140 MB) kept for ever
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert later - filled < 60, f"{filled} MB → {later} MB after 10 more requests of 7 MB"
