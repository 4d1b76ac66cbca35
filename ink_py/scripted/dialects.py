"""The scripted model in the two other dialects: the same answers as Anthropic Messages and OpenAI Responses.

The script (``script.plan_answer``) reads a Chat Completions conversation. This module
puts a ``/v1/messages`` or ``/v1/responses`` request into those words (``as_chat_request``),
then has the dialect's encoder write the reply (``turn.reply_turn``: the script's answer, or
the scenario's fixture decoded) with every event and field its provider sends, one content
block / output item after another (``messages_wire``, ``responses_wire``), in the same writes
and pauses as every reply (``wire``). A Responses request's ``previous_response_id`` and
``item_reference``s are filled in from the responses the server keeps (``response_store``), or
answered as OpenAI answers a reference to what it does not have — never dropped in silence.

    >>> chat = as_chat_request({"messages": [{"role": "user", "content": "读取 setup.cfg"}]}, MESSAGES)
    >>> chat["messages"], chat["tools"]
    ([{'role': 'user', 'content': '读取 setup.cfg'}], None)
"""

from __future__ import annotations

import json
from typing import Any

from .controls import obey, request_problem
from .messages_wire import final_message, messages_events
from .response_store import ResponseStore, fresh_number, keep, recall
from .responses_wire import responses_events
from .script import digest, message_text, plan_answer
from .turn import Event, reply_turn, usage
from .wire import MESSAGES, RESPONSES, Reply, error_reply, event_frame, json_reply, padding, reply_model, sse_reply


def build_dialect_reply(
    body: Any, dialect: str, scenario: str, created: int, kept: ResponseStore | None = None
) -> Reply:
    """Everything the server sends for one ``POST /v1/messages`` or ``/v1/responses`` body;
    ``kept``: the Responses the server keeps (None: it keeps none, and ids depend on the request alone)."""
    if not isinstance(body, dict):
        return error_reply(400, "The request body must be a JSON object.", dialect)
    request, context = body, list[dict[str, Any]]()
    if dialect == RESPONSES:
        recalled = recall(kept, body)  # the previous response's context and each referenced item, filled in
        if not isinstance(recalled, list):
            return recalled
        request, context = {**body, "input": recalled}, recalled
    chat = as_chat_request(request, dialect)
    problem = request_problem(chat)
    if problem:
        return error_reply(400, problem, dialect)
    answer = obey(plan_answer(chat, scenario), chat)  # tool_choice and the output limit, as a real server
    turn = reply_turn(answer, scenario, dialect)
    stream = body.get("stream") is True
    if not stream and turn["ending"] is None:
        return error_reply(400, f'The scenario {scenario!r} is a stream that breaks off: send "stream": true.', dialect)
    hex_id = digest(chat["messages"] if kept is None else [chat["messages"], fresh_number(kept)])[:24]
    counts = usage(chat["messages"], turn)  # by reference too: the whole context counts, as OpenAI bills it
    if dialect == MESSAGES:
        events = messages_events(turn, model=reply_model(body), reply_id=f"msg_{hex_id}", counts=counts)
    else:
        events = responses_events(turn, body, reply_id=f"resp_{hex_id}", created=created, counts=counts)
        if kept is not None and body.get("store") is not False:
            keep_finished(kept, context, events)
    if not stream:  # the whole reply at once: the stream's last snapshot
        return json_reply(200, final_message(events) if dialect == MESSAGES else events[-1][1]["response"])
    options = body.get("stream_options")
    if dialect == RESPONSES and not (isinstance(options, dict) and options.get("include_obfuscation") is False):
        events = [(name, _padded(data, hex_id)) for name, data in events]
    frames = [event_frame(name, data) for name, data in events]
    return sse_reply(frames, slow=turn["slow"], hold=turn["hold"], scenario=answer["fixture"] is not None)


def keep_finished(kept: ResponseStore, context: list[dict[str, Any]], events: list[Event]) -> None:
    """Keep a Responses reply that ends (completed or incomplete) with its context, before it is
    sent: the client's next turn may name it as soon as it has read the end. One that breaks off
    never finished, and is not kept."""
    name, data = events[-1]
    if name in ("response.completed", "response.incomplete"):
        keep(kept, data["response"]["id"], context, data["response"]["output"])


def _padded(data: dict[str, Any], seed: str) -> dict[str, Any]:
    """OpenAI pads each delta event against length side channels (``obfuscation``)."""
    if not data["type"].endswith(".delta"):
        return data
    return {**data, "obfuscation": padding(seed, data["sequence_number"])}


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
