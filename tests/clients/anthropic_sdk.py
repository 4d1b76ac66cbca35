"""The official ``anthropic`` Python SDK: ``client.messages.stream`` and its final message.

The second turn sends the assistant's content blocks back and a ``tool_result`` block per
``tool_use``, as Anthropic's tool-use guide does.
"""

from __future__ import annotations

from typing import Any

import anthropic

from .common import (
    MESSAGES,
    READ_DESCRIPTION,
    READ_PARAMETERS,
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

PAIRS = [("anthropic", MESSAGES)]
TOOLS = [{"name": "read", "description": READ_DESCRIPTION, "input_schema": READ_PARAMETERS}]


def run(client: str, dialect: str, scenario: str, root: str) -> dict[str, Any]:
    client = anthropic.Anthropic(
        base_url=url("anthropic", dialect, root), api_key="unused", max_retries=0, timeout=TIMEOUT
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt(scenario)}]
    turns = []
    for _ in range(2):
        turn, message = new_turn(), None
        try:
            with client.messages.stream(
                model=model("anthropic", MESSAGES), max_tokens=1024, system=SYSTEM, messages=messages, tools=TOOLS
            ) as stream:
                for event in stream:
                    if event.type == "text":
                        turn["text"] += event.text
                        turn["deltas"] += 1
                    if scenario == "abort" and event.type in ("text", "input_json"):
                        turn["aborted"] = True
                        break
                if not turn.get("aborted"):
                    message = stream.get_final_message()
                    turn["finish"] = message.stop_reason
                    turn["calls"] = [
                        {"id": b.id, "name": b.name, "arguments": arguments(b.input)}
                        for b in message.content
                        if b.type == "tool_use"
                    ]
                    turn["usage"] = {"input": message.usage.input_tokens, "output": message.usage.output_tokens}
        except Exception as err:
            turn["error"] = error_text(err)
        turns.append(turn)
        if message is None or not wants_second_turn(turn, scenario):
            break
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": read(b.input)}
            for b in message.content
            if b.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})
    return {"turns": turns}
