"""How the scripted model writes on the wire, whatever the dialect: replies, frames, the reads they make.

``chat_wire``, ``messages_wire`` and ``responses_wire`` write a reply (``turn.Turn``) as each
provider's events; this module holds what they share. Sections: the ``Reply`` the server sends
(JSON, SSE, errors in each dialect's shape); the bytes (compact JSON, text pieces, §2.1's
argument fragments, OpenAI's ``obfuscation`` padding, LF SSE frames); and the writes: one event
per write, as real servers flush them, except the two cuts §2.1 talks about
(``article_writes``); an article scenario's reply is cut by ``split_awkwardly`` instead, where a
careless SSE reader breaks::

    >>> argument_fragments('{"path":"README.md"}')   # §2.1: `{"path":"REA`, then `DME.md"}`
    ['{"path":"REA', 'DME.md"}']
    >>> split_awkwardly("data: 读\\r\\n\\r\\n".encode(), stride=5)   # a cut inside 读, and between CR and LF
    [b'data:', b' \\xe8', b'\\xaf\\xbb\\r', b'\\n\\r', b'\\n']
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any, TypedDict

from .script import MODEL_ID, digest

CHAT, MESSAGES, RESPONSES = "openai-completions", "anthropic-messages", "openai-responses"  # the dialects
SSE_TYPE = "text/event-stream"
JSON_TYPE = "application/json"

TEXT_PIECE = 5  # characters per text delta
VALUE_HEAD = 3  # §2.1: the first argument fragment ends this many characters into the path (`{"path":"REA`)
ARGUMENT_PIECE = 24  # characters per later argument fragment (a long path comes in several)
SPLIT_STRIDE = 64  # bytes between the regular cuts of split_awkwardly
SLOW_SECONDS = 20.0  # the slow scenario's length, whatever the server's delay
SLOW_PIECE = 2


class Reply(TypedDict):
    """What the server sends: everything but the sockets and the clock."""

    status: int
    content_type: str
    writes: list[bytes]  # SSE bodies go out as chunked writes, one HTTP chunk each
    pause: float | None  # seconds between writes; None means the server's --delay
    hold: bool


# ── replies ─────────────────────────────────────────────────────────────────────────────


def sse_reply(frames: list[bytes], *, slow: bool, hold: bool, scenario: bool, half_event: bytes = b"") -> Reply:
    """A streamed reply: one event per write with §2.1's two cuts (``article_writes``); an article
    scenario's cut awkwardly instead (``split_awkwardly``); the slow scenario's whole frames, slowly."""
    if slow:
        return _reply(200, SSE_TYPE, frames, pause=SLOW_SECONDS / len(frames))
    if scenario:
        return _reply(200, SSE_TYPE, split_awkwardly(b"".join(frames)), hold=hold)
    return _reply(200, SSE_TYPE, article_writes(frames, half_event), hold=hold)


def error_body(message: str) -> dict[str, Any]:
    """OpenAI's error shape."""
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def error_reply(
    status: int, message: str, dialect: str = CHAT, param: str | None = None, code: str | None = None
) -> Reply:
    """The dialect's error shape: OpenAI's for Chat Completions and Responses, Anthropic's for Messages."""
    if dialect == MESSAGES:
        return json_reply(status, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
    return json_reply(status, {"error": {**error_body(message)["error"], "param": param, "code": code}})


def reply_model(body: dict[str, Any]) -> str:
    """The model a reply names: the request's ``model`` when it is a non-empty string, else ours."""
    model = body.get("model")
    return model if isinstance(model, str) and model else MODEL_ID


def json_reply(status: int, value: Any) -> Reply:
    return _reply(status, JSON_TYPE, [json_bytes(value)])


def _reply(
    status: int, content_type: str, writes: list[bytes], pause: float | None = None, hold: bool = False
) -> Reply:
    return {"status": status, "content_type": content_type, "writes": writes, "pause": pause, "hold": hold}


# ── bytes: JSON, pieces, frames, usage ──────────────────────────────────────────────────


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON, as the APIs send it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def pieces(text: str, size: int) -> list[str]:
    """``text`` in ``size``-character pieces: the deltas a model streams."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def argument_fragments(arguments: str) -> list[str]:
    """A call's JSON arguments as the model streams them: the first fragment ends ``VALUE_HEAD``
    characters into the first string value, as §2.1's ``{"path":"REA``; the rest follows in
    ``ARGUMENT_PIECE``-character fragments (one, ``DME.md"}``, for README.md).

    >>> argument_fragments('{"path":"docs/guide/installing.md"}')
    ['{"path":"doc', 's/guide/installing.md"}']
    >>> argument_fragments("")
    ['']
    """
    opening = arguments.find('":"')
    head = opening + 3 + VALUE_HEAD if opening != -1 else ARGUMENT_PIECE
    return [arguments[:head], *pieces(arguments[head:], ARGUMENT_PIECE)]


def padding(seed: str, number: int) -> str:
    """An event's ``obfuscation``: OpenAI pads each streamed delta with a few random characters so
    that lengths do not tell the tokens; here a few deterministic ones.

    >>> padding("chatcmpl-1", 0), padding("chatcmpl-1", 3)
    ('69', 'dcfc8')
    """
    return digest([seed, number])[: 2 + number % 9]


def sse_frame(data: bytes) -> bytes:
    """One SSE event, LF line endings, as OpenAI and Anthropic send them."""
    return b"data: " + data + b"\n\n"


def event_frame(name: str, data: dict[str, Any]) -> bytes:
    """One named SSE event (the Messages and Responses way).

    >>> event_frame("ping", {"type": "ping"})
    b'event: ping\\ndata: {"type":"ping"}\\n\\n'
    """
    return b"event: " + name.encode() + b"\n" + sse_frame(json_bytes(data))


# ── splitting: the writes, and the reads they become ────────────────────────────────────


def article_writes(frames: list[bytes], half_event: bytes = b"") -> list[bytes]:
    """One write per event, as a real server flushes them, with the two cuts §2.1 walks through:
    the first event holding ``half_event`` arrives in two reads, cut right after it (for Chat
    Completions ``"tool_calls":[{"index":0,``: §2.1's first read ends there), and the first
    event with a multi-byte character arrives cut inside it (what the decoder's ``stream: true``
    is for). Joined, the writes give the frames back.

    >>> frames = [b'data: {"a":"\\xe8\\xaf\\xbb"}\\n\\n', b'data: {"b":[{"index":0,"c":1}]}\\n\\n']
    >>> article_writes(frames, b'[{"index":0,')
    [b'data: {"a":"\\xe8', b'\\xaf\\xbb"}\\n\\n', b'data: {"b":[{"index":0,', b'"c":1}]}\\n\\n']
    """
    writes: list[bytes] = []
    halved = character_cut = False
    for frame in frames:
        at = frame.find(half_event) if half_event and not halved else -1
        if at != -1:
            halved = True
            at += len(half_event)
        elif not character_cut:
            at = next((i + 1 for i, byte in enumerate(frame) if byte >= 0xC0), -1)  # inside a character
            character_cut = at != -1
        writes += [frame[:at], frame[at:]] if at != -1 else [frame]
    return writes


def split_awkwardly(data: bytes, stride: int = SPLIT_STRIDE) -> list[bytes]:
    """Cut ``data`` into writes at awkward places; joined, they give ``data`` back.

    Cuts fall every ``stride`` bytes (inside keys, numbers, JSON strings), after the first
    byte of each line's first multi-byte UTF-8 character, and between the CR and LF of
    every CRLF — each a place where a careless SSE reader breaks.
    """
    cuts = set(range(stride, len(data), stride))
    offset = 0
    for line in data.splitlines(keepends=True):  # bytes split only at CR, LF and CRLF
        lead = next((i for i, byte in enumerate(line) if byte >= 0xC0), None)  # a multi-byte character starts
        if lead is not None:
            cuts.add(offset + lead + 1)  # its bytes arrive in two writes
        if line.endswith(b"\r\n"):
            cuts.add(offset + len(line) - 1)  # the CR ends one write, the LF opens the next
        offset += len(line)
    points = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in pairwise(points) if b > a]  # never an empty write: it would end the body
