"""OpenAI Responses: the article's scenarios and real servers' streams, one fixture each.

Every row: a raw body in ``fixtures/responses/`` and the assistant message (or the error)
that ``openai_responses.assemble_stream`` must make of it — the same LLMEvents the Chat
Completions reader makes of ``fixtures/article/`` (tests/test_dialects.py compares them).
"""

import json

import pytest

from .helpers import FIXTURES, fixture_bytes, message, parse_error, read_call, run_assembly, text, usage

DIALECT = "openai_responses"


def assemble(ink, name, reads=None):
    return run_assembly(ink, reads or [fixture_bytes(f"responses/{name}")], dialect=DIALECT)


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
    # OpenAI's full text sequence; input_tokens include the cached ones, moved apart.
    ("openai_text", message([text("项目用 `make run` 启动。")], "end_turn", usage(176, 9, 1024))),
    # The call's id is its call_id (what function_call_output must name), not the item id fc_….
    (
        "openai_function_call",
        message([read_call("call_unLAR8MvFNptuiZK6K6HCy5k", "README.md")], "tool_use", usage(291, 23)),
    ),
    (
        "openai_reasoning_summary",
        message(
            [{"type": "thinking", "thinking": "用户问怎样启动,先看 README。"}, text("运行 make run。")],
            "end_turn",
            usage(44, 42, 256),
        ),
    ),
    (
        "reasoning_text",
        message(
            [{"type": "thinking", "thinking": "Check the README first."}, text("Run make run.")],
            "end_turn",
            usage(80, 12),
        ),
    ),
    ("arguments_only_in_done", message([read_call("call_d1", "README.md")], "tool_use", usage(200, 18))),
    ("whole_call_in_item_added", message([read_call("call_w1", "README.md")], "tool_use", usage(150, 16))),
    (
        "linked_by_item_id_only",
        message([read_call("call_a", "README.md"), read_call("call_b", "setup.cfg")], "tool_use"),
    ),
    ("proxy_no_event_lines", message([text("ok")], "end_turn")),
    ("incomplete_content_filter", message([text("The project starts with")], None, usage(40, 5))),
]

# (fixture, words the error must contain) — streams that must fail, never look like success.
FAILING = [
    ("missing_finish", "stream ended without response.completed — response may be truncated"),
    ("no_terminal_event", "stream ended without response.completed"),
    ("response_failed", "server_error: The server had an error while processing your request."),
    ("error_flat", "rate_limit_exceeded: Rate limit reached for gpt-4.1 on tokens per min (TPM)."),
    ("error_nested", "context_length_exceeded: Your input exceeds the context window of this model."),
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
    assert {p.stem for p in (FIXTURES / "responses").glob("*.sse")} == named


def test_progress_events_of_the_readme_stream(ink):
    events, _ = assemble(ink, "readme")
    assert events[:-1] == [
        {"type": "text_delta", "text": "我先读一下 README。"},
        {"type": "tool_call_start", "id": "t1", "name": "read"},
        {"type": "tool_call_delta", "id": "t1", "jsonDelta": '{"path":"REA'},
        {"type": "tool_call_delta", "id": "t1", "jsonDelta": 'DME.md"}'},
    ]


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


def test_article_abort_scenario_ends_quietly_without_message_end(ink):
    controller = ink.abort.AbortController()

    def network():
        yield fixture_bytes("responses/abort")
        controller.abort()  # the user presses Ctrl-C while the next read is pending
        raise ConnectionResetError("connection closed by abort")

    events = list(ink.openai_responses.assemble_stream(network(), controller.signal))
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta"]


def test_a_read_error_without_abort_propagates(ink):
    def network():
        yield fixture_bytes("responses/abort")
        raise ConnectionResetError("peer reset")

    with pytest.raises(ConnectionResetError, match="peer reset"):
        list(ink.openai_responses.assemble_stream(network(), ink.abort.AbortController().signal))


def test_reasoning_streams_as_thinking_delta(ink):
    events, _ = assemble(ink, "openai_reasoning_summary")
    assert "".join(e["text"] for e in events if e["type"] == "thinking_delta") == "用户问怎样启动,先看 README。"
    assert json.dumps(events).count("thinking_delta") == 2
