"""The provider's event and request shapes — mirrors Ink's ``src/provider/types.ts``.

Article 2.3: the access layer turns any server's stream into four internal events,
``LLMEvent``. The loop and the display only ever see these:

    text_delta        {"type": "text_delta", "text": "我先读一下"}        a piece of visible text
    tool_call_start   {"type": "tool_call_start", "id": "t1", "name": "read"}
                      a tool request began arriving (NOT "the tool runs now")
    tool_call_delta   {"type": "tool_call_delta", "id": "t1", "jsonDelta": "{\\"path\\":\\"REA"}
                      one fragment of that request's argument string
    message_end       {"type": "message_end", "message": {assistant message}}
                      the whole reply, assembled; only now may the loop act

plus ``thinking_delta`` (reasoning text, e.g. DeepSeek's ``reasoning_content``), which
Ink has and the article leaves out. All are plain dicts; the TypedDicts document them.

``LLMRequest`` is what the loop hands to ``provider.stream(request)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict

from ..core.messages import AgentMessage, AssistantMessage

if TYPE_CHECKING:  # only for the annotations: types.py imports nothing at run time
    from collections.abc import Iterator

    from ..core.abort import AbortSignal


class TextDelta(TypedDict):
    type: Literal["text_delta"]
    text: str


class ThinkingDelta(TypedDict):
    type: Literal["thinking_delta"]
    text: str


class ToolCallStart(TypedDict):
    type: Literal["tool_call_start"]
    id: str
    name: str


class ToolCallDelta(TypedDict):
    type: Literal["tool_call_delta"]
    id: str
    jsonDelta: str


class MessageEnd(TypedDict):
    type: Literal["message_end"]
    message: AssistantMessage


LLMEvent = TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | MessageEnd


class ToolSpec(TypedDict):
    """What the model is told about a tool (the request's ``tools`` entries)."""

    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema object


class _LLMRequestRequired(TypedDict):
    model: str
    system: str
    messages: list[AgentMessage]


class LLMRequest(_LLMRequestRequired, total=False):
    tools: list[ToolSpec]
    maxTokens: int
    signal: AbortSignal | None
    toolChoice: str  # beyond §2: "auto" (Ink's only choice, the default), "required", "none" or a tool's name


class LLMProvider(Protocol):
    """Anything with ``stream(request)`` — the article's ``provider.stream``."""

    def stream(self, request: LLMRequest) -> Iterator[LLMEvent]: ...
