"""Each scenario, in each dialect, as the real provider sends it (issue 28, items 1–3).

Real HTTP on 127.0.0.1 (port 0, no delay). What a scenario says comes from its fixture, read
back from the served stream (``turn.decode_events``): the same text, calls, fragments and
ending; ink_py's own reader ends each the same way on the served stream as on the fixture.
What the wire adds comes from the encoder, and each dialect gets every field its provider
sends: the model asked for, several text deltas, usage that adds up (input from the request,
output from what was sent), Messages' usage in ``message_start`` and cumulatively in
``message_delta``, Responses' ``created_at``, ``output_item.done``, ``output``/``usage`` and the
request's tools, Chat Completions' chunk fields, usage chunk and ``[DONE]``. Blocks and items
come one after another; only Chat Completions interleaves §2.2's two calls. The faults are the
one fault only. Input the server cannot have kept is answered as OpenAI answers it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import urllib3

from ink_py.course.checks.helpers import ARTICLE_FOLDER, fixture_bytes
from ink_py.provider import anthropic_messages, openai_completions, openai_responses
from ink_py.provider.shared import parse_sse
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.scripted.turn import decode_events, fixture_turn
from ink_py.scripted.wire import CHAT, MESSAGES, RESPONSES

SCENARIOS = ["readme", "interleaved", "missing-finish", "abort", "invalid-json", "length-tool", "length-text"]
FIXED = SCENARIOS[1:]  # readme is the script's own answer; the others replay a fixture
DIALECTS = [CHAT, MESSAGES, RESPONSES]
PATHS = {CHAT: "/chat/completions", MESSAGES: "/messages", RESPONSES: "/responses"}
READERS = {CHAT: openai_completions, MESSAGES: anthropic_messages, RESPONSES: openai_responses}
TOOLS = {
    CHAT: [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
    MESSAGES: [{"name": "read", "input_schema": {"type": "object"}}],
    RESPONSES: [{"type": "function", "name": "read", "parameters": {"type": "object"}, "strict": False}],
}
BREAKS_OFF = {"missing-finish", "abort"}


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ModelServer]]:
    running = {scenario: start_model_server(port=0, scenario=scenario, delay=0) for scenario in SCENARIOS}
    yield running
    for server in running.values():
        server.close()


def body(dialect: str, prompt: str = "读取 README.md", **extra: Any) -> dict[str, Any]:
    said = [{"role": "user", "content": prompt}]
    sent = {"model": "my-own-model", "stream": True, "tools": TOOLS[dialect], **extra}
    sent["input" if dialect == RESPONSES else "messages"] = said
    if dialect == CHAT:
        sent.setdefault("stream_options", {"include_usage": True})
    return sent


def stream(server: ModelServer, dialect: str, sent: dict[str, Any]) -> bytes:
    """The whole body; for the held abort reply, what came before the silence."""
    with requests.post(server.base_url + PATHS[dialect], json=sent, stream=True, timeout=(5, 1.0)) as response:
        assert response.status_code == 200 and response.headers["Content-Type"] == "text/event-stream"
        received = b""
        try:
            while piece := response.raw.read1(65536):
                received += piece
        except urllib3.exceptions.ReadTimeoutError:
            assert b"\n\n" in received  # only the abort scenario keeps quiet after its events
    return received


def events(data: bytes) -> list[dict[str, Any]]:
    return [e["data"] for e in parse_sse([data]) if isinstance(e["data"], dict)]


def outcome(dialect: str, data: bytes) -> tuple[Any, str | None]:
    """What ink_py's own reader makes of a body: the message it ends with (usage aside), or its error."""
    last: Any = None
    try:
        for event in READERS[dialect].assemble_stream([data]):
            last = event
    except Exception as err:
        return None, type(err).__name__
    message = dict(last["message"])
    message.pop("usage")
    return message, None


# ── what is said: the fixture's, what ink_py makes of it: unchanged ─────────────────────


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("scenario", FIXED)
def test_a_scenario_says_what_its_fixture_says_and_ink_py_reads_it_the_same(servers, scenario, dialect):
    data = stream(servers[scenario], dialect, body(dialect))
    said, recorded = decode_events(events(data), dialect), fixture_turn(scenario, dialect)
    for part in ("text", "calls", "order", "ending"):
        assert said[part] == recorded[part], part
    folder = ARTICLE_FOLDER[dialect.replace("-", "_")]
    assert outcome(dialect, data) == outcome(dialect, fixture_bytes(f"{folder}/{scenario.replace('-', '_')}"))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_only_chat_completions_interleaves_the_two_calls(servers, dialect):
    order = decode_events(events(stream(servers["interleaved"], dialect, body(dialect))), dialect)["order"]
    assert order == ([0, 1, 0, 1] if dialect == CHAT else [0, 0, 1, 1])  # §2.2; blocks and items one by one
    if dialect != CHAT:  # every event of a block or item before the next one opens
        where = [
            e.get("index", e.get("output_index"))
            for e in events(stream(servers["interleaved"], dialect, body(dialect)))
        ]
        opened = [w for w in where if w is not None]
        assert opened == sorted(opened)


# ── what the wire adds: each provider's fields ──────────────────────────────────────────


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_chat_completions_chunks_carry_every_field_openai_sends(servers, scenario):
    data = stream(servers[scenario], CHAT, body(CHAT))
    chunks = events(data)
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk" and chunk["model"] == "my-own-model"
        assert chunk["id"].startswith("chatcmpl-") and isinstance(chunk["created"], int) and "usage" in chunk
        assert chunk["system_fingerprint"] and chunk["service_tier"] == "default" and chunk["obfuscation"]
        for choice in chunk["choices"]:
            assert choice["index"] == 0 and "logprobs" in choice and "finish_reason" in choice
            for call in choice["delta"].get("tool_calls", []):
                assert ("id" in call) == ("type" in call) == ("name" in call["function"])  # a call's first chunk
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(text_chunks) >= 2 or not fixture_turn(scenario, CHAT)["text"]  # text in several deltas
    if scenario in BREAKS_OFF:  # the body ends as a cut proxy ends it: no finish, no usage chunk, no [DONE]
        assert not data.endswith(b"data: [DONE]\n\n") and all(c["usage"] is None for c in chunks)
        assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    else:
        assert data.endswith(b"data: [DONE]\n\n") and chunks[-1]["choices"] == []
        assert_adds_up(chunks[-1]["usage"], "prompt_tokens", "completion_tokens")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_messages_carry_usage_at_the_start_and_cumulatively_at_the_end(servers, scenario):
    data = stream(servers[scenario], MESSAGES, body(MESSAGES, max_tokens=1024))
    named = [(e["event"], e["data"]) for e in parse_sse([data])]
    assert all(name == data["type"] for name, data in named)  # event: lines name each event
    start = named[0][1]["message"]
    assert start["model"] == "my-own-model" and start["id"].startswith("msg_")
    assert start["usage"]["input_tokens"] > 0 and start["usage"]["output_tokens"] >= 0
    assert {"cache_creation_input_tokens", "cache_read_input_tokens", "service_tier"} <= set(start["usage"])
    kinds = [name for name, _ in named]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    if scenario in BREAKS_OFF:
        assert "message_delta" not in kinds and "message_stop" not in kinds and kinds[-1] == "content_block_delta"
        return
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop")
    usage = named[-2][1]["usage"]
    assert usage["input_tokens"] == start["usage"]["input_tokens"] and usage["output_tokens"] > 0
    assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_responses_carry_the_whole_response_and_each_items_end(servers, scenario):
    sent = body(RESPONSES, instructions="Be brief.", max_output_tokens=500, tool_choice="auto")
    data = stream(servers[scenario], RESPONSES, sent)
    received = events(data)
    created = received[0]["response"]
    assert received[0]["type"] == "response.created" and received[1]["type"] == "response.in_progress"
    assert created["model"] == "my-own-model" and isinstance(created["created_at"], int) and created["usage"] is None
    assert created["tools"] == TOOLS[RESPONSES] and created["instructions"] == "Be brief."  # the request, echoed
    assert created["max_output_tokens"] == 500 and created["status"] == "in_progress"
    assert [e["sequence_number"] for e in received] == list(range(len(received)))
    added = [e for e in received if e["type"] == "response.output_item.added"]
    done = [e for e in received if e["type"] == "response.output_item.done"]
    assert all(e["obfuscation"] for e in received if e["type"].endswith(".delta"))
    if scenario in BREAKS_OFF:  # no terminal event, and the last item never done
        assert received[-1]["type"].endswith(".delta") and len(done) == len(added) - 1
        return
    final = received[-1]["response"]
    assert received[-1]["type"] == f"response.{final['status']}" and len(done) == len(added)
    assert final["output"] == [e["item"] for e in done]
    assert_adds_up(final["usage"], "input_tokens", "output_tokens")
    if scenario.startswith("length"):
        assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
        assert final["output"][-1]["status"] == "incomplete"


def assert_adds_up(usage: dict[str, Any], given: str, made: str) -> None:
    assert usage[given] > 0 and usage[made] > 0 and usage["total_tokens"] == usage[given] + usage[made]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_usage_counts_the_request_in_and_what_was_sent_out(servers, dialect):
    def counts(prompt: str, scenario: str) -> tuple[int, int]:
        sent = body(dialect, prompt, stream=False, max_tokens=1024)
        whole = requests.post(servers[scenario].base_url + PATHS[dialect], json=sent, timeout=5).json()
        usage = whole["usage"]
        return (
            usage.get("prompt_tokens", usage.get("input_tokens")),
            usage.get("completion_tokens", usage.get("output_tokens")),
        )

    short, long = counts("读取 README.md", "length-text"), counts("读取 README.md " + "请仔细读。" * 40, "length-text")
    assert long[0] > short[0] and long[1] == short[1]  # a longer request, the same reply
    assert counts("读取 README.md", "length-tool")[1] > short[1]  # more sent out


# ── faults, one each; non-streaming replies; what the server never kept ─────────────────


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("scenario", FIXED)
def test_stream_false_gets_the_whole_reply_unless_the_scenario_breaks_off(servers, scenario, dialect):
    sent = body(dialect, stream=False, max_tokens=1024)
    response = requests.post(servers[scenario].base_url + PATHS[dialect], json=sent, timeout=5)
    if scenario in BREAKS_OFF:  # a stream that breaks off has no whole form
        assert response.status_code == 400 and "stream" in json.dumps(response.json())
        return
    whole = response.json()
    ending = fixture_turn(scenario, dialect)["ending"]
    said = {
        CHAT: lambda: whole["choices"][0]["finish_reason"],
        MESSAGES: lambda: {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}[whole["stop_reason"]],
        RESPONSES: lambda: "length" if whole["status"] == "incomplete" else "tool_calls",
    }[dialect]()
    assert response.status_code == 200 and said == ending


def test_the_abort_scenario_holds_after_its_first_fragment_in_every_dialect(servers):
    for dialect in DIALECTS:
        said = decode_events(events(stream(servers["abort"], dialect, body(dialect))), dialect)
        assert said["ending"] is None and [c["fragments"] for c in said["calls"]] == [['{"path":"REA']]


@pytest.mark.parametrize(
    "extra, status, words, param",
    [
        ({"store": False}, 404, "Items are not persisted when `store` is set to false.", "input"),
        ({}, 404, "Item with id 'msg_abc' not found.", "input"),
        ({"previous_response_id": "resp_abc"}, 400, "Previous response with id 'resp_abc' not found.", None),
    ],
    ids=["item-reference-store-false", "item-reference", "previous-response-id"],
)
def test_what_the_server_never_kept_is_answered_as_openai_answers_it(servers, extra, status, words, param):
    said = [{"role": "user", "content": "读取 README.md"}, {"type": "item_reference", "id": "msg_abc"}]
    if "previous_response_id" in extra:
        said = said[:1]
    response = requests.post(
        servers["readme"].base_url + "/responses", json={"model": "m", "input": said, **extra}, timeout=5
    )
    error = response.json()["error"]
    assert response.status_code == status and words in error["message"] and error["type"] == "invalid_request_error"
    assert error["param"] == (param or "previous_response_id") and set(error) == {"message", "type", "param", "code"}
