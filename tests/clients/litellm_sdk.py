"""LiteLLM's SDK: ``litellm.completion`` (``openai/…`` and ``anthropic/…``) and ``litellm.responses``.

``completion`` streams OpenAI-shaped chunks whatever the provider (its Anthropic adapter turns
Messages events into them); ``stream_chunk_builder`` assembles them, as LiteLLM's docs show.
The second turn appends the assistant message and ``tool`` messages (``completion``), or the
output items and ``function_call_output`` items (``responses``).
"""

from __future__ import annotations

from typing import Any

import litellm

from .common import (
    CHAT,
    MESSAGES,
    READ_DESCRIPTION,
    READ_PARAMETERS,
    RESPONSES,
    SYSTEM,
    TIMEOUT,
    arguments,
    error_text,
    model,
    new_turn,
    prompt,
    read,
    url,
    wants_second_turn,
)

PAIRS = [("litellm", CHAT), ("litellm", MESSAGES), ("litellm", RESPONSES)]
CHAT_TOOLS = [
    {"type": "function", "function": {"name": "read", "description": READ_DESCRIPTION, "parameters": READ_PARAMETERS}}
]
RESPONSES_TOOLS = [{"type": "function", "name": "read", "description": READ_DESCRIPTION, "parameters": READ_PARAMETERS}]
# LiteLLM fakes a Responses stream (one JSON request, then made-up events) for a model its price list
# does not know — any unlisted model, a real provider's too; registering it makes it stream for real.
litellm.register_model({model("litellm", RESPONSES): {"litellm_provider": "openai", "supports_native_streaming": True}})


def run(client: str, dialect: str, scenario: str, root: str) -> dict[str, Any]:
    where = {"model": model("litellm", dialect), "api_base": url("litellm", dialect, root), "api_key": "unused"}
    return (responses if dialect == RESPONSES else completion)(where, scenario)


def completion(where: dict[str, Any], scenario: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt(scenario)},
    ]
    turns = []
    for _ in range(2):
        turn, message = new_turn(), None
        try:
            chunks = []
            stream = litellm.completion(
                **where,
                messages=messages,
                tools=CHAT_TOOLS,
                stream=True,
                stream_options={"include_usage": True},
                timeout=TIMEOUT,
                max_tokens=1024,
            )
            for chunk in stream:
                chunks.append(chunk)
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta is not None and delta.content:
                    turn["text"] += delta.content
                    turn["deltas"] += 1
                if scenario == "abort" and delta is not None and (delta.content or delta.tool_calls):
                    turn["aborted"] = True
                    break
            if not turn.get("aborted"):
                whole = litellm.stream_chunk_builder(chunks, messages=messages)
                message = whole.choices[0].message
                turn["finish"] = whole.choices[0].finish_reason
                turn["calls"] = [
                    {"id": c.id, "name": c.function.name, "arguments": arguments(c.function.arguments)}
                    for c in message.tool_calls or []
                ]
                usage = getattr(whole, "usage", None)
                turn["usage"] = usage and {"input": usage.prompt_tokens, "output": usage.completion_tokens}
        except Exception as err:
            turn["error"] = error_text(err)
        turns.append(turn)
        if message is None or not wants_second_turn(turn, scenario):
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": read(call.function.arguments)})
    return {"turns": turns}


def responses(where: dict[str, Any], scenario: str) -> dict[str, Any]:
    items: list[Any] = [{"role": "user", "content": prompt(scenario)}]
    turns = []
    for _ in range(2):
        turn, response = new_turn(), None
        try:
            stream = litellm.responses(
                **where, input=items, tools=RESPONSES_TOOLS, instructions=SYSTEM, stream=True, timeout=TIMEOUT
            )
            for event in stream:
                kind = str(getattr(event.type, "value", event.type))
                if kind.endswith("output_text.delta"):
                    turn["text"] += event.delta
                    turn["deltas"] += 1
                if kind.endswith(("response.completed", "response.incomplete", "response.failed")):
                    response = event.response
                if scenario == "abort" and kind.endswith(".delta"):
                    turn["aborted"] = True
                    break
            if response is not None:
                output = [item if isinstance(item, dict) else item.model_dump() for item in response.output]
                turn["finish"] = response.status
                turn["calls"] = [
                    {"id": item["call_id"], "name": item["name"], "arguments": arguments(item["arguments"])}
                    for item in output
                    if item.get("type") == "function_call"
                ]
                usage = response.usage
                turn["usage"] = usage and {"input": usage.input_tokens, "output": usage.output_tokens}
        except Exception as err:
            turn["error"] = error_text(err)
        turns.append(turn)
        if response is None or not wants_second_turn(turn, scenario):
            break
        items += output
        items += [
            {"type": "function_call_output", "call_id": item["call_id"], "output": read(item["arguments"])}
            for item in output
            if item.get("type") == "function_call"
        ]
    return {"turns": turns}
