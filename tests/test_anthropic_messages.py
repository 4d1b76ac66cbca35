"""Anthropic Messages: the article's scenarios and real servers' streams, one fixture each.

Every row: a raw body in ``fixtures/anthropic/`` and the assistant message (or the error)
that ``anthropic_messages.assemble_stream`` must make of it — the same LLMEvents the Chat
Completions reader makes of ``fixtures/article/`` (tests/test_dialects.py compares them).
"""

import json

import pytest

from .helpers import FIXTURES, fixture_bytes, message, parse_error, read_call, run_assembly, text, usage

DIALECT = "anthropic_messages"


def assemble(ink, name, reads=None):
    return run_assembly(ink, reads or [fixture_bytes(f"anthropic/{name}")], dialect=DIALECT)


# (fixture, expected message) — what each stream must assemble into.
STREAMS = [
    # The article's scenarios, in this dialect.
    ("readme", message([text("我先读一下 README。"), read_call("t1", "README.md")], "tool_use")),
    ("interleaved", message([read_call("t1", "README.md"), read_call("t2", "package.json")], "tool_use")),
    (
        "invalid_json",
        message(
            [{"type": "toolCall", "id": "t1", "name": "read", "arguments": parse_error('{"path":"README.md"')}],
            "tool_use",
        ),
    ),
    ("length_text", message([text("项目这样启动:先安装依赖,再运行")], "max_tokens")),
    (
        "length_tool",
        message(
            [
                text("我来读取两个文件。"),
                read_call("t1", "README.md"),
                {"type": "toolCall", "id": "t2", "name": "read", "arguments": parse_error('{"path":"pack')},
            ],
            "max_tokens",
        ),
    ),
    # Anthropic's own shape: usage in message_start (cache reads apart), ping, cumulative output_tokens.
    ("anthropic_text", message([text("项目用 `make run` 启动。")], "end_turn", usage(472, 15, 2048))),
    # The first input_json_delta is "" — no delta for it; text block and tool block kept apart by index.
    (
        "anthropic_tool_use",
        message(
            [text("我先读一下 README.md。"), read_call("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "README.md")],
            "tool_use",
            usage(384, 89),
        ),
    ),
    # A tool block with no input deltas at all: arguments {}.
    (
        "anthropic_parameterless_tool",
        message(
            [{"type": "toolCall", "id": "toolu_01Now", "name": "current_time", "arguments": {}}],
            "tool_use",
            usage(120, 12),
        ),
    ),
    # Thinking with its signature (kept to be sent back); cache writes count as input.
    (
        "anthropic_thinking",
        message(
            [
                {
                    "type": "thinking",
                    "thinking": "用户问怎样启动,先看 README。",
                    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
                },
                text("运行 make run。"),
            ],
            "end_turn",
            usage(120, 42),
        ),
    ),
    (
        "anthropic_redacted_thinking",
        message(
            [
                {
                    "type": "thinking",
                    "thinking": "",
                    "redacted": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
                },
                text("Run make run."),
            ],
            "end_turn",
            usage(50, 7),
        ),
    ),
    ("anthropic_stop_sequence", message([text("Run make run.")], "end_turn", usage(40, 5))),
    ("anthropic_refusal", message([text("I can't help with that.")], None, usage(40, 6))),
    # Compatible endpoints: input_tokens 0 at the start, the real counts in message_delta.
    ("proxy_input_tokens_in_message_delta", message([text("运行 make run。")], "end_turn", usage(120, 9, 64))),
    ("proxy_no_event_lines", message([text("我先读一下 README。"), read_call("t1", "README.md")], "tool_use")),
    ("proxy_whole_input_in_start", message([read_call("toolu_gw1", "README.md")], "tool_use")),
    ("proxy_empty_text_block", message([read_call("toolu_e1", "README.md")], "tool_use")),
]

# (fixture, words the error must contain) — streams that must fail, never look like success.
FAILING = [
    ("missing_finish", "stream ended without message_stop — response may be truncated"),
    ("proxy_no_message_stop", "stream ended without message_stop"),
    ("anthropic_overloaded", "the server reported an error in the stream: overloaded_error: Overloaded"),
    ("anthropic_api_error", "api_error: Internal server error"),
]


@pytest.mark.parametrize("fixture, expected", STREAMS, ids=[row[0] for row in STREAMS])
def test_stream_assembles_into_the_expected_message(ink, fixture, expected):
    events, error = assemble(ink, fixture)
    assert error is None
    assert events[-1] == {"type": "message_end", "message": expected}
    assert [e["type"] for e in events].count("message_end") == 1


@pytest.mark.parametrize("fixture, words", FAILING, ids=[row[0] for row in FAILING])
def test_failing_streams_raise_with_the_servers_message(ink, fixture, words):
    events, error = assemble(ink, fixture)
    assert error is not None and words in error
    assert "message_end" not in [e["type"] for e in events]


def test_every_fixture_is_in_a_table():
    named = {row[0] for row in STREAMS} | {row[0] for row in FAILING} | {"abort"}
    assert {p.stem for p in (FIXTURES / "anthropic").glob("*.sse")} == named


def test_progress_events_of_the_readme_stream(ink):
    events, _ = assemble(ink, "readme")
    assert events[:-1] == [
        {"type": "text_delta", "text": "我先读一下 README。"},
        {"type": "tool_call_start", "id": "t1", "name": "read"},
        {"type": "tool_call_delta", "id": "t1", "jsonDelta": '{"path":"REA'},
        {"type": "tool_call_delta", "id": "t1", "jsonDelta": 'DME.md"}'},
    ]


def test_thinking_streams_as_thinking_delta_and_the_signature_never_reaches_the_display(ink):
    events, _ = assemble(ink, "anthropic_thinking")
    assert [e for e in events if e["type"] == "thinking_delta"] == [
        {"type": "thinking_delta", "text": "用户问怎样启动,"},
        {"type": "thinking_delta", "text": "先看 README。"},
    ]
    assert "EqQB" not in json.dumps(events[:-1])


def test_a_tools_arguments_are_parsed_at_its_blocks_stop(ink):
    """content_block_stop finishes the block: what follows for that index is ignored."""
    frames = fixture_bytes("anthropic/readme").split(b"\n\n")
    stop_at = next(i for i, f in enumerate(frames) if b'"content_block_stop","index":1' in f)
    late = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
        b'"delta":{"type":"input_json_delta","partial_json":"junk"}}'
    )
    body = b"\n\n".join([*frames[: stop_at + 1], late, *frames[stop_at + 1 :]])
    events, error = assemble(ink, None, [body])
    assert error is None
    assert events[-1]["message"]["blocks"][1]["arguments"] == {"path": "README.md"}
    assert "junk" not in json.dumps(events)


def test_a_delta_without_its_block_start_opens_the_block(ink):
    body = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hi"}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    events, error = assemble(ink, None, [body])
    assert error is None and events[-1]["message"]["blocks"] == [text("hi")]


@pytest.mark.parametrize(
    "reason, stop_reason",
    [
        ("tool_use", "tool_use"),
        ("end_turn", "end_turn"),
        ("stop_sequence", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("pause_turn", None),
        ("refusal", None),
    ],
)
def test_map_stop_reason(ink, reason, stop_reason):
    assert ink.anthropic_messages.map_stop_reason(reason) == stop_reason


def test_article_abort_scenario_ends_quietly_without_message_end(ink):
    controller = ink.abort.AbortController()

    def network():
        yield fixture_bytes("anthropic/abort")
        controller.abort()  # the user presses Ctrl-C while the next read is pending
        raise ConnectionResetError("connection closed by abort")

    events = list(ink.anthropic_messages.assemble_stream(network(), controller.signal))
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta"]


def test_a_read_error_without_abort_propagates(ink):
    def network():
        yield fixture_bytes("anthropic/abort")
        raise ConnectionResetError("peer reset")

    with pytest.raises(ConnectionResetError, match="peer reset"):
        list(ink.anthropic_messages.assemble_stream(network(), ink.abort.AbortController().signal))


def test_data_that_is_not_an_event_object_raises(ink):
    events, error = assemble(ink, None, [b'event: message_start\ndata: "hello"\n\n'])
    assert error is not None and "not a Messages event" in error
