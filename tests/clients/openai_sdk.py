"""The official ``openai`` Python SDK: its streaming helpers, Chat Completions and Responses.

``client.chat.completions.stream`` (the helper that assembles the completion and says whether it
finished) and ``client.responses.stream``; the second turn sends the assistant message and the
tool messages back (Chat Completions), or the output items and ``function_call_output`` items
(Responses), as the SDK's own examples do — chained, only the ``function_call_output`` items and
``previous_response_id``, as OpenAI's conversation-state guide does.
"""

from __future__ import annotations

from typing import Any

import openai

from . import common
from .common import CHAT, RESPONSES, arguments, read

PAIRS = [("openai", CHAT), ("openai", RESPONSES)]
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def run(client: str, dialect: str, scenario: str, root: str, chained: bool) -> dict[str, Any]:
    where = {"base_url": common.url(client, dialect, root), "api_key": "unused", "max_retries": 0}
    sdk = openai.OpenAI(**where, timeout=common.TIMEOUT)
    if dialect == CHAT:
        return chat(sdk, common.model(client, dialect), scenario)
    return responses(sdk, common.model(client, dialect), scenario, chained)


def chat(sdk: openai.OpenAI, model: str, scenario: str) -> dict[str, Any]:
    messages: list[Any] = [
        {"role": "system", "content": common.SYSTEM},
        {"role": "user", "content": common.prompt(scenario)},
    ]

    def ask(turn: dict[str, Any]) -> Any:
        options = {"include_usage": True}
        with sdk.chat.completions.stream(
            model=model, messages=messages, tools=common.TOOLS[CHAT], stream_options=options
        ) as stream:
            for event in stream:
                if event.type == "content.delta":
                    turn["text"] += event.delta
                    turn["deltas"] += 1
                if scenario == "abort" and event.type in ("content.delta", "tool_calls.function.arguments.delta"):
                    turn["aborted"] = True
                    return None
            completion = stream.get_final_completion()
        choice, usage = completion.choices[0], completion.usage
        turn["finish"] = choice.finish_reason
        turn["calls"] = [
            {"id": c.id, "name": c.function.name, "arguments": arguments(c.function.arguments)}
            for c in choice.message.tool_calls or []
        ]
        turn["usage"] = usage and {"input": usage.prompt_tokens, "output": usage.completion_tokens}
        return choice.message

    def answer(message: Any) -> None:
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": read(call.function.arguments)})

    return common.converse(scenario, ask, answer)


def responses(sdk: openai.OpenAI, model: str, scenario: str, chained: bool) -> dict[str, Any]:
    items: list[Any] = [{"role": "user", "content": common.prompt(scenario)}]
    previous: dict[str, Any] = {}  # chained: the previous_response_id of the next request

    def ask(turn: dict[str, Any]) -> Any:
        tools, instructions = common.TOOLS[RESPONSES], common.SYSTEM  # instructions: not carried over, sent again
        with sdk.responses.stream(
            model=model, input=items, tools=tools, instructions=instructions, **previous
        ) as stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    turn["text"] += event.delta
                    turn["deltas"] += 1
                if event.type in TERMINAL:
                    turn["finish"] = event.response.status  # get_final_response raises for all but completed
                if scenario == "abort" and event.type.endswith(".delta"):
                    turn["aborted"] = True
                    return None
            response = stream.get_final_response()
        turn["finish"], usage = response.status, response.usage
        turn["calls"] = [
            {"id": item.call_id, "name": item.name, "arguments": arguments(item.arguments)}
            for item in response.output
            if item.type == "function_call"
        ]
        turn["usage"] = usage and {"input": usage.input_tokens, "output": usage.output_tokens}
        return response

    def answer(response: Any) -> None:
        if chained:  # the server keeps the conversation: send only what is new
            items.clear()
            previous["previous_response_id"] = response.id
        else:
            items.extend(item.model_dump(exclude_none=True) for item in response.output)
        calls = [item for item in response.output if item.type == "function_call"]
        items.extend({"type": "function_call_output", "call_id": c.call_id, "output": read(c.arguments)} for c in calls)

    return common.converse(scenario, ask, answer)
