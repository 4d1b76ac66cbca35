"""The official ``anthropic`` Python SDK: ``client.messages.stream`` and its final message.

The second turn sends the assistant's content blocks back and a ``tool_result`` block per
``tool_use``, as Anthropic's tool-use guide does.
"""

from __future__ import annotations

from typing import Any

import anthropic

from . import common
from .common import MESSAGES, arguments, read

PAIRS = [("anthropic", MESSAGES)]


def run(client: str, dialect: str, scenario: str, root: str, chained: bool) -> dict[str, Any]:
    where = {"base_url": common.url(client, dialect, root), "api_key": "unused", "max_retries": 0}
    sdk = anthropic.Anthropic(**where, timeout=common.TIMEOUT)
    messages: list[Any] = [{"role": "user", "content": common.prompt(scenario)}]
    request = {"model": common.model(client, dialect), "max_tokens": 1024, "system": common.SYSTEM}

    def ask(turn: dict[str, Any]) -> Any:
        with sdk.messages.stream(**request, messages=messages, tools=common.TOOLS[MESSAGES]) as stream:
            for event in stream:
                if event.type == "text":
                    turn["text"] += event.text
                    turn["deltas"] += 1
                if scenario == "abort" and event.type in ("text", "input_json"):
                    turn["aborted"] = True
                    return None
            message = stream.get_final_message()
        turn["finish"] = message.stop_reason
        uses = [block for block in message.content if block.type == "tool_use"]
        turn["calls"] = [{"id": b.id, "name": b.name, "arguments": arguments(b.input)} for b in uses]
        turn["usage"] = {"input": message.usage.input_tokens, "output": message.usage.output_tokens}
        return message

    def answer(message: Any) -> None:
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        uses = [block for block in message.content if block.type == "tool_use"]
        messages.append({"role": "user", "content": [result(b.id, read(b.input)) for b in uses]})

    return common.converse(scenario, ask, answer)


def result(tool_use_id: str, content: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
