"""One reply of the scripted model, whatever the dialect: the ``Turn`` every encoder writes.

The script's answers (``script.Answer``) and the article's scenarios (``fixtures/``) both
become a ``Turn`` — the text, each call's argument fragments as the model streams them, the
order a Chat Completions stream sends those fragments in, and how the reply ends — and one
encoder per dialect writes it with every field its provider sends (``chat_wire``,
``messages_wire``, ``responses_wire``). So a fixture stays the readable body the article shows:
``fixture_turn`` decodes its events, and the encoder adds what the wire adds. Sections: the
shapes; from the script's answer; from a fixture (one small decoder per dialect). Example::

    >>> turn = fixture_turn("interleaved", CHAT)
    >>> [c["fragments"] for c in turn["calls"]], turn["order"], turn["ending"]
    ([['{"path":"REA', 'DME.md"}'], ['{"path":"pack', 'age.json"}']], [0, 1, 0, 1], 'tool_calls')
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypedDict

from ..provider.shared import parse_sse
from .scenarios import SCENARIOS, fixture_path
from .script import Answer
from .wire import CHAT, MESSAGES, RESPONSES, SLOW_PIECE, TEXT_PIECE, argument_fragments, pieces

FIXTURE_FOLDER = {CHAT: "article", MESSAGES: "anthropic", RESPONSES: "responses"}  # each dialect's copy
Ending = Literal["stop", "tool_calls", "length"] | None  # None: the body breaks off after its last piece
Event = tuple[str, dict[str, Any]]  # a named-event dialect's (SSE event name, its data)
STOP_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}  # Messages' words → Chat's


class TurnCall(TypedDict):
    """A tool call as streamed: its fragments joined are its arguments (JSON, or not: invalid-json)."""

    id: str
    name: str
    fragments: list[str]


class Turn(TypedDict):
    """What one reply says, and how it ends; the encoders add every wire field."""

    text: str
    calls: list[TurnCall]
    order: list[int]  # Chat Completions: the call each argument event belongs to, as they arrive (§2.2)
    ending: Ending  # in Chat Completions' words: finish_reason; None for missing-finish and abort
    hold: bool  # after the last piece, stay silent until the client leaves (abort)
    slow: bool


class Usage(TypedDict):
    """Token counts, about four characters a token: input from the request, output from what is sent."""

    input: int
    output: int


def text_deltas(turn: Turn) -> list[str]:
    """The reply's text as a provider streams it: five-character deltas (two for ``slow``), in every dialect.

    >>> text_deltas(fixture_turn("readme", CHAT))
    ['我先读一下', ' READ', 'ME。']
    """
    return pieces(turn["text"], SLOW_PIECE if turn["slow"] else TEXT_PIECE)


# ── from the script's answer ────────────────────────────────────────────────────────────


def answer_turn(answer: Answer, dialect: str) -> Turn:
    """The script's answer as a Turn: its call's arguments in §2.1's fragments (``argument_fragments``).

    >>> from .script import read_call
    >>> turn = answer_turn(read_call("好。", "a.md", "call_1"), MESSAGES)
    >>> turn["calls"], turn["ending"]
    ([{'id': 'toolu_1', 'name': 'read', 'fragments': ['{"path":"a.m', 'd"}']}], 'tool_calls')
    """
    call = answer["tool_call"]
    calls: list[TurnCall] = []
    if call is not None:
        call_id = "toolu_" + call["id"].removeprefix("call_") if dialect == MESSAGES else call["id"]
        calls.append({"id": call_id, "name": call["name"], "fragments": argument_fragments(call["arguments"])})
    ending: Ending = "length" if answer["cut"] else "tool_calls" if calls else "stop"
    order = [0] * len(calls[0]["fragments"]) if calls else []
    text, hold, slow = answer["text"], answer["hold"], answer["slow"]
    return {"text": text, "calls": calls, "order": order, "ending": ending, "hold": hold, "slow": slow}


def usage(messages: Any, turn: Turn) -> Usage:
    """Deterministic counts: the request's messages in, the text and calls sent out.

    >>> usage([{"role": "user", "content": "hi"}], {**fixture_turn("readme", CHAT), "text": "abcd"})
    {'input': 9, 'output': 7}
    """
    sent = turn["text"] + "".join(c["name"] + "".join(c["fragments"]) for c in turn["calls"])
    return {"input": _tokens(json.dumps(messages, ensure_ascii=False)), "output": _tokens(sent)}


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


# ── from a fixture: its events, decoded ─────────────────────────────────────────────────


def fixture_turn(scenario: str, dialect: str, hold: bool = False) -> Turn:
    """The scenario's reply as its fixture in ``dialect``'s folder says it (``fixtures/<folder>/``)."""
    name = SCENARIOS[scenario]["fixture"].replace("article/", FIXTURE_FOLDER[dialect] + "/", 1)
    events = [e["data"] for e in parse_sse([fixture_path(name).read_bytes()]) if isinstance(e["data"], dict)]
    return {**decode_events(events, dialect), "hold": hold}


def decode_events(events: list[dict[str, Any]], dialect: str) -> Turn:
    """A reply's events (each SSE event's JSON data) read back as a Turn: what it said, how it ended."""
    turn: Turn = {"text": "", "calls": [], "order": [], "ending": None, "hold": False, "slow": False}
    {CHAT: _decode_chat, MESSAGES: _decode_messages, RESPONSES: _decode_responses}[dialect](turn, events)
    return turn


def _fragment(turn: Turn, number: int, piece: str) -> None:
    turn["calls"][number]["fragments"].append(piece)
    turn["order"].append(number)


def _decode_chat(turn: Turn, chunks: list[dict[str, Any]]) -> None:
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            turn["text"] += delta.get("content") or ""
            for piece in delta.get("tool_calls") or []:
                function = piece.get("function") or {}
                if piece["index"] == len(turn["calls"]):  # a new index: the call's first chunk
                    turn["calls"].append({"id": piece["id"], "name": function["name"], "fragments": []})
                _fragment(turn, piece["index"], function.get("arguments") or "")
            turn["ending"] = choice.get("finish_reason") or turn["ending"]


def _decode_messages(turn: Turn, events: list[dict[str, Any]]) -> None:
    blocks: dict[Any, int] = {}  # a tool_use block's index → its call's number
    for event in events:
        kind, delta = event.get("type"), event.get("delta") or {}
        if kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
            block = event["content_block"]
            blocks[event["index"]] = len(turn["calls"])
            turn["calls"].append({"id": block["id"], "name": block["name"], "fragments": []})
        elif kind == "content_block_delta" and delta["type"] == "text_delta":
            turn["text"] += delta["text"]
        elif kind == "content_block_delta" and delta.get("partial_json"):  # Anthropic's opening "" says nothing
            _fragment(turn, blocks[event["index"]], delta["partial_json"])
        elif kind == "message_delta":
            turn["ending"] = STOP_REASONS[delta["stop_reason"]]  # type: ignore[typeddict-item]


def _decode_responses(turn: Turn, events: list[dict[str, Any]]) -> None:
    items: list[str] = []  # the function_call items' ids, in call order
    for event in events:
        kind = event.get("type")
        if kind == "response.output_item.added" and event["item"]["type"] == "function_call":
            item = event["item"]
            turn["calls"].append({"id": item["call_id"], "name": item["name"], "fragments": []})
            items.append(item["id"])
        elif kind == "response.output_text.delta":
            turn["text"] += event["delta"]
        elif kind == "response.function_call_arguments.delta":
            _fragment(turn, items.index(event["item_id"]), event["delta"])
        elif kind in ("response.completed", "response.incomplete"):
            turn["ending"] = "length" if kind == "response.incomplete" else "tool_calls" if items else "stop"


def reply_turn(answer: Answer, scenario: str, dialect: str) -> Turn:
    """What to send: the scenario's fixture on a scenario's first reply, else the script's answer."""
    if answer["fixture"] is not None:
        return fixture_turn(scenario, dialect, hold=answer["hold"])
    return answer_turn(answer, dialect)
