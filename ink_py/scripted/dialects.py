"""The scripted model in the two other dialects: the same answers as Anthropic Messages and OpenAI Responses.

The script (``script.plan_answer``) reads a Chat Completions conversation. This module
puts a ``/v1/messages`` or ``/v1/responses`` request into those words (``as_chat_request``),
then writes the answer in the dialect's own events, in the order the real APIs send them
(``messages_events``, ``responses_events``) — faithful enough for the official ``anthropic``
and ``openai`` SDKs — with the same CRLF frames, awkward byte splits and pauses (``wire``). The
article's scenarios replay ``fixtures/anthropic/`` and ``fixtures/responses/`` instead.

    >>> chat = as_chat_request({"messages": [{"role": "user", "content": "读取 setup.cfg"}]}, MESSAGES)
    >>> answer = plan_answer(chat)
    >>> [name for name, _ in messages_events(answer, model="m", reply_id="msg_1", usage=USAGE)][:3]
    ['message_start', 'content_block_start', 'ping']
"""

from __future__ import annotations

import json
from typing import Any

from .controls import obey, request_problem
from .script import Answer, digest, message_text, plan_answer
from .wire import (
    MESSAGES,
    RESPONSES,
    SLOW_PIECE,
    TEXT_PIECE,
    Reply,
    argument_fragments,
    error_reply,
    estimate_usage,
    event_frame,
    json_reply,
    pieces,
    replay_fixture,
    reply_model,
    sse_reply,
)

FIXTURE_FOLDER = {MESSAGES: "anthropic", RESPONSES: "responses"}  # each dialect's copy of the article's scenarios
USAGE = {"prompt_tokens": 0, "completion_tokens": 0}

Event = tuple[str, dict[str, Any]]  # (the SSE event name, its data)


def build_dialect_reply(body: Any, dialect: str, scenario: str, created: int) -> Reply:
    """Everything the server sends for one ``POST /v1/messages`` or ``/v1/responses`` body."""
    if not isinstance(body, dict):
        return error_reply(400, "The request body must be a JSON object.", dialect)
    chat = as_chat_request(body, dialect)
    problem = request_problem(chat)
    if problem:
        return error_reply(400, problem, dialect)
    answer = obey(plan_answer(chat, scenario), chat)  # tool_choice and the output limit, as a real server
    stream = body.get("stream") is True
    if answer["fixture"] is not None:
        return replay_fixture(answer, scenario, stream, FIXTURE_FOLDER[dialect])
    model = reply_model(body)
    hex_id = digest(chat["messages"])[:24]
    usage = estimate_usage(chat["messages"], answer)
    if dialect == MESSAGES:
        events = messages_events(answer, model=model, reply_id=f"msg_{hex_id}", usage=usage)
    else:
        events = responses_events(answer, model=model, reply_id=f"resp_{hex_id}", usage=usage, created=created)
    if not stream:  # the whole reply at once: the stream's last snapshot
        whole = events[0][1]["message"] if dialect == MESSAGES else events[-1][1]["response"]
        if dialect == MESSAGES:
            whole = {**whole, **final_message(events)}
        return json_reply(200, whole)
    return sse_reply([event_frame(name, data) for name, data in events], answer["slow"])


# ── the request, in Chat Completions' words ─────────────────────────────────────────────


def as_chat_request(body: dict[str, Any], dialect: str) -> dict[str, Any]:
    """``{"messages", "tools", "tool_choice", "max_tokens"}`` as plan_answer and controls read them,
    from either dialect's request."""
    if dialect == MESSAGES:
        messages = from_messages(body.get("messages"))
    else:
        messages = from_responses_input(body.get("input"))
    system = message_text(body.get("system") if dialect == MESSAGES else body.get("instructions"))
    if system:  # Chat Completions carries it as the first message (it counts in the usage estimate)
        messages.insert(0, {"role": "system", "content": system})
    tools = body.get("tools")  # both dialects name a tool at its top level: wrap it as Chat does
    if isinstance(tools, list):
        tools = [{"type": "function", "function": t} for t in tools]
    chat = {"messages": messages, "tools": tools}
    if "tool_choice" in body:
        chat["tool_choice"] = chat_tool_choice(body["tool_choice"], dialect)
    limit = body.get("max_tokens" if dialect == MESSAGES else "max_output_tokens")
    if limit is not None:
        chat["max_tokens"] = limit
    return chat


def chat_tool_choice(choice: Any, dialect: str) -> Any:
    """A Messages or Responses ``tool_choice`` in Chat Completions' words (anything else as it came).

    >>> chat_tool_choice({"type": "any"}, MESSAGES), chat_tool_choice({"type": "function", "name": "read"}, RESPONSES)
    ('required', {'type': 'function', 'function': {'name': 'read'}})
    """
    kind = choice.get("type") if isinstance(choice, dict) else None
    if dialect == MESSAGES and kind in ("auto", "any", "none"):
        return "required" if kind == "any" else kind
    if (dialect, kind) in ((MESSAGES, "tool"), (RESPONSES, "function")):
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


def from_messages(messages: Any) -> list[dict[str, Any]]:
    """Messages' content blocks → Chat messages: tool_use → tool_calls, tool_result → role "tool"."""
    chat: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
        if message.get("role") == "assistant":
            calls = [
                {
                    "id": str(b.get("id")),
                    "type": "function",
                    "function": {
                        "name": str(b.get("name")),
                        "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False),
                    },
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            chat.append({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})})
            continue
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for result in results:
            chat.append(
                {
                    "role": "tool",
                    "tool_call_id": str(result.get("tool_use_id")),
                    "content": message_text(result.get("content")),
                }
            )
        if text or not results:
            chat.append({"role": "user", "content": text})
    return chat


def from_responses_input(items: Any) -> list[dict[str, Any]]:
    """Responses ``input`` items → Chat messages: function_call → tool_calls, its output → role "tool"."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    chat: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            chat.append({"role": str(item.get("role")), "content": message_text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": str(item.get("call_id")),
                "type": "function",
                "function": {"name": str(item.get("name")), "arguments": str(item.get("arguments") or "")},
            }
            if not chat or chat[-1]["role"] != "assistant":
                chat.append({"role": "assistant", "content": ""})
            chat[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            chat.append(
                {"role": "tool", "tool_call_id": str(item.get("call_id")), "content": message_text(item.get("output"))}
            )
    return chat


# ── the answer, as Messages events ──────────────────────────────────────────────────────


def messages_events(answer: Answer, *, model: str, reply_id: str, usage: dict[str, int]) -> list[Event]:
    """message_start, a text block, a tool_use block (first partial_json ""), message_delta, message_stop."""
    call = answer["tool_call"]
    message: dict[str, Any] = {
        "id": reply_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    events: list[Event] = [("message_start", {"type": "message_start", "message": message})]

    def block(index: int, content_block: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": content_block})
        )
        if index == 0:
            events.append(("ping", {"type": "ping"}))  # Anthropic sends one early
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))

    piece = SLOW_PIECE if answer["slow"] else TEXT_PIECE
    index = 0
    if answer["text"]:
        block(
            0, {"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in pieces(answer["text"], piece)]
        )
        index = 1
    if call is not None:
        fragments = ["", *argument_fragments(call["arguments"])]  # Anthropic opens with an empty one
        tool_id = "toolu_" + call["id"].removeprefix("call_")
        block(
            index,
            {"type": "tool_use", "id": tool_id, "name": call["name"], "input": {}},
            [{"type": "input_json_delta", "partial_json": f} for f in fragments],
        )
    stop_reason = "max_tokens" if answer["cut"] else "tool_use" if call is not None else "end_turn"
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["completion_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def final_message(events: list[Event]) -> dict[str, Any]:
    """The content, stop reason and usage a non-streaming Messages reply carries."""
    content: list[dict[str, Any]] = []
    for name, data in events:
        if name == "content_block_start":
            content.append(dict(data["content_block"]))
        elif name == "content_block_delta" and data["delta"]["type"] == "text_delta":
            content[-1]["text"] += data["delta"]["text"]
        elif name == "content_block_delta":
            content[-1]["partial"] = content[-1].get("partial", "") + data["delta"]["partial_json"]
    for block in content:
        if "partial" in block:
            try:
                block["input"] = json.loads(block.pop("partial"))
            except ValueError:
                block["input"] = {}  # arguments cut at the output limit: no input to show
    delta = next(data for name, data in events if name == "message_delta")
    usage = {**events[0][1]["message"]["usage"], **delta["usage"]}
    return {"content": content, "stop_reason": delta["delta"]["stop_reason"], "usage": usage}


# ── the answer, as Responses events ─────────────────────────────────────────────────────


def responses_events(answer: Answer, *, model: str, reply_id: str, usage: dict[str, int], created: int) -> list[Event]:
    """response.created … output items (a message, a function_call) … response.completed
    (``response.incomplete``, reason max_output_tokens, when cut at the request's limit)."""
    call = answer["tool_call"]
    events: list[Event] = []
    done_items: list[dict[str, Any]] = []

    def response(status: str, output: list[dict[str, Any]], report: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "id": reply_id,
            "object": "response",
            "created_at": created,
            "status": status,
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "instructions": None,
            "metadata": {},
            "text": {"format": {"type": "text"}},
            "usage": report,
        }

    def add(name: str, **data: Any) -> None:
        events.append((name, {"type": name, "sequence_number": len(events), **data}))

    add("response.created", response=response("in_progress", [], None))
    add("response.in_progress", response=response("in_progress", [], None))
    piece = SLOW_PIECE if answer["slow"] else TEXT_PIECE
    if answer["text"]:
        index, item_id = len(done_items), "msg_" + reply_id.removeprefix("resp_")
        item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        part = {"type": "output_text", "annotations": [], "text": ""}
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        add("response.output_item.added", output_index=index, item=item)
        add("response.content_part.added", **where, part=part)
        for text in pieces(answer["text"], piece):
            add("response.output_text.delta", **where, delta=text, logprobs=[])
        part = {**part, "text": answer["text"]}
        add("response.output_text.done", **where, text=answer["text"], logprobs=[])
        add("response.content_part.done", **where, part=part)
        done_items.append({**item, "status": "completed", "content": [part]})
        add("response.output_item.done", output_index=index, item=done_items[-1])
    if call is not None:
        index, item_id = len(done_items), "fc_" + call["id"].removeprefix("call_")
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call["id"],
            "name": call["name"],
        }
        add("response.output_item.added", output_index=index, item=item)
        for fragment in argument_fragments(call["arguments"]):
            add("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=fragment)
        add("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=call["arguments"])
        done_items.append({**item, "status": "completed", "arguments": call["arguments"]})
        add("response.output_item.done", output_index=index, item=done_items[-1])
    report = {
        "input_tokens": usage["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
    }
    if answer["cut"] and done_items:
        done_items[-1]["status"] = "incomplete"  # the item the limit cut
    status = "incomplete" if answer["cut"] else "completed"
    add(f"response.{status}", response=response(status, done_items, report))
    return events
