"""Anthropic Messages' reader (provider/anthropic_messages.py): what is its own beyond the shared scenarios.

Thinking streamed as thinking_delta, its signature never shown; a tool's arguments parsed
at its block's stop; a delta without its block start; map_stop_reason; data that is not an
event. Each fixture's message is tests/test_fixtures.py's; the article's scenarios in this
dialect, tests/test_dialects.py's and tests/test_assemble.py's.
"""

import json

import pytest

from ink_py.course.checks.helpers import fixture_bytes, run_assembly, text

DIALECT = "anthropic_messages"


def assemble(ink, name, reads=None):
    return run_assembly(ink, reads or [fixture_bytes(f"anthropic/{name}")], dialect=DIALECT)


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


def test_data_that_is_not_an_event_object_raises(ink):
    events, error = assemble(ink, None, [b'event: message_start\ndata: "hello"\n\n'])
    assert error is not None and "not a Messages event" in error
