"""OpenAI Responses' reader (provider/openai_responses.py): what is its own beyond the shared scenarios.

Arguments that arrive whole shown once, streamed ones not repeated by their .done events,
the server's whole arguments winning over the fragments; map_status; reasoning streamed as
thinking_delta. Each fixture's message is tests/test_fixtures.py's; the article's scenarios
in this dialect, tests/test_dialects.py's and tests/test_assemble.py's.
"""

import json

import pytest

from ink_py.course.checks.helpers import fixture_bytes, run_assembly

DIALECT = "openai_responses"


def assemble(ink, name, reads=None):
    return run_assembly(ink, reads or [fixture_bytes(f"responses/{name}")], dialect=DIALECT)


@pytest.mark.parametrize("fixture", ["arguments_only_in_done", "whole_call_in_item_added"])
def test_arguments_that_arrive_whole_are_shown_once(ink, fixture):
    """.done and output_item.done repeat the whole string: the display gets it exactly once."""
    events, _ = assemble(ink, fixture)
    deltas = [e["jsonDelta"] for e in events if e["type"] == "tool_call_delta"]
    assert deltas == ['{"path":"README.md"}']


def test_streamed_arguments_are_not_repeated_by_their_done_events(ink):
    events, _ = assemble(ink, "openai_function_call")
    deltas = [e["jsonDelta"] for e in events if e["type"] == "tool_call_delta"]
    assert deltas == ['{"path"', ':"README.md"}']


def test_the_servers_whole_arguments_win_over_the_fragments(ink):
    """function_call_arguments.done carries the call's whole string: it is what the loop gets."""
    frames = fixture_bytes("responses/readme").replace(b'"delta":"DME.md\\"}"', b'"delta":"DME.m"')
    events, error = assemble(ink, None, [frames])
    assert error is None
    assert events[-1]["message"]["blocks"][1]["arguments"] == {"path": "README.md"}


@pytest.mark.parametrize(
    "status, reason, has_calls, stop_reason",
    [
        ("completed", None, False, "end_turn"),
        ("completed", None, True, "tool_use"),
        ("incomplete", "max_output_tokens", False, "max_tokens"),
        ("incomplete", "content_filter", False, None),
    ],
)
def test_map_status(ink, status, reason, has_calls, stop_reason):
    assert ink.openai_responses.map_status(status, reason, has_calls) == stop_reason


def test_reasoning_streams_as_thinking_delta(ink):
    events, _ = assemble(ink, "openai_reasoning_summary")
    assert "".join(e["text"] for e in events if e["type"] == "thinking_delta") == "用户问怎样启动,先看 README。"
    assert json.dumps(events).count("thinking_delta") == 2
