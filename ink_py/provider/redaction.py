"""The API key, never shown: in any form a server or a library may quote it — beyond the article.

A library quotes a header it refuses with ``repr`` (``'Bearer sk-…\\r'``); a server may echo
the key JSON-escaped (``\\u0073k-…``, ``\\/``) or percent-encoded. ``secret_pattern`` matches
the key written in any of those forms, in any mix; ``redact`` replaces it in a message,
``redact_reads`` in the body's bytes (before anything reads them, ``--record`` too);
``redacted_events`` is the stage every reply passes (HttpProvider.stream): what the parser
*decoded* — each text, reasoning and argument delta, a tool's name and id, the finished
message — is redacted too, and a delta whose end could be the start of the key is held back
until the next delta of the same kind says whether it is.

    >>> redact("Invalid header value: 'Bearer sk-SECRET\\\\r'", "sk-SECRET")
    "Invalid header value: 'Bearer ***\\\\r'"
    >>> redact('{"error": "bad key \\\\u0073k-SECR\\\\u0045T"}', "sk-SECRET")
    '{"error": "bad key ***"}'
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import AnyStr, TypeVar

from .types import LLMEvent

MASK = "***"
T = TypeVar("T")


@functools.lru_cache(maxsize=8)
def secret_pattern(secret: str) -> re.Pattern[str]:
    """A regex matching ``secret`` with each character as itself or escaped: ``\\\\u0073``,
    ``\\\\x73``, a backslash before it (``\\\\/``, and doubled, as in a repr of JSON) or ``%73``
    (hex digits in either case).

    >>> bool(secret_pattern("a/b").fullmatch("\\\\u0061\\\\\\\\/%62"))
    True
    """
    return re.compile("".join(_character_forms(char) for char in secret))


@functools.lru_cache(maxsize=8)
def secret_pattern_bytes(secret: str) -> re.Pattern[bytes]:
    """``secret_pattern`` for bytes: the same forms, a character written as its UTF-8 bytes."""
    return re.compile("".join(_character_forms(char, binary=True) for char in secret).encode("utf-8"))


def _character_forms(char: str, binary: bool = False) -> str:
    code = ord(char)
    itself = "".join(f"\\x{byte:02x}" for byte in char.encode("utf-8")) if binary else re.escape(char)
    forms = [itself, r"\\+" + itself]
    if code < 0x10000:
        forms.append(r"\\+u" + _hex(code, 4))
    if code < 0x100:
        forms.append(r"\\+x" + _hex(code, 2))
    forms.append("".join("%" + _hex(byte, 2) for byte in char.encode("utf-8")))
    return "(?:" + "|".join(forms) + ")"


def _hex(number: int, width: int) -> str:
    """A regex for ``number`` in ``width`` hex digits of either case: 0x2f → ``2[fF]``."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{number:0{width}x}")


def redact(text: str, secret: str | None) -> str:
    """``text`` with the key, in any quoted or escaped form, replaced by ``***``.

    >>> redact("Bearer sk-1 refused", "sk-1")
    'Bearer *** refused'
    """
    if not secret or not text:
        return text
    if secret in text:
        text = text.replace(secret, MASK)
    if "\\" not in text and "%" not in text:
        return text  # no escaped form can be in it: the usual case, cheap
    return secret_pattern(secret).sub(MASK, text)


def map_strings(value: T, change: Callable[[str], str]) -> T:
    """A copy of ``value`` (an event, a finished message, tool arguments: plain dicts, lists and
    strings) with ``change`` applied to every string in it, the keys of objects too.

    >>> map_strings({"a": ["b", 1, {"c": "d"}]}, str.upper)
    {'A': ['B', 1, {'C': 'D'}]}
    """
    if isinstance(value, str):
        return change(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {map_strings(key, change): map_strings(item, change) for key, item in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]  # type: ignore[return-value]
    return value


def partial_key_suffix(data: AnyStr, key: AnyStr) -> int:
    """Length of the longest end of ``data`` that is a proper start of ``key``: what must wait
    for the next read (or delta) to say whether it is the key.

    >>> partial_key_suffix("your key is sk-SEC", "sk-SECRET"), partial_key_suffix(b"data", b"sk")
    (6, 0)
    """
    tail = data[len(data) - len(key) + 1 :] if len(data) >= len(key) else data
    first = key[:1]
    start = tail.find(first)
    while start != -1:
        if key.startswith(tail[start:]):
            return len(tail) - start
        start = tail.find(first, start + 1)
    return 0


# ── the bytes: redact_reads ─────────────────────────────────────────────────────────────


def redact_reads(reads: Iterable[bytes], secret: str | None) -> Iterator[bytes]:
    """Pass reads on with the key replaced by ``***`` — as it is even when split across two
    reads, escaped (``\\u0073k-…``) within one — before parser, recording, display, trace or relay see them.

    Only a read's tail that could be the start of the key is held back for the next read,
    so a complete event is never delayed.

    >>> list(redact_reads([b"data: sk-SEC", b"RET\\n\\n"], "sk-SECRET"))
    [b'data: ', b'***\\n\\n']
    """
    if not secret:
        yield from reads
        return
    key, pattern = secret.encode("utf-8"), secret_pattern_bytes(secret)
    held = b""
    for read in reads:
        data = (held + read).replace(key, b"***")
        if b"\\" in data or b"%" in data:  # an escaped form needs one of them
            data = pattern.sub(b"***", data)
        keep = partial_key_suffix(data, key)
        held = data[len(data) - keep :] if keep else b""
        if len(data) > keep:
            yield data[: len(data) - keep]
    if held:
        yield held  # the body ended on what only looked like the start of the key


# ── the decoded events: redacted_events ─────────────────────────────────────────────────

# The delta events and the field of each that carries text, and the channel a held-back
# piece waits in: the text, the reasoning, or one call's arguments.
DELTA_FIELDS = {"text_delta": "text", "thinking_delta": "text", "tool_call_delta": "jsonDelta"}


def redacted_events(events: Iterable[LLMEvent], secret: str | None) -> Iterator[LLMEvent]:
    """Pass ``events`` on with the key redacted from every string the parser decoded.

    A key spread over several deltas of one kind (a model repeats it token by token) is
    caught: a delta's end that could begin the key waits for the next delta of its channel.
    Any other event first releases what waits, so the order of what is shown never changes;
    the finished message is redacted whole.

    >>> deltas = [{"type": "text_delta", "text": "it is sk-SE"}, {"type": "text_delta", "text": "CRET."}]
    >>> [event["text"] for event in redacted_events(deltas, "sk-SECRET")]
    ['it is ', '***.']
    """
    if not secret:
        yield from events
        return
    held: dict[tuple[str, str], str] = {}  # (event type, call id) → the text waiting
    for event in events:
        kind = event["type"]
        name = DELTA_FIELDS.get(kind)
        if name is None:  # tool_call_start, message_end: released after what waits, redacted whole
            yield from release(held, secret)
            yield map_strings(event, lambda text: redact(text, secret))
            continue
        channel: tuple[str, str] = (kind, event.get("id", ""))  # type: ignore[assignment]  # ids are str
        if held and (len(held) > 1 or channel not in held):
            yield from release(held, secret, keep=channel)  # another channel's piece comes first
        piece = event[name]  # type: ignore[literal-required]
        text = redact(held.pop(channel) + piece if held else piece, secret)
        wait = partial_key_suffix(text, secret)
        if wait:
            held[channel], text = text[-wait:], text[:-wait]
        if text is piece and redact(channel[1], secret) is channel[1]:
            yield event  # the usual delta: nothing to change
        elif text:
            yield delta_event(kind, channel[1], text, secret)
    # a stream that ended without message_end drops what waits: it only looked like the key's start


def release(held: dict[tuple[str, str], str], secret: str, keep: tuple[str, str] | None = None) -> Iterator[LLMEvent]:
    """The held-back pieces of every channel but ``keep``, as the deltas they came in."""
    for channel in [c for c in held if c != keep]:
        yield delta_event(*channel, held.pop(channel), secret)


def delta_event(kind: str, call_id: str, text: str, secret: str) -> LLMEvent:
    """A text, reasoning or arguments delta carrying ``text`` (already redacted)."""
    if kind == "tool_call_delta":
        return {"type": "tool_call_delta", "id": redact(call_id, secret), "jsonDelta": text}
    if kind == "thinking_delta":
        return {"type": "thinking_delta", "text": text}
    return {"type": "text_delta", "text": text}
