"""LangChain: ``ChatOpenAI`` (Chat Completions, and ``use_responses_api=True``) and ``ChatAnthropic``.

The model with the read tool bound streams ``AIMessageChunk``s; their sum is the message (its
``tool_calls``, ``invalid_tool_calls``, ``usage_metadata`` and ``response_metadata``). The
second turn appends that message and a ``ToolMessage`` per call, as LangChain's tool guide does;
chained, ``ChatOpenAI(use_previous_response_id=True)`` sends only what follows the last response.
"""

from __future__ import annotations

from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from . import common
from .common import CHAT, MESSAGES, RESPONSES, arguments, read

PAIRS = [("langchain-openai", CHAT), ("langchain-openai", RESPONSES), ("langchain-anthropic", MESSAGES)]
FINISH = {CHAT: "finish_reason", RESPONSES: "status", MESSAGES: "stop_reason"}  # where each puts it


def chat_model(client: str, dialect: str, root: str, chained: bool) -> Any:
    where = {"model": common.model(client, dialect), "base_url": common.url(client, dialect, root), "api_key": "unused"}
    if dialect == MESSAGES:
        return ChatAnthropic(**where, max_retries=0, default_request_timeout=common.TIMEOUT, max_tokens=1024)
    if chained:
        where["use_previous_response_id"] = True
    responses = dialect == RESPONSES
    return ChatOpenAI(**where, max_retries=0, timeout=common.TIMEOUT, stream_usage=True, use_responses_api=responses)


def run(client: str, dialect: str, scenario: str, root: str, chained: bool) -> dict[str, Any]:
    bound = chat_model(client, dialect, root, chained).bind_tools(common.TOOLS[CHAT])
    messages: list[Any] = [SystemMessage(common.SYSTEM), HumanMessage(common.prompt(scenario))]

    def ask(turn: dict[str, Any]) -> Any:
        whole = None
        for chunk in bound.stream(messages):
            whole = chunk if whole is None else whole + chunk
            if chunk.text:
                turn["text"] += chunk.text
                turn["deltas"] += 1
            if scenario == "abort" and (chunk.text or chunk.tool_call_chunks):
                turn["aborted"] = True
                return None
        if whole is None:  # not one chunk, and no error
            return None
        turn["calls"] = [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in whole.tool_calls]
        turn["calls"] += [
            {"id": c["id"], "name": c["name"], "arguments": arguments(c["args"])} for c in whole.invalid_tool_calls
        ]
        turn["finish"] = whole.response_metadata.get(FINISH[dialect])
        usage = whole.usage_metadata
        turn["usage"] = usage and {"input": usage["input_tokens"], "output": usage["output_tokens"]}
        return whole

    def answer(whole: Any) -> None:
        messages.append(whole)
        for call in [*whole.tool_calls, *whole.invalid_tool_calls]:
            messages.append(ToolMessage(read(call["args"]), tool_call_id=call["id"]))

    return common.converse(scenario, ask, answer)
