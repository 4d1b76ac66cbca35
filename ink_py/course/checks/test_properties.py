"""Properties (hypothesis): how the bytes are cut into reads never changes the result,
and any reply, fragmented and interleaved any way, is reassembled exactly.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import all_fixture_names, dialect_of, fixture_bytes, split_at
from .implementation import Implementation

PROPERTY_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)


def outcome(make_iterator: Any) -> Any:
    """Everything an iterator yields, and the error message it ends with (or None)."""
    items = []
    try:
        for item in make_iterator():
            items.append(item)
    except Exception as err:  # the property compares errors too: same message for every split
        return items, f"{type(err).__name__}: {err}"
    return items, None


def awkward_offsets(data: bytes) -> list[int]:
    """Offsets inside a UTF-8 character or between a CR and its LF — where splits hurt."""
    inside_char = [i for i in range(1, len(data)) if 0x80 <= data[i] < 0xC0]
    inside_crlf = [i for i in range(1, len(data)) if data[i - 1 : i + 1] == b"\r\n"]
    return inside_char + inside_crlf or [0]


@st.composite
def fixture_split(draw: Any) -> Any:
    name = draw(st.sampled_from(all_fixture_names()))
    data = fixture_bytes(name)
    offsets = st.integers(0, len(data)) | st.sampled_from(awkward_offsets(data))
    return name, data, draw(st.lists(offsets, max_size=40))


@pytest.mark.ex2
@PROPERTY_SETTINGS
@given(fixture_split())
def test_any_split_of_any_fixture_parses_the_same(ink: Implementation, case: Any) -> None:
    name, data, cuts = case
    reads = split_at(data, cuts)
    assert outcome(lambda: ink.shared.parse_sse(reads)) == outcome(lambda: ink.shared.parse_sse([data])), name


@pytest.mark.ex2
@PROPERTY_SETTINGS
@given(fixture_split())
def test_any_split_of_any_fixture_assembles_the_same(ink: Implementation, case: Any) -> None:
    name, data, cuts = case
    reads = split_at(data, cuts)
    assemble_stream = getattr(ink, dialect_of(name)).assemble_stream  # each folder's own dialect
    assert outcome(lambda: assemble_stream(reads)) == outcome(lambda: assemble_stream([data])), name


@pytest.mark.ex2
@pytest.mark.parametrize("name", all_fixture_names())
def test_one_byte_reads_of_every_fixture(ink: Implementation, name: Any) -> None:
    data = fixture_bytes(name)
    one_byte_reads = [data[i : i + 1] for i in range(len(data))]
    assemble_stream = getattr(ink, dialect_of(name)).assemble_stream
    assert outcome(lambda: assemble_stream(one_byte_reads)) == outcome(lambda: assemble_stream([data]))


# ── generated replies ───────────────────────────────────────────────────────────────────

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
tool_arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@st.composite
def pieces(draw: Any, whole: str) -> list[str]:
    """``whole`` cut into non-empty fragments at arbitrary places."""
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(whole) - 1)), max_size=6))))
    points = [0, *[c for c in cuts if c < len(whole)], len(whole)]
    return [whole[a:b] for a, b in pairwise(points) if b > a]


@st.composite
def streamed_reply(draw: Any) -> Any:
    """A reply (text + tool calls), the chunks that stream it, and the reads carrying them."""
    text = draw(st.text(max_size=30))
    names = st.sampled_from(["read", "grep", "ls"])
    ids = st.text("abcdef0123", min_size=1, max_size=6)
    calls = [
        {"id": f"call_{draw(ids)}_{i}", "name": draw(names), "arguments": draw(tool_arguments)}
        for i in range(draw(st.integers(0, 3)))
    ]
    streams: dict[Any, list[str]] = {"text": draw(pieces(text)) if text else []}
    for i, c in enumerate(calls):
        streams[i] = draw(pieces(json.dumps(c["arguments"], ensure_ascii=draw(st.booleans()))))
    order = draw(st.permutations([label for label, parts in streams.items() for _ in parts]))

    chunks, sent, first_seen = [], {label: 0 for label in streams}, []
    for label in order:
        fragment = streams[label][sent[label]]
        if label == "text":
            chunks.append({"choices": [{"index": 0, "delta": {"content": fragment}, "finish_reason": None}]})
        else:
            tc = {"index": label, "function": {"arguments": fragment}}
            if sent[label] == 0:
                tc.update(id=calls[label]["id"], type="function")
                tc["function"]["name"] = calls[label]["name"]
            chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]})
        if sent[label] == 0:
            first_seen.append(label)
        sent[label] += 1
    finish = "tool_calls" if calls else "stop"
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})

    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    body = "".join(f"data: {json.dumps(c, ensure_ascii=False)}{newline}{newline}" for c in chunks)
    body += draw(st.sampled_from(["", f"data: [DONE]{newline}{newline}", "data: [DONE]"]))
    data = body.encode("utf-8")
    reads = split_at(data, draw(st.lists(st.integers(0, len(data)), max_size=30)))

    blocks = []
    for label in first_seen:
        if label == "text":
            blocks.append({"type": "text", "text": text})
        else:
            blocks.append({"type": "toolCall", **calls[label]})
    if not blocks:
        blocks = [{"type": "text", "text": "(empty)"}]
    return text, calls, blocks, reads


@pytest.mark.ex4
@PROPERTY_SETTINGS
@given(streamed_reply())
def test_any_fragmented_interleaved_reply_is_reassembled_exactly(ink: Implementation, reply: Any) -> None:
    text, calls, blocks, reads = reply
    events = list(ink.openai_completions.assemble_stream(reads))

    *progress, end = events
    assert end["type"] == "message_end"
    assert end["message"]["blocks"] == blocks
    assert end["message"]["stopReason"] == ("tool_use" if calls else "end_turn")
    # The progress events carry the same content, in order, for a display to show.
    assert "".join(e["text"] for e in progress if e["type"] == "text_delta") == text
    for c in calls:
        assert {"type": "tool_call_start", "id": c["id"], "name": c["name"]} in progress
        streamed = "".join(e["jsonDelta"] for e in progress if e["type"] == "tool_call_delta" and e["id"] == c["id"])
        assert json.loads(streamed) == c["arguments"]
