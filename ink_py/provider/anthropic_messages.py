"""The Anthropic Messages provider — the same LLMEvents from a second wire dialect (article §2.3).

Anthropic's API, and the Anthropic-compatible endpoints of DeepSeek, Kimi and Qwen. Sections:
§2's core loop (``assemble_stream``, steps ①–④ as in openai_completions.py), the request body,
the provider. What the dialect sends and how it differs is in docs/dialects.md.

    >>> body = [b'event: content_block_start\\ndata: {"type":"content_block_start","index":0,'
    ...         b'"content_block":{"type":"tool_use","id":"t1","name":"read","input":{}}}\\n\\n',
    ...         b'event: message_delta\\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"}}\\n\\n',
    ...         b'event: message_stop\\ndata: {"type":"message_stop"}\\n\\n']
    >>> [event["type"] for event in assemble_stream(body)]
    ['tool_call_start', 'message_end']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..core.abort import NEVER_ABORTED, AbortSignal
from ..core.messages import AgentMessage, AssistantBlock, StopReason, Usage, empty_usage
from .base import HttpProvider, check_fields, finish_tool_arguments, finished_message, malformed, token_count
from .errors import server_message
from .shared import SseEvent, abort_safe, guarded, parse_sse
from .types import LLMEvent, LLMRequest, ProviderError

DEFAULT_BASE_URL = "https://api.anthropic.com"  # the SDK's convention: no /v1 (ANTHROPIC_BASE_URL too)
ANTHROPIC_VERSION = "2023-06-01"  # the API version header every request carries
DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; sent when the request names none

# The block a delta implies when a proxy sends it without its content_block_start.
BLOCK_OF_DELTA = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "tool_use"}
# The usage counts a Messages event may carry, each cumulative (merge_usage).
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
# The JSON type of each field an event may carry that the loop reads (check_event).
EVENT_FIELDS = (
    ("index", (int, str)),
    ("delta", (dict,)),
    ("content_block", (dict,)),
    ("message", (dict,)),
    ("usage", (dict,)),
)


# ── §2 the core loop: assemble_stream ───────────────────────────────────────────────────


def assemble_stream(body: Iterable[bytes], signal: AbortSignal | None = None) -> Iterator[LLMEvent]:
    """Turn a Messages SSE body into LLMEvents, ending with ``message_end``.

    Ends without ``message_end`` when ``signal`` aborts; raises ProviderError when the
    stream ends without ``message_stop`` (§4.1) or the server reports an error.
    """
    signal = signal or NEVER_ABORTED  # TypeScript's `request.signal?.`
    blocks: list[AssistantBlock] = []  # the reply's content blocks, in index order
    block_by_index: dict[Any, AssistantBlock] = {}  # content index → its block (§2.2's index)
    parts_by_index: dict[Any, list[str]] = {}  # content index → its text / argument fragments
    finished: set[Any] = set()  # indexes whose content_block_stop arrived
    opened: set[Any] = set()  # indexes that opened, kept or not (a server tool's block is not)
    signatures: dict[Any, list[str]] = {}  # thinking index → its signature's pieces
    usage: Usage = empty_usage()
    counts: dict[str, int] = {}  # usage as reported so far, field by field (merge_usage)
    stop_reason: StopReason = None
    saw_stop = False

    for sse in abort_safe(parse_sse(guarded(body)), signal):  # guarded: beyond §2.1, see shared.py
        if signal.aborted:
            return
        check_event(sse)  # beyond §2: `event: error` after HTTP 200 raises; a field of the wrong type is named
        data = sse["data"]
        # beyond §2.1: the event's name decides (a proxy that drops `event:` lines leaves data.type)
        kind = sse["event"] if sse["event"] != "message" else str(data.get("type"))
        index = data.get("index")
        delta = data.get("delta") or {}

        if kind == "content_block_start" or (kind == "content_block_delta" and index not in opened):
            # A block opens at its index: text, thinking or a tool request (§2.2's index).
            opened.add(index)  # beyond §2: a delta of a block not kept (server_tool_use …) is no call
            implied = {"type": BLOCK_OF_DELTA.get(str(delta.get("type")))}  # beyond §2: a delta with no start
            content = (data.get("content_block") or {}) if kind == "content_block_start" else implied
            block = open_block(content, index)
            if block is not None and index not in block_by_index:
                block_by_index[index] = block
                blocks.append(block)
                parts_by_index[index] = []
                if block["type"] == "toolCall":
                    yield {"type": "tool_call_start", "id": block["id"], "name": block["name"]}
                    whole = content.get("input")
                    if whole:  # beyond §2: the whole input in the start event, no deltas after it
                        parts_by_index[index].append(json.dumps(whole, ensure_ascii=False))
                        yield {"type": "tool_call_delta", "id": block["id"], "jsonDelta": parts_by_index[index][0]}

        if kind == "message_start":  # usage so far: the prompt's tokens, cache hits apart
            merge_usage(usage, (data.get("message") or {}).get("usage"), counts)

        elif kind == "content_block_delta" and index in block_by_index and index not in finished:
            block = block_by_index[index]
            # ① Save the text and tell the display at once.
            if block["type"] == "text" and isinstance(delta.get("text"), str) and delta["text"] != "":
                parts_by_index[index].append(delta["text"])  # `textBlock.text += …`, joined at its stop
                yield {"type": "text_delta", "text": delta["text"]}
            elif block["type"] == "thinking" and isinstance(delta.get("thinking"), str) and delta["thinking"] != "":
                parts_by_index[index].append(delta["thinking"])
                yield {"type": "thinking_delta", "text": delta["thinking"]}
            elif block["type"] == "thinking" and isinstance(delta.get("signature"), str):
                signatures.setdefault(index, []).append(delta["signature"])  # signature_delta: joined at its stop
            # ② Keep each tool request's argument fragments by its content index (§2.2).
            elif block["type"] == "toolCall" and isinstance(delta.get("partial_json"), str):
                fragment = delta["partial_json"]  # the first is often "": no delta for it
                if fragment != "":
                    parts_by_index[index].append(fragment)  # only this index's string grows
                    yield {"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}

        elif kind == "content_block_stop" and index in block_by_index and index not in finished:
            finish_block(block_by_index[index], parts_by_index[index], signatures.get(index))  # arguments parse here
            finished.add(index)

        # ③ Note the stop reason the server gives (§4.1, §4.4); keep reading to message_stop.
        elif kind == "message_delta":
            if delta.get("stop_reason") is not None:
                stop_reason = map_stop_reason(delta["stop_reason"])
            merge_usage(usage, data.get("usage"), counts)  # cumulative per field: the fields it has win

        elif kind == "message_stop":
            saw_stop = True  # the end marker: nothing follows it
            break
        # "ping" and event types added later are ignored, as Anthropic's docs ask

    # ④ The stream is over: finish any block whose content_block_stop never came (§4.3).
    for index, block in block_by_index.items():
        if index not in finished:
            finish_block(block, parts_by_index[index], signatures.get(index))
    blocks = [block for block in blocks if has_content(block)]  # an empty text block is no reply

    if signal.aborted:
        return  # an aborted reply is never handed to the loop
    if not saw_stop:  # no finish_reason here: only message_stop says the reply is whole
        raise ProviderError("stream ended without message_stop — response may be truncated")
    yield {"type": "message_end", "message": finished_message(blocks, usage, stop_reason)}


def open_block(content: dict[str, Any], index: Any) -> AssistantBlock | None:
    """A content_block_start's block in Ink's shape; None for kinds ink_py does not keep."""
    kind = content.get("type")
    if kind == "text":
        return {"type": "text", "text": ""}
    if kind == "thinking":
        return {"type": "thinking", "thinking": ""}
    if kind == "redacted_thinking":  # encrypted reasoning: nothing to show, sent back as it came
        return {"type": "thinking", "thinking": "", "redacted": str(content.get("data") or "")}
    if kind == "tool_use":
        call_id = str(content.get("id") or f"toolu_{index}")  # beyond §2: a delta with no start names no id
        return {"type": "toolCall", "id": call_id, "name": str(content.get("name") or ""), "arguments": {}}
    return None  # server_tool_use, mcp_tool_use, web_search_tool_result, …: the server's, never a client call


def has_content(block: AssistantBlock) -> bool:
    if block["type"] == "text":
        return block["text"] != ""
    if block["type"] == "thinking":
        return bool(block["thinking"] or block.get("signature") or block.get("redacted"))
    return True


def finish_block(block: AssistantBlock, parts: list[str], signature: list[str] | None = None) -> None:
    """Join a block's fragments: text and thinking as they are (a thinking block's signature
    too), a tool's arguments parsed."""
    if block["type"] == "text":
        block["text"] = "".join(parts)
    elif block["type"] == "thinking":
        block["thinking"] = "".join(parts)
        if signature:
            block["signature"] = block.get("signature", "") + "".join(signature)
    else:
        finish_tool_arguments(block, parts)  # no input deltas at all → {}


def map_stop_reason(reason: Any) -> StopReason:
    """Messages' stop_reason → Ink's stopReason (article 4.4's table, this dialect's words).

    >>> [map_stop_reason(r) for r in ("tool_use", "end_turn", "stop_sequence", "max_tokens", "refusal")]
    ['tool_use', 'end_turn', 'end_turn', 'max_tokens', None]
    """
    return {  # type: ignore[return-value]
        "tool_use": "tool_use",
        "end_turn": "end_turn",
        "stop_sequence": "end_turn",
        "max_tokens": "max_tokens",
        "model_context_window_exceeded": "max_tokens",
    }.get(str(reason))


def merge_usage(usage: Usage, reported: Any, counts: dict[str, int]) -> None:
    """Fold in message_start's or message_delta's usage. Each count is cumulative, field by
    field: one that is there replaces the one before in ``counts``, one that is not keeps it.
    ``input_tokens`` excludes cache reads already; tokens written to the cache are input too.

    >>> usage, counts = empty_usage(), {}
    >>> merge_usage(usage, {"input_tokens": 17, "output_tokens": 1}, counts)
    >>> merge_usage(usage, {"cache_creation_input_tokens": 10, "cache_read_input_tokens": 5}, counts)
    >>> usage
    {'inputTokens': 27, 'outputTokens': 1, 'cacheReadTokens': 5}
    """
    if reported is None:
        return
    if not isinstance(reported, dict):
        raise malformed("usage", reported, "an object")
    for key in USAGE_FIELDS:
        if reported.get(key) is not None:
            counts[key] = token_count(reported, key)
    usage["inputTokens"] = counts.get("input_tokens", 0) + counts.get("cache_creation_input_tokens", 0)
    usage["outputTokens"] = counts.get("output_tokens", 0)
    usage["cacheReadTokens"] = counts.get("cache_read_input_tokens", 0)


def check_event(sse: SseEvent) -> None:
    """``event: error`` (``{"type": "error", "error": {"type": "overloaded_error", …}}``) raises with
    the server's words; a field the loop reads that has the wrong JSON type is named (``check_fields``).
    The usual event, a delta at an index, passes on two type tests.

    >>> check_event({"event": "content_block_delta", "data": {"index": [0]}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ink_py.provider.types.ProviderError: the server sent a malformed chunk: "index" is an array, ...
    """
    data = sse["data"]
    if type(data) is not dict:
        raise ProviderError(f"the server sent an event that is not a Messages event: {str(data)[:200]!r}")
    if sse["event"] == "error" or data.get("type") == "error":
        error = data.get("error")
        kind = f"{error['type']}: " if isinstance(error, dict) and isinstance(error.get("type"), str) else ""
        raise ProviderError(f"the server reported an error in the stream: {kind}{server_message(data)}")
    if len(data) == 3 and type(data.get("index")) is int and type(data.get("delta")) is dict:
        return  # the usual event: {"type": "content_block_delta", "index": 0, "delta": {…}}
    check_fields(data, EVENT_FIELDS)


# ── the request body: to_wire_messages, build_request_body ──────────────────────────────


def to_wire_messages(messages: list[AgentMessage]) -> list[dict[str, Any]]:
    """Ink's messages → Messages ``messages`` (the system prompt travels apart, at the top).

    >>> to_wire_messages([
    ...     {"role": "user", "content": "hi"},
    ...     {"role": "assistant", "blocks": [{"type": "toolCall", "id": "t1", "name": "read",
    ...      "arguments": {"path": "README.md"}}], "usage": {}, "stopReason": "tool_use"},
    ...     {"role": "toolResult", "results": [{"toolCallId": "t1", "toolName": "read",
    ...      "content": "no such file", "isError": True}]}])   # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]},
     {'role': 'assistant', 'content': [{'type': 'tool_use', 'id': 't1', 'name': 'read',
      'input': {'path': 'README.md'}}]},
     {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 't1',
      'content': 'no such file', 'is_error': True}]}]
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        content: list[dict[str, Any]] = []
        if message["role"] == "user":
            content.append({"type": "text", "text": message["content"] or "(empty)"})
        elif message["role"] == "toolResult":
            for result in message["results"]:  # tool results are user content, one block per call
                entry: dict[str, Any] = {"type": "tool_result", "tool_use_id": result["toolCallId"],
                         "content": result["content"] or "(no tool output)"}  # fmt: skip
                if result["isError"]:
                    entry["is_error"] = True
                content.append(entry)
        else:
            content = [entry for entry in map(wire_block, message["blocks"]) if entry is not None]
        role = "assistant" if message["role"] == "assistant" else "user"
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(content)  # roles alternate: a prompt after tool results joins them
        elif content:
            wire.append({"role": role, "content": content})
    return wire


def wire_block(block: AssistantBlock) -> dict[str, Any] | None:
    """One assistant block as Messages content; None for what must not (or need not) go back."""
    if block["type"] == "text":
        return {"type": "text", "text": block["text"]} if block["text"] else None  # empty text is refused
    if block["type"] == "toolCall":
        arguments = block["arguments"] if isinstance(block["arguments"], dict) else {}  # input must be an object
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": arguments}
    if block.get("redacted"):
        return {"type": "redacted_thinking", "data": block["redacted"]}
    if block.get("signature"):  # the API checks it; reasoning from another dialect has none
        return {"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]}
    return None


def build_request_body(request: LLMRequest) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` for one turn."""
    body: dict[str, Any] = {
        "model": request["model"],
        "max_tokens": request.get("maxTokens") or DEFAULT_MAX_TOKENS,  # required in this dialect
        "stream": True,
        "messages": to_wire_messages(request["messages"]),
    }
    if request["system"]:
        body["system"] = request["system"]
    tools = request.get("tools") or []
    if tools:
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in tools
        ]
        choice = request.get("toolChoice") or "auto"
        if choice != "auto":  # beyond §2: ink-py --tool-choice, in this dialect's words
            kinds = {"required": {"type": "any"}, "none": {"type": "none"}}
            body["tool_choice"] = kinds.get(choice) or {"type": "tool", "name": choice}
    return body


# ── the provider ────────────────────────────────────────────────────────────────────────


class AnthropicMessagesProvider(HttpProvider):
    """Messages: ``POST {base_url}/v1/messages``, the key as ``x-api-key`` beside the API version.

    ANTHROPIC_BASE_URL has no /v1 (https://api.deepseek.com/anthropic); one ending in /v1 works too.
    """

    name = "anthropic-messages"
    default_base_url = DEFAULT_BASE_URL
    path = "/v1/messages"
    key_header = "x-api-key"
    extra_headers = {"anthropic-version": ANTHROPIC_VERSION}  # noqa: RUF012
    build_request_body = staticmethod(build_request_body)
    assemble_stream = staticmethod(assemble_stream)

    def url(self) -> str:
        return self.base_url + ("/messages" if self.base_url.endswith("/v1") else self.path)
