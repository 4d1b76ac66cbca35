"""Three wire dialects, one event stream (article §2.3: "把不同服务的响应转换成这些事件").

The article's scenarios exist in each dialect's own frames (fixtures/article = Chat
Completions, fixtures/anthropic, fixtures/responses); each dialect's reader must yield the
very same LLMEvents for them. A hypothesis property then writes any reply — text and tool
calls, fragmented and interleaved any way — in all three dialects and demands the same
events from each, however the bytes are cut into reads.
"""

import json
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import fixture_bytes, run_assembly, split_at

FOLDERS = {"openai_completions": "article", "anthropic_messages": "anthropic", "openai_responses": "responses"}
ARTICLE_SCENARIOS = ["readme", "interleaved", "invalid_json", "length_text", "length_tool"]


@pytest.mark.parametrize("scenario", ARTICLE_SCENARIOS)
def test_the_article_scenarios_give_the_same_events_in_every_dialect(ink, scenario):
    traces = {
        dialect: run_assembly(ink, [fixture_bytes(f"{folder}/{scenario}")], dialect=dialect)
        for dialect, folder in FOLDERS.items()
    }
    chat_events, chat_error = traces["openai_completions"]
    assert chat_error is None and chat_events[-1]["type"] == "message_end"
    for dialect, (events, error) in traces.items():
        assert error is None, dialect
        assert events == chat_events, dialect


def test_a_stream_without_its_end_marker_fails_the_same_way_in_every_dialect(ink):
    for dialect, folder in FOLDERS.items():
        events, error = run_assembly(ink, [fixture_bytes(f"{folder}/missing_finish")], dialect=dialect)
        assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_delta"], dialect
        assert error is not None and error.endswith("— response may be truncated"), dialect


def test_an_abort_ends_every_dialect_quietly_after_the_same_events(ink):
    for dialect, folder in FOLDERS.items():
        controller = ink.abort.AbortController()

        def network(folder=folder, controller=controller):
            yield fixture_bytes(f"{folder}/abort")
            controller.abort()
            raise ConnectionResetError("connection closed by abort")

        events = list(getattr(ink, dialect).assemble_stream(network(), controller.signal))
        assert events == [
            {"type": "tool_call_start", "id": "t1", "name": "read"},
            {"type": "tool_call_delta", "id": "t1", "jsonDelta": '{"path":"REA'},
        ], dialect


# ── any reply, written in each dialect ──────────────────────────────────────────────────

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


@st.composite
def pieces(draw, whole):
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(whole) - 1)), max_size=5))))
    points = [0, *[c for c in cuts if c < len(whole)], len(whole)]
    return [whole[a:b] for a, b in pairwise(points) if b > a]


@st.composite
def reply(draw):
    """A reply as the order its fragments arrive in: ("text", piece) or (call number, piece)."""
    text = draw(st.text(max_size=20))
    calls = [
        {
            "id": f"call_{i}",
            "name": draw(st.sampled_from(["read", "grep"])),
            "arguments": draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3)),
        }
        for i in range(draw(st.integers(0, 3)))
    ]
    streams = {"text": draw(pieces(text)) if text else []}
    for i, c in enumerate(calls):
        streams[i] = draw(pieces(json.dumps(c["arguments"], ensure_ascii=draw(st.booleans()))))
    labels = draw(st.permutations([label for label, parts in streams.items() for _ in parts]))
    sent = {label: 0 for label in streams}
    order = []
    for label in labels:
        order.append((label, streams[label][sent[label]]))
        sent[label] += 1
    return calls, order


def frame(data, event=None):
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data, ensure_ascii=False) + "\n\n").encode()


def as_chat_completions(calls, order):
    out, opened = b"", set()
    for label, piece in order:
        if label == "text":
            delta = {"content": piece}
        else:
            tc = {"index": label, "function": {"arguments": piece}}
            if label not in opened:
                opened.add(label)
                tc.update(id=calls[label]["id"], type="function")
                tc["function"]["name"] = calls[label]["name"]
            delta = {"tool_calls": [tc]}
        out += frame({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    finish = "tool_calls" if calls else "stop"
    return out + frame({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})


def as_anthropic_messages(calls, order):
    def event(name, **data):
        return frame({"type": name, **data}, name)

    out, index_of = event("message_start", message={"role": "assistant", "content": []}), {}
    for label, piece in order:
        if label not in index_of:
            index_of[label] = len(index_of)
            block = (
                {"type": "text", "text": ""}
                if label == "text"
                else {"type": "tool_use", "id": calls[label]["id"], "name": calls[label]["name"], "input": {}}
            )
            out += event("content_block_start", index=index_of[label], content_block=block)
        delta = (
            {"type": "text_delta", "text": piece}
            if label == "text"
            else {"type": "input_json_delta", "partial_json": piece}
        )
        out += event("content_block_delta", index=index_of[label], delta=delta)
    for index in index_of.values():
        out += event("content_block_stop", index=index)
    out += event("message_delta", delta={"stop_reason": "tool_use" if calls else "end_turn"})
    return out + event("message_stop")


def as_openai_responses(calls, order):
    seq = iter(range(10**6))

    def event(name, **data):
        return frame({"type": name, "sequence_number": next(seq), **data}, name)

    out, index_of = event("response.created", response={"status": "in_progress"}), {}
    for label, piece in order:
        if label not in index_of:
            index_of[label] = len(index_of)
            item = (
                {"type": "message", "id": "msg", "role": "assistant", "content": []}
                if label == "text"
                else {
                    "type": "function_call",
                    "id": f"fc_{label}",
                    "call_id": calls[label]["id"],
                    "name": calls[label]["name"],
                    "arguments": "",
                }
            )
            out += event("response.output_item.added", output_index=index_of[label], item=item)
        kind = "response.output_text.delta" if label == "text" else "response.function_call_arguments.delta"
        item_id = "msg" if label == "text" else f"fc_{label}"
        out += event(kind, item_id=item_id, output_index=index_of[label], delta=piece)
    return out + event("response.completed", response={"status": "completed"})


WRITERS = {
    "openai_completions": as_chat_completions,
    "anthropic_messages": as_anthropic_messages,
    "openai_responses": as_openai_responses,
}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(reply(), st.lists(st.integers(0, 4000), max_size=30))
def test_any_reply_gives_the_same_events_in_every_dialect(ink, case, cuts):
    calls, order = case
    traces = {}
    for dialect, write in WRITERS.items():
        events, error = run_assembly(ink, split_at(write(calls, order), cuts), dialect=dialect)
        assert error is None, dialect
        traces[dialect] = events
    chat = traces["openai_completions"]
    assert traces["anthropic_messages"] == chat
    assert traces["openai_responses"] == chat
    made = {b["id"]: b["arguments"] for b in chat[-1]["message"]["blocks"] if b["type"] == "toolCall"}
    assert made == {c["id"]: c["arguments"] for c in calls}
    assert chat[-1]["message"]["stopReason"] == ("tool_use" if calls else "end_turn")
