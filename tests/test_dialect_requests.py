"""The request in the two other dialects: Ink's messages → the Messages and Responses bodies,
and each provider over real HTTP on 127.0.0.1 (path, headers, the key never shown)."""

import json

import pytest

from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.course.checks.helpers import fixture_bytes

from .helpers import FIXTURES
from .test_request_body import HISTORY, READ_TOOL

API_KEY = "sk-ant-test-SECRET-0123456789"
REQUEST = {"model": "m", "system": "You are ink.", "messages": [{"role": "user", "content": "hi"}]}

THINKING = {"type": "thinking", "thinking": "先看 README。", "signature": "sig-abc"}


# ── Anthropic Messages ──────────────────────────────────────────────────────────────────


def test_anthropic_to_wire_messages(ink):
    history = [HISTORY[0], {**HISTORY[1], "blocks": [THINKING, *HISTORY[1]["blocks"]]}, *HISTORY[2:]]
    wire = ink.anthropic_messages.to_wire_messages(history)
    assert wire == [
        {"role": "user", "content": [{"type": "text", "text": "读取 README.md"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "先看 README。", "signature": "sig-abc"},  # sent back, signed
                # the unsigned "secret reasoning" block (another dialect's) is not sent
                {"type": "text", "text": "我先读"},
                {"type": "text", "text": "一下。"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "README.md"}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "说明.md"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "# ink_py"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "(no tool output)", "is_error": True},
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "read", "input": {}}]},
    ]
    assert "secret reasoning" not in json.dumps(wire)


def test_anthropic_a_prompt_after_tool_results_joins_their_user_turn(ink):
    history = [*HISTORY[:3], {"role": "user", "content": "再读 setup.cfg"}]
    wire = ink.anthropic_messages.to_wire_messages(history)
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]  # roles alternate
    assert wire[-1]["content"][-1] == {"type": "text", "text": "再读 setup.cfg"}


def test_anthropic_redacted_thinking_goes_back_as_it_came(ink):
    message = {"role": "assistant", "blocks": [{"type": "thinking", "thinking": "", "redacted": "EmwK"}],
               "usage": {}, "stopReason": "end_turn"}  # fmt: skip
    assert ink.anthropic_messages.to_wire_messages([message]) == [
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "EmwK"}]}
    ]


def test_anthropic_request_body(ink):
    body = ink.anthropic_messages.build_request_body(
        {"model": "claude-sonnet-4-5", "system": "s", "messages": HISTORY[:1], "tools": [READ_TOOL], "maxTokens": 1024}
    )
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "读取 README.md"}]}],
        "system": "s",
        "tools": [{"name": "read", "description": "Read a file", "input_schema": READ_TOOL["parameters"]}],
    }


def test_anthropic_max_tokens_is_always_sent(ink):
    body = ink.anthropic_messages.build_request_body({"model": "m", "system": "", "messages": []})
    assert body["max_tokens"] == ink.anthropic_messages.DEFAULT_MAX_TOKENS
    assert "system" not in body and "tools" not in body


@pytest.mark.parametrize(
    "base_url, path",
    [("{root}", "/v1/messages"), ("{root}/anthropic", "/anthropic/v1/messages"), ("{root}/v1", "/v1/messages")],
    ids=["sdk-style", "compatible-endpoint", "ending-in-v1"],
)
def test_anthropic_provider_over_http(ink, base_url, path):
    frames = [f + b"\n\n" for f in fixture_bytes("anthropic/readme").split(b"\n\n") if f]
    with FakeModelServer([Reply(parts=frames)]) as server:
        root = server.base_url.removesuffix("/v1")
        provider = ink.anthropic_messages.AnthropicMessagesProvider(base_url.format(root=root), API_KEY)
        events = list(provider.stream(dict(REQUEST, maxTokens=512)))
    assert events == list(ink.anthropic_messages.assemble_stream([fixture_bytes("anthropic/readme")]))
    [request] = server.requests
    assert request.path == path
    assert request.headers["x-api-key"] == API_KEY and "Authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body["max_tokens"] == 512 and request.body["system"] == "You are ink."


def test_anthropic_errors_never_show_the_key(ink):
    body = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                  "message": f"invalid x-api-key {API_KEY}"}}).encode()  # fmt: skip
    with FakeModelServer([Reply(401, parts=[body], framing="length")]) as server:
        provider = ink.anthropic_messages.AnthropicMessagesProvider(server.base_url, API_KEY)
        with pytest.raises(ink.shared.ProviderError) as caught:
            list(provider.stream(REQUEST))
    assert str(caught.value) == (
        "API error 401: invalid x-api-key *** — check the API key (--api-key or ANTHROPIC_API_KEY)"
    )
    assert API_KEY not in repr(provider)


# ── OpenAI Responses ────────────────────────────────────────────────────────────────────


def test_responses_to_wire_input(ink):
    wire = ink.openai_responses.to_wire_input(HISTORY)
    assert wire == [
        {"type": "message", "role": "user", "content": "读取 README.md"},  # each item with its type
        {"type": "message", "role": "assistant", "content": "我先读\n一下。"},  # joined; no thinking
        {"type": "function_call", "call_id": "t1", "name": "read", "arguments": '{"path": "README.md"}'},
        {"type": "function_call", "call_id": "t2", "name": "read", "arguments": '{"path": "说明.md"}'},
        {"type": "function_call_output", "call_id": "t1", "output": "# ink_py"},
        {"type": "function_call_output", "call_id": "t2", "output": "(no tool output)"},
        {"type": "function_call", "call_id": "t3", "name": "read", "arguments": "{}"},
    ]
    assert "secret reasoning" not in json.dumps(wire)


def test_responses_request_body(ink):
    body = ink.openai_responses.build_request_body(
        {"model": "gpt-5", "system": "s", "messages": HISTORY[:1], "tools": [READ_TOOL], "maxTokens": 1024}
    )
    assert body == {
        "model": "gpt-5",
        "stream": True,
        "store": False,
        "input": [{"type": "message", "role": "user", "content": "读取 README.md"}],
        "instructions": "s",
        "max_output_tokens": 1024,
        "tools": [{"type": "function", **READ_TOOL, "strict": False}],  # the flat shape
        "tool_choice": "auto",
    }


def test_responses_provider_over_http(ink):
    frames = [f + b"\n\n" for f in fixture_bytes("responses/readme").split(b"\n\n") if f]
    with FakeModelServer([Reply(parts=frames)]) as server:
        provider = ink.openai_responses.OpenAIResponsesProvider(server.base_url, API_KEY)
        events = list(provider.stream(REQUEST))
    assert events == list(ink.openai_responses.assemble_stream([fixture_bytes("responses/readme")]))
    [request] = server.requests
    assert request.path == "/v1/responses"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.body["instructions"] == "You are ink." and request.body["stream"] is True


def test_responses_input_items_all_name_their_type(ink):
    """llama-server answered ink_py's recorded turn 2 (fixtures/responses/llama_server_turn2_untyped.*) with
    400 "Cannot determine type of 'item'": its assistant item had a role and no type. Now every item has one."""
    recorded = json.loads((FIXTURES / "responses" / "llama_server_turn2_untyped.request.json").read_text())
    assert (
        b"Cannot determine type of 'item'" in (FIXTURES / "responses" / "llama_server_turn2_untyped.reply").read_bytes()
    )
    user, assistant, call, output = recorded["input"]
    history = [
        {"role": "user", "content": user["content"]},
        {"role": "assistant", "usage": {}, "stopReason": "tool_use", "blocks": [
            {"type": "text", "text": assistant["content"]},
            {"type": "toolCall", "id": call["call_id"], "name": "read", "arguments": json.loads(call["arguments"])},
        ]},
        {"role": "toolResult", "results": [
            {"toolCallId": output["call_id"], "toolName": "read", "content": output["output"], "isError": False},
        ]},
    ]  # fmt: skip
    wire = ink.openai_responses.to_wire_input(history)
    assert wire == [{"type": "message", **user}, {"type": "message", **assistant}, call, output]
