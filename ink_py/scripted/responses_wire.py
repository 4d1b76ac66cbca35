"""A reply as OpenAI Responses sends it: named SSE events, one output item after another.

``dialects.build_dialect_reply`` hands this module a ``Turn`` (turn.py) and the request, and
gets back the events the Responses API streams: ``response.created`` and
``response.in_progress`` (the whole response object: ``created_at``, the model asked for, the
request's ``tools``, ``tool_choice`` and settings echoed), then each output item whole before
the next — a message (``output_item.added``, ``content_part.added``, ``output_text.delta`` in
five-character pieces, ``output_text.done``, ``content_part.done``, ``output_item.done``), a
function call (``output_item.added``, ``function_call_arguments.delta`` …, ``.done``,
``output_item.done``) — and the terminal event: ``response.completed`` with ``output`` and
``usage``, or ``response.incomplete`` (reason ``max_output_tokens``) when cut at the limit. Items
never interleave. A reply that breaks off ends after its last delta, with no terminal event::

    >>> from ink_py.scripted.turn import RESPONSES, fixture_turn
    >>> events = responses_events(fixture_turn("readme", RESPONSES), {}, reply_id="resp_1", created=0, counts=COUNTS)
    >>> events[-1][0], [item["type"] for item in events[-1][1]["response"]["output"]]
    ('response.completed', ['message', 'function_call'])
"""

from __future__ import annotations

from typing import Any

from .turn import Event, Turn, Usage, text_deltas
from .wire import reply_model

COUNTS: Usage = {"input": 0, "output": 0}
ECHOED: dict[str, Any] = {  # request fields the response object repeats, with what it says when the request has none
    "background": False,
    "instructions": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "prompt_cache_key": None,
    "reasoning": {"effort": None, "summary": None},
    "safety_identifier": None,
    "store": True,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "tool_choice": "auto",
    "tools": [],
    "top_logprobs": 0,
    "top_p": 1.0,
    "truncation": "disabled",
    "user": None,
    "metadata": {},
}


def response_object(request: dict[str, Any], *, reply_id: str, created: int, status: str) -> dict[str, Any]:
    """The response as ``response.created`` shows it; the terminal event adds ``output`` and ``usage``."""
    echoed = {field: request[field] if request.get(field) is not None else default for field, default in ECHOED.items()}
    return {
        "id": reply_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "completed_at": None,
        "error": None,
        "incomplete_details": None,
        "model": reply_model(request),
        "output": [],
        "service_tier": "default",
        "usage": None,
        **echoed,
    }


def usage_report(counts: Usage) -> dict[str, Any]:
    return {
        "input_tokens": counts["input"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": counts["output"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts["input"] + counts["output"],
    }


def responses_events(turn: Turn, request: dict[str, Any], *, reply_id: str, created: int, counts: Usage) -> list[Event]:
    """response.created, in_progress, the message item, each function_call item in turn, the terminal event."""
    events: list[Event] = []
    output: list[dict[str, Any]] = []  # the items done so far: response.completed's output
    hex_id = reply_id.removeprefix("resp_")

    def add(name: str, **data: Any) -> None:
        events.append((name, {"type": name, "sequence_number": len(events), **data}))

    response = response_object(request, reply_id=reply_id, created=created, status="in_progress")
    add("response.created", response=response)
    add("response.in_progress", response=response)
    breaks_off = turn["ending"] is None
    if turn["text"]:
        index, item_id = len(output), "msg_" + hex_id
        item = {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        add("response.output_item.added", output_index=index, item=item)
        add("response.content_part.added", **where, part=part)
        for text in text_deltas(turn):
            add("response.output_text.delta", **where, delta=text, logprobs=[])
        if breaks_off and not turn["calls"]:
            return events
        part = {**part, "text": turn["text"]}
        add("response.output_text.done", **where, text=turn["text"], logprobs=[])
        add("response.content_part.done", **where, part=part)
        output.append({**item, "status": _status(turn, last=not turn["calls"]), "content": [part]})
        add("response.output_item.done", output_index=index, item=output[-1])
    for number, call in enumerate(turn["calls"]):
        index, item_id = len(output), f"fc_{hex_id}{number}"
        item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": ""}
        item |= {"call_id": call["id"], "name": call["name"]}
        add("response.output_item.added", output_index=index, item=item)
        for fragment in call["fragments"]:
            add("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=fragment)
        if breaks_off and number == len(turn["calls"]) - 1:
            return events
        arguments = "".join(call["fragments"])
        add("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=arguments)
        status = _status(turn, last=number == len(turn["calls"]) - 1)
        output.append({**item, "status": status, "arguments": arguments})
        add("response.output_item.done", output_index=index, item=output[-1])
    if breaks_off:
        return events
    final = "incomplete" if turn["ending"] == "length" else "completed"
    response = {**response, "status": final, "completed_at": created, "output": output, "usage": usage_report(counts)}
    if final == "incomplete":
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    add(f"response.{final}", response=response)
    return events


def _status(turn: Turn, last: bool) -> str:
    """An item's status when done: the item the output limit cut is ``incomplete``."""
    return "incomplete" if last and turn["ending"] == "length" else "completed"
