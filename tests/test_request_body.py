"""The request: Ink's messages → the Chat Completions body (part 01's to_wire_messages), and
``tool_choice`` in each dialect's words (the other dialects' bodies: tests/test_dialect_requests.py)."""

import json

import pytest

READ_TOOL = {
    "name": "read",
    "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}

HISTORY = [
    {"role": "user", "content": "读取 README.md"},
    {
        "role": "assistant",
        "blocks": [
            {"type": "thinking", "thinking": "secret reasoning"},
            {"type": "text", "text": "我先读"},
            {"type": "text", "text": "一下。"},
            {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "README.md"}},
            {"type": "toolCall", "id": "t2", "name": "read", "arguments": {"path": "说明.md"}},
        ],
        "usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0},
        "stopReason": "tool_use",
        "model": "m",
    },
    {
        "role": "toolResult",
        "results": [
            {"toolCallId": "t1", "toolName": "read", "content": "# ink_py", "isError": False},
            {"toolCallId": "t2", "toolName": "read", "content": "", "isError": True},
        ],
    },
    {
        "role": "assistant",
        "blocks": [{"type": "toolCall", "id": "t3", "name": "read", "arguments": {}}],
        "usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0},
        "stopReason": "tool_use",
    },
]


def test_to_wire_messages(ink):
    wire = ink.openai_completions.to_wire_messages("You are ink.", HISTORY)
    assert wire == [
        {"role": "system", "content": "You are ink."},
        {"role": "user", "content": "读取 README.md"},
        {
            "role": "assistant",
            "content": "我先读\n一下。",  # text blocks joined; thinking is never sent back
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "read", "arguments": '{"path": "README.md"}'}},
                {"id": "t2", "type": "function", "function": {"name": "read", "arguments": '{"path": "说明.md"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "# ink_py"},  # isError is not sent
        {"role": "tool", "tool_call_id": "t2", "content": "(no tool output)"},
        {
            "role": "assistant",
            "content": "",  # only tool calls: "" (llama-cpp-python's server rejects null)
            "tool_calls": [{"id": "t3", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        },
    ]
    assert "secret reasoning" not in json.dumps(wire)


def test_request_body_with_tools(ink):
    body = ink.openai_completions.build_request_body(
        {"model": "deepseek-chat", "system": "s", "messages": HISTORY[:1], "tools": [READ_TOOL], "maxTokens": 1024}
    )
    assert body == {
        "model": "deepseek-chat",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "读取 README.md"}],
        "max_tokens": 1024,
        "tools": [{"type": "function", "function": READ_TOOL}],
        "tool_choice": "auto",
    }


def test_request_body_without_tools_has_no_tool_choice(ink):
    body = ink.openai_completions.build_request_body({"model": "m", "system": "s", "messages": []})
    assert "tools" not in body and "tool_choice" not in body


@pytest.mark.parametrize(
    "model, field",
    [
        ("gpt-4o", "max_tokens"),
        ("gpt-4.1-mini", "max_tokens"),
        ("gpt-5", "max_completion_tokens"),
        ("gpt-5.1-codex", "max_completion_tokens"),
        ("o1-preview", "max_completion_tokens"),
        ("o4-mini", "max_completion_tokens"),
        ("qwen3:8b", "max_tokens"),
        ("ollama/gpt-5", "max_tokens"),
    ],
)
def test_max_tokens_field(ink, model, field):
    body = ink.openai_completions.build_request_body({"model": model, "system": "", "messages": [], "maxTokens": 9})
    assert body[field] == 9
    assert {"max_tokens", "max_completion_tokens"} - {field} & body.keys() == set()


def test_the_provider_never_shows_its_key(ink):
    provider = ink.openai_completions.OpenAICompletionsProvider("http://127.0.0.1:9/v1/", "sk-SECRET")
    assert "sk-SECRET" not in repr(provider) and "sk-SECRET" not in str(vars(provider).get("base_url"))
    assert provider.base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    "choice, names, chat, anthropic, responses",
    [
        (None, ["read"], "auto", None, "auto"),  # Ink's only choice, still the default; Messages says nothing
        ("auto", ["read"], "auto", None, "auto"),
        ("none", ["read"], "none", {"type": "none"}, "none"),
        ("read", ["read"], {"type": "function", "function": {"name": "read"}}, {"type": "tool", "name": "read"},
         {"type": "function", "name": "read"}),
        ("required", ["read"], {"type": "function", "function": {"name": "read"}}, {"type": "any"}, "required"),
        ("required", ["read", "grep"], "required", {"type": "any"}, "required"),  # one tool: Chat names it
        ("grep", ["read", "grep"], {"type": "function", "function": {"name": "grep"}}, {"type": "tool", "name": "grep"},
         {"type": "function", "name": "grep"}),
    ],
)  # fmt: skip
def test_tool_choice_in_each_dialects_words(ink, choice, names, chat, anthropic, responses):
    tools = [dict(READ_TOOL, name=name) for name in names]
    request = {"model": "m", "system": "s", "messages": HISTORY[:1], "tools": tools}
    if choice is not None:
        request["toolChoice"] = choice
    assert ink.openai_completions.build_request_body(request)["tool_choice"] == chat
    assert ink.anthropic_messages.build_request_body(request).get("tool_choice") == anthropic
    assert ink.openai_responses.build_request_body(request)["tool_choice"] == responses
