"""The streams every benchmark reads: realistic Chat Completions SSE bodies, made on the spot.

Four shapes, each at several sizes, all deterministic (a fixed random seed):

    chunks     OpenAI-style ``chat.completion.chunk`` frames — a role frame, text deltas of
               one token each, two tool calls whose arguments arrive a token at a time, a
               finish frame, a usage frame, ``data: [DONE]`` — read 1 KiB at a time
    per-event  the same frames, one SSE event per read: what a reader mostly gets from a
               real server, which flushes each event as it is written
    huge-args  one frame carrying a whole tool call whose ``arguments`` string is megabytes
               long (a model writing a big file), read 64 bytes at a time
    bytewise   the ``chunks`` stream fed one byte per read (slow for everyone: smaller sizes)

Every frame looks like what api.openai.com sends (compact JSON, UTF-8 not escaped)::

    data: {"id":"chatcmpl-…","object":"chat.completion.chunk","created":1747000000,
           "model":"gpt-4o-2024-08-06","system_fingerprint":"fp_07871e2ad8",
           "choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,
           "finish_reason":null}],"usage":null}

The text mixes English, Chinese (three bytes a character, so reads cut characters in half),
quotes and newlines (escaped in JSON). A stream is a plain dict; ``reads(stream)`` cuts its
body into the reads a socket would hand over (``read_ends``: where each read ends).

    >>> s = make_stream("chunks", 20_000)
    >>> s["body"].startswith(b'data: {"id":"chatcmpl-') and s["body"].endswith(b"data: [DONE]\\n\\n")
    True
    >>> len(s["body"]) >= 20_000, len(s["frame_ends"]) == len(s["events_per_frame"])
    (True, True)
    >>> [len(r) for r in reads(s)][:3], b"".join(reads(s)) == s["body"]
    ([1024, 1024, 1024], True)
    >>> e = make_stream("per-event", 20_000); reads(e)[1] == e["body"][e["frame_ends"][0] : e["frame_ends"][1]]
    True
    >>> [name for _, name, _ in s["tools"]], s["text"][:20] == make_stream("chunks", 20_000)["text"][:20]
    (['write', 'write'], True)
"""

from __future__ import annotations

import json
import random
from typing import Any, TypedDict

SHAPES = ("chunks", "per-event", "huge-args", "bytewise")
READ_SIZES = {"chunks": 1024, "per-event": None, "huge-args": 64, "bytewise": 1}  # None: one SSE event a read
SHAPE_TITLES = {
    "chunks": "chat.completion.chunk stream, 1 KiB reads",
    "per-event": "chat.completion.chunk stream, one event per read",
    "huge-args": "one huge tool-argument event, 64-byte reads",
    "bytewise": "chat.completion.chunk stream, 1-byte reads",
}
# Sizes of the other shapes, as a fraction of the --sizes given for "chunks".
SIZE_SCALE = {"chunks": 1.0, "per-event": 1.0, "huge-args": 1 / 4, "bytewise": 1 / 64}

MiB = 1 << 20
DONE_FRAME = b"data: [DONE]\n\n"

# Tokens a model might emit: English words, Chinese words, punctuation, quotes, newlines.
WORDS = (
    " the", " stream", " reads", " each", " event", " as", " soon", " as", " it", " is", " complete",
    " and", " the", " buffer", " keeps", " what", " remains", ",", ".", " —", " (", ")", ":",
    " parse", "_sse", " tool", " call", " arguments", " index", " 0", " 1", " 42", " `", "read", "`",
    "流式", "响应", "与", "组装", "事件", "解析", "工具", "参数", "片段", "完整", "，", "。", "：",
    "\n", "\n\n", ' "', 'quoted', '"', " \\", "path", "/", "README", ".md", "\t", " ✓",
)  # fmt: skip

ESCAPED = {word: json.dumps(word, ensure_ascii=False)[1:-1] for word in WORDS}  # as inside a JSON string
# What a word adds to a frame when it sits in a JSON string that is itself inside the frame's JSON.
TWICE_ESCAPED_BYTES = {word: len(json.dumps(ESCAPED[word], ensure_ascii=False).encode()) - 2 for word in WORDS}


class Stream(TypedDict):
    shape: str
    body: bytes  # the whole SSE body
    read_size: int | None  # bytes per read (the last read may be shorter); None: one frame per read
    read_ends: list[int]  # byte offset just past each read
    frame_ends: list[int]  # byte offset just past each frame's blank line
    events_per_frame: list[int]  # how many LLMEvents assemble_stream yields for each frame
    text: str  # the reply's text, as it should come out
    tools: list[tuple[str, str, str]]  # each tool call: (id, name, raw JSON arguments)


def chunk(delta: dict[str, Any], finish_reason: str | None = None, *, usage: Any = None) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with every field OpenAI sends."""
    return {
        "id": "chatcmpl-BZ8aF2Zk0mR5sQd1vW3xY7uT9pLnE",
        "object": "chat.completion.chunk",
        "created": 1747000000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_07871e2ad8",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        "usage": usage,
    }


def fragment_frame(index: int, arguments: str) -> bytes:
    return frame(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}))


def frame(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def make_stream(shape: str, size: int, seed: int = 7) -> Stream:
    """A stream of ``shape`` whose body is at least ``size`` bytes (a few hundred over, at most)."""
    rng = random.Random(seed)
    if shape == "huge-args":
        return _huge_args_stream(size, rng)
    frames: list[bytes] = []
    events: list[int] = []  # LLMEvents each frame produces in ink_py (for the reads check)
    total = 0

    def add(data: bytes, n_events: int) -> None:
        nonlocal total
        frames.append(data)
        events.append(n_events)
        total += len(data)

    add(frame(chunk({"role": "assistant", "content": "", "refusal": None})), 0)
    text: list[str] = []
    while total < size // 2:  # half of the body: text, one token per frame
        token = rng.choice(WORDS)
        text.append(token)
        add(frame(chunk({"content": token})), 1)
    tools = []
    for index, until in ((0, size * 3 // 4), (1, size)):  # then two tool calls, a quarter each
        call_id = f"call_{rng.getrandbits(64):016x}"
        start = {"index": index, "id": call_id, "type": "function", "function": {"name": "write", "arguments": ""}}
        add(frame(chunk({"tool_calls": [start]})), 1)
        fragments = ['{"path":"notes/stream-', f"{index}.md", '","content":"']
        for piece in fragments:
            add(fragment_frame(index, piece), 1)
        closing = fragment_frame(index, '"}')
        while total + len(closing) < until:
            piece = ESCAPED[rng.choice(WORDS)]  # a token inside the JSON string: escaped, unquoted
            fragments.append(piece)
            add(fragment_frame(index, piece), 1)
        fragments.append('"}')
        add(closing, 1)
        tools.append((call_id, "write", "".join(fragments)))
    add(frame(chunk({}, "tool_calls")), 0)
    usage = {"prompt_tokens": 1200, "completion_tokens": len(frames), "total_tokens": 1200 + len(frames)}
    add(frame({**chunk({}, usage=usage), "choices": []}), 0)  # usage arrives in a chunk without choices
    add(DONE_FRAME, 1)  # [DONE]: assemble_stream yields message_end
    return _stream(shape, frames, events, "".join(text), tools)


def _huge_args_stream(size: int, rng: random.Random) -> Stream:
    words: list[str] = []
    length = 0
    while length < size:
        words.append(rng.choice(WORDS))
        length += TWICE_ESCAPED_BYTES[words[-1]]
    arguments = json.dumps({"path": "notes/big.md", "content": "".join(words)}, ensure_ascii=False)
    call = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "write", "arguments": arguments}}
    frames = [
        frame(chunk({"role": "assistant", "content": None, "tool_calls": [call]})),
        frame(chunk({}, "tool_calls")),
        DONE_FRAME,
    ]
    return _stream("huge-args", frames, [2, 0, 1], "", [("call_0", "write", arguments)])


def _stream(shape: str, frames: list[bytes], events: list[int], text: str, tools: list) -> Stream:
    ends = []
    offset = 0
    for data in frames:
        offset += len(data)
        ends.append(offset)
    n = READ_SIZES[shape]
    return {
        "shape": shape,
        "body": b"".join(frames),
        "read_size": n,
        "read_ends": ends if n is None else [*range(n, offset, n), offset],
        "frame_ends": ends,
        "events_per_frame": events,
        "text": text,
        "tools": tools,
    }


def size_label(n: int) -> str:
    """``1 MiB``, ``256 KiB``: sizes as the tables print them."""
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n / 1024:g} KiB"


def reads(stream: Stream) -> list[bytes]:
    """The body cut at ``read_ends``, as a socket would hand it over."""
    body, ends = stream["body"], stream["read_ends"]
    return [body[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def payloads(stream: Stream) -> list[Any]:
    """Every frame's ``data`` as parsed JSON, up to (not including) ``[DONE]``: what a parser must yield."""
    body, start, out = stream["body"], 0, []
    for end in stream["frame_ends"]:
        data = body[start + 6 : end - 2]  # between "data: " and the blank line
        if data != b"[DONE]":
            out.append(json.loads(data))
        start = end
    return out
