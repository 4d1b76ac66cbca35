"""LiteLLM's SDK: ``litellm.completion`` (``openai/…`` and ``anthropic/…``) and ``litellm.responses``.

``completion`` streams OpenAI-shaped chunks whatever the provider (its Anthropic adapter turns
Messages events into them); ``stream_chunk_builder`` assembles them, as LiteLLM's docs show.
The second turn appends the assistant message and ``tool`` messages (``completion``), or the
output items and ``function_call_output`` items (``responses``; chained, only the latter, with
``previous_response_id``).
"""

from __future__ import annotations

from typing import Any

import litellm

from . import common
from .common import CHAT, MESSAGES, RESPONSES, arguments, read

PAIRS = [("litellm", CHAT), ("litellm", MESSAGES), ("litellm", RESPONSES)]
litellm.suppress_debug_info = True  # no "Provider List" banners on stdout
# LiteLLM fakes a Responses stream (one JSON request, then made-up events) for a model its price list
# does not know — any unlisted model, a real provider's too; registering it makes it stream for real.
streaming = {"litellm_provider": "openai", "supports_native_streaming": True}
litellm.register_model({common.model("litellm", RESPONSES): streaming})


def run(client: str, dialect: str, scenario: str, root: str, chained: bool) -> dict[str, Any]:
    where = {"model": common.model(client, dialect), "api_base": common.url(client, dialect, root), "api_key": "unused"}
    return responses(where, scenario, chained) if dialect == RESPONSES else completion(where, scenario)


def completion(where: dict[str, Any], scenario: str) -> dict[str, Any]:
    messages: list[Any] = [
        {"role": "system", "content": common.SYSTEM},
        {"role": "user", "content": common.prompt(scenario)},
    ]
    options = {"tools": common.TOOLS[CHAT], "stream_options": {"include_usage": True}, "max_tokens": 1024}

    def ask(turn: dict[str, Any]) -> Any:
        chunks = []
        for chunk in litellm.completion(**where, messages=messages, stream=True, timeout=common.TIMEOUT, **options):
            chunks.append(chunk)
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is not None and delta.content:
                turn["text"] += delta.content
                turn["deltas"] += 1
            if scenario == "abort" and delta is not None and (delta.content or delta.tool_calls):
                turn["aborted"] = True
                return None
        whole = litellm.stream_chunk_builder(chunks, messages=messages)
        message, usage = whole.choices[0].message, getattr(whole, "usage", None)
        turn["finish"] = whole.choices[0].finish_reason
        turn["calls"] = [
            {"id": c.id, "name": c.function.name, "arguments": arguments(c.function.arguments)}
            for c in message.tool_calls or []
        ]
        turn["usage"] = usage and {"input": usage.prompt_tokens, "output": usage.completion_tokens}
        return message

    def answer(message: Any) -> None:
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": read(call.function.arguments)})

    return common.converse(scenario, ask, answer)


def responses(where: dict[str, Any], scenario: str, chained: bool) -> dict[str, Any]:
    items: list[Any] = [{"role": "user", "content": common.prompt(scenario)}]
    options = {"tools": common.TOOLS[RESPONSES], "instructions": common.SYSTEM, "timeout": common.TIMEOUT}

    def ask(turn: dict[str, Any]) -> Any:
        response = None
        for event in litellm.responses(**where, input=items, stream=True, **options):
            kind = str(getattr(event.type, "value", event.type))
            if kind == "response.output_text.delta":
                turn["text"] += event.delta
                turn["deltas"] += 1
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                response = event.response
            if scenario == "abort" and kind.endswith(".delta"):
                turn["aborted"] = True
                return None
        if response is None:  # the stream ended without a terminal event, and LiteLLM said nothing
            return None
        output = [item if isinstance(item, dict) else item.model_dump() for item in response.output]
        if chained:  # the next request continues this response on the server
            options["previous_response_id"] = response.id
        turn["finish"], usage = response.status, response.usage
        turn["calls"] = [
            {"id": item["call_id"], "name": item["name"], "arguments": arguments(item["arguments"])}
            for item in output
            if item.get("type") == "function_call"
        ]
        turn["usage"] = usage and {"input": usage.input_tokens, "output": usage.output_tokens}
        return output

    def answer(output: list[dict[str, Any]]) -> None:
        if chained:
            items.clear()  # the server keeps the conversation: send only what is new
        else:
            items.extend(output)
        calls = [item for item in output if item.get("type") == "function_call"]
        items.extend(
            {"type": "function_call_output", "call_id": c["call_id"], "output": read(c["arguments"])} for c in calls
        )

    return common.converse(scenario, ask, answer)
