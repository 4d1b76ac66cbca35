"""The conversation's message shapes — mirrors Ink's ``src/core/messages.ts``.

Article part 01 introduced these messages; part 02 (this one) fills the assistant
message from a stream. Everything is a plain dict with the TypeScript's JSON
spelling (``stopReason``, ``toolCallId``, ``isError``), so a debugger shows what the
article shows. The TypedDicts below only describe those dicts for readers and type
checkers; nothing constructs a class.

    user        {"role": "user", "content": "读取 README.md"}
    assistant   {"role": "assistant", "blocks": [...], "usage": {...},
                 "stopReason": "tool_use", "model": "..."}
    toolResult  {"role": "toolResult", "results": [{"toolCallId": "t1", "toolName": "read",
                 "content": "...", "isError": False}]}

What differs from Ink: nothing but the language. Ink's ``Usage.cacheReadTokens`` is
optional; here it is always present (0 when the server reports no cache hits).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# Why the model stopped, in Ink's words (see map_finish_reason, article 4.4).
# None means the server gave a reason ink_py does not know (e.g. "content_filter").
StopReason = Literal["tool_use", "end_turn", "max_tokens"] | None


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class _ThinkingBlockRequired(TypedDict):
    type: Literal["thinking"]
    thinking: str  # reasoning shown to the user; sent back only with a signature


class ThinkingBlock(_ThinkingBlockRequired, total=False):
    signature: str  # Anthropic's proof the reasoning is its own: sent back with it, unchanged
    redacted: str  # Anthropic's encrypted redacted_thinking data (its ``thinking`` is "")


class ToolCallBlock(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    # Parsed JSON (normally a dict). When the fragments did not form valid JSON it is
    # {"_parseError": ..., "raw": ...} — see safe_parse_json, article 4.3.
    arguments: Any


AssistantBlock = TextBlock | ThinkingBlock | ToolCallBlock


class Usage(TypedDict):
    inputTokens: int  # prompt tokens not served from the cache
    outputTokens: int
    cacheReadTokens: int  # prompt tokens served from the provider's cache


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str


class _AssistantMessageRequired(TypedDict):
    role: Literal["assistant"]
    blocks: list[AssistantBlock]
    usage: Usage
    stopReason: StopReason


class AssistantMessage(_AssistantMessageRequired, total=False):
    model: str  # stamped in by stream_assistant (core/loop.py), not by the provider


class ToolResult(TypedDict):
    toolCallId: str
    toolName: str
    content: str
    isError: bool


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    results: list[ToolResult]


AgentMessage = UserMessage | AssistantMessage | ToolResultMessage


def empty_usage() -> Usage:
    """A zeroed usage record: ``{"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0}``."""
    return {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0}


def add_usage(total: Usage, part: Usage) -> None:
    """Add one reply's usage into a running total, in place.

    >>> total = empty_usage()
    >>> add_usage(total, {"inputTokens": 10, "outputTokens": 3, "cacheReadTokens": 0})
    >>> add_usage(total, {"inputTokens": 5, "outputTokens": 2, "cacheReadTokens": 4})
    >>> total
    {'inputTokens': 15, 'outputTokens': 5, 'cacheReadTokens': 4}
    """
    total["inputTokens"] += part.get("inputTokens", 0)
    total["outputTokens"] += part.get("outputTokens", 0)
    total["cacheReadTokens"] += part.get("cacheReadTokens", 0)
