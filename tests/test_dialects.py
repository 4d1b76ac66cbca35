"""Three wire dialects, one event stream (article §2.3: "把不同服务的响应转换成这些事件").

The article's scenarios exist in each dialect's own frames (fixtures/article = Chat
Completions, fixtures/anthropic, fixtures/responses); each dialect's reader must yield the
very same LLMEvents for them (in Messages and Responses two calls arrive one after the other,
as those providers send them: only their order differs), ending in the message the table names (a missing end event,
an abort and a read error are tests/test_assemble.py's, in each dialect). A hypothesis
property then writes any reply — text and tool calls, fragmented and interleaved any way —
in all three dialects and demands the same events from each, however the bytes are cut.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ink_py.course.checks.helpers import (
    ARTICLE_FOLDER,
    fixture_bytes,
    message,
    parse_error,
    read_call,
    run_assembly,
    split_at,
    text,
)
from ink_py.course.checks.test_properties import pieces

# The article's scenarios and the message each must end in, whatever the dialect.
ARTICLE_SCENARIOS = [
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
]


@pytest.mark.parametrize("scenario, expected", ARTICLE_SCENARIOS, ids=[row[0] for row in ARTICLE_SCENARIOS])
def test_the_article_scenarios_give_the_same_events_in_every_dialect(ink, scenario, expected):
    traces = {
        dialect: run_assembly(ink, [fixture_bytes(f"{folder}/{scenario}")], dialect=dialect)
        for dialect, folder in ARTICLE_FOLDER.items()
    }
    chat_events, chat_error = traces["openai_completions"]
    assert chat_error is None and chat_events[-1] == {"type": "message_end", "message": expected}
    assert [e["type"] for e in chat_events].count("message_end") == 1
    for dialect, (events, error) in traces.items():
        assert error is None, dialect
        assert by_call(events) == by_call(chat_events), dialect  # §2.2's interleaving is Chat Completions' alone:
        assert events[-1] == chat_events[-1], dialect  # Messages and Responses send one call after the other


def by_call(events):
    """Each call's events in their own order (the calls in the order they opened), then the others in theirs:
    the same for one reply whether or not two calls interleaved."""
    ids = list(dict.fromkeys(e["id"] for e in events if "id" in e))
    return [[e for e in events if e.get("id") == i] for i in ids] + [[e for e in events if "id" not in e]]


# ── any reply, written in each dialect ──────────────────────────────────────────────────

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


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
