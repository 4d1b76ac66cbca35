"""The Chat Completions provider — mirrors Ink's ``src/provider/openai-completions.ts``.

Sections: §2 ``assemble_stream`` (the core loop, ①–④ and §4.1's check), §4.4
``map_finish_reason`` and the usage, ``check_chunk`` (beyond §2), part 01's request body, the
provider. Differences from the TypeScript are tagged ``beyond §``; walkthrough.md §2 and
docs/modules.md explain them. "读取 README" in two reads, the arguments parsed at the end::

    >>> body = [b'data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t1",'
    ...         b'"function":{"name":"read","arguments":"{\\\\"path\\\\":\\\\"REA"}}]}}]}\\n\\n',
    ...         b'data: {"choices":[{"delta":{"tool_calls":[{"index":0,'
    ...         b'"function":{"arguments":"DME.md\\\\"}"}}]},"finish_reason":"tool_calls"}]}\\n\\n']
    >>> *deltas, end = assemble_stream(body)
    >>> [event.get("jsonDelta", event["type"]) for event in deltas], end["message"]["blocks"][0]["arguments"]
    (['tool_call_start', '{"path":"REA', 'DME.md"}'], {'path': 'README.md'})
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..core.abort import NEVER_ABORTED, AbortSignal
from ..core.messages import (
    AgentMessage,
    AssistantBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
    empty_usage,
)
from .base import HttpProvider, field, finish_tool_arguments, finished_message, token_count
from .errors import server_message
from .shared import DONE, SseEvent, abort_safe, guarded, parse_sse, quote
from .types import LLMEvent, LLMRequest, ProviderError

EMPTY_AUTO_NOTE = (  # what llama-cpp-python's chatml-function-calling format does with a streamed "auto"
    '; some servers answer a streamed tool_choice "auto" this way — force a tool or none (--tool-choice)'
)


# ── §2 the core loop: assemble_stream ───────────────────────────────────────────────────


def assemble_stream(body: Iterable[bytes], signal: AbortSignal | None = None) -> Iterator[LLMEvent]:
    """Turn a Chat Completions SSE body into LLMEvents, ending with ``message_end`` — none if
    ``signal`` aborts; ProviderError if the stream ends without a finish_reason (§4.1)."""
    signal = signal or NEVER_ABORTED  # TypeScript's `request.signal?.`
    blocks: list[AssistantBlock] = []  # the reply's content blocks, in arrival order
    text_block: TextBlock | None = None
    text_parts: list[str] = []  # the text so far, as it arrived; joined at ④
    thinking_block: ThinkingBlock | None = None
    thinking_parts: list[str] = []
    tool_by_index: dict[Any, ToolCallBlock] = {}  # tool index → its toolCall block
    tool_raw_by_index: dict[Any, list[str]] = {}  # tool index → argument fragments, not yet parsed
    invented_ids: set[Any] = set()  # indexes whose id we made up (call_0 …): no id arrived
    usage: Usage = empty_usage()
    stop_reason: StopReason = None
    saw_finish = False
    saw_done = False

    # parse_sse cuts the bytes into events; abort_safe tells an abort from a fault (§4.2).
    for sse in abort_safe(parse_sse(guarded(body)), signal):  # guarded: beyond §2.1, see shared.py
        if signal.aborted:
            return
        chunk = sse["data"]
        if chunk == DONE:
            saw_done = True  # beyond §2.1: the end marker; nothing follows it
            break
        check_chunk(sse)  # beyond §2: an error in the stream, or a field of the wrong JSON type, is named
        choice = (chunk.get("choices") or [{}])[0]  # usage-only chunks have no choices[0]
        delta = choice.get("delta") or {}  # Azure sends choices without a delta

        # ① Save the text and tell the display at once.
        content = delta.get("content") or delta.get("refusal")  # beyond §2: a refusal is the reply's words too
        if isinstance(content, str) and content != "":  # only real text: None, "" or a number yields nothing
            if text_block is None:  # the first text opens the reply's one text block, kept in blocks
                text_block = {"type": "text", "text": ""}
                blocks.append(text_block)
            text_parts.append(content)  # ④ overwrites text_block["text"] with "".join(text_parts): not Ink's +=
            yield {"type": "text_delta", "text": content}  # the display gets each piece at once

        # Reasoning text (DeepSeek's reasoning_content, OpenRouter's reasoning): shown, never sent back.
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning != "":
            if thinking_block is None:
                thinking_block = {"type": "thinking", "thinking": ""}
                blocks.append(thinking_block)
            thinking_parts.append(reasoning)
            yield {"type": "thinking_delta", "text": reasoning}

        # ② Keep each tool request and its argument fragments by index (§2.2).
        for position, tc in enumerate(delta.get("tool_calls") or []):
            index = tc.get("index", position)  # beyond §2.2: Gemini sends no index
            block = tool_by_index.get(index)
            function = tc.get("function") or {}
            name = function.get("name")
            tc_id = tc.get("id")  # "" on DashScope's continuation chunks: not a new id
            if block is not None and tc_id and tc_id != block["id"] and index not in invented_ids:
                # Beyond §2.2: a new id at an occupied index is a new call (Ollama sends
                # parallel calls all at index 0); the previous one is complete.
                finish_tool_arguments(block, tool_raw_by_index[index])
                block = None
            if block is None:
                block = {
                    "type": "toolCall",
                    "id": str(tc_id or f"call_{index}"),
                    "name": str(name or ""),
                    "arguments": {},  # the block exists now; its arguments arrive later
                }
                if not tc_id:
                    invented_ids.add(index)
                tool_by_index[index] = block
                blocks.append(block)
                tool_raw_by_index[index] = []
                yield {"type": "tool_call_start", "id": block["id"], "name": block["name"]}
            elif name and block["name"] == "":
                block["name"] = str(name)  # the name may arrive a chunk after the id

            fragment = function.get("arguments") or ""
            if fragment != "":
                tool_raw_by_index[index].append(fragment)  # only this index's string grows
                yield {"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}

        # ③ Note the finish reason the server gives (§4.1, §4.4); keep reading to the end.
        if choice.get("finish_reason") is not None:  # any reason counts as seen, even "" or one not in §4.4
            saw_finish = True
            stop_reason = map_finish_reason(choice["finish_reason"])  # no break: usage often comes later
        merge_usage(usage, chunk, choice)  # usually a last chunk with no choices

    # ④ The stream is over: parse each tool's collected argument string (§4.3).
    for index, parts in tool_raw_by_index.items():
        finish_tool_arguments(tool_by_index[index], parts)
    if text_block is not None:
        text_block["text"] = "".join(text_parts)
    if thinking_block is not None:
        thinking_block["thinking"] = "".join(thinking_parts)

    if signal.aborted:
        return  # an aborted reply is never handed to the loop
    if not saw_finish and not saw_done:  # beyond §4.1: a stream ending in [DONE] did complete
        raise ProviderError("OpenAI stream ended without finish_reason — response may be truncated")
    yield {"type": "message_end", "message": finished_message(blocks, usage, stop_reason)}


# ── §4.4 map_finish_reason, and the usage the article leaves out ────────────────────────


def map_finish_reason(reason: Any) -> StopReason:
    """The server's finish_reason → Ink's stopReason (article 4.4's table).

    >>> [map_finish_reason(r) for r in ("tool_calls", "stop", "length", "content_filter")]
    ['tool_use', 'end_turn', 'max_tokens', None]
    """
    # §4.4's table: tool_calls → tool_use, stop → end_turn, length → max_tokens; any other reason → None
    return {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}.get(reason)  # type: ignore[return-value]


def merge_usage(usage: Usage, chunk: dict[str, Any], choice: dict[str, Any]) -> None:
    """Fold in a chunk's usage report, if it has one: usually a last chunk with no choices;
    Moonshot puts it in ``choices[0]``, Groq in ``x_groq``. Reports repeat (Groq, OpenRouter):
    keep the larger, never sum. ``prompt_tokens`` includes cache hits, moved to ``cacheReadTokens``.
    """
    reported = chunk.get("usage") or choice.get("usage") or (chunk.get("x_groq") or {}).get("usage")
    if not reported:
        return
    details = field(reported, "prompt_tokens_details", dict) or {}
    cached = (  # OpenAI's spelling, DeepSeek's, Moonshot's
        token_count(details, "cached_tokens")
        or token_count(reported, "prompt_cache_hit_tokens")
        or token_count(reported, "cached_tokens")
    )
    usage["inputTokens"] = max(usage["inputTokens"], token_count(reported, "prompt_tokens") - cached)
    usage["outputTokens"] = max(usage["outputTokens"], token_count(reported, "completion_tokens"))
    usage["cacheReadTokens"] = max(usage["cacheReadTokens"], cached)


# ── beyond §2: a chunk that is an error, or has a field of the wrong type ───────────────


def check_chunk(sse: SseEvent) -> None:
    """Beyond §2: an error in the stream is never a reply, and a field ``assemble_stream``
    reads that has the wrong JSON type is the server's fault, named in one line.

    The usual chunk passes a few type tests; anything unusual gets the full walk
    (``name_malformed_field``), which names what is wrong — or finds it is fine.

    >>> check_chunk({"event": "message", "data": {"choices": [{"delta": {"tool_calls": {"index": 0}}}]}})
    Traceback (most recent call last):
    ink_py.provider.types.ProviderError: the server sent a malformed chunk: "tool_calls" is an object, expected an array
    """
    chunk = sse["data"]
    if sse["event"] == "error" or type(chunk) is not dict or chunk.get("error") is not None:
        raise_server_error(sse)
    usage = chunk.get("usage")
    choices = chunk.get("choices")
    if (usage is not None and type(usage) is not dict) or "x_groq" in chunk or type(choices or []) is not list:
        return name_malformed_field(chunk)
    if not choices:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("usage") is not None:
        return name_malformed_field(chunk)
    finish, delta = choice.get("finish_reason"), choice.get("delta")
    if (finish is not None and type(finish) is not str) or (delta is not None and type(delta) is not dict):
        return name_malformed_field(chunk)
    calls = (delta or {}).get("tool_calls")
    if calls is not None and type(calls) is not list:
        return name_malformed_field(chunk)
    for tc in calls or ():
        function = tc.get("function") if type(tc) is dict else None
        if type(tc) is not dict or (function is not None and type(function) is not dict):
            return name_malformed_field(chunk)
        name, arguments = (None, None) if function is None else (function.get("name"), function.get("arguments"))
        tc_id = tc.get("id")
        if (
            type(tc.get("index", 0)) not in (int, str)
            or (tc_id is not None and type(tc_id) is not str)
            or (name is not None and type(name) is not str)
            or (arguments is not None and type(arguments) is not str)
        ):
            return name_malformed_field(chunk)
    return None


def name_malformed_field(chunk: dict[str, Any]) -> None:
    """Walk every field ``assemble_stream`` reads; ProviderError naming the first of the wrong
    JSON type (or absent where it must be there). Nothing wrong found: return."""
    choices = field(chunk, "choices", list) or []
    choice = field({"choices[0]": choices[0]}, "choices[0]", dict, required=True) if choices else {}
    field(choice, "finish_reason", str)
    field(choice, "usage", dict)
    field(field(chunk, "x_groq", dict) or {}, "usage", dict)
    field(chunk, "usage", dict)
    delta = field(choice, "delta", dict) or {}
    for tc in field(delta, "tool_calls", list) or []:
        tc = field({"tool_calls[]": tc}, "tool_calls[]", dict, required=True)
        if "index" in tc and not isinstance(tc["index"], str):  # a number (a string index is tolerated)
            field(tc, "index", int, required=True)
        field(tc, "id", str)
        function = field(tc, "function", dict) or {}
        field(function, "name", str)
        field(function, "arguments", str)


def raise_server_error(sse: SseEvent) -> None:
    """Beyond the article: `event: error`, llama.cpp's `error:` line and `{"error": …}` payloads."""
    data = sse["data"]
    if sse["event"] == "error" or (isinstance(data, dict) and data.get("error") is not None):
        raise ProviderError(f"the server reported an error in the stream: {server_message(data)}")
    raise ProviderError(f"the server sent an event that is not a chat.completion.chunk: {quote(str(data))}")


# ── beyond §2: one whole JSON reply (a server that ignored stream: true) ────────────────


def whole_reply_as_sse(raw: bytes) -> bytes:
    """One non-streamed ``chat.completion`` → the SSE bytes of one chunk carrying all of it, then [DONE].

    >>> whole_reply_as_sse(b'{"object":"chat.completion","choices":[{"message":'
    ...                    b'{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}')
    b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}\\n\\ndata: [DONE]\\n\\n'
    """
    try:
        reply = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        raise ProviderError(f"the server answered with a body that is neither SSE nor JSON: {raw[:120]!r}") from None
    if isinstance(reply, dict) and reply.get("error") is not None:
        raise ProviderError(f"the server reported an error: {server_message(reply)}")
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"the server answered with JSON that is not a chat.completion: {raw[:120]!r}")
    message = choices[0].get("message") or {}
    keys = ("content", "refusal", "reasoning_content", "reasoning", "tool_calls")  # what assemble_stream reads
    delta = {key: message[key] for key in keys if isinstance(message, dict) and message.get(key) is not None}
    chunk: dict[str, Any] = {
        "choices": [{"index": 0, "delta": delta, "finish_reason": choices[0].get("finish_reason")}]
    }
    if reply.get("usage"):
        chunk["usage"] = reply["usage"]
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode("utf-8") + b"\n\ndata: [DONE]\n\n"


# ── the request body (part 01): to_wire_messages, build_request_body ────────────────────


def to_wire_messages(system: str, messages: list[AgentMessage]) -> list[dict[str, Any]]:
    """Ink's messages → Chat Completions ``messages`` (system first; thinking never sent).

    >>> to_wire_messages("be brief", [
    ...     {"role": "user", "content": "hi"},
    ...     {"role": "assistant", "blocks": [{"type": "toolCall", "id": "t1", "name": "read",
    ...      "arguments": {"path": "README.md"}}], "usage": {}, "stopReason": "tool_use"},
    ...     {"role": "toolResult", "results": [{"toolCallId": "t1", "toolName": "read",
    ...      "content": "# ink_py", "isError": False}]}])   # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'hi'},
     {'role': 'assistant', 'content': '', 'tool_calls': [{'id': 't1', 'type': 'function',
      'function': {'name': 'read', 'arguments': '{"path": "README.md"}'}}]},
     {'role': 'tool', 'tool_call_id': 't1', 'content': '# ink_py'}]
    """
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in messages:
        if message["role"] == "user":
            wire.append({"role": "user", "content": message["content"]})
        elif message["role"] == "assistant":
            blocks = message["blocks"]
            text = "\n".join(block["text"] for block in blocks if block["type"] == "text")
            tool_calls = [
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {
                        "name": block["name"],
                        "arguments": json.dumps(block["arguments"], ensure_ascii=False),
                    },
                }
                for block in blocks
                if block["type"] == "toolCall"
            ]
            # beyond part 01: "" rather than null when only tools were called — llama-cpp-python rejects null
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            if tool_calls:
                entry["tool_calls"] = tool_calls
            wire.append(entry)
        elif message["role"] == "toolResult":
            for result in message["results"]:  # each result is its own "tool" message; isError is not sent
                wire.append(
                    {
                        "role": "tool",
                        "tool_call_id": result["toolCallId"],
                        "content": result["content"] or "(no tool output)",
                    }
                )
    return wire


def max_tokens_field(model: str) -> str:
    """o-series and gpt-5+ models only accept ``max_completion_tokens``.

    >>> [max_tokens_field(m) for m in ("gpt-4o", "o3-mini", "gpt-5.1", "deepseek-chat")]
    ['max_tokens', 'max_completion_tokens', 'max_completion_tokens', 'max_tokens']
    """
    match = re.match(r"(o\d|gpt-(\d+))", model)
    if match is None:
        return "max_tokens"
    major = match.group(2)
    return "max_completion_tokens" if major is None or int(major) >= 5 else "max_tokens"


def build_request_body(request: LLMRequest) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for one turn."""
    body: dict[str, Any] = {
        "model": request["model"],
        "stream": True,
        "stream_options": {"include_usage": True},  # usage arrives in a last, choices-less chunk
        "messages": to_wire_messages(request["system"], request["messages"]),
    }
    if request.get("maxTokens"):
        body[max_tokens_field(request["model"])] = request["maxTokens"]
    tools = request.get("tools") or []
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]},
            }
            for t in tools
        ]
        body["tool_choice"] = wire_tool_choice(request.get("toolChoice") or "auto", [t["name"] for t in tools])
    return body


def wire_tool_choice(choice: str, tool_names: list[str]) -> str | dict[str, Any]:
    """Beyond part 01 (Ink always sends "auto"): ``ink-py --tool-choice`` in the request's words.

    A tool's name goes in the object form every server takes. So does "required" when
    only one tool is offered — the same demand, and llama-cpp-python ignores or rejects
    the string "required" but honours a named tool.

    >>> wire_tool_choice("none", ["read"]), wire_tool_choice("required", ["read", "grep"])
    ('none', 'required')
    >>> wire_tool_choice("required", ["read"]) == wire_tool_choice("read", ["read"])
    True
    >>> wire_tool_choice("read", ["read"])
    {'type': 'function', 'function': {'name': 'read'}}
    """
    if choice == "required" and len(tool_names) == 1:
        choice = tool_names[0]
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


# ── the provider ────────────────────────────────────────────────────────────────────────


class OpenAICompletionsProvider(HttpProvider):
    """Chat Completions: ``POST {base_url}/chat/completions``, the key as a Bearer token."""

    name = "openai-completions"
    path = "/chat/completions"
    build_request_body = staticmethod(build_request_body)
    assemble_stream = staticmethod(assemble_stream)

    def whole_reply(self, body: dict[str, Any]) -> tuple[Callable[[bytes], bytes], str]:
        """One JSON body becomes the same events; an empty body after a streamed "auto" gets a hint."""
        return whole_reply_as_sse, EMPTY_AUTO_NOTE if body.get("tool_choice") == "auto" else ""
