"""Reading a streamed reply: bytes → SSE events — mirrors Ink's ``src/provider/shared.ts``.

Sections: §2.1 ``parse_sse`` (bytes → frames) and ``parse_frame`` (a frame → ``{"event",
"data"}``), §4.2 ``abort_safe``, §4.3 ``safe_parse_json``, then part 01's request,
``post_json_with_retry``, and ``read_body``. Differences from the TypeScript are tagged
``beyond §`` where they happen; walkthrough.md explains them. Article 2.1's event in two reads::

    >>> reads = [b'data: {"choices":[{"delta":{"tool_calls":[{"index":0,',
    ...          b'"id":"t1","function":{"name":"read","arguments":"{\\\\"path\\\\":\\\\"REA"}}]}}]}\\n\\n']
    >>> [event] = parse_sse(reads)
    >>> event["event"], event["data"]["choices"][0]["delta"]["tool_calls"][0]["function"]
    ('message', {'name': 'read', 'arguments': '{"path":"REA'})
"""

from __future__ import annotations

import codecs
import email.utils
import json
import math
import random
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, TypedDict, TypeVar
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3

from ..core.abort import NEVER_ABORTED, AbortSignal, start_thread
from .types import ProviderError

T = TypeVar("T")

DONE = "[DONE]"  # Chat Completions' end marker: `data: [DONE]` (an API convention, not SSE's)

# Retry policy for post_json_with_retry (only before the body is read; see article 4.2).
MAX_ATTEMPTS = 3  # one try and two retries, as Ink
BACKOFF_BASE_SECONDS = 0.6  # Ink's first delay; doubled per retry, with jitter
BACKOFF_MAX_SECONDS = 8.0
RETRY_AFTER_MAX_SECONDS = 60.0  # a server asking for a longer wait gets an error, not a hang
CONNECT_TIMEOUT_SECONDS = 15.0
HEADERS_TIMEOUT_SECONDS = 90.0  # beyond §4.2: longest wait for the response headers, never retried
READ_TIMEOUT_SECONDS = 300.0  # longest silence between two reads of the body
READ_SIZE = 65536  # most bytes one read may return (it returns what has arrived, often less)
ERROR_BODY_LIMIT = 65536  # how much of an error response is read for its message
MAX_EVENT_BYTES = 32 * 1024 * 1024  # beyond §2.1: most bytes one unfinished event may hold
MAX_QUOTE_CHARS = 200  # how much of a server's bad payload an error message quotes
MAX_ARGUMENT_DEPTH = 100  # beyond §4.3: tool arguments nested deeper are refused, not parsed into a crash


class SseEvent(TypedDict):
    event: str  # "message" unless the frame had an `event:` line
    data: Any  # the parsed JSON, or the string DONE


# ── §2.1 parse_sse: bytes → frames ──────────────────────────────────────────────────────


def parse_sse(body: Iterable[bytes]) -> Iterator[SseEvent]:
    """Yield each SSE event of ``body`` (any iterable of bytes) as soon as it is complete.

    >>> list(parse_sse([b'data: {"a": 1}\\r\\n\\r\\ndata: [DO', b'NE]\\n\\n']))
    [{'event': 'message', 'data': {'a': 1}}, {'event': 'message', 'data': '[DONE]'}]
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")  # TextDecoder with stream: true
    # The article's `buffer` string, kept as a list of pieces: a long event arriving in
    # small reads is then copied once when its frame is cut, not once per read.
    buffer: list[str] = []
    buffered = 0  # UTF-8 bytes in buffer: one unfinished event, bounded by MAX_EVENT_BYTES
    after_cr = False  # the last read ended with "\r", so a "\n" opening the next is its CRLF
    at_start = True  # a byte-order mark is stripped only at the very start (WHATWG)

    for chunk in body:
        text = decoder.decode(chunk)  # a character split across reads waits for its rest
        if not text:
            continue
        if at_start:
            at_start = False
            text = text.removeprefix("\ufeff")
        # Beyond §2.1: CRLF and CR line endings become LF, so "\n\n" alone ends a frame.
        if after_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF whose CR ended the previous read
        after_cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")

        start = 0  # where this read's unsearched text begins
        if buffer and buffer[-1].endswith("\n") and text.startswith("\n"):
            frame = "".join(buffer)[:-1]  # the blank line straddles two reads: "…\n" | "\n…"
            buffer.clear()
            buffered = 0
            start = 1
            parsed = parse_frame(frame)
            if parsed is not None:
                yield parsed
        sep = text.find("\n\n", start)  # search only the new text: linear time
        while sep != -1:
            frame = "".join(buffer) + text[start:sep]
            buffer.clear()
            buffered = 0
            start = sep + 2  # leave what has not yet formed a complete event
            parsed = parse_frame(frame)
            if parsed is not None:
                yield parsed
            sep = text.find("\n\n", start)
        if start < len(text):
            piece = text[start:]
            buffer.append(piece)
            buffered += len(piece) if piece.isascii() else len(piece.encode("utf-8"))
            if buffered > MAX_EVENT_BYTES:  # beyond §2.1: an event that never ends is not held forever
                raise ProviderError(
                    f"the server sent an event of more than {MAX_EVENT_BYTES // (1024 * 1024)} MiB "
                    "without ending it (no blank line); the reply was abandoned"
                )

    rest = "".join(buffer) + decoder.decode(b"", final=True)
    if rest.strip("\n"):  # beyond §2.1: the body ended inside an event; parse it, don't drop it
        try:
            parsed = parse_frame(rest)
        except ProviderError:
            raise ProviderError(
                f"stream ended in the middle of an event — response may be truncated: {quote(rest)}"
            ) from None
        if parsed is not None:
            yield parsed


# ── §2.1 parse_frame: one frame → {"event", "data"} ─────────────────────────────────────


def parse_frame(frame: str) -> SseEvent | None:
    """Parse one event's lines; None for frames that carry nothing (comments, keep-alives).

    >>> parse_frame('event: delta\\ndata: {"x":\\ndata: 1}')
    {'event': 'delta', 'data': {'x': 1}}
    >>> parse_frame(': keep-alive') is None
    True
    >>> parse_frame('data: [DONE]')
    {'event': 'message', 'data': '[DONE]'}
    """
    event = "message"  # the default SSE event name when there is no `event:` line
    data_lines: list[str] = []
    error_lines: list[str] = []
    for line in frame.split("\n"):
        if line == "" or line.startswith(":"):
            continue  # a comment, e.g. ": keep-alive" or ": OPENROUTER PROCESSING"
        field, _, value = line.partition(":")  # a line without ":" is a field with value ""
        if value.startswith(" "):
            value = value[1:]  # exactly one space is stripped (WHATWG; Ink trims them all)
        if field == "event":
            event = value or "message"
        elif field == "data":
            data_lines.append(value)  # collect every data: line
        elif field == "error":  # beyond §2.1: older llama.cpp sends `error: {...}` this way
            error_lines.append(value)
        # "id", "retry" and unknown fields are ignored, as the WHATWG rules say

    if error_lines:
        return {"event": "error", "data": _json_or_text("\n".join(error_lines))}
    if not data_lines:
        return None
    data = "\n".join(data_lines)  # several data: lines are joined with "\n"
    if data == "":
        return None  # beyond §2.1: an empty `data:` is a keep-alive
    if data.strip() == DONE:
        return {"event": event, "data": DONE}  # beyond §2.1: the end marker, not a bad frame
    try:
        return {"event": event, "data": loads_finite(data)}
    except (ValueError, RecursionError) as err:
        # Beyond §4.1: Ink returns undefined here and the event vanishes; ink_py says so.
        why = "nested too deep" if isinstance(err, RecursionError) else str(err)
        raise ProviderError(f"the server sent an event whose data is not JSON: {quote(frame)} ({why})") from None


def _json_or_text(text: str) -> Any:
    try:
        return loads_finite(text)
    except (ValueError, RecursionError):
        return text


def loads_finite(text: str) -> Any:
    """``json.loads`` refusing NaN, Infinity and numbers too large for a float (ValueError).

    >>> loads_finite('{"prompt_tokens": 3}')
    {'prompt_tokens': 3}
    >>> loads_finite('{"prompt_tokens": NaN}')
    Traceback (most recent call last):
    ValueError: not a finite number: NaN
    """
    return json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)  # beyond §2.1


def _not_finite(name: str) -> Any:
    raise ValueError(f"not a finite number: {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses as inf
        raise ValueError(f"not a finite number: {text[:40]}")
    return value


def quote(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    """``repr`` of the start of ``text``, for an error message: never the whole of a huge payload."""
    return repr(text[:limit]) + (f" … ({len(text)} characters)" if len(text) > limit else "")


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
        value = loads_finite(raw)  # beyond §4.3: NaN/Infinity refused, so the history stays valid JSON
    except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return {"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}
    if nesting_depth(value) > MAX_ARGUMENT_DEPTH:  # beyond §4.3: json.dumps of it would overflow the stack
        return {"_parseError": f"tool arguments were nested more than {MAX_ARGUMENT_DEPTH} deep", "raw": raw[:500]}
    return value


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


def json_object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else ``{}``: a field of the wrong shape reads as absent."""
    return value if isinstance(value, dict) else {}


def json_key(value: Any) -> str | int | None:
    """An index or id usable as a dict key (a string or a whole number), else None."""
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def token_count(value: Any) -> int:
    """A usage figure: a whole number of 0 or more, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# ── the request: post_json_with_retry (part 01) and read_body ───────────────────────────


def post_json_with_retry(
    url: str,
    body: Mapping[str, Any],
    *,
    api_key: str | None = None,
    key_header: str = "Authorization",
    headers: Mapping[str, str] | None = None,
    signal: AbortSignal | None = None,
    session: requests.Session | None = None,
    sleep: Callable[[float], Any] | None = None,
) -> requests.Response | None:
    """POST ``body`` as JSON and return the streaming response, its body not yet read.

    Retries connection errors and 408/409/429/5xx (honouring ``Retry-After``) — safe,
    because nothing has been read or shown yet. Returns None if the signal aborts
    first. Any other status raises ``ProviderError("API error <status>: <message>")``.
    The key goes in ``key_header`` (a Bearer token in Authorization; Anthropic's bare
    ``x-api-key``) and is never part of any message; ``headers`` adds more.
    """
    signal = signal or NEVER_ABORTED
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    extra = headers or {}
    # beyond part 01: name the encodings read_body decodes (requests would add br/zstd when installed)
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Accept-Encoding": "gzip, deflate",
        **extra,
    }
    if api_key:
        headers[key_header] = f"Bearer {api_key}" if key_header == "Authorization" else api_key
    key_env = "OPENAI_API_KEY" if key_header == "Authorization" else "ANTHROPIC_API_KEY"  # for the 401 hint
    post = session.post if session is not None else requests.post
    wait = sleep if sleep is not None else (lambda seconds: _sleep(seconds, signal))
    problem = ""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if signal.aborted:
            return None
        try:
            response = post_abortably(
                lambda: post(
                    url, data=data, headers=headers, stream=True,
                    timeout=(CONNECT_TIMEOUT_SECONDS, HEADERS_TIMEOUT_SECONDS),
                ),
                signal,
            )  # fmt: skip
        except requests.exceptions.ReadTimeout:  # connected, but no headers: a retry would wait as long again
            raise ProviderError(
                f"the model server at {display_url(url)} sent no response headers "
                f"within {HEADERS_TIMEOUT_SECONDS:.0f} s"
            ) from None
        except requests.RequestException as err:  # refused, DNS, reset, connect timeout
            if signal.aborted:
                return None
            problem = _redact(str(err), api_key)
            refused = connect_failure(err)
            delay = backoff_seconds(attempt)
        else:
            if response is None:
                return None  # aborted while connecting or waiting for the headers
            if response.ok:
                set_read_timeout(response, READ_TIMEOUT_SECONDS)  # the body's silences get their own bound
                return response
            retry_after = retry_after_seconds(response.headers)
            if not is_retryable_status(response.status_code) or attempt == MAX_ATTEMPTS:
                raise api_error(response, api_key, key_env=key_env, url=url)
            if retry_after is not None and retry_after > RETRY_AFTER_MAX_SECONDS:
                note = f" (the server asked to retry after {retry_after:.0f} s)"
                raise api_error(response, api_key, note, key_env=key_env, url=url)
            response.close()  # drop the error body so the connection is released
            problem, refused = f"HTTP {response.status_code}", ""
            delay = retry_after if retry_after is not None else backoff_seconds(attempt)
        if attempt < MAX_ATTEMPTS:
            wait(delay)
    if refused:  # beyond part 01: the usual first-contact mistake, said plainly
        where = display_url(url)
        raise ProviderError(
            f"could not connect to {where} — is the server running? ({refused}, {MAX_ATTEMPTS} attempts)"
        )
    raise ProviderError(
        f"could not reach the model server at {display_url(url)} after {MAX_ATTEMPTS} attempts: {problem}"
    )


def post_abortably(send: Callable[[], requests.Response], signal: AbortSignal | None) -> requests.Response | None:
    """``send()`` on a worker thread, so that an abort ends the wait at once; None if aborted.

    Beyond §4.2: until the headers arrive, requests exposes no socket an abort could shut,
    and Python runs a Ctrl-C handler only between bytecodes of the main thread, which a
    blocked connect or header read never reaches. Waiting on an Event instead keeps it
    interruptible; an abandoned request closes its response the moment it arrives.
    """
    if signal is None or signal is NEVER_ABORTED:
        return send()  # nothing can abort it: stay on this thread (and in the debugger)
    finished = threading.Event()
    outcome: dict[str, Any] = {}
    lock = threading.Lock()

    def work() -> None:
        try:
            outcome["response"] = send()
        except BaseException as err:  # handed to the waiting thread
            outcome["error"] = err
        with lock:
            finished.set()
            if outcome.get("abandoned") and "response" in outcome:
                outcome["response"].close()  # no one is waiting for it any more

    start_thread(threading.Thread(target=work, name="ink-post", daemon=True))  # Ctrl-C stays with the waiter
    signal.add_listener(finished.set)
    try:
        finished.wait()
    finally:
        signal.remove_listener(finished.set)
    with lock:
        if "response" not in outcome and "error" not in outcome:  # woken by the abort
            outcome["abandoned"] = True
            return None
    if "error" in outcome:
        raise outcome["error"]
    if signal.aborted:
        outcome["response"].close()
        return None
    return outcome["response"]


def set_read_timeout(response: requests.Response, seconds: float) -> None:
    """Give the body its own timeout: requests' read timeout also bounded the header wait."""
    sock = _response_socket(response)
    if sock is not None:
        try:
            sock.settimeout(seconds)
        except OSError:
            pass


def display_url(url: str) -> str:
    """``url`` safe to print: a password in it is replaced by ``***``.

    >>> display_url("http://user:secret@127.0.0.1:8000/v1")
    'http://user:***@127.0.0.1:8000/v1'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def connect_failure(err: BaseException) -> str:
    """Why no connection was made ("connection refused", …), or "" for a failure after connecting."""
    if isinstance(err, requests.ConnectTimeout):
        return "connection timed out"
    if not isinstance(err, requests.ConnectionError):
        return ""
    reason = getattr(err.args[0] if err.args else None, "reason", None)  # requests wraps urllib3's MaxRetryError
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return "host name not found"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        return "connection refused" if isinstance(reason.__cause__, ConnectionRefusedError) else "no connection"
    return ""


def is_retryable_status(status: int) -> bool:
    """408 timeout, 409 conflict, 429 rate limit and every 5xx may succeed on a retry."""
    return status in (408, 409, 429) or 500 <= status <= 599


def backoff_seconds(attempt: int) -> float:
    """Capped exponential backoff with jitter: about 0.6 s, 1.2 s, 2.4 s … at most 8 s."""
    return min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)) * random.uniform(0.75, 1.0)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for: ``retry-after-ms``, ``Retry-After: 2`` or an HTTP date."""
    millis = headers.get("retry-after-ms")  # OpenAI's more precise variant
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unreadable: fall back to backoff
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def api_error(
    response: requests.Response,
    api_key: str | None = None,
    note: str = "",
    key_env: str = "OPENAI_API_KEY",
    url: str = "",
) -> ProviderError:
    """``API error 401: Incorrect API key provided — check …``, the key itself never shown."""
    status = response.status_code
    try:
        raw = response.raw.read(ERROR_BODY_LIMIT, decode_content=True) or b""
    except Exception:  # the error body is only for the message; its loss is not the error
        raw = b""
    finally:
        response.close()
    text = _redact(raw.decode("utf-8", "replace"), api_key)  # before server_message cuts it
    message = server_message(_json_or_text(text)) or response.reason or "no message"
    hint = {
        401: f" — check the API key (--api-key or {key_env})",
        404: " — check the model name (--model) and the base URL (--base-url)" + not_found_hint(url),
    }.get(status, "")
    return ProviderError(_redact(f"API error {status}: {message}{hint}{note}", api_key))


def not_found_hint(url: str) -> str:
    """What a 404 tried, and the usual fix: most servers serve the API under ``/v1``.

    >>> not_found_hint("http://127.0.0.1:11434/chat/completions")
    '; tried POST http://127.0.0.1:11434/chat/completions — most servers want the base URL to end in /v1'
    """
    if not url:
        return ""
    hint = "" if "/v1" in url else " — most servers want the base URL to end in /v1"
    return f"; tried POST {display_url(url)}{hint}"


def server_message(payload: Any) -> str:
    """The human part of a server's error payload, whatever its shape, on one line.

    >>> server_message({"error": {"message": "model not found", "type": "invalid_request_error"}})
    'model not found'
    >>> server_message({"detail": "Not Found"})
    'Not Found'
    >>> server_message({"error": {"message": "2 validation errors:\\n  content\\n    field required"}})
    '2 validation errors: content field required'
    """
    if isinstance(payload, dict):
        for key in ("error", "message", "detail", "msg"):
            if payload.get(key):
                return server_message(payload[key])
        return json.dumps(payload, ensure_ascii=False)[:500]
    if isinstance(payload, str):
        return one_line(payload)[:500]
    return json.dumps(payload, ensure_ascii=False)[:500]


def one_line(text: str) -> str:
    """Fold a multi-line message onto one line; control characters become spaces.

    Beyond part 01: a server's message reaches the terminal as one ``error: …`` line.
    """
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def read_body(response: requests.Response) -> Iterator[bytes]:
    """The response body as a stream of reads — the article's ``response.body``.

    Each read returns whatever bytes have arrived (``read1``), so an event reaches the
    caller as soon as its last byte does — with chunked bodies and with bodies the
    server ends by closing the connection (``iter_content(None)`` would wait for the
    close in that case).
    """
    raw = response.raw
    while True:
        try:
            data = raw.read1(READ_SIZE, decode_content=True)  # beyond §2.1: gzip/deflate bodies decoded
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError, ValueError, AttributeError) as err:
            # ValueError/AttributeError: the response was closed under us (an abort does that)
            if isinstance(err, urllib3.exceptions.ReadTimeoutError):
                raise ProviderError(f"the server sent nothing for {READ_TIMEOUT_SECONDS:.0f} s") from err
            if isinstance(err, urllib3.exceptions.DecodeError):
                encoding = response.headers.get("Content-Encoding", "")
                raise ProviderError(f"the reply claims Content-Encoding {encoding!r} but does not decode") from err
            raise ProviderError(f"the connection broke while reading the reply: {err}") from err
        if not data:
            return
        yield data


def read_at_most(head: bytes, reads: Iterable[bytes], limit: int) -> bytes:
    """``head`` and the rest of the body, joined; ProviderError past ``limit`` bytes."""
    parts, size = [head], len(head)
    for data in reads:
        parts.append(data)
        size += len(data)
        if size > limit:
            raise ProviderError(f"the reply is larger than {limit // (1024 * 1024)} MB; not read further")
    return b"".join(parts)


def stream_reply(
    response: requests.Response,
    reads: Iterable[bytes],
    signal: AbortSignal,
    assemble_stream: Callable[[Iterable[bytes], AbortSignal], Iterator[T]],
) -> Iterator[T]:
    """Hand the reply's reads to a dialect's ``assemble_stream``; close the response after.

    An abort must wake a read blocked in this thread: the listener shuts the socket.
    """
    wake = lambda: interrupt_response(response)  # noqa: E731
    signal.add_listener(wake)
    try:
        yield from assemble_stream(reads, signal)
    finally:
        signal.remove_listener(wake)
        response.close()


def interrupt_response(response: requests.Response) -> None:
    """Wake a read blocked on ``response`` in another thread (an abort listener).

    Closing a socket does not wake a thread blocked reading it; shutting it down
    does: the read returns at once. The reading thread then closes the response.
    """
    # The socket being read: http.client's buffered reader → socket.SocketIO → socket.
    # (requests/urllib3 expose no public handle; with "Connection: close" urllib3's
    # connection has already let go of it, but the reader still holds it.)
    sock = _response_socket(response)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing is blocked on it


def _response_socket(response: requests.Response) -> socket.socket | None:
    reader = getattr(getattr(response.raw, "_fp", None), "fp", None)
    return getattr(getattr(reader, "raw", None), "_sock", None)


def _sleep(seconds: float, signal: AbortSignal) -> None:
    signal.wait(seconds)  # a sleep that an abort ends at once


def _redact(text: str, api_key: str | None) -> str:
    return text.replace(api_key, "***") if api_key else text


def redact_reads(reads: Iterable[bytes], secret: str | None) -> Iterator[bytes]:
    """Pass reads on with every occurrence of ``secret`` replaced by ``***`` — even one split
    across two reads. Beyond the article: a server that echoes the key back (in an error, in
    a non-JSON line, in the answer) must not make ink_py show it anywhere.

    Only a read's tail that could be the start of the secret is held back for the next
    read, so a complete event is never delayed.

    >>> list(redact_reads([b"data: sk-SEC", b"RET\\n\\n"], "sk-SECRET"))
    [b'data: ', b'***\\n\\n']
    """
    if not secret:
        yield from reads
        return
    key = secret.encode("utf-8")
    held = b""
    for read in reads:
        data = (held + read).replace(key, b"***")
        keep = _partial_key_suffix(data, key)
        held = data[len(data) - keep :] if keep else b""
        if len(data) > keep:
            yield data[: len(data) - keep]
    if held:
        yield held  # the body ended on what only looked like the start of the key


def _partial_key_suffix(data: bytes, key: bytes) -> int:
    """Length of the longest end of ``data`` that is a proper start of ``key``."""
    for size in range(min(len(key) - 1, len(data)), 0, -1):
        if key.startswith(data[-size:]):
            return size
    return 0
