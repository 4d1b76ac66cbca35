"""The Chat Completions provider — mirrors Ink's ``src/provider/openai-completions.ts``.

Sections: §2 ``assemble_stream``, the article's core loop (① text, ② tool-call fragments
by index — §2.2, ③ the finish reason, ④ parse the arguments — §4.3, then §4.1's check);
§4.4 ``map_finish_reason``; ``reply_body`` (a 200 body that is not SSE); part 01's request
(``to_wire_messages``, ``build_request_body``); last ``OpenAICompletionsProvider.stream``,
which posts the request and hands the body to ``assemble_stream``. Differences from the
TypeScript are tagged ``beyond §``; walkthrough.md explains them. "读取 README" in two reads::

    >>> body = [b'data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t1",'
    ...         b'"function":{"name":"read","arguments":"{\\\\"path\\\\":\\\\"REA"}}]}}]}\\n\\n',
    ...         b'data: {"choices":[{"delta":{"tool_calls":[{"index":0,'
    ...         b'"function":{"arguments":"DME.md\\\\"}"}}]},"finish_reason":"tool_calls"}]}\\n\\n']
    >>> for event in assemble_stream(body):
    ...     print(event)   # doctest: +NORMALIZE_WHITESPACE
    {'type': 'tool_call_start', 'id': 't1', 'name': 'read'}
    {'type': 'tool_call_delta', 'id': 't1', 'jsonDelta': '{"path":"REA'}
    {'type': 'tool_call_delta', 'id': 't1', 'jsonDelta': 'DME.md"}'}
    {'type': 'message_end', 'message': {'role': 'assistant',
     'blocks': [{'type': 'toolCall', 'id': 't1', 'name': 'read', 'arguments': {'path': 'README.md'}}],
     'usage': {'inputTokens': 0, 'outputTokens': 0, 'cacheReadTokens': 0}, 'stopReason': 'tool_use'}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import requests

from ..core.abort import NEVER_ABORTED, AbortSignal
from ..core.messages import (
    AgentMessage,
    AssistantBlock,
    AssistantMessage,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
    empty_usage,
)
from .shared import (
    DONE,
    SseEvent,
    abort_safe,
    display_url,
    parse_sse,
    post_json_with_retry,
    quote,
    read_at_most,
    read_body,
    redact_reads,
    safe_parse_json,
    server_message,
    stream_reply,
)
from .types import LLMEvent, LLMRequest, ProviderError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
EMPTY_REPLY_TEXT = "(empty)"  # Ink's placeholder when a reply has no blocks at all


# ── §2 the core loop: assemble_stream ───────────────────────────────────────────────────


def assemble_stream(body: Iterable[bytes], signal: AbortSignal | None = None) -> Iterator[LLMEvent]:
    """Turn a Chat Completions SSE body into LLMEvents, ending with ``message_end``.

    Ends without ``message_end`` when ``signal`` aborts; raises ProviderError when the
    stream ends without a finish_reason (§4.1) or the server reports an error.
    """
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
    for sse in abort_safe(parse_sse(body), signal):
        if signal.aborted:
            return
        chunk = sse["data"]
        if chunk == DONE:
            saw_done = True  # beyond §2.1: the end marker; nothing follows it
            break
        raise_if_server_error(sse)  # beyond §2: an error in the stream is never a reply
        check_chunk_shape(chunk)  # beyond §2: a field of the wrong JSON type is named, not a crash
        choices = chunk.get("choices") or []  # usage-only chunks have no choices[0]
        choice = choices[0] if choices else {}
        delta = choice.get("delta") or {}  # Azure sends choices without a delta

        # ① Save the text and tell the display at once.
        # exercise 3 ▼ text accumulation
        content = delta.get("content")
        if isinstance(content, str) and content != "":
            if text_block is None:
                text_block = {"type": "text", "text": ""}
                blocks.append(text_block)
            text_parts.append(content)  # instead of Ink's `textBlock.text += content`: joined once at ④
            yield {"type": "text_delta", "text": content}
        # exercise 3 ▲

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
            # exercise 4 ▼ tool-call fragments
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
            # exercise 4 ▲

        # ③ Note the finish reason the server gives (§4.1, §4.4); keep reading to the end.
        # exercise 5 ▼ finish reason
        if choice.get("finish_reason") is not None:
            saw_finish = True
            stop_reason = map_finish_reason(choice["finish_reason"])  # no break: usage often comes later
        # exercise 5 ▲

        # Usage: usually a last chunk with no choices; Moonshot puts it in choices[0].
        reported = chunk.get("usage") or choice.get("usage") or (chunk.get("x_groq") or {}).get("usage")
        if reported:
            merge_usage(usage, reported)

    # ④ The stream is over: parse each tool's collected argument string (§4.3).
    for index, parts in tool_raw_by_index.items():
        finish_tool_arguments(tool_by_index[index], parts)
    if text_block is not None:
        text_block["text"] = "".join(text_parts)
    if thinking_block is not None:
        thinking_block["thinking"] = "".join(thinking_parts)

    if signal.aborted:
        return  # an aborted reply is never handed to the loop
    # exercise 5 ▼ no finish reason
    if not saw_finish and not saw_done:  # beyond §4.1: a stream ending in [DONE] did complete
        raise ProviderError("stream ended without finish_reason — response may be truncated")
    # exercise 5 ▲
    yield {
        "type": "message_end",
        "message": finished_message(blocks, usage, stop_reason),
    }


def finished_message(blocks: list[AssistantBlock], usage: Usage, stop_reason: StopReason) -> AssistantMessage:
    """The assistant message of a stream that ended properly, with Ink's two fallbacks
    (the article's "省略未知结束原因的映射兜底和空回复占位")."""
    if stop_reason is None and any(block["type"] == "toolCall" for block in blocks):
        stop_reason = "tool_use"  # an unknown finish reason, but tool calls ended the turn
    if not blocks:
        blocks.append({"type": "text", "text": EMPTY_REPLY_TEXT})
    return {"role": "assistant", "blocks": blocks, "usage": usage, "stopReason": stop_reason}


def finish_tool_arguments(block: ToolCallBlock, parts: list[str]) -> None:
    """Join a call's fragments and parse them: blank → {}, bad JSON → a _parseError record."""
    raw = "".join(parts)
    block["arguments"] = {} if raw.strip() == "" else safe_parse_json(raw)


def map_finish_reason(reason: Any) -> StopReason:
    """The server's finish_reason → Ink's stopReason (article 4.4's table).

    >>> [map_finish_reason(r) for r in ("tool_calls", "stop", "length", "content_filter")]
    ['tool_use', 'end_turn', 'max_tokens', None]
    """
    return {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}.get(reason)  # type: ignore[return-value]


def merge_usage(usage: Usage, reported: dict[str, Any]) -> None:
    """Fold one usage report in. Reports repeat (Groq, OpenRouter): keep the larger, never sum.

    ``prompt_tokens`` includes cache hits; they are moved to ``cacheReadTokens``.
    """
    details = field(reported, "prompt_tokens_details", dict) or {}
    cached = (  # OpenAI's spelling, DeepSeek's, Moonshot's
        usage_count(details, "cached_tokens")
        or usage_count(reported, "prompt_cache_hit_tokens")
        or usage_count(reported, "cached_tokens")
    )
    usage["inputTokens"] = max(usage["inputTokens"], usage_count(reported, "prompt_tokens") - cached)
    usage["outputTokens"] = max(usage["outputTokens"], usage_count(reported, "completion_tokens"))
    usage["cacheReadTokens"] = max(usage["cacheReadTokens"], cached)


JSON_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", int: "a number", bool: "a boolean"}


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type: ``'an array'``, ``'null'`` …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def field(container: dict[str, Any], key: str, expected: type, required: bool = False) -> Any:
    """``container[key]`` if absent/null (unless ``required``) or of the ``expected`` JSON type;
    otherwise the server is at fault: ProviderError naming the field and both types.

    >>> try:
    ...     field({"delta": []}, "delta", dict)
    ... except ProviderError as err:
    ...     print(err)
    the server sent a malformed chunk: "delta" is an array, expected an object
    """
    value = container.get(key)
    if value is None and not required:
        return None
    if isinstance(value, expected) and not (expected is int and isinstance(value, bool)):
        return value
    raise ProviderError(
        f'the server sent a malformed chunk: "{key}" is {json_type(value)}, expected {JSON_TYPE_NAMES[expected]}'
    )


def check_chunk_shape(chunk: dict[str, Any]) -> None:
    """Every field ``assemble_stream`` reads has the JSON type the API gives it (or is absent);
    otherwise ProviderError names the field: the fault is the server's, and one line says so.

    >>> try:
    ...     check_chunk_shape({"choices": [{"delta": {"tool_calls": {"index": 0}}}]})
    ... except ProviderError as err:
    ...     print(err)
    the server sent a malformed chunk: "tool_calls" is an object, expected an array
    """
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


def usage_count(reported: dict[str, Any], key: str) -> int:
    """A usage number: absent is 0; anything but a whole number ≥ 0 is the server's fault."""
    value = reported.get(key)
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProviderError(
            f'the server sent a malformed chunk: usage "{key}" is {quote(json.dumps(value)[:40], 40)}, '
            "expected a whole number of tokens"
        )
    return value


def raise_if_server_error(sse: SseEvent) -> None:
    """Beyond the article: `event: error`, llama.cpp's `error:` line and `{"error": …}` payloads."""
    data = sse["data"]
    if sse["event"] == "error" or (isinstance(data, dict) and data.get("error") is not None):
        raise ProviderError(f"the server reported an error in the stream: {server_message(data)}")
    if not isinstance(data, dict):
        raise ProviderError(f"the server sent an event that is not a chat.completion.chunk: {quote(str(data))}")


# ── beyond §2: bodies that are not an event stream ───────────────────────────────────────


BLANK = b"\xef\xbb\xbf \t\r\n"  # a BOM and blank lines before the first event (lstrip's set of bytes)
SSE_STARTS = (b"d", b"e", b"i", b"r", b":")  # data:, event:, id:, retry:, error:, a comment
EMPTY_AUTO_NOTE = (  # what llama-cpp-python's chatml-function-calling format does with a streamed "auto"
    '; some servers answer a streamed tool_choice "auto" this way — force a tool or none (--tool-choice)'
)
SNIFF_LIMIT = 4096  # at most this much blank prelude is held back before deciding
WHOLE_REPLY_LIMIT = 16 * 1024 * 1024  # the largest non-streamed reply read into memory


def reply_body(
    reads: Iterable[bytes],
    content_type: str = "",
    empty_note: str = "",
    whole_reply: Callable[[bytes], bytes] | None = None,
) -> Iterator[bytes]:
    """The reply's bytes as an event stream, whatever a 200 reply turned out to hold.

    An empty body is an error that says so; one JSON reply (a server that ignored
    ``stream: true``) becomes a one-event stream through ``whole_reply`` (default: a
    ``chat.completion``; the other dialects pass ``refuse_whole_reply``); a body that is
    neither says what arrived. Anything that looks like SSE passes through untouched.
    """
    whole_reply = whole_reply or whole_reply_as_sse
    reads = iter(reads)
    head = b""
    for data in reads:
        head += data
        if head.lstrip(BLANK) or len(head) > SNIFF_LIMIT:
            break  # the first byte that is not blank decides
    start = head.lstrip(BLANK)[:1]
    shown = f"Content-Type: {content_type or 'none'}"
    if start == b"" and len(head) <= SNIFF_LIMIT:
        raise ProviderError(f"the server sent an empty response body (HTTP 200, {shown}): no reply at all{empty_note}")
    if start == b"{":
        yield whole_reply(read_at_most(head, reads, WHOLE_REPLY_LIMIT))
        return
    if start and "event-stream" not in content_type and start not in SSE_STARTS:
        raise ProviderError(f"the server's reply is not an event stream ({shown}); it began: {head[:120]!r}")
    yield head
    yield from reads


def refuse_whole_reply(raw: bytes) -> bytes:
    """For the dialects whose whole (non-streamed) reply ink_py does not convert: say what arrived."""
    try:
        payload = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("error") is not None:
        raise ProviderError(f"the server reported an error: {server_message(payload)}")
    raise ProviderError(
        f"the server answered with one JSON body, not an event stream (stream: true ignored?): {raw[:120]!r}"
    )


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
    keys = ("content", "reasoning_content", "reasoning", "tool_calls")  # what assemble_stream reads
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


# ── the provider: stream(request) ───────────────────────────────────────────────────────


class OpenAICompletionsProvider:
    """The article's ``provider``: holds where to connect; ``stream(request)`` does the rest."""

    name = "openai-completions"

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key  # never printed: see __repr__ and shared.api_error
        self._session = requests.Session()  # keeps the connection alive between turns

    def __repr__(self) -> str:
        shown = display_url(self.base_url)  # a password in the URL is never shown either
        return f"{type(self).__name__}(base_url={shown!r}, api_key={'***' if self._api_key else None})"

    def stream(self, request: LLMRequest) -> Iterator[LLMEvent]:
        """POST the request and yield its LLMEvents as the reply streams in."""
        signal = request.get("signal") or NEVER_ABORTED
        body = build_request_body(request)
        response = self.post(body, signal)
        if response is None:
            return  # aborted before the reply started
        note = EMPTY_AUTO_NOTE if body.get("tool_choice") == "auto" else ""
        reads = reply_body(self.read(response), response.headers.get("Content-Type", ""), note)  # beyond §2
        yield from stream_reply(response, reads, signal, assemble_stream)  # closes it after

    def post(self, body: dict[str, Any], signal: AbortSignal) -> requests.Response | None:
        """Part 01: send the body, retrying only before any byte of the reply is read."""
        url = f"{self.base_url}/chat/completions"
        return post_json_with_retry(url, body, api_key=self._api_key, signal=signal, session=self._session)

    def read(self, response: requests.Response) -> Iterable[bytes]:
        """The response body as reads — the article's ``response.body``; beyond the article, a
        key the server echoes back is replaced before anything (parser, recording) sees it."""
        return redact_reads(read_body(response), self._api_key)
