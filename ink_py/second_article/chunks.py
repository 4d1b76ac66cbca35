"""Assembling a reply by ``concat`` — the second article's §四 (LangChain's ``AIMessageChunk.concat``).

The first article assembles event by event (``openai_completions.assemble_stream``); the second
turns every event into a *message chunk* (a dict shaped like LangChain's ``AIMessageChunk``) and
folds them — ``full = chunk if full is None else concat(full, chunk)`` — then reads
``tool_calls(full)``. Ink has no counterpart. Sections: ``Pieces`` (a string that grows without
being copied: the fold stays linear), the message chunk, §四.2 ``concat``, §四.3 from chunks to
calls, the article's loop. How concat merges field by field, what the fold costs and what differs
from LangChain: docs/modules.md. The article's own three chunks (§四.1)::

    >>> chunks = [{"content": "", "tool_call_chunks": [{"index": 0, "name": "query", "id": "call_1"}]},
    ...           {"content": "", "tool_call_chunks": [{"index": 0, "args": '{"user'}]},
    ...           {"content": "", "tool_call_chunks": [{"index": 0, "args": 'Id": "001"}'}]}]
    >>> tool_calls(concat(concat(chunks[0], chunks[1]), chunks[2]))
    [{'id': 'call_1', 'name': 'query', 'args': {'userId': '001'}}]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypedDict

from ..core.messages import AssistantBlock, AssistantMessage, ToolCallBlock, Usage, empty_usage
from ..provider.base import finish_tool_arguments, finished_message
from ..provider.openai_completions import check_chunk, map_finish_reason, merge_usage
from ..provider.shared import DONE, guarded, parse_sse
from ..provider.types import ProviderError

BlockKind = Literal["text", "thinking", "tool"]


# ── Pieces: a string that grows without being copied ────────────────────────────────────


class Pieces:
    """A string kept as the pieces it arrived in: ``+`` appends, ``str()`` joins.

    ``a + b`` never changes ``a``: ``a`` is the first ``_count`` strings of a list it may
    share with longer Pieces made from it. When ``a`` is the longest view of its list —
    always, in a left fold — ``+`` appends in place (cost: b's pieces). When someone has
    already appended after ``a``, ``+`` copies ``a``'s pieces first and leaves theirs alone.

    >>> a = Pieces("Run")
    >>> b = a + " make"      # appends to a's list; a still reads "Run"
    >>> c = b + " run."
    >>> str(a), str(c), c == "Run make run."
    ('Run', 'Run make run.', True)
    >>> a + "!"              # a branch: a's pieces are copied, b and c are left alone
    Pieces(['Run', '!'])
    >>> str(c)
    'Run make run.'
    """

    __slots__ = ("_shared", "_count")

    def __init__(self, text: str = "") -> None:
        self._shared: list[str] = [text] if text else []  # empty strings are never kept
        self._count = len(self._shared)  # how many strings of _shared are this text

    def __add__(self, other: Pieces | str) -> Pieces:
        if isinstance(other, str):
            added = [other]
        elif isinstance(other, Pieces):
            added = other._shared[: other._count]
        else:
            return NotImplemented
        added = [piece for piece in added if piece]
        if not added:
            return self  # nothing to add: the same text (no Pieces ever changes)
        shared = self._shared
        if len(shared) > self._count:
            shared = shared[: self._count]  # someone appended after us already: copy, don't clobber
        shared.extend(added)
        result = Pieces()
        result._shared, result._count = shared, len(shared)
        return result

    def __str__(self) -> str:
        return "".join(self._shared[: self._count])

    def __bool__(self) -> bool:
        return self._count > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Pieces, str)):
            return str(self) == str(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared by text, so not hashable

    def __repr__(self) -> str:
        return f"Pieces({self._shared[: self._count]!r})"


# ── the message chunk ───────────────────────────────────────────────────────────────────


class ToolCallChunk(TypedDict):
    index: Any  # the server's index; its position in the chunk when it sent none (Gemini)
    id: str | None  # None: no id arrived ("" counts as none)
    name: str | None
    args: Pieces  # the argument string's fragments, not yet parsed


class MessageChunk(TypedDict):
    content: Pieces
    tool_call_chunks: list[ToolCallChunk]
    usage: Usage | None
    reasoning: Pieces
    finish_reason: Any  # the server's own word ("stop", "tool_calls", "eos", …) or None
    order: list[BlockKind]


class ToolCall(TypedDict):
    id: str
    name: str
    args: dict[str, Any]


class InvalidToolCall(TypedDict):
    id: str
    name: str
    args: str  # the joined argument string, as the model sent it
    error: str


def new_chunk(
    content: str | Pieces = "",
    tool_call_chunks: Iterable[Mapping[str, Any]] = (),
    usage: Usage | None = None,
    reasoning: str | Pieces = "",
    finish_reason: Any = None,
) -> MessageChunk:
    """A message chunk from its fields, in the article's shape (any key of a tool piece may be missing).

    >>> new_chunk("hi", [{"index": 0, "id": "", "name": "read"}])   # doctest: +NORMALIZE_WHITESPACE
    {'content': Pieces(['hi']), 'tool_call_chunks': [{'index': 0, 'id': None, 'name': 'read', 'args': Pieces([])}],
     'usage': None, 'reasoning': Pieces([]), 'finish_reason': None, 'order': ['text', 'tool']}
    """
    chunk: MessageChunk = {
        "content": Pieces() + content,
        "tool_call_chunks": [],
        "usage": usage,
        "reasoning": Pieces() + reasoning,
        "finish_reason": finish_reason,
        "order": [],
    }
    if chunk["content"]:
        chunk["order"].append("text")
    if chunk["reasoning"]:
        chunk["order"].append("thinking")
    for position, piece in enumerate(tool_call_chunks):
        call: ToolCallChunk = {
            "index": piece.get("index", position),  # beyond §2.2: Gemini sends no index
            "id": piece.get("id") or None,  # DashScope's "" on continuations is no id
            "name": piece.get("name") or None,
            "args": Pieces() + (piece.get("args") or ""),
        }
        if add_tool_piece(chunk["tool_call_chunks"], call):
            chunk["order"].append("tool")
    return chunk


def message_chunk(wire_chunk: Mapping[str, Any]) -> MessageChunk:
    """One parsed ``chat.completion.chunk`` (an SSE event's ``data``) → a message chunk.

    Reads the same fields as ``assemble_stream``: ``choices[0].delta``'s content,
    reasoning_content / reasoning and tool_calls, the finish_reason, and usage (top level,
    inside ``choices[0]`` for Moonshot, in ``x_groq`` for Groq).

    >>> message_chunk({"choices": [{"delta": {"content": "我先读一下", "tool_calls": [
    ...     {"index": 0, "id": "t1", "function": {"name": "read", "arguments": "{\\"pa"}}]}}]})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'content': Pieces(['我先读一下']),
     'tool_call_chunks': [{'index': 0, 'id': 't1', 'name': 'read', 'args': Pieces(['{"pa'])}],
     'usage': None, 'reasoning': Pieces([]), 'finish_reason': None, 'order': ['text', 'tool']}
    """
    choices = wire_chunk.get("choices") or []  # usage-only chunks have no choices[0]
    choice = choices[0] if choices else {}
    delta = choice.get("delta") or {}  # Azure sends choices without a delta
    content = delta.get("content")
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    pieces = []
    for tc in delta.get("tool_calls") or []:
        function = tc.get("function") or {}
        piece = {"id": tc.get("id"), "name": function.get("name"), "args": function.get("arguments")}
        if "index" in tc:
            piece["index"] = tc["index"]
        pieces.append(piece)
    reported = wire_chunk.get("usage") or choice.get("usage") or (wire_chunk.get("x_groq") or {}).get("usage")
    usage = None
    if reported:
        usage = empty_usage()
        merge_usage(usage, dict(wire_chunk), choice)
    return new_chunk(
        content=content if isinstance(content, str) else "",  # null on DashScope
        tool_call_chunks=pieces,
        usage=usage,
        reasoning=reasoning if isinstance(reasoning, str) else "",
        finish_reason=choice.get("finish_reason"),
    )


def add_tool_piece(calls: list[ToolCallChunk], piece: ToolCallChunk) -> bool:
    """Merge one tool-call piece into ``calls`` (a list this function may change); True if it
    became a new entry.

    >>> calls = []
    >>> [add_tool_piece(calls, {"index": 0, "id": i, "name": "read", "args": Pieces(a)})
    ...  for i, a in [("k1", "{}"), (None, ""), ("k1", ""), ("k2", "{}")]]   # Ollama: k2 at index 0 too
    [True, False, False, True]
    >>> [(c["id"], c["name"], str(c["args"])) for c in calls]   # "read" taken once
    [('k1', 'read', '{}'), ('k2', 'read', '{}')]
    """
    latest = None  # the latest call at this index
    for position in range(len(calls) - 1, -1, -1):
        if calls[position]["index"] == piece["index"]:
            latest = position
            break
    if latest is None:
        calls.append(piece)
        return True
    call = calls[latest]
    if piece["id"] is not None and piece["id"] != call["id"]:
        # A new id at an occupied index is a new call (Ollama). When the latest call has no
        # id, whether this piece belongs to it is decided at the end (see finished_calls):
        # that call may continue one from an earlier chunk, which concat will join it to.
        calls.append(piece)
        return True
    calls[latest] = {  # a new dict: `call` may belong to the chunk concat was given
        "index": call["index"],
        "id": call["id"],
        "name": call["name"] or piece["name"],  # taken once, never concatenated
        "args": call["args"] + piece["args"],
    }
    return False


# ── §四.2 concat ────────────────────────────────────────────────────────────────────────


def concat(a: Mapping[str, Any], b: Mapping[str, Any]) -> MessageChunk:
    """``a`` followed by ``b``, merged field by field; neither is changed.

    ``a`` and ``b`` are message chunks, or dicts in the article's shape (passed through
    ``new_chunk``). Associative, so any grouping of a stream's chunks gives the same result.

    >>> full = concat(message_chunk({"choices": [{"delta": {"content": "Run"}}]}),
    ...               {"content": " make run.", "finish_reason": "stop"})
    >>> str(full["content"]), full["finish_reason"], full["order"]
    ('Run make run.', 'stop', ['text'])
    """
    a, b = as_message_chunk(a), as_message_chunk(b)
    calls = list(a["tool_call_chunks"])  # one entry per call: short, however long the stream
    order = list(a["order"])
    b_calls = iter(b["tool_call_chunks"])
    for kind in b["order"]:
        if kind == "tool":
            if add_tool_piece(calls, next(b_calls)):
                order.append("tool")
        elif kind not in order:  # the text (or reasoning) block opened in b
            order.append(kind)
    return {
        "content": a["content"] + b["content"],
        "tool_call_chunks": calls,
        "usage": larger_usage(a["usage"], b["usage"]),
        "reasoning": a["reasoning"] + b["reasoning"],
        "finish_reason": a["finish_reason"] if b["finish_reason"] is None else b["finish_reason"],
        "order": order,
    }


def as_message_chunk(chunk: Mapping[str, Any]) -> MessageChunk:
    """A chunk made here is returned as it is; a hand-written one goes through ``new_chunk``."""
    if "order" in chunk:
        return chunk  # type: ignore[return-value]
    return new_chunk(**chunk)


def larger_usage(a: Usage | None, b: Usage | None) -> Usage | None:
    """Two usage reports of one reply: the larger of each count (reports repeat; never sum)."""
    if a is None or b is None:
        return b if a is None else a
    return {key: max(a[key], b[key]) for key in a}  # type: ignore[return-value, literal-required]


# ── §四.3 from chunks to calls ──────────────────────────────────────────────────────────


def finished_calls(full: MessageChunk) -> list[dict[str, Any] | None]:
    """One ``{"id", "name", "args"}`` (args: the joined string) per tool_call_chunks entry.

    None for an entry that joins an earlier call: as in ``assemble_stream``, a call that
    opened without an id takes every later piece at its index, even ones with an id.
    """
    calls: list[dict[str, Any] | None] = []
    opened_without_id: dict[Any, dict[str, Any]] = {}  # index → its call, whose id we make up
    for entry in full["tool_call_chunks"]:
        index = entry["index"]
        earlier = opened_without_id.get(index)
        if earlier is not None:
            earlier["args"] += str(entry["args"])  # rare (a headless call), so a plain string is fine
            earlier["name"] = earlier["name"] or str(entry["name"] or "")
            calls.append(None)
            continue
        call = {"id": str(entry["id"] or f"call_{index}"), "name": str(entry["name"] or ""), "args": str(entry["args"])}
        if entry["id"] is None:
            opened_without_id[index] = call
        calls.append(call)
    return calls


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """A call's joined argument string → (arguments, None), or (None, what is wrong with it).

    >>> parse_arguments('{"path":"README.md"}'), parse_arguments("  ")
    (({'path': 'README.md'}, None), ({}, None))
    >>> parse_arguments('{"path":"README.md"')
    (None, "tool arguments were not valid JSON: Expecting ',' delimiter: line 1 column 20 (char 19)")
    """
    if raw.strip() == "":
        return {}, None  # a parameterless tool
    try:
        arguments = json.loads(raw)
    except ValueError as err:
        return None, f"tool arguments were not valid JSON: {err}"
    if not isinstance(arguments, dict):
        return None, f"tool arguments were not a JSON object: {raw[:200]}"
    return arguments, None


def tool_calls(full: MessageChunk) -> list[ToolCall]:
    """The calls whose arguments parse to a JSON object, in arrival order (LangChain's ``tool_calls``)."""
    result: list[ToolCall] = []
    for call in finished_calls(full):
        if call is not None:
            arguments, error = parse_arguments(call["args"])
            if error is None:
                result.append({"id": call["id"], "name": call["name"], "args": arguments})  # type: ignore[typeddict-item]
    return result


def invalid_tool_calls(full: MessageChunk) -> list[InvalidToolCall]:
    """The calls whose arguments do not parse, with the raw string and the reason.

    >>> full = concat({"tool_call_chunks": [{"index": 0, "id": "t1", "name": "read", "args": '{"path":'}]},
    ...               {"tool_call_chunks": [{"index": 0, "args": '"README.md"'}]})
    >>> tool_calls(full), invalid_tool_calls(full)   # doctest: +NORMALIZE_WHITESPACE
    ([], [{'id': 't1', 'name': 'read', 'args': '{"path":"README.md"',
           'error': "tool arguments were not valid JSON: Expecting ',' delimiter: line 1 column 20 (char 19)"}])
    """
    result: list[InvalidToolCall] = []
    for call in finished_calls(full):
        if call is not None:
            _, error = parse_arguments(call["args"])
            if error is not None:
                result.append({"id": call["id"], "name": call["name"], "args": call["args"], "error": error})
    return result


# ── the article's loop, and the assistant message assemble_stream would give ───────────


def assemble_by_concat(body: Iterable[bytes]) -> MessageChunk:
    """The second article's loop over a raw SSE body: parse, convert, fold with concat.

    Raises ProviderError where ``assemble_stream`` does: an error reported in the stream,
    or a stream that ends with neither a finish_reason nor ``[DONE]`` (first article §4.1).
    """
    full: MessageChunk | None = None
    saw_done = False
    for sse in parse_sse(guarded(body)):
        if sse["data"] == DONE:
            saw_done = True  # the end marker; nothing follows it
            break
        check_chunk(sse)
        chunk = message_chunk(sse["data"])
        full = chunk if full is None else concat(full, chunk)  # the article's one line
    if full is None:
        full = new_chunk()
    if full["finish_reason"] is None and not saw_done:
        raise ProviderError("OpenAI stream ended without finish_reason — response may be truncated")
    return full


def to_assistant_message(full: MessageChunk) -> AssistantMessage:
    """The assistant message ``assemble_stream``'s message_end carries for the same stream.

    Blocks in arrival order; unparseable arguments become ``safe_parse_json``'s error
    record, as there (the loop then refuses to run that call: beyond §4.3, where Ink passes it on).

    >>> to_assistant_message(concat({"content": "Run", "tool_call_chunks": [{"index": 0, "id": "t1",
    ...     "name": "ls"}]}, {"finish_reason": "tool_calls"}))   # doctest: +NORMALIZE_WHITESPACE
    {'role': 'assistant', 'blocks': [{'type': 'text', 'text': 'Run'},
     {'type': 'toolCall', 'id': 't1', 'name': 'ls', 'arguments': {}}],
     'usage': {'inputTokens': 0, 'outputTokens': 0, 'cacheReadTokens': 0}, 'stopReason': 'tool_use'}
    """
    blocks: list[AssistantBlock] = []
    calls = iter(finished_calls(full))
    for kind in full["order"]:
        if kind == "text":
            blocks.append({"type": "text", "text": str(full["content"])})
        elif kind == "thinking":
            blocks.append({"type": "thinking", "thinking": str(full["reasoning"])})
        else:
            call = next(calls)
            if call is not None:
                block: ToolCallBlock = {"type": "toolCall", "id": call["id"], "name": call["name"], "arguments": {}}
                finish_tool_arguments(block, [call["args"]])
                blocks.append(block)
    usage = empty_usage() if full["usage"] is None else dict(full["usage"])
    return finished_message(blocks, usage, map_finish_reason(full["finish_reason"]))  # type: ignore[arg-type]
