"""The OpenAI Responses provider — the same LLMEvents from a third wire dialect (article §2.3).

OpenAI's ``/v1/responses``, also vLLM's and Ollama's. Sections: §2's core loop
(``assemble_stream``, steps ①–④ as in openai_completions.py), the request body, the provider.
What the dialect sends and how it differs is in docs/dialects.md.

    >>> body = [b'event: response.output_item.added\\ndata: {"output_index":0,'
    ...         b'"item":{"type":"function_call","id":"fc_1","call_id":"t1","name":"read","arguments":""}}\\n\\n',
    ...         b'event: response.completed\\ndata: {"response":{"status":"completed"}}\\n\\n']
    >>> [event["type"] for event in assemble_stream(body)]
    ['tool_call_start', 'message_end']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..core.abort import NEVER_ABORTED, AbortSignal
from ..core.messages import AgentMessage, AssistantBlock, StopReason, ToolCallBlock, Usage, empty_usage
from .base import HttpProvider, check_fields, finish_tool_arguments, finished_message, malformed, token_count
from .errors import server_message
from .shared import SseEvent, abort_safe, guarded, parse_sse
from .types import LLMEvent, LLMRequest, ProviderError

TEXT_EVENTS = {"response.output_text.delta"}
THINKING_EVENTS = {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}  # summary; raw (vLLM)
DELTA_EVENTS = TEXT_EVENTS | THINKING_EVENTS  # may open their item when no .added came first
END_EVENTS = {"response.completed", "response.incomplete"}
FAILURES = ("error", "response.failed")  # the events that end a reply with the server's error (a tuple: == only)
# The JSON type of each field an event may carry that the loop reads (check_event).
EVENT_FIELDS = (("item_id", (int, str)), ("output_index", (int, str)), ("item", (dict,)), ("response", (dict,)))
ITEM_FIELDS = (("id", (int, str)), ("call_id", (int, str)), ("name", (str,)))  # the item an .added/.done carries
RESPONSE_FIELDS = (("incomplete_details", (dict,)), ("usage", (dict,)), ("status", (str,)))


# ── §2 the core loop: assemble_stream ───────────────────────────────────────────────────


def assemble_stream(body: Iterable[bytes], signal: AbortSignal | None = None) -> Iterator[LLMEvent]:
    """Turn a Responses SSE body into LLMEvents, ending with ``message_end``.

    Ends without ``message_end`` when ``signal`` aborts; raises ProviderError when the
    stream ends without a terminal event (§4.1) or the server reports an error.
    """
    signal = signal or NEVER_ABORTED  # TypeScript's `request.signal?.`
    blocks: list[AssistantBlock] = []  # the reply's output items, in arrival order
    block_by_index: dict[Any, AssistantBlock] = {}  # output_index → its block (§2.2's index)
    index_by_item: dict[Any, Any] = {}  # item_id → output_index: events name one or both
    parts_by_index: dict[Any, list[str]] = {}  # output_index → text / argument fragments
    usage: Usage = empty_usage()
    stop_reason: StopReason = None
    saw_end = False

    for sse in abort_safe(parse_sse(guarded(body)), signal):  # guarded: beyond §2.1, see shared.py
        if signal.aborted:
            return
        check_event(sse)  # beyond §2: `error` and response.failed raise; a field of the wrong type is named
        data = sse["data"]
        # beyond §2.1: the event's name decides (a proxy that drops `event:` lines leaves data.type)
        kind = sse["event"] if sse["event"] != "message" else str(data.get("type"))
        # The item this event is about: by its id when known, else output_index (llama-server sends none).
        item_id = data["item_id"] if "item_id" in data else (data.get("item") or {}).get("id")
        index = index_by_item.get(item_id, data.get("output_index", item_id))

        implied = kind in DELTA_EVENTS and index not in block_by_index  # beyond §2: a delta with no .added
        if kind == "response.output_item.added" or implied:
            # An output item opens: a message, reasoning, or a function call named by its call_id.
            item = data.get("item") or {"type": "message" if kind in TEXT_EVENTS else "reasoning"}
            block = open_item(item, index)
            if block is not None and index not in block_by_index:
                block_by_index[index] = block
                blocks.append(block)
                parts_by_index[index] = []
                if item_id is not None:
                    index_by_item[item_id] = index
                if block["type"] == "toolCall":
                    yield {"type": "tool_call_start", "id": block["id"], "name": block["name"]}
                    if isinstance(item.get("arguments"), str) and item["arguments"] != "":
                        parts_by_index[index].append(item["arguments"])  # beyond §2: the whole call at once
                        yield {"type": "tool_call_delta", "id": block["id"], "jsonDelta": item["arguments"]}

        block = block_by_index.get(index)
        delta = data.get("delta")
        # ① Save the text and tell the display at once.
        if kind in TEXT_EVENTS and block is not None and block["type"] == "text":
            if isinstance(delta, str) and delta != "":
                parts_by_index[index].append(delta)  # `textBlock.text += …`, joined at ④
                yield {"type": "text_delta", "text": delta}
        elif kind in THINKING_EVENTS and block is not None and block["type"] == "thinking":
            if isinstance(delta, str) and delta != "":
                parts_by_index[index].append(delta)
                yield {"type": "thinking_delta", "text": delta}

        # ② Keep each call's argument fragments by its output item (§2.2).
        elif kind == "response.function_call_arguments.delta" and block is not None and block["type"] == "toolCall":
            if isinstance(delta, str) and delta != "":
                parts_by_index[index].append(delta)  # only this item's string grows
                yield {"type": "tool_call_delta", "id": block["id"], "jsonDelta": delta}
        elif kind in ("response.function_call_arguments.done", "response.output_item.done") and block is not None:
            whole = data.get("arguments", (data.get("item") or {}).get("arguments"))
            if block["type"] == "toolCall" and isinstance(whole, str):
                if not parts_by_index[index] and whole != "":  # beyond §2: some servers send only .done
                    yield {"type": "tool_call_delta", "id": block["id"], "jsonDelta": whole}
                parts_by_index[index] = [whole]  # the server's whole string is the call
            if block["type"] == "toolCall" and kind == "response.output_item.done":
                finish_item(block, data.get("item") or {})  # the finished item's call_id and name are final

        # ③ How the reply ended: no finish_reason here, the response's status says it (§4.1, §4.4).
        elif kind in END_EVENTS:
            response = data.get("response") or {}
            check_fields(response, RESPONSE_FIELDS)
            reason = (response.get("incomplete_details") or {}).get("reason")
            has_calls = any(b["type"] == "toolCall" for b in blocks)
            stop_reason = map_status(response.get("status") or kind.removeprefix("response."), reason, has_calls)
            merge_usage(usage, response.get("usage") or {})
            saw_end = True  # the end marker: nothing follows it
            break
        # response.created, .in_progress, .content_part.*, .output_text.done, … carry nothing new

    # ④ The stream is over: join each item's fragments, parse each call's arguments (§4.3).
    for index, block in block_by_index.items():
        if block["type"] == "text":
            block["text"] = "".join(parts_by_index[index])
        elif block["type"] == "thinking":
            block["thinking"] = "".join(parts_by_index[index])
        else:
            finish_tool_arguments(block, parts_by_index[index])
    blocks = [b for b in blocks if b["type"] == "toolCall" or (b.get("text") or b.get("thinking"))]

    if signal.aborted:
        return  # an aborted reply is never handed to the loop
    if not saw_end:
        raise ProviderError("stream ended without response.completed — response may be truncated")
    yield {"type": "message_end", "message": finished_message(blocks, usage, stop_reason)}


def open_item(item: dict[str, Any], index: Any) -> AssistantBlock | None:
    """An output item's block in Ink's shape; None for kinds ink_py does not keep."""
    kind = item.get("type")
    if kind == "message":
        return {"type": "text", "text": ""}
    if kind == "reasoning":
        return {"type": "thinking", "thinking": ""}  # shown, never sent back (as Chat Completions)
    if kind == "function_call":  # its call_id, not its item id, is what the tool result names
        call_id = item.get("call_id") or item.get("id") or f"call_{index}"
        return {"type": "toolCall", "id": str(call_id), "name": str(item.get("name") or ""), "arguments": {}}
    return None  # web_search_call, file_search_call, …: not the read loop's business


def finish_item(block: ToolCallBlock, item: dict[str, Any]) -> None:
    """``output_item.done``'s item is authoritative: a provisional ``call_id`` (or name) from
    ``.added`` is replaced, so the tool result goes back under the id the server finalised."""
    if item.get("call_id"):
        block["id"] = str(item["call_id"])
    if item.get("name"):
        block["name"] = str(item["name"])


def map_status(status: Any, reason: Any, has_calls: bool) -> StopReason:
    """The response's status (and incomplete reason) → Ink's stopReason (article 4.4's table).

    >>> rows = [("completed", None, True), ("completed", None, False),
    ...         ("incomplete", "max_output_tokens", True), ("incomplete", "content_filter", False)]
    >>> [map_status(*row) for row in rows]
    ['tool_use', 'end_turn', 'max_tokens', None]
    """
    if status == "completed":
        return "tool_use" if has_calls else "end_turn"
    return "max_tokens" if reason == "max_output_tokens" else None


def merge_usage(usage: Usage, reported: dict[str, Any]) -> None:
    """Fold in the terminal event's usage; ``input_tokens`` includes the cache hits, moved apart."""
    details = reported.get("input_tokens_details") or {}
    if not isinstance(details, dict):
        raise malformed("input_tokens_details", details, "an object")
    cached = token_count(details, "cached_tokens")
    usage["inputTokens"] = max(0, token_count(reported, "input_tokens") - cached)
    usage["outputTokens"] = token_count(reported, "output_tokens")
    usage["cacheReadTokens"] = cached


def check_event(sse: SseEvent) -> None:
    """``error`` events (flat ``{"code", "message"}`` or nested ``{"error": {…}}``) and ``response.failed``
    raise with the server's words; a field the loop reads that has the wrong JSON type is named.

    >>> check_event({"event": "response.output_text.delta", "data": {"item_id": {"id": 1}}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ink_py.provider.types.ProviderError: the server sent a malformed chunk: "item_id" is an object, ...
    """
    data = sse["data"]
    if type(data) is not dict:
        raise ProviderError(f"the server sent an event that is not a Responses event: {str(data)[:200]!r}")
    if sse["event"] in FAILURES or data.get("type") in FAILURES:
        raise_server_error(sse["event"], data)
    if type(data.get("item_id")) is str and type(data.get("output_index")) is int and "item" not in data:
        if "response" not in data:
            return  # the usual event: a delta of an item named by both
    check_fields(data, EVENT_FIELDS)
    if "item" in data:
        check_fields(data["item"] or {}, ITEM_FIELDS)


def raise_server_error(name: str, data: dict[str, Any]) -> None:
    kind = data.get("type") or name
    if name == "error" or kind == "error":
        error: dict[str, Any] = data["error"] if isinstance(data.get("error"), dict) else data
        code = f"{error['code']}: " if isinstance(error.get("code"), str) and error["code"] else ""
        raise ProviderError(f"the server reported an error in the stream: {code}{server_message(data)}")
    response = data["response"] if isinstance(data.get("response"), dict) else {}
    failure = response.get("error") or {}
    code = f"{failure['code']}: " if isinstance(failure, dict) and isinstance(failure.get("code"), str) else ""
    message = server_message(failure) if failure else "the response failed"
    raise ProviderError(f"the server reported an error in the stream: {code}{message}")


# ── the request body: to_wire_input, build_request_body ─────────────────────────────────


def to_wire_input(messages: list[AgentMessage]) -> list[dict[str, Any]]:
    """Ink's messages → Responses ``input`` items (the system prompt is ``instructions``).

    >>> to_wire_input([
    ...     {"role": "user", "content": "hi"},
    ...     {"role": "assistant", "blocks": [{"type": "toolCall", "id": "t1", "name": "read",
    ...      "arguments": {"path": "README.md"}}], "usage": {}, "stopReason": "tool_use"},
    ...     {"role": "toolResult", "results": [{"toolCallId": "t1", "toolName": "read",
    ...      "content": "# ink_py", "isError": False}]}])   # doctest: +NORMALIZE_WHITESPACE
    [{'type': 'message', 'role': 'user', 'content': 'hi'},
     {'type': 'function_call', 'call_id': 't1', 'name': 'read', 'arguments': '{"path": "README.md"}'},
     {'type': 'function_call_output', 'call_id': 't1', 'output': '# ink_py'}]
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "user":
            wire.append({"type": "message", "role": "user", "content": message["content"]})
        elif message["role"] == "assistant":
            text = "\n".join(block["text"] for block in message["blocks"] if block["type"] == "text")
            if text:
                wire.append({"type": "message", "role": "assistant", "content": text})  # llama-server needs the type
            for block in message["blocks"]:
                if block["type"] == "toolCall":
                    arguments = json.dumps(block["arguments"], ensure_ascii=False)
                    wire.append({"type": "function_call", "call_id": block["id"], "name": block["name"],
                                 "arguments": arguments})  # fmt: skip
        elif message["role"] == "toolResult":
            for result in message["results"]:  # isError is not sent, as in Chat Completions
                output = result["content"] or "(no tool output)"
                wire.append({"type": "function_call_output", "call_id": result["toolCallId"], "output": output})
    return wire


def build_request_body(request: LLMRequest) -> dict[str, Any]:
    """The JSON body of ``POST /responses`` for one turn."""
    body: dict[str, Any] = {
        "model": request["model"],
        "stream": True,
        "store": False,  # every turn sends the whole conversation: nothing need stay on the server
        "input": to_wire_input(request["messages"]),
    }
    if request["system"]:
        body["instructions"] = request["system"]
    if request.get("maxTokens"):
        body["max_output_tokens"] = request["maxTokens"]
    tools = request.get("tools") or []
    if tools:
        body["tools"] = [  # the flat shape: no {"function": {…}} wrapper; strict would demand every field
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["parameters"],
                "strict": False,
            }
            for t in tools
        ]
        choice = request.get("toolChoice") or "auto"  # beyond §2: ink-py --tool-choice; a name is flat here
        body["tool_choice"] = choice if choice in ("auto", "required", "none") else {"type": "function", "name": choice}
    return body


# ── the provider ────────────────────────────────────────────────────────────────────────


class OpenAIResponsesProvider(HttpProvider):
    """Responses: ``POST {base_url}/responses``, the key as a Bearer token."""

    name = "openai-responses"
    path = "/responses"
    build_request_body = staticmethod(build_request_body)
    assemble_stream = staticmethod(assemble_stream)
