"""The official ``openai`` Python SDK: its streaming helpers, Chat Completions and Responses.

``client.chat.completions.stream`` (the helper that assembles the completion and says whether it
finished) and ``client.responses.stream``; the second turn sends the assistant message and the
tool messages back (Chat Completions), or the output items and ``function_call_output`` items
(Responses), as the SDK's own examples do.
"""

from __future__ import annotations

from typing import Any

import openai

from .common import (
    CHAT,
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

PAIRS = [("openai", CHAT), ("openai", RESPONSES)]
CHAT_TOOLS = [
    {"type": "function", "function": {"name": "read", "description": READ_DESCRIPTION, "parameters": READ_PARAMETERS}}
]
RESPONSES_TOOLS = [{"type": "function", "name": "read", "description": READ_DESCRIPTION, "parameters": READ_PARAMETERS}]


def run(client: str, dialect: str, scenario: str, root: str) -> dict[str, Any]:
    client = openai.OpenAI(base_url=url("openai", dialect, root), api_key="unused", max_retries=0, timeout=TIMEOUT)
    return (chat if dialect == CHAT else responses)(client, scenario)


def chat(client: openai.OpenAI, scenario: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt(scenario)},
    ]
    turns = []
    for _ in range(2):
        turn, message = new_turn(), None
        try:
            with client.chat.completions.stream(
                model=model("openai", CHAT), messages=messages, tools=CHAT_TOOLS, stream_options={"include_usage": True}
            ) as stream:
                for event in stream:
                    if event.type == "content.delta":
                        turn["text"] += event.delta
                        turn["deltas"] += 1
                    if scenario == "abort" and event.type in ("content.delta", "tool_calls.function.arguments.delta"):
                        turn["aborted"] = True
                        break
                if not turn.get("aborted"):
                    completion = stream.get_final_completion()
                    choice = completion.choices[0]
                    message = choice.message
                    turn["finish"] = choice.finish_reason
                    turn["calls"] = [
                        {"id": c.id, "name": c.function.name, "arguments": arguments(c.function.arguments)}
                        for c in message.tool_calls or []
                    ]
                    usage = completion.usage
                    turn["usage"] = usage and {"input": usage.prompt_tokens, "output": usage.completion_tokens}
        except Exception as err:
            turn["error"] = error_text(err)
        turns.append(turn)
        if message is None or not wants_second_turn(turn, scenario):
            break
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        for call in message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": read(call.function.arguments)})
    return {"turns": turns}


def responses(client: openai.OpenAI, scenario: str) -> dict[str, Any]:
    items: list[Any] = [{"role": "user", "content": prompt(scenario)}]
    turns = []
    for _ in range(2):
        turn, response = new_turn(), None
        try:
            with client.responses.stream(
                model=model("openai", RESPONSES), input=items, tools=RESPONSES_TOOLS, instructions=SYSTEM
            ) as stream:
                for event in stream:
                    if event.type == "response.output_text.delta":
                        turn["text"] += event.delta
                        turn["deltas"] += 1
                    if event.type in ("response.completed", "response.incomplete", "response.failed"):
                        turn["finish"] = event.response.status  # get_final_response raises for all but completed
                    if scenario == "abort" and event.type.endswith(".delta"):
                        turn["aborted"] = True
                        break
                if not turn.get("aborted"):
                    response = stream.get_final_response()
                    turn["finish"] = response.status
                    turn["calls"] = [
                        {"id": item.call_id, "name": item.name, "arguments": arguments(item.arguments)}
                        for item in response.output
                        if item.type == "function_call"
                    ]
                    usage = response.usage
                    turn["usage"] = usage and {"input": usage.input_tokens, "output": usage.output_tokens}
        except Exception as err:
            turn["error"] = error_text(err)
        turns.append(turn)
        if response is None or not wants_second_turn(turn, scenario):
            break
        items += [item.model_dump(exclude_none=True) for item in response.output]
        items += [
            {"type": "function_call_output", "call_id": item.call_id, "output": read(item.arguments)}
            for item in response.output
            if item.type == "function_call"
        ]
    return {"turns": turns}
