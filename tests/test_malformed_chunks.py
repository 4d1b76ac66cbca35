"""A chunk of the wrong shape: the field and its type named on one line, never a crash (provider/base.py's policy).

Chat Completions chunks with a field of the wrong type (the table), then any value at any
place in a chunk; Messages and Responses streams of any events with fields of any shape —
each reader yields well-formed LLMEvents and then a ``message_end``, or raises one
ProviderError with one line, never another exception (which would reach the loop as a
crash); numbers that are not finite (NaN, Infinity) refused so the history stays JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ink_py.course.checks.helpers import run_assembly, sse, text_reply

from .raw_servers import ink_py_against, one_error_line, sse_server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# demo\n\nrun `make`\n")
    return tmp_path


# ── Chat Completions: the field and its type ────────────────────────────────────────────

MALFORMED = [
    ({"choices": "oops"}, '"choices" is a string, expected an array'),
    ({"choices": [None]}, '"choices[0]" is null, expected an object'),
    ({"choices": [7]}, '"choices[0]" is a number, expected an object'),
    ({"choices": [[]]}, '"choices[0]" is an array, expected an object'),
    ({"choices": {"0": {}}}, '"choices" is an object, expected an array'),
    ({"choices": [{"delta": []}]}, '"delta" is an array, expected an object'),
    ({"choices": [{"delta": "hi"}]}, '"delta" is a string, expected an object'),
    ({"choices": [{"delta": {"tool_calls": {"index": 0}}}]}, '"tool_calls" is an object, expected an array'),
    ({"choices": [{"delta": {"tool_calls": "x"}}]}, '"tool_calls" is a string, expected an array'),
    ({"choices": [{"delta": {"tool_calls": [None]}}]}, '"tool_calls[]" is null, expected an object'),
    ({"choices": [{"delta": {"tool_calls": [1]}}]}, '"tool_calls[]" is a number, expected an object'),
    ({"choices": [{"delta": {"tool_calls": [{"index": [0]}]}}]}, '"index" is an array, expected a number'),
    ({"choices": [{"delta": {"tool_calls": [{"index": {}}]}}]}, '"index" is an object, expected a number'),
    ({"choices": [{"delta": {"tool_calls": [{"function": "read"}]}}]}, '"function" is a string, expected an object'),
    ({"choices": [{"delta": {"tool_calls": [{"function": {"name": 5}}]}}]}, '"name" is a number, expected a string'),
    ({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": {}}}]}}]}, '"arguments" is an object'),
    ({"choices": [{"delta": {"tool_calls": [{"id": ["t"]}]}}]}, '"id" is an array, expected a string'),
    ({"choices": [{"delta": {}, "finish_reason": ["stop"]}]}, '"finish_reason" is an array, expected a string'),
    ({"choices": [{"delta": {}, "finish_reason": 1}]}, '"finish_reason" is a number, expected a string'),
    ({"choices": [], "usage": "lots"}, '"usage" is a string, expected an object'),
    ({"choices": [], "usage": {"prompt_tokens": "12"}}, 'usage "prompt_tokens" is'),
    ({"choices": [], "usage": {"completion_tokens": -3}}, 'usage "completion_tokens" is'),
    ({"choices": [], "usage": {"prompt_tokens_details": []}}, '"prompt_tokens_details" is an array'),
    ({"choices": [], "x_groq": "u"}, '"x_groq" is a string, expected an object'),
    ({"choices": [{"delta": {}, "usage": 3}]}, '"usage" is a number, expected an object'),
]


@pytest.mark.parametrize(("chunk", "words"), MALFORMED, ids=[w[:40] for _, w in MALFORMED])
def test_a_malformed_chunk_names_the_field_and_its_type(ink: Any, chunk: dict, words: str) -> None:
    body = sse(chunk) + sse({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    _, error = run_assembly(ink, [body])
    assert error is not None and error.startswith("the server sent a malformed chunk: ") and words in error
    assert "\n" not in error


def test_a_malformed_chunk_ends_the_cli_with_one_line_and_exit_1(workspace: Path) -> None:
    with sse_server(sse({"choices": [{"delta": []}]})) as server:
        result = ink_py_against(server, workspace, timeout=30)
    assert result.code == 1
    assert '"delta" is an array, expected an object' in one_error_line(result.err)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
PATHS = [
    ("choices",),
    ("choices", 0),
    ("choices", 0, "delta"),
    ("choices", 0, "finish_reason"),
    ("choices", 0, "delta", "content"),
    ("choices", 0, "delta", "tool_calls"),
    ("choices", 0, "delta", "tool_calls", 0),
    ("choices", 0, "delta", "tool_calls", 0, "index"),
    ("choices", 0, "delta", "tool_calls", 0, "id"),
    ("choices", 0, "delta", "tool_calls", 0, "function"),
    ("choices", 0, "delta", "tool_calls", 0, "function", "name"),
    ("choices", 0, "delta", "tool_calls", 0, "function", "arguments"),
    ("usage",),
    ("usage", "prompt_tokens"),
]


@given(path=st.sampled_from(PATHS), value=JSON_VALUES)
@settings(max_examples=300, deadline=None)
def test_any_value_anywhere_in_a_chunk_is_a_reply_or_a_provider_error(ink: Any, path: tuple, value: Any) -> None:
    chunk: Any = {
        "choices": [
            {
                "delta": {
                    "content": "a",
                    "tool_calls": [{"index": 0, "id": "t", "function": {"name": "read", "arguments": "{}"}}],
                },
                "finish_reason": None,
            }
        ],
        "usage": {"prompt_tokens": 1},
    }
    holder = chunk
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    events, error = run_assembly(ink, [sse(chunk), sse({"choices": [{"delta": {}, "finish_reason": "stop"}]})])
    assert error is None or error.startswith("the server sent"), error  # never AttributeError/TypeError


# ── Messages and Responses: any events, fields of any shape (at most 12 events a stream) ──

FIELDS = [
    "type", "index", "delta", "content_block", "message", "usage", "item", "item_id", "output_index", "response",
    "arguments", "error", "text", "partial_json", "thinking", "signature", "stop_reason", "input", "id", "name",
    "call_id", "status", "incomplete_details", "reason", "input_tokens", "output_tokens", "cached_tokens",
    "input_tokens_details", "cache_read_input_tokens", "code", "data",
]  # fmt: skip
WORDS = [
    "text", "thinking", "tool_use", "redacted_thinking", "text_delta", "input_json_delta", "thinking_delta",
    "signature_delta", "message", "function_call", "reasoning", "completed", "incomplete", "max_output_tokens",
    "end_turn", "tool_use", "max_tokens", '{"path":', '"README.md"}', "error",
]  # fmt: skip
LEAF = st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(WORDS) | st.text(max_size=4)
VALUE = st.recursive(
    LEAF, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
DATA = st.dictionaries(st.sampled_from(FIELDS), VALUE, max_size=5) | VALUE

NAMES = {
    "anthropic_messages": [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop", "ping", "error",
    ],
    "openai_responses": [
        "response.created", "response.output_item.added", "response.output_text.delta", "response.output_item.done",
        "response.reasoning_summary_text.delta", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.completed", "response.incomplete", "response.failed",
        "error",
    ],
}  # fmt: skip


@st.composite
def any_body(draw):
    dialect = draw(st.sampled_from(sorted(NAMES)))
    frames = []
    for _ in range(draw(st.integers(0, 12))):
        name = draw(st.sampled_from(NAMES[dialect]) | st.none() | st.text("abc._", max_size=6))
        data = json.dumps(draw(DATA), ensure_ascii=False)
        frames.append((f"event: {name}\n" if name else "") + f"data: {data}\n\n")
    return dialect, "".join(frames).encode()


def well_formed(event):
    kind = event["type"]
    if kind in ("text_delta", "thinking_delta"):
        return isinstance(event["text"], str) and event["text"] != ""
    if kind == "tool_call_start":
        return isinstance(event["id"], str) and isinstance(event["name"], str)
    if kind == "tool_call_delta":
        return isinstance(event["id"], str) and isinstance(event["jsonDelta"], str) and event["jsonDelta"] != ""
    message = event["message"]
    json.dumps(message)  # the trace and the relay write it as JSON
    return (
        kind == "message_end"
        and message["blocks"]
        and all(b["type"] in ("text", "thinking", "toolCall") for b in message["blocks"])
        and all(isinstance(n, int) and n >= 0 for n in message["usage"].values())
        and message["stopReason"] in ("tool_use", "end_turn", "max_tokens", None)
    )


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(any_body())
def test_any_messages_or_responses_stream_gives_well_formed_events_or_one_provider_error(ink, case):
    dialect, body = case
    events, error = run_assembly(ink, [body], dialect=dialect)  # any other exception fails the test
    assert all(well_formed(event) for event in events)
    assert error is not None or (events and events[-1]["type"] == "message_end")
    assert error is None or "\n" not in error
    assert [e["type"] for e in events].count("message_end") <= 1


# ── numbers that are not finite: NaN, Infinity, 1e999 ─────────────────────────────────


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_non_finite_numbers_from_the_server_are_refused(ink: Any, number: str) -> None:
    body = b'data: {"choices": [], "usage": {"prompt_tokens": ' + number.encode() + b"}}\n\n"
    _, error = run_assembly(ink, [text_reply("hi") + body])
    assert error is not None and "not JSON" in error and "not a finite number" in error


def test_non_finite_tool_arguments_are_refused_so_the_history_stays_json(ink: Any) -> None:
    assert "_parseError" in ink.shared.safe_parse_json('{"offset": NaN}')
    assert "_parseError" in ink.shared.safe_parse_json('{"offset": 1e999}')
    assert ink.shared.safe_parse_json('{"offset": 1.5e3}') == {"offset": 1500.0}


def test_nan_in_usage_ends_the_run_with_an_error_and_a_valid_trace(workspace: Path, tmp_path: Path) -> None:
    body = text_reply("hi") + b'data: {"choices": [], "usage": {"prompt_tokens": NaN}}\n\n'
    trace = tmp_path / "trace.jsonl"
    with sse_server(body) as server:
        result = ink_py_against(server, workspace, "--trace", str(trace), timeout=30)
    assert result.code == 1 and "not a finite number: NaN" in one_error_line(result.err)
    assert "inf" not in result.err.split("error:")[0] and "nan" not in result.err.lower().split("error:")[0]
    for line in trace.read_text().splitlines():
        json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} in the trace"))
