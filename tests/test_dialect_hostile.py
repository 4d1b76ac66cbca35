"""Hostile streams in the two other dialects: any sequence of events with fields of any shape.

Whatever a server (or something pretending to be one) sends, each reader yields well-formed
LLMEvents and then a ``message_end``, or raises ProviderError with one line — never another
exception, which would reach the loop as a crash. Bounded: at most 12 events per stream.
"""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import run_assembly

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
def hostile_body(draw):
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
@given(hostile_body())
def test_any_stream_gives_well_formed_events_or_one_provider_error(ink, case):
    dialect, body = case
    events, error = run_assembly(ink, [body], dialect=dialect)  # any other exception fails the test
    assert all(well_formed(event) for event in events)
    assert error is not None or (events and events[-1]["type"] == "message_end")
    assert error is None or "\n" not in error
    assert [e["type"] for e in events].count("message_end") <= 1
