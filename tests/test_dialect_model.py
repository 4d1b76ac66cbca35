"""The built-in scripted model in all three dialects, and ``ink-py --api …`` end to end.

Real HTTP on 127.0.0.1 (port 0, no delay): the README task through each of ink_py's
providers, any request body answered without a crash, the official ``anthropic`` and ``openai``
SDKs as clients, and the command line's ``--api`` / ``INK_API`` / ``ANTHROPIC_*`` rules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from ink_py.cli import APIS
from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.course.checks.helpers import fixture_bytes
from ink_py.scripted.dialects import build_dialect_reply
from ink_py.scripted.response_store import new_store
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.scripted.turn import decode_events, fixture_turn
from ink_py.scripted.wire import MESSAGES, RESPONSES

from .helpers import ROOT, ctrl_c_reaches_children
from .test_cli import ink_py
from .test_model_server import PATHS

READ_TOOL = {
    "name": "read",
    "description": "Read a text file in the workspace.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
README_TEXT = "# ink_py\n\nA teaching reference.\n\n```sh\n$ pip install -e .\nink-py --help\n```\n"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as running:
        yield running


def provider(api: str, base_url: str, api_key: str | None = None) -> Any:
    return APIS[api][0](base_url, api_key)


@pytest.mark.parametrize("api", list(APIS))
def test_the_readme_task_through_each_dialects_provider(server, api):
    request: dict[str, Any] = {
        "model": "ink-scripted",
        "system": "You are a coding agent.",
        "messages": [{"role": "user", "content": "读取 README.md,告诉我项目怎样启动"}],
        "tools": [READ_TOOL],
    }
    events = list(provider(api, server.base_url).stream(request))
    first = events[-1]["message"]
    assert [e["type"] for e in events][:2] == ["text_delta", "text_delta"]
    assert first["stopReason"] == "tool_use" and first["usage"]["inputTokens"] > 0
    [call] = [b for b in first["blocks"] if b["type"] == "toolCall"]
    assert call["name"] == "read" and call["arguments"] == {"path": "README.md"}
    assert {"type": "tool_call_start", "id": call["id"], "name": "read"} in events

    result = {"toolCallId": call["id"], "toolName": "read", "content": README_TEXT, "isError": False}
    request["messages"] += [first, {"role": "toolResult", "results": [result]}]
    second = list(provider(api, server.base_url).stream(request))[-1]["message"]
    assert second["stopReason"] == "end_turn"
    assert "「ink_py」" in second["blocks"][0]["text"] and "pip install -e ." in second["blocks"][0]["text"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
BLOCK = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["text", "tool_use", "tool_result", "function_call", "function_call_output", "item_reference", "x"]
        )
    },
    optional={"text": JSON, "id": JSON, "input": JSON, "content": JSON, "tool_use_id": JSON, "call_id": JSON},
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", 3])},
    optional={"content": st.lists(BLOCK, max_size=3) | JSON},
)


@given(
    st.sampled_from([MESSAGES, RESPONSES]),
    st.sampled_from(["readme", "interleaved", "missing-finish", "abort", "length-tool"]),
    st.fixed_dictionaries(
        {},
        optional={
            "messages": st.lists(MESSAGE, max_size=3) | JSON,
            "input": st.lists(BLOCK | MESSAGE, max_size=3) | JSON,
            **{field: JSON for field in ("tools", "model", "system", "instructions", "tool_choice", "store")},
            **{field: JSON for field in ("previous_response_id", "stream_options", "max_tokens", "max_output_tokens")},
            "stream": st.booleans(),
        },
    ),
)
def test_any_request_body_gets_a_reply(dialect, scenario, body):
    reply = build_dialect_reply(body, dialect, scenario, created=0)
    assert reply["status"] in (200, 400, 404) and all(reply["writes"])
    kept = new_store()  # and on a server that keeps what it answers: the body's items kept, then named
    reply = build_dialect_reply(body, dialect, scenario, created=0, kept=kept)
    assert reply["status"] in (200, 400, 404) and all(reply["writes"])
    for response_id in list(kept["responses"]):
        again = build_dialect_reply({**body, "previous_response_id": response_id}, dialect, scenario, 0, kept)
        assert again["status"] in (200, 400, 404) and all(again["writes"])


@pytest.mark.parametrize("api", [MESSAGES, RESPONSES])
def test_stream_false_returns_the_whole_reply(server, api):
    prompt = [{"role": "user", "content": "读取 README.md"}]
    body = {"model": "m", "messages": prompt} if api == MESSAGES else {"model": "m", "input": prompt}
    whole = requests.post(server.base_url + PATHS[api], json=body, timeout=5).json()
    if api == MESSAGES:
        assert whole["type"] == "message" and whole["stop_reason"] == "tool_use"
        assert whole["content"][-1]["input"] == {"path": "README.md"}
    else:
        assert whole["object"] == "response" and whole["status"] == "completed"
        assert json.loads(whole["output"][-1]["arguments"]) == {"path": "README.md"}


def test_a_body_that_is_not_json_gets_the_dialects_error_shape(server):
    response = requests.post(server.base_url + "/messages", json=[1, 2], timeout=5)
    assert response.status_code == 400 and response.json()["type"] == "error"
    assert response.json()["error"]["message"] == "The request body must be a JSON object."


# ── the official SDKs as clients ────────────────────────────────────────────────────────


def test_the_anthropic_package_gets_a_tool_use_for_read(server):
    reason = "needs the anthropic package (pip install -r .ci/requirements.txt)"
    anthropic = pytest.importorskip("anthropic", reason=reason)
    client = anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"), api_key="unused", max_retries=0)
    tools = [{"name": "read", "description": READ_TOOL["description"], "input_schema": READ_TOOL["parameters"]}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "读取 README.md,告诉我项目怎样启动"}]
    with client.messages.stream(model="ink-scripted", max_tokens=1024, messages=messages, tools=tools) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == "我先读一下 README.md。" and message.stop_reason == "tool_use"
    [tool_use] = [block for block in message.content if block.type == "tool_use"]
    assert tool_use.name == "read" and tool_use.input == {"path": "README.md"}
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0

    messages += [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": README_TEXT}]},
    ]
    answer = client.messages.create(model="ink-scripted", max_tokens=1024, messages=messages, tools=tools)
    assert answer.stop_reason == "end_turn" and "「ink_py」" in answer.content[0].text


def test_the_openai_package_streams_a_responses_function_call(server):
    openai = pytest.importorskip("openai", reason="needs the openai package (pip install -r .ci/requirements.txt)")
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    tools = [{"type": "function", **READ_TOOL}]
    with client.responses.stream(
        model="ink-scripted", input="读取 README.md,告诉我项目怎样启动", tools=tools
    ) as stream:
        deltas = [event.delta for event in stream if event.type == "response.function_call_arguments.delta"]
        response = stream.get_final_response()
    [call] = [item for item in response.output if item.type == "function_call"]
    assert call.name == "read" and json.loads(call.arguments) == {"path": "README.md"} == json.loads("".join(deltas))
    assert response.status == "completed" and response.usage.input_tokens > 0

    follow_up = [
        {"role": "user", "content": "读取 README.md,告诉我项目怎样启动"},
        {"type": "function_call", "call_id": call.call_id, "name": "read", "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": README_TEXT},
    ]
    events = list(client.responses.create(model="ink-scripted", input=follow_up, tools=tools, stream=True))
    assert events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert "「ink_py」" in text and "pip install -e ." in text


# ── ink-py --api … ──────────────────────────────────────────────────────────────────────


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "README.md").write_text(README_TEXT, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("how", ["flag", "env"])
@pytest.mark.parametrize("api", list(APIS))
def test_the_readme_task_in_each_dialect_on_the_built_in_model(workspace, api, how):
    trace = workspace / "trace.jsonl"
    args, env = (["--api", api], None) if how == "flag" else ([], {"INK_API": api})
    done = ink_py(*args, "--trace", str(trace), cwd=workspace, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert "我先读一下 README.md。" in done.stdout and "「ink_py」" in done.stdout
    assert '→ read {"path": "README.md"}' in done.stderr
    kinds = [json.loads(line)["type"] for line in trace.read_text(encoding="utf-8").splitlines()]
    assert kinds.count("message_end") == 2 and "tool_call_delta" in kinds


def test_anthropic_settings_come_from_anthropic_variables(workspace):
    frames = [fixture_bytes("anthropic/anthropic_text")]
    with FakeModelServer([Reply(parts=frames)]) as fake:
        env = {
            "ANTHROPIC_BASE_URL": fake.base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "sk-ant-SECRET-9",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # another dialect's endpoint: not used
            "OPENAI_API_KEY": "sk-openai-not-this-one",
            "INK_MODEL": "claude-x",
        }
        done = ink_py("--api", "anthropic-messages", "hello", cwd=workspace, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "项目用 `make run` 启动。"
    [request] = fake.requests
    assert request.path == "/v1/messages" and request.headers["x-api-key"] == "sk-ant-SECRET-9"
    assert "Authorization" not in request.headers and request.body["max_tokens"] > 0
    assert "(+2048 cached)" in done.stderr and "sk-ant-SECRET-9" not in done.stdout + done.stderr


def test_record_works_in_every_dialect(workspace):
    record = workspace / "rec"
    done = ink_py("--api", "openai-responses", "--record", str(record), cwd=workspace)
    assert done.returncode == 0, done.stderr
    first = json.loads((record / "001-request.json").read_text(encoding="utf-8"))
    assert first["input"][0]["content"] == "读取 README.md,告诉我项目怎样启动" and first["stream"] is True
    assert b"event: response.completed" in (record / "002-response.sse").read_bytes()


CHOICES = "choose one of openai-completions, openai-responses, anthropic-messages"


@pytest.mark.parametrize(
    "env, words",
    [
        ({}, f"error: --api openai-chat: {CHOICES}"),
        (  # issue 22.1: a setting from the environment is named, with the way back
            {"INK_API": "openai-chat"},
            f"error: INK_API=openai-chat (from the environment): {CHOICES}, or `unset INK_API` for openai-completions",
        ),
    ],
)
def test_an_unknown_api_is_one_error_line(workspace, env, words):
    done = ink_py(*([] if env else ["--api", "openai-chat"]), cwd=workspace, env_extra=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == words


def test_ink_py_serve_relays_a_messages_endpoint(workspace):
    import signal

    from ink_py.provider.shared import parse_sse

    with FakeModelServer([Reply(parts=[fixture_bytes("anthropic/anthropic_text")])]) as fake:
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "INK_MODEL": "claude-x",
            "ANTHROPIC_BASE_URL": fake.base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "sk-ant-SECRET-7",
        }
        argv = [sys.executable, "-m", "ink_py", "serve", "--api", "anthropic-messages", "--port", "0"]
        with ctrl_c_reaches_children():
            process = subprocess.Popen(
                [*argv, "--workspace", str(workspace)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            stream = requests.get(f"{url}chat/stream", params={"query": "项目怎样启动?"}, stream=True, timeout=30)
            events = []
            for event in parse_sse(stream.iter_content(chunk_size=None)):
                events.append(event)
                if event["event"] in ("done", "error"):
                    break
            stream.close()
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=30)
        finally:
            process.kill()
            process.wait()
    assert events[-1]["event"] == "done", events[-1]
    assert "".join(e["data"].get("text", "") for e in events if e["event"] == "text") == "项目用 `make run` 启动。"
    [request] = fake.requests
    assert request.path == "/v1/messages" and request.headers["x-api-key"] == "sk-ant-SECRET-7"
    assert process.returncode == 0 and "Traceback" not in err and "sk-ant-SECRET-7" not in err


@pytest.mark.parametrize("dialect", [MESSAGES, RESPONSES])
def test_the_same_splits_pauses_and_hold_in_every_dialect(dialect):
    from ink_py.scripted.wire import SLOW_SECONDS

    prompt = [{"role": "user", "content": "读取 README.md"}]
    body = {"stream": True, ("messages" if dialect == MESSAGES else "input"): prompt}
    split = build_dialect_reply(body, dialect, "readme", created=0)
    joined = b"".join(split["writes"])
    assert len(split["writes"]) == joined.count(b"\n\n") + 1  # a write per event, one cut inside a character
    cut = next(w for w in split["writes"] if not w.endswith(b"\n\n"))
    assert cut[-1] >= 0xC0  # the first byte of a multi-byte character ends it
    slow = build_dialect_reply(body, dialect, "slow", created=0)
    assert all(w.endswith(b"\n\n") for w in slow["writes"])  # whole frames, slowly
    assert slow["pause"] * len(slow["writes"]) == pytest.approx(SLOW_SECONDS)
    held = build_dialect_reply(body, dialect, "abort", created=0)
    frames = b"".join(held["writes"]).split(b"\n\n")[:-1]
    said = decode_events([json.loads(f.split(b"data: ", 1)[1]) for f in frames], dialect)
    assert held["hold"] and said == fixture_turn("abort", dialect)  # the fixture's events, with the wire's fields
    assert len(held["writes"]) > len(frames)  # cut awkwardly, as every scenario's reply
