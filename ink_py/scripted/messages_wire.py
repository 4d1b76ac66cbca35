"""A reply as Anthropic Messages sends it: named SSE events, one content block after another.

``dialects.build_dialect_reply`` hands this module a ``Turn`` (turn.py) and gets back the
events Anthropic's API streams for it: ``message_start`` (the message, its ``usage`` with the
input counted and the cache counts), then each content block whole before the next starts —
``content_block_start``, a ``ping`` after the first, its deltas, ``content_block_stop`` — a
text block in five-character deltas, a ``tool_use`` block whose ``input_json_delta``s open with
an empty one; then ``message_delta`` (the stop reason and the cumulative usage: input, cache
and output counts) and ``message_stop``. Blocks never interleave: two calls arrive one after the
other, whatever order a Chat Completions stream would use. A reply that breaks off
(missing-finish, abort) ends after its last delta. ``final_message``: the same, as one object::

    >>> from ink_py.scripted.turn import MESSAGES, fixture_turn
    >>> events = messages_events(fixture_turn("interleaved", MESSAGES), model="m", reply_id="msg_1", counts=COUNTS)
    >>> [(name, data.get("index")) for name, data in events][1:7]  # doctest: +NORMALIZE_WHITESPACE
    [('content_block_start', 0), ('ping', None), ('content_block_delta', 0), ('content_block_delta', 0),
     ('content_block_delta', 0), ('content_block_stop', 0)]
"""

from __future__ import annotations

import json
from typing import Any

from .turn import Event, Turn, Usage, text_deltas

STOP_REASON = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}  # Chat's words → Messages'
COUNTS: Usage = {"input": 0, "output": 0}


def messages_events(turn: Turn, *, model: str, reply_id: str, counts: Usage) -> list[Event]:
    """message_start, the text block, each tool_use block in turn, message_delta, message_stop."""
    cache = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}  # nothing cached: a new prompt
    start_usage = {
        "input_tokens": counts["input"],
        **cache,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": min(1, counts["output"]),  # message_start counts the first token only
        "service_tier": "standard",
    }
    message: dict[str, Any] = {
        "id": reply_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[Event] = []

    def add(name: str, **data: Any) -> None:
        events.append((name, {"type": name, **data}))

    def block(content_block: dict[str, Any], deltas: list[dict[str, Any]], last: bool) -> None:
        index = sum(name == "content_block_start" for name, _ in events)
        add("content_block_start", index=index, content_block=content_block)
        if index == 0:
            add("ping")  # Anthropic sends one early
        for delta in deltas:
            add("content_block_delta", index=index, delta=delta)
        if not (last and turn["ending"] is None):  # a body that breaks off leaves its last block open
            add("content_block_stop", index=index)

    add("message_start", message=message)
    if turn["text"]:
        texts = [{"type": "text_delta", "text": t} for t in text_deltas(turn)]
        block({"type": "text", "text": ""}, texts, last=not turn["calls"])
    for number, call in enumerate(turn["calls"]):
        fragments = ["", *call["fragments"]]  # Anthropic opens each tool_use block with an empty one
        deltas = [{"type": "input_json_delta", "partial_json": f} for f in fragments]
        tool_use = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}
        block(tool_use, deltas, last=number == len(turn["calls"]) - 1)
    if turn["ending"] is None:
        return events
    usage = {"input_tokens": counts["input"], **cache, "output_tokens": counts["output"]}  # cumulative
    add("message_delta", delta={"stop_reason": STOP_REASON[turn["ending"]], "stop_sequence": None}, usage=usage)
    add("message_stop")
    return events


def final_message(events: list[Event]) -> dict[str, Any]:
    """The whole message a non-streaming request gets: message_start's, with the blocks, stop reason and usage."""
    content: list[dict[str, Any]] = []
    partial: dict[int, str] = {}  # a tool_use block's JSON so far
    for name, data in events:
        if name == "content_block_start":
            content.append(dict(data["content_block"]))
        elif name == "content_block_delta" and data["delta"]["type"] == "text_delta":
            content[-1]["text"] += data["delta"]["text"]
        elif name == "content_block_delta":
            partial[data["index"]] = partial.get(data["index"], "") + data["delta"]["partial_json"]
    for index, text in partial.items():
        try:
            content[index]["input"] = json.loads(text)
        except ValueError:
            content[index]["input"] = {}  # arguments that do not parse (cut at the limit): no input to show
    delta = next(data for name, data in events if name == "message_delta")
    message = events[0][1]["message"]
    usage = {**message["usage"], **delta["usage"]}
    return {**message, "content": content, "stop_reason": delta["delta"]["stop_reason"], "usage": usage}
