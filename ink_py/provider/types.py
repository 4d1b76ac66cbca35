"""The provider's event and request shapes — mirrors Ink's ``src/provider/types.ts``.

Article §2.3: the access layer turns any server's stream into ``LLMEvent``s — the only
things the loop and the display ever see: ``text_delta`` (a piece of visible text),
``tool_call_start`` (a tool request began arriving — not "the tool runs now"),
``tool_call_delta`` (one fragment of its argument string, ``jsonDelta``), ``message_end``
(the whole reply; only now may the loop act), plus Ink's ``thinking_delta``. Plain dicts;
the TypedDicts document them. ``LLMRequest`` is what the loop hands to ``provider.stream``.

    >>> event: ToolCallDelta = {"type": "tool_call_delta", "id": "t1", "jsonDelta": '{"path":"REA'}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict

from ..core.messages import AgentMessage, AssistantMessage

if TYPE_CHECKING:  # only for the annotations: types.py imports nothing at run time
    from collections.abc import Iterator

    from ..core.abort import AbortSignal


class ProviderError(RuntimeError):
    """The model server failed: an HTTP error, an error inside the stream, or a broken stream."""


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
