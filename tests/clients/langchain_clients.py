"""LangChain: ``ChatOpenAI`` (Chat Completions, and ``use_responses_api=True``) and ``ChatAnthropic``.

The model with the read tool bound streams ``AIMessageChunk``s; their sum is the message (its
``tool_calls``, ``invalid_tool_calls``, ``usage_metadata`` and ``response_metadata``). The
second turn appends that message and a ``ToolMessage`` per call, as LangChain's tool guide does.
"""

from __future__ import annotations

from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

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

PAIRS = [("langchain-openai", CHAT), ("langchain-openai", RESPONSES), ("langchain-anthropic", MESSAGES)]
TOOL = {
    "type": "function",
    "function": {"name": "read", "description": READ_DESCRIPTION, "parameters": READ_PARAMETERS},
}


def chat_model(client: str, dialect: str, root: str) -> Any:
    where = {"model": model(client, dialect), "base_url": url(client, dialect, root), "api_key": "unused"}
    if dialect == MESSAGES:
        return ChatAnthropic(**where, max_retries=0, default_request_timeout=TIMEOUT, max_tokens=1024)
    return ChatOpenAI(
        **where, max_retries=0, timeout=TIMEOUT, stream_usage=True, use_responses_api=dialect == RESPONSES
    )


def finish(dialect: str, metadata: dict[str, Any]) -> Any:
    """The finish reason where each LangChain integration puts it."""
    return metadata.get({CHAT: "finish_reason", RESPONSES: "status", MESSAGES: "stop_reason"}[dialect])


def run(client: str, dialect: str, scenario: str, root: str) -> dict[str, Any]:
    bound = chat_model(client, dialect, root).bind_tools([TOOL])
    messages: list[Any] = [SystemMessage(SYSTEM), HumanMessage(prompt(scenario))]
    turns = []
    for _ in range(2):
        turn, whole = new_turn(), None
        try:
            for chunk in bound.stream(messages):
                whole = chunk if whole is None else whole + chunk
                if chunk.text:
                    turn["text"] += chunk.text
                    turn["deltas"] += 1
                if scenario == "abort" and (chunk.text or chunk.tool_call_chunks):
                    turn["aborted"] = True
                    break
        except Exception as err:
            turn["error"] = error_text(err)
        if isinstance(whole, AIMessageChunk) and not turn.get("aborted"):
            turn["calls"] = [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in whole.tool_calls]
            turn["calls"] += [
                {"id": c["id"], "name": c["name"], "arguments": arguments(c["args"])} for c in whole.invalid_tool_calls
            ]
            turn["finish"] = finish(dialect, whole.response_metadata)
            usage = whole.usage_metadata
            turn["usage"] = usage and {"input": usage["input_tokens"], "output": usage["output_tokens"]}
        turns.append(turn)
        if whole is None or not wants_second_turn(turn, scenario):
            break
        messages.append(whole)
        for call in [*whole.tool_calls, *whole.invalid_tool_calls]:
            messages.append(ToolMessage(read(call["args"]), tool_call_id=call["id"]))
    return {"turns": turns}
