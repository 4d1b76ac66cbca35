"""Replies real servers send that are not a plain event stream, over real HTTP on 127.0.0.1.

gzip/deflate bodies, an empty 200 body, a whole ``chat.completion`` for a streamed
request, an HTML page, an error message spread over several lines; and the same sniffing of
a 200 body in the two other dialects, where a whole JSON reply is named, not misread.
"""

import json
import zlib

import pytest

from ink_py.course.checks.fake_server import FakeModelServer, Pause, Reply
from ink_py.course.checks.helpers import fixture_bytes

REQUEST = {"model": "m", "system": "You are ink.", "messages": [{"role": "user", "content": "hi"}]}
TOOLS = [{"name": "read", "description": "read a file", "parameters": {"type": "object", "properties": {}}}]


def collect(ink, server, request=REQUEST):
    events = []
    try:
        for event in ink.openai_completions.OpenAICompletionsProvider(server.base_url).stream(request):
            events.append(event)
    except ink.shared.ProviderError as err:
        return events, str(err)
    return events, None


def streamed(ink, fixture):
    return list(ink.openai_completions.assemble_stream([fixture_bytes(fixture)]))


def compressed_frames(fixture, wbits):
    """The fixture's events compressed as one stream, flushed after each event (as a server does)."""
    packer = zlib.compressobj(wbits=wbits)
    parts = [
        packer.compress(f + b"\n\n") + packer.flush(zlib.Z_SYNC_FLUSH)
        for f in fixture_bytes(fixture).split(b"\n\n")
        if f
    ]
    return parts + [packer.flush()]


@pytest.mark.parametrize("encoding, wbits", [("gzip", 31), ("deflate", 15), ("deflate", -15)])
def test_a_compressed_event_stream_is_decoded_as_it_arrives(ink, encoding, wbits):
    first, *rest = compressed_frames("article/readme", wbits)
    pause = Pause(limit=5)
    reply = Reply(headers={"Content-Encoding": encoding}, parts=[first, pause, *rest])
    with FakeModelServer([reply]) as server:
        events = []
        for event in ink.openai_completions.OpenAICompletionsProvider(server.base_url).stream(REQUEST):
            events.append(event)
            pause.event.set()  # the first event arrived while the server still held the rest
    assert pause.released_in_time is True
    assert events == streamed(ink, "article/readme")
    assert server.requests[0].headers["Accept-Encoding"] == "gzip, deflate"  # only what is decoded


def test_a_body_that_does_not_match_its_content_encoding_is_one_clear_error(ink):
    with FakeModelServer([Reply(headers={"Content-Encoding": "gzip"}, parts=[b"data: not gzip\n\n"])]) as server:
        events, error = collect(ink, server)
    assert events == [] and error == "the reply claims Content-Encoding 'gzip' but does not decode"


@pytest.mark.parametrize("body", [[], [b"\r\n\n"]])
def test_an_empty_200_body_says_so(ink, body):
    with FakeModelServer([Reply(parts=body)]) as server:
        events, error = collect(ink, server)
    assert events == []
    assert (
        error == "the server sent an empty response body (HTTP 200, Content-Type: text/event-stream): no reply at all"
    )


def test_an_empty_body_for_a_streamed_auto_tool_choice_points_at_tool_choice(ink):
    with FakeModelServer([Reply(parts=[])]) as server:
        _, error = collect(ink, server, dict(REQUEST, tools=TOOLS))
    assert error.startswith("the server sent an empty response body") and "--tool-choice" in error


# llama-cpp-python's keep-alive comment (sse_starlette's ping), the whole body when a streamed "auto" fails.
PING_ONLY = b": ping - 2026-12-01 20:05:13.497651+00:00\r\n\r\n"
PROVIDERS = {
    "openai_completions": "OpenAICompletionsProvider",
    "anthropic_messages": "AnthropicMessagesProvider",
    "openai_responses": "OpenAIResponsesProvider",
}


@pytest.mark.parametrize("module", PROVIDERS)
def test_a_body_of_keep_alives_only_is_no_reply_in_every_dialect(ink, module):
    """Not "response may be truncated": no event came at all, which an empty body says too."""
    provider = getattr(getattr(ink, module), PROVIDERS[module])
    errors = []
    for parts in ([], [PING_ONLY[:20], PING_ONLY[20:]]):
        with FakeModelServer([Reply(parts=parts)]) as server:
            with pytest.raises(ink.shared.ProviderError) as caught:
                list(provider(server.base_url).stream(dict(REQUEST, tools=TOOLS)))
        errors.append(str(caught.value))
    empty, pings = errors
    assert pings == empty.replace("text/event-stream)", "text/event-stream, only comments)")
    assert ("--tool-choice" in pings) is (module == "openai_completions")  # the dialect that sends "auto"


def whole(message, finish_reason, usage=None):
    reply = {"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}
    reply["choices"][0]["finish_reason"] = finish_reason
    if usage:
        reply["usage"] = usage
    return json.dumps(reply).encode()


WHOLE_TOOL_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "read", "arguments": '{"path":"README.md"}'}}],
}


@pytest.mark.parametrize(
    "body, blocks, stop_reason, usage",
    [
        (
            whole({"role": "assistant", "content": "你好"}, "stop", {"prompt_tokens": 9, "completion_tokens": 2}),
            [{"type": "text", "text": "你好"}],
            "end_turn",
            {"inputTokens": 9, "outputTokens": 2, "cacheReadTokens": 0},
        ),
        (
            whole(WHOLE_TOOL_CALL, "tool_calls"),
            [{"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "README.md"}}],
            "tool_use",
            {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0},
        ),
    ],
)
@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_a_whole_chat_completion_becomes_the_same_events(ink, body, blocks, stop_reason, usage, content_type):
    """A server that ignores ``stream: true`` still gets its reply through."""
    with FakeModelServer([Reply(headers={"Content-Type": content_type}, parts=[body[:20], body[20:]])]) as server:
        events, error = collect(ink, server)
    assert error is None
    *deltas, end = events
    assert end["message"] == {"role": "assistant", "blocks": blocks, "usage": usage, "stopReason": stop_reason}
    if blocks[0]["type"] == "text":
        assert deltas == [{"type": "text_delta", "text": "你好"}]
    else:
        assert [d["type"] for d in deltas] == ["tool_call_start", "tool_call_delta"]


@pytest.mark.parametrize(
    "content_type, body, expected",
    [
        (
            "text/html",
            b"<html><body>Bad gateway</body></html>",
            "the server answered with an HTML page, not an event stream (Content-Type: text/html): is the base URL",
        ),
        (
            "application/json",
            b'{"error": {"message": "upstream\\nfailed"}}',
            "the server reported an error: upstream failed",
        ),
        (
            "application/json",
            b'{"object": "list", "data": []}',
            "the server answered with JSON that is not a chat.completion",
        ),
        (
            "application/json",
            b"{not json",
            "the server answered with a body that is neither SSE nor JSON: b'{not json'",
        ),
    ],
)
def test_a_200_body_that_is_no_reply_says_what_arrived(ink, content_type, body, expected):
    with FakeModelServer([Reply(headers={"Content-Type": content_type}, parts=[body])]) as server:
        events, error = collect(ink, server)
    assert events == [] and error.startswith(expected)


def test_a_multi_line_server_error_is_one_line(ink, monkeypatch):
    """llama-cpp-python's validation errors span several lines; the message must not."""
    monkeypatch.setattr(ink.transport, "abortable_sleep", lambda seconds, signal: None)
    detail = "2 validation errors for CreateChatCompletionRequest\nmessages.2.content\n  Input should be a valid string"
    detail += "\x1b[31m"  # and a terminal escape
    body = json.dumps({"error": {"message": detail}}).encode()
    with FakeModelServer([Reply(500, parts=[body], framing="length")] * 3) as server:
        _, error = collect(ink, server)
    assert error == (
        "API error 500: 2 validation errors for CreateChatCompletionRequest messages.2.content"
        " Input should be a valid string [31m"
    )


# The other two dialects: the same sniffing of a 200 body; a whole JSON reply is named, not misread.
DIALECT_PROVIDERS = [
    ("anthropic_messages", "AnthropicMessagesProvider"),
    ("openai_responses", "OpenAIResponsesProvider"),
]


@pytest.mark.parametrize("module, provider", DIALECT_PROVIDERS)
@pytest.mark.parametrize(
    "parts, content_type, words",
    [
        ([], "text/event-stream", "the server sent an empty response body (HTTP 200, Content-Type: text/event-stream)"),
        ([b'{"id": "msg_1", "content": []}'], "application/json", "one JSON body, not an event stream"),
        ([b'{"error": {"message": "model is loading"}}'], "application/json", "reported an error: model is loading"),
        ([b"<html>gateway</html>"], "text/html", "not an event stream (Content-Type: text/html)"),
    ],
    ids=["empty", "whole-json", "json-error", "html"],
)
def test_the_other_dialects_say_what_a_200_body_held(ink, module, provider, parts, content_type, words):
    with FakeModelServer([Reply(headers={"Content-Type": content_type}, parts=parts)]) as server:
        events, error = [], None
        try:
            for event in getattr(getattr(ink, module), provider)(server.base_url, "k").stream(REQUEST):
                events.append(event)
        except ink.shared.ProviderError as err:
            error = str(err)
    assert events == [] and error is not None and words in error
