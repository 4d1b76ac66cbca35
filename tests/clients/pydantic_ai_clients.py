"""pydantic-ai: an ``Agent`` with a ``read`` tool on ``OpenAIChatModel``, ``OpenAIResponsesModel``
and ``AnthropicModel``.

The agent runs its own loop: it streams a model request, runs the tool on the calls it got and
sends the results back (pydantic-ai's way of a second turn). ``agent.iter`` walks that loop one
node at a time; each model request node is streamed and reported as a turn (the text deltas as
they came, then the ``ModelResponse`` it produced). The loop is stopped after two requests.
Chained, the Responses model continues by ``openai_previous_response_id="auto"``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta, ToolCallPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel, OpenAIResponsesModelSettings
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from .common import (
    CHAT,
    MESSAGES,
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
)

PAIRS = [("pydantic-ai", CHAT), ("pydantic-ai", RESPONSES), ("pydantic-ai", MESSAGES)]


def agent_model(dialect: str, client: Any) -> Any:
    name = model("pydantic-ai", dialect)
    if dialect == MESSAGES:
        return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=client))
    provider = OpenAIProvider(openai_client=client)
    return (OpenAIChatModel if dialect == CHAT else OpenAIResponsesModel)(name, provider=provider)


def run(client: str, dialect: str, scenario: str, root: str, chained: bool) -> dict[str, Any]:
    return asyncio.run(asyncio.wait_for(drive(dialect, scenario, root, chained), 4 * TIMEOUT))


async def drive(dialect: str, scenario: str, root: str, chained: bool) -> dict[str, Any]:
    where = {"base_url": url("pydantic-ai", dialect, root), "api_key": "unused", "max_retries": 0, "timeout": TIMEOUT}
    settings = ModelSettings(max_tokens=1024)
    if chained:
        settings = OpenAIResponsesModelSettings(max_tokens=1024, openai_previous_response_id="auto")
    async with (AsyncAnthropic if dialect == MESSAGES else AsyncOpenAI)(**where) as client:
        return await run_agent(agent_model(dialect, client), scenario, settings)


async def run_agent(agent_model: Any, scenario: str, settings: ModelSettings) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    agent = Agent(agent_model, instructions=SYSTEM, model_settings=settings)

    @agent.tool_plain(name="read")
    def read_file(path: str) -> str:
        """Read a text file in the workspace."""
        turns[-1]["ran"].append({"path": path})  # the agent runs the calls of the turn just streamed
        return read({"path": path})

    try:
        async with agent.iter(prompt(scenario)) as agent_run:
            async for node in agent_run:
                if not Agent.is_model_request_node(node):
                    continue
                if len(turns) == 2:
                    break  # two turns: the answer to the tool results is the last one read
                turn = {**new_turn(), "ran": []}
                turns.append(turn)
                try:
                    async with node.stream(agent_run.ctx) as events:
                        async for event in events:
                            piece = text_piece(event)
                            if piece:
                                turn["text"] += piece
                                turn["deltas"] += 1
                            if scenario == "abort" and isinstance(event, PartStartEvent | PartDeltaEvent):
                                turn["aborted"] = True
                                break
                    if turn.get("aborted"):
                        break
                    report(turn, events.response)
                except Exception as err:
                    turn["error"] = error_text(err)
                    break
    except Exception as err:  # raised by the agent after the model request (e.g. a tool's arguments)
        if turns and turns[-1]["error"] is None:
            turns[-1]["error"] = error_text(err)
        else:
            turns.append({**new_turn(), "ran": [], "error": error_text(err)})
    return {"turns": turns}


def text_piece(event: Any) -> str:
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        return event.part.content
    if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        return event.delta.content_delta
    return ""


def report(turn: dict[str, Any], response: ModelResponse) -> None:
    turn["finish"] = response.finish_reason
    turn["calls"] = [
        {"id": part.tool_call_id, "name": part.tool_name, "arguments": arguments(part.args)}
        for part in response.parts
        if isinstance(part, ToolCallPart)
    ]
    turn["usage"] = {"input": response.usage.input_tokens, "output": response.usage.output_tokens}
