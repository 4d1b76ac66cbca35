"""The scripted model in the two other dialects: the same answers as Anthropic Messages and OpenAI Responses.

The script (``script.plan_answer``) reads a Chat Completions conversation. This module
puts a ``/v1/messages`` or ``/v1/responses`` request into those words (``as_chat_request``),
then has the dialect's encoder write the reply (``turn.reply_turn``: the script's answer, or
the scenario's fixture decoded) with every event and field its provider sends, one content
block / output item after another (``messages_wire``, ``responses_wire``), in the same writes
and pauses as every reply (``wire``). Input items the server cannot have kept — an
``item_reference``, a ``previous_response_id`` — are answered as OpenAI answers them when it
keeps nothing (``unkept_reference``), never dropped in silence.

    >>> chat = as_chat_request({"messages": [{"role": "user", "content": "读取 setup.cfg"}]}, MESSAGES)
    >>> chat["messages"], chat["tools"]
    ([{'role': 'user', 'content': '读取 setup.cfg'}], None)
"""

from __future__ import annotations

import json
from typing import Any

from .controls import obey, request_problem
from .messages_wire import final_message, messages_events
from .responses_wire import responses_events
from .script import digest, message_text, plan_answer
from .turn import reply_turn, usage
from .wire import MESSAGES, RESPONSES, Reply, error_reply, event_frame, json_reply, padding, reply_model, sse_reply

NOT_STORED = (
    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. "
    "Try again with `store` set to true, or remove this item from your input."
)  # OpenAI's words (404) for a reference to an item it did not keep
NOT_FOUND = "Item with id '{id}' not found."  # … and for one it never had: the built-in model keeps none


def build_dialect_reply(body: Any, dialect: str, scenario: str, created: int) -> Reply:
    """Everything the server sends for one ``POST /v1/messages`` or ``/v1/responses`` body."""
    if not isinstance(body, dict):
        return error_reply(400, "The request body must be a JSON object.", dialect)
    if dialect == RESPONSES:
        refused = unkept_reference(body)
        if refused is not None:
            return refused
    chat = as_chat_request(body, dialect)
    problem = request_problem(chat)
    if problem:
        return error_reply(400, problem, dialect)
    answer = obey(plan_answer(chat, scenario), chat)  # tool_choice and the output limit, as a real server
    turn = reply_turn(answer, scenario, dialect)
    stream = body.get("stream") is True
    if not stream and turn["ending"] is None:
        return error_reply(400, f'The scenario {scenario!r} is a stream that breaks off: send "stream": true.', dialect)
    hex_id = digest(chat["messages"])[:24]
    counts = usage(chat["messages"], turn)
    if dialect == MESSAGES:
        events = messages_events(turn, model=reply_model(body), reply_id=f"msg_{hex_id}", counts=counts)
    else:
        events = responses_events(turn, body, reply_id=f"resp_{hex_id}", created=created, counts=counts)
    if not stream:  # the whole reply at once: the stream's last snapshot
        return json_reply(200, final_message(events) if dialect == MESSAGES else events[-1][1]["response"])
    options = body.get("stream_options")
    if dialect == RESPONSES and not (isinstance(options, dict) and options.get("include_obfuscation") is False):
        events = [(name, _padded(data, hex_id)) for name, data in events]
    frames = [event_frame(name, data) for name, data in events]
    return sse_reply(frames, slow=turn["slow"], hold=turn["hold"], scenario=answer["fixture"] is not None)


def _padded(data: dict[str, Any], seed: str) -> dict[str, Any]:
    """OpenAI pads each delta event against length side channels (``obfuscation``)."""
    if not data["type"].endswith(".delta"):
        return data
    return {**data, "obfuscation": padding(seed, data["sequence_number"])}


def unkept_reference(body: dict[str, Any]) -> Reply | None:
    """OpenAI's error for input that points at state the server never kept, or None.

    >>> unkept_reference({"store": False, "input": [{"type": "item_reference", "id": "fc_1"}]})["status"]
    404
    """
    previous = body.get("previous_response_id")
    if previous is not None:
        message = f"Previous response with id '{str(previous)[:200]}' not found."  # a bounded echo
        return error_reply(400, message, RESPONSES, param="previous_response_id", code="previous_response_not_found")
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") == "item_reference":
            words = NOT_STORED if body.get("store") is False else NOT_FOUND
            return error_reply(404, words.format(id=str(item.get("id"))[:200]), RESPONSES, param="input")
    return None


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
