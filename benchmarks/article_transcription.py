"""The article's TypeScript, transcribed into Python line for line — deliberately literal.

Article §2.1 (``parseSse``, ``parseFrame`` in Ink's ``src/provider/shared.ts``) and §2/§2.2
(the core loop of ``provider.stream`` in ``openai-completions.ts``). Nothing is improved:

- ``buffer += decoder.decode(value)``, then ``buffer.indexOf("\\n\\n")`` searched from the
  START of the buffer after every read, and ``buffer = buffer.slice(sep + 2)``;
- ``parseFrame`` exactly as printed: ``trim``/``trimStart``, ``JSON.parse`` in a try whose
  failure returns ``undefined`` (so ``[DONE]`` and any bad frame silently vanish);
- ``textBlock.text += content`` and ``toolRawByIndex.set(i, get(i) + fragment)`` — string
  concatenation onto a value stored in an object or a map.

It is the baseline that explains why ink_py differs. Two of these lines are harmless in
JavaScript and costly in Python:

- JavaScript engines build ``a + b`` as a rope (a pointer pair, flattened later); CPython
  copies both strings into a new one. ``text += piece`` on a dict value therefore copies the
  whole text so far on every chunk: O(n²) in the reply's length. (CPython can extend a
  string in place only when it is a local variable nobody else refers to — not a dict value.)
  ink_py appends the pieces to a list and joins them once.
- Searching for ``"\\n\\n"`` from the start of the buffer after each read is O(n²) in the
  length of one event in BOTH languages: an event of megabytes arriving in small reads is
  rescanned from its first byte every time. ink_py searches only the newly read text.

Used only by the benchmarks (``python benchmarks/run.py``); never by ink_py.

    >>> reads = [b'data: {"choices":[{"delta":{"content":"Hi"}}]}\\n\\ndata: {"choices":[{"de',
    ...          b'lta":{},"finish_reason":"stop"}]}\\n\\ndata: [DONE]\\n\\n']
    >>> [event["type"] for event in provider_stream(reads)]
    ['text_delta', 'message_end']
    >>> parse_frame("data: [DONE]") is None   # JSON.parse throws; the catch returns undefined
    True
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from typing import Any


def parse_sse(body: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """``async function* parseSse(body)`` — the reader loop is the ``for`` loop."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")  # new TextDecoder() (not fatal)
    buffer = ""

    for value in body:  # const { done, value } = await reader.read(); if (done) break;
        buffer += decoder.decode(value)  # decoder.decode(value, { stream: true })
        sep = buffer.find("\n\n")  # buffer.indexOf("\n\n"): from the start, every time
        while sep != -1:
            frame = buffer[:sep]  # buffer.slice(0, sep)
            buffer = buffer[sep + 2 :]  # buffer.slice(sep + 2)
            parsed = parse_frame(frame)
            if parsed:  # if (parsed) yield parsed;
                yield parsed
            sep = buffer.find("\n\n")


def parse_frame(frame: str) -> dict[str, Any] | None:
    """``function parseFrame(frame)``; ``None`` plays ``undefined``."""
    event = "message"
    data_lines = []
    for line in frame.split("\n"):
        if line.startswith("event:"):
            event = line[6:].strip()  # line.slice(6).trim()
        elif line.startswith("data:"):
            data_lines.append(line[5:].lstrip())  # line.slice(5).trimStart()
    if len(data_lines) == 0:
        return None
    try:
        return {"event": event, "data": json.loads("\n".join(data_lines))}
    except ValueError:
        return None  # catch { return undefined; }


def map_finish_reason(reason: Any) -> str | None:
    return {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}.get(reason)


def safe_parse_json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return {"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}


def provider_stream(body: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The core loop of ``provider.stream`` (§2 with §2.2's branch filled in); no abort signal."""
    blocks: list[dict[str, Any]] = []
    text_block: dict[str, Any] | None = None
    tool_by_index: dict[Any, dict[str, Any]] = {}  # new Map()
    tool_raw_by_index: dict[Any, str] = {}  # new Map()
    stop_reason = None
    saw_finish = False

    for sse in parse_sse(body):
        chunk = sse["data"]
        choices = chunk.get("choices")
        choice = choices[0] if choices else None  # chunk.choices?.[0]
        delta = choice.get("delta") if choice else None

        # ① text
        content = delta.get("content") if delta else None  # choice?.delta?.content
        if isinstance(content, str) and content != "":
            if text_block is None:
                text_block = {"type": "text", "text": ""}
                blocks.append(text_block)
            text_block["text"] += content  # textBlock.text += content
            yield {"type": "text_delta", "text": content}

        # ② tool-call fragments by index
        for tc in (delta.get("tool_calls") if delta else None) or []:  # choice?.delta?.tool_calls ?? []
            block = tool_by_index.get(tc.get("index"))
            function = tc.get("function")
            name = function.get("name") if function else None  # tc.function?.name
            if block is None:
                block = {
                    "type": "toolCall",
                    "id": str(tc["id"] if tc.get("id") is not None else f"call_{tc.get('index')}"),
                    "name": str(name if name is not None else ""),
                    "arguments": {},
                }
                tool_by_index[tc.get("index")] = block
                blocks.append(block)
                tool_raw_by_index[tc.get("index")] = ""
                yield {"type": "tool_call_start", "id": block["id"], "name": block["name"]}
            elif name is not None and block["name"] == "":
                block["name"] = str(name)

            fragment = function.get("arguments") if function else None
            fragment = "" if fragment is None else fragment  # tc.function?.arguments ?? ""
            if fragment != "":
                # toolRawByIndex.set(tc.index, (toolRawByIndex.get(tc.index) ?? "") + fragment)
                tool_raw_by_index[tc.get("index")] = tool_raw_by_index.get(tc.get("index"), "") + fragment
                yield {"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}

        # ③ finish reason
        if choice is not None and choice.get("finish_reason") is not None:
            saw_finish = True
            stop_reason = map_finish_reason(choice["finish_reason"])

    # ④ parse each tool's collected argument string
    for index, raw in tool_raw_by_index.items():
        ours = tool_by_index.get(index)
        if ours is not None:
            ours["arguments"] = {} if raw.strip() == "" else safe_parse_json(raw)

    if not saw_finish:
        raise RuntimeError("响应缺少结束原因,可能已被截断")
    yield {"type": "message_end", "message": {"role": "assistant", "blocks": blocks, "stopReason": stop_reason}}
