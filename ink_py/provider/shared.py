"""Reading a streamed reply: bytes → SSE events — mirrors Ink's ``src/provider/shared.ts``.

Sections: the article's four — §2.1 ``parse_sse`` (bytes → frames) and ``parse_frame`` (a
frame → ``{"event", "data"}``), §4.2 ``abort_safe``, §4.3 ``safe_parse_json`` — then the guards
around them, each its own stage (beyond §2.1): ``guarded`` (line ends, a BOM, MAX_EVENT_BYTES
on one event and MAX_BODY_BYTES on the whole body, a body that ends inside an event) and
``sniffed`` (a 200 body that is not SSE); a key the server echoes is redacted before
(redaction.py). walkthrough.md §2.1 and docs/hardening.md explain them. §2.1's event in two reads::

    >>> reads = [b'data: {"choices":[{"delta":{"tool_calls":[{"index":0,',
    ...          b'"id":"t1","function":{"name":"read","arguments":"{\\\\"path\\\\":\\\\"REA"}}]}}]}\\n\\n']
    >>> [event] = parse_sse(reads)
    >>> event["event"], event["data"]["choices"][0]["delta"]["tool_calls"][0]["function"]
    ('message', {'name': 'read', 'arguments': '{"path":"REA'})
"""

from __future__ import annotations

import codecs
import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypedDict, TypeVar

from ..core.abort import NEVER_ABORTED, AbortSignal
from .types import ProviderError

T = TypeVar("T")

DONE = "[DONE]"  # Chat Completions' end marker: `data: [DONE]` (an API convention, not SSE's)
MAX_EVENT_BYTES = 32 * 1024 * 1024  # beyond §2.1: most bytes one unfinished event may hold
MAX_REPLY_BYTES = 64 * 1024 * 1024  # beyond §2: most one reply's text, reasoning and arguments may hold (base.py)
MAX_BODY_BYTES = 128 * 1024 * 1024  # beyond §2.1: most bytes one reply's body may hold, whatever it holds
MAX_ARGUMENT_DEPTH = 100  # beyond §4.3: tool arguments nested deeper are refused, not parsed into a crash
MAX_QUOTE_CHARS = 200  # how much of a server's bad payload an error message quotes


class SseEvent(TypedDict):
    event: str  # "message" unless the frame had an `event:` line
    data: Any  # the parsed JSON, or the string DONE


# ── §2.1 parse_sse and parse_frame ──────────────────────────────────────────────────────


def parse_sse(body: Iterable[bytes]) -> Iterator[SseEvent]:
    """Yield each SSE event of ``body`` (any iterable of bytes) as soon as it is complete.

    The article's loop, LF line ends only: ``guarded(body)`` hands it any body a server sends.

    >>> list(parse_sse([b'data: {"a": 1}\\n\\ndata: [DO', b'NE]\\n\\n']))
    [{'event': 'message', 'data': {'a': 1}}, {'event': 'message', 'data': '[DONE]'}]
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")  # TextDecoder with stream: true: bytes → text
    buffer = ""  # between reads: the text that has not yet formed a complete event
    for chunk in body:
        searched = len(buffer) - 1  # beyond §2.1: the old text holds no "\n\n", so only the new is searched
        buffer += decoder.decode(chunk)  # a character split across reads waits for its rest
        start = 0
        sep = buffer.find("\n\n", max(searched, 0))  # a blank line ends an event
        while sep != -1:
            frame = buffer[start:sep]  # one event's lines, without the blank line
            start = sep + 2  # from here on: what has not yet formed a complete event
            parsed = parse_frame(frame)
            if parsed is not None:  # parse_frame gives None for a comment or a keep-alive
                yield parsed  # at once, in the read that completed it
            sep = buffer.find("\n\n", start)
        buffer = buffer[start:]  # keep the rest: one copy per read, not one per frame, so linear time


def parse_frame(frame: str) -> SseEvent | None:
    """Parse one event's lines; None for frames that carry nothing (comments, keep-alives).

    >>> parse_frame('event: delta\\ndata: {"x":\\ndata: 1}')
    {'event': 'delta', 'data': {'x': 1}}
    >>> parse_frame(': keep-alive') is None
    True
    """
    event = "message"  # the default SSE event name when there is no `event:` line
    data_lines: list[str] = []
    error_lines: list[str] = []
    for line in frame.split("\n"):  # one field per line
        field, _, value = line.partition(":")  # beyond §2.1: WHATWG's fields; a ": …" line is a comment
        value = value.removeprefix(" ")  # exactly one space is stripped (WHATWG; Ink trims them all)
        if field == "event":
            event = value or "message"  # an empty `event:` names no event
        elif field == "data":
            data_lines.append(value)  # collect every data: line
        elif field == "error":  # beyond §2.1: older llama.cpp sends `error: {...}` this way
            error_lines.append(value)  # id:, retry: and unknown fields are ignored
    if error_lines:
        event, data_lines = "error", error_lines  # error: lines make an "error" event of their text
    data = "\n".join(data_lines)  # several data: lines are joined with "\n"
    if not data:
        return None  # beyond §2.1: no data, or an empty `data:` (a keep-alive)
    try:
        return {"event": event, "data": FINITE_JSON.decode(data)}  # beyond §4.1: FINITE_JSON refuses NaN, Infinity
    except (ValueError, RecursionError) as err:  # beyond §4.1: Ink skips what is not JSON; not_json says why
        return not_json(frame, event, data, err)  # [DONE] and an error: line's text come back; the rest raises


# ── §4.2 abort_safe and §4.3 safe_parse_json ────────────────────────────────────────────


def abort_safe(source: Iterable[T], signal: AbortSignal | None) -> Iterator[T]:
    """Pass items through; if reading fails *because the user aborted*, just stop.

    An abort closes the connection, so the pending read fails. That failure is the
    cancellation itself, not a fault: end quietly. Any other error propagates.
    """
    signal = signal or NEVER_ABORTED  # signal may be None: TypeScript's `signal?.`
    try:
        yield from source  # `for await (const item of source) yield item`
    except Exception:
        if signal.aborted:
            return  # aborted: end the event stream
        raise  # any other read error goes up to the caller


def safe_parse_json(raw: str) -> Any:
    """``json.loads`` that never raises: bad JSON becomes an error record (article 4.3).

    >>> safe_parse_json('{"path":"README.md"}')
    {'path': 'README.md'}
    >>> safe_parse_json('{"path":"README.md"')
    {'_parseError': 'tool arguments were not valid JSON', 'raw': '{"path":"README.md"'}
    """
    try:
        value = FINITE_JSON.decode(raw)  # beyond §4.3: FINITE_JSON refuses NaN/Infinity: the history stays valid JSON
    except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return {"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}
    if nesting_depth(value) > MAX_ARGUMENT_DEPTH:  # beyond §4.3: json.dumps of it would overflow the stack
        return {"_parseError": f"tool arguments were nested more than {MAX_ARGUMENT_DEPTH} deep", "raw": raw[:500]}
    return value


# ── beyond §2.1: JSON a server may send, and what is not JSON ───────────────────────────


def _not_finite(name: str) -> Any:
    raise ValueError(f"not a finite number: {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses as inf
        raise ValueError(f"not a finite number: {text[:40]}")
    return value


# json.loads, refusing NaN, Infinity and numbers too large for a float (ValueError).
FINITE_JSON = json.JSONDecoder(parse_constant=_not_finite, parse_float=_finite_float)


def loads_finite(text: str) -> Any:
    """``json.loads`` refusing NaN, Infinity and numbers too large for a float (ValueError).

    >>> loads_finite('{"prompt_tokens": 3}')
    {'prompt_tokens': 3}
    >>> loads_finite('{"prompt_tokens": NaN}')
    Traceback (most recent call last):
    ValueError: not a finite number: NaN
    """
    return FINITE_JSON.decode(text)


def not_json(frame: str, event: str, data: str, err: Exception) -> SseEvent:
    """What ``parse_frame`` makes of data that is not JSON: the ``[DONE]`` end marker, an
    ``error:`` line's plain text, or — anything else — ProviderError quoting the frame.

    >>> not_json("data: [DONE]", "message", "[DONE]", ValueError())
    {'event': 'message', 'data': '[DONE]'}
    """
    if data.strip() == DONE:
        return {"event": event, "data": DONE}  # the end marker, not a bad frame (§4.1)
    if event == "error":
        return {"event": "error", "data": data}  # a server's error in words: raise_if_server_error says it
    why = "nested too deep" if isinstance(err, RecursionError) else str(err)
    raise ProviderError(f"the server sent an event whose data is not JSON: {quote(frame)} ({why})") from None


def nesting_depth(value: Any) -> int:
    """How deep lists and objects nest in ``value``, found without recursion.

    >>> nesting_depth({"a": [1, {"b": []}]}), nesting_depth("x")
    (4, 0)
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest


def quote(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    """``repr`` of the start of ``text``, for an error message: never the whole of a huge payload.

    >>> quote("x" * 300, 5)
    "'xxxxx' … (300 characters)"
    """
    return repr(text[:limit]) + (f" … ({len(text)} characters)" if len(text) > limit else "")


# ── beyond §2.1: guarded — the body as parse_sse expects it ─────────────────────────────

BOM = b"\xef\xbb\xbf"


def guarded(body: Iterable[bytes]) -> Iterator[bytes]:
    """``body``'s reads for the article's ``parse_sse``, each handed on as it arrives.

    What the article leaves out, by the WHATWG event-stream rules and for servers that break
    them: a byte-order mark at the very start is dropped; CR and CRLF line ends become LF,
    also a CRLF split across two reads; one unfinished event may hold at most
    ``MAX_EVENT_BYTES``, the whole body ``MAX_BODY_BYTES`` (what no event reports, such as
    endless blocks that stay empty, is bounded too); a body that ends inside an event gets its
    blank line, so the event is parsed, not dropped — or, if it does not parse, the stream was
    cut and says so.

    >>> list(guarded([b"\\xef\\xbb\\xbfdata: 1\\r", b"\\n\\r\\ndata: [DONE]"]))
    [b'data: 1\\n', b'\\ndata: [DONE]', b'\\n\\n']
    """
    limit, body_limit = MAX_EVENT_BYTES, MAX_BODY_BYTES  # read at each call: a test may lower them
    reads = iter(body)
    head = b""
    for data in reads:  # the very start: a byte-order mark, perhaps split across reads
        head += data
        if len(head) >= len(BOM) or not BOM.startswith(head):
            break
    after_cr = False  # the last read ended with "\r": a "\n" opening the next is its CRLF's
    after_lf = False  # the last read ended with "\n": one opening the next makes a blank line
    unfinished: list[bytes] = []  # what was handed on since the last blank line: an event not yet whole
    size = 0  # its bytes
    total = 0  # the body's bytes so far
    for data in itertools.chain([head.removeprefix(BOM)], reads):
        if after_cr or b"\r" in data:  # CRLF and a lone CR end a line too
            if after_cr and data.startswith(b"\n"):
                data, after_cr = data[1:], False  # the LF of a CRLF whose CR ended the previous read
            if data:
                after_cr = data.endswith(b"\r")
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not data:
            continue
        total += len(data)
        if total > body_limit:
            raise ProviderError(
                f"the server sent a reply of more than {body_limit // (1024 * 1024)} MiB (MAX_BODY_BYTES); "
                "the rest was not read"
            )
        end = data.rfind(b"\n\n")
        if end != -1:
            unfinished, size = [data[end + 2 :]], len(data) - end - 2
        elif after_lf and data[0] == 10:  # b"\n": the blank line straddles two reads
            unfinished, size = [data[1:]], len(data) - 1
        else:
            unfinished.append(data)
            size += len(data)
            if size > limit:
                raise ProviderError(
                    f"the server sent an event of more than {limit // (1024 * 1024)} MiB "
                    "without ending it (no blank line); the reply was abandoned"
                )
        after_lf = data[-1] == 10  # ends with b"\n"
        yield data
    yield from ended(b"".join(unfinished))


def ended(rest: bytes) -> Iterator[bytes]:
    """The end of the body: a last event without its blank line is completed (``data: [DONE]``
    without one is common behind proxies), unless it does not parse — then the stream was cut.

    >>> list(ended(b"data: [DONE]")), list(ended(b"\\n"))
    ([b'\\n\\n'], [])
    """
    if not rest.strip(b"\n"):
        return
    text = rest.decode("utf-8", "replace")
    try:
        parse_frame(text)
    except ProviderError:
        raise ProviderError(
            f"stream ended in the middle of an event — response may be truncated: {quote(text)}"
        ) from None
    yield b"\n\n"


# ── beyond §2: sniffed — what a 200 body turned out to hold ─────────────────────────────

BLANK = b"\xef\xbb\xbf \t\r\n"  # a BOM and blank lines before the first event (lstrip's set of bytes)
SSE_STARTS = (b"d", b"e", b"i", b"r", b":")  # data:, event:, id:, retry:, error:, a comment
SNIFF_LIMIT = 4096  # at most this much blank prelude is held back before deciding
WHOLE_REPLY_LIMIT = 16 * 1024 * 1024  # the largest non-streamed reply read into memory


def sniffed(
    reads: Iterable[bytes], content_type: str, whole_reply: Callable[[bytes], bytes], empty_note: str = ""
) -> Iterator[bytes]:
    """The reply's reads as an event stream, whatever a 200 reply turned out to hold.

    Decided on the first byte that is not blank, then out of the way (the rest of the reads
    pass untouched): an empty body is an error that says so; one JSON body (a server that
    ignored ``stream: true``) goes through ``whole_reply``; a body that looks like no SSE
    says what arrived.

    >>> list(sniffed([b"\\n", b"data: {}\\n\\n", b"data: {}\\n\\n"], "text/event-stream", bytes))
    [b'\\ndata: {}\\n\\n', b'data: {}\\n\\n']
    """
    reads = iter(reads)
    head = b""
    for data in reads:
        head += data
        if head.lstrip(BLANK) or len(head) > SNIFF_LIMIT:
            break  # the first byte that is not blank decides
    first = head.lstrip(BLANK)[:1]
    shown = f"Content-Type: {content_type or 'none'}"
    if first == b"" and len(head) <= SNIFF_LIMIT:
        raise no_reply(shown, empty_note)
    if first == b"{":
        return iter([whole_reply(read_at_most(head, reads, WHOLE_REPLY_LIMIT))])
    if first == b"<" and "event-stream" not in content_type:  # a web page: the base URL is not the API's
        raise ProviderError(
            f"the server answered with an HTML page, not an event stream ({shown}): is the base URL "
            f"the API's address (often ending in /v1), not a web page's? It began: {head.lstrip(BLANK)[:80]!r}"
        )
    if first and "event-stream" not in content_type and first not in SSE_STARTS:
        raise ProviderError(f"the server's reply is not an event stream ({shown}); it began: {head[:120]!r}")
    if first == b":":  # a comment first: keep-alives while the server thinks, or nothing but them
        return until_an_event(head, reads, no_reply(f"{shown}, only comments", empty_note))  # beyond §2
    return itertools.chain([head], reads)


def no_reply(shown: str, empty_note: str) -> ProviderError:
    """The one message for a 200 reply without a single event: empty, or comments only."""
    return ProviderError(f"the server sent an empty response body (HTTP 200, {shown}): no reply at all{empty_note}")


def opens_a_field(data: bytes) -> bool:
    """Whether a line that starts after a line end in ``data`` is a field (``data:``, ``event:``, …),
    not a comment or a blank line."""
    return any(line[:1] not in (b"", b":") for line in data.replace(b"\r", b"\n").split(b"\n")[1:])


def until_an_event(head: bytes, reads: Iterable[bytes], nothing: ProviderError) -> Iterator[bytes]:
    """``head`` (which opens with a comment) and the other reads, passed on; a body that ends
    having held only comments and blank lines raises ``nothing`` — no reply at all, not a
    reply cut short (llama-cpp-python may send only ``: ping - <time>`` and close). Each line
    is judged by its first byte, and only until the first line that is a field (``data:``, …).

    >>> list(until_an_event(b": ping\\r\\n", [b"\\r\\ndata: 1\\n\\n"], ProviderError("none")))
    [b': ping\\r\\n', b'\\r\\ndata: 1\\n\\n']
    >>> list(until_an_event(b": ping\\r\\n\\r\\n", [b": ping"], ProviderError("none")))
    Traceback (most recent call last):
    ink_py.provider.types.ProviderError: none
    """
    reads = iter(reads)
    yield head
    data = b"\n" + head.lstrip(BLANK)  # a byte-order mark and blank lines before the first comment
    while not opens_a_field(data):
        opens_a_line = data.endswith((b"\r", b"\n"))
        read = next(reads, None)
        if read is None:
            raise nothing
        yield read
        data = b"\n" + read if opens_a_line else read
    yield from reads


def read_at_most(head: bytes, reads: Iterable[bytes], limit: int) -> bytes:
    """``head`` and the rest of the body, joined; ProviderError past ``limit`` bytes."""
    parts, size = [head], len(head)
    for data in reads:
        parts.append(data)
        size += len(data)
        if size > limit:
            raise ProviderError(f"the reply is larger than {limit // (1024 * 1024)} MB; not read further")
    return b"".join(parts)
