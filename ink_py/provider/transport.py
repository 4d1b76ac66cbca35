"""The request and the body's reads — part 01's ``postJsonWithRetry`` and the article's ``response.body``.

Sections: ``post_json_with_retry`` (one POST, retried only before any byte of the reply is
read: connection errors, 408/409/429/5xx, ``Retry-After`` honoured; what no retry can mend —
a URL that cannot work, https to a plain-http port, a refused certificate — said at once),
``post_abortably`` (an abort ends the wait for the headers at once; a slow wait is said once,
``waiting_notice``), ``read_body`` (the body as reads, each one
what has arrived), ``read_failure`` (a read that broke, in words) and ``interrupt_response``
(an abort wakes a blocked read). Differences from the TypeScript are tagged ``beyond §``;
walkthrough.md §2.1 and §4.2 explain them, docs/hardening.md and docs/real-servers.md the rest.

    >>> is_retryable_status(429), is_retryable_status(501), round(backoff_seconds(1), 1) <= 0.6
    (True, False, True)
"""

from __future__ import annotations

import email.utils
import functools
import json
import random
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

import requests
import urllib3

from ..arguments import encodable_text
from ..core.abort import NEVER_ABORTED, AbortSignal, start_thread
from .errors import api_error, display_url, key_problem
from .redaction import redact
from .types import ProviderError

# Retry policy for post_json_with_retry (only before the body is read; see article 4.2).
MAX_ATTEMPTS = 3  # one try and two retries, as Ink
BACKOFF_BASE_SECONDS = 0.6  # Ink's first delay; doubled per retry, with jitter
BACKOFF_MAX_SECONDS = 8.0
RETRY_AFTER_MAX_SECONDS = 60.0  # a server asking for a longer wait gets an error, not a hang
CONNECT_TIMEOUT_SECONDS = 15.0
HEADERS_TIMEOUT_SECONDS = 90.0  # beyond §4.2: longest wait for the response headers, never retried
READ_TIMEOUT_SECONDS = 300.0  # longest silence between two reads of the body
WAITING_NOTICE_SECONDS = 5.0  # beyond §4.2: no response headers after this long is said once (waiting_notice)
READ_SIZE = 65536  # most bytes one read may return (it returns what has arrived, often less)
# What a broken read raises (urllib3 wraps http.client's errors; a socket timeout is an OSError).
JITTER = random.Random()  # its own: the program's global random state (which Hypothesis watches) stays untouched
READ_ERRORS = (urllib3.exceptions.HTTPError, requests.RequestException, OSError)


# ── part 01: post_json_with_retry ───────────────────────────────────────────────────────


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
    data = request_bytes(body)  # beyond part 01: a lone surrogate in the history cannot make it unsendable
    extra = headers or {}
    # beyond part 01: name the encodings read_body decodes (requests would add br/zstd when installed)
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Accept-Encoding": "gzip, deflate",
        **extra,
    }
    if api_key:
        if key_problem(api_key):  # beyond part 01: requests' refusal would quote the key
            raise ProviderError(f"the API key {key_problem(api_key)}: no HTTP header can carry it (not shown)")
        headers[key_header] = f"Bearer {api_key}" if key_header == "Authorization" else api_key
    key_env = "OPENAI_API_KEY" if key_header == "Authorization" else "ANTHROPIC_API_KEY"  # for the 401 hint
    post = session.post if session is not None else requests.post
    wait = sleep if sleep is not None else (lambda seconds: abortable_sleep(seconds, signal))
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
                waiting_for=url,
            )  # fmt: skip
        except requests.exceptions.ReadTimeout:  # connected, but no headers: a retry would wait as long again
            raise ProviderError(
                f"the model server at {display_url(url)} sent no response headers "
                f"within {HEADERS_TIMEOUT_SECONDS:.0f} s"
            ) from None
        except requests.RequestException as err:  # refused, DNS, reset, connect timeout
            if signal.aborted:
                return None
            hopeless = cannot_succeed(err, url, api_key)  # beyond part 01: never retried
            if hopeless is not None:
                raise hopeless from None
            problem = redact(str(err), api_key)
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


def request_bytes(body: Mapping[str, Any]) -> bytes:
    """``body`` as the UTF-8 JSON sent; a lone surrogate in it (a model's ``"\\ud800"``, an
    undecodable byte of argv) becomes U+FFFD, so that every request can be encoded.

    >>> request_bytes({"content": "a\\ud800"})
    b'{"content": "a\\xef\\xbf\\xbd"}'
    """
    text = json.dumps(body, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return encodable_text(text).encode("utf-8")


# The reasons OpenSSL gives when an https:// request meets a server speaking plain HTTP.
NOT_TLS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL", "HTTP_REQUEST"}
# What requests raises for a request that can never be sent as it is.
UNSENDABLE = (
    requests.exceptions.InvalidURL,
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
    requests.exceptions.InvalidHeader,
)


def cannot_succeed(err: requests.RequestException, url: str, api_key: str | None) -> ProviderError | None:
    """The one line for a failure no retry can mend (beyond part 01), or None to retry it."""
    where = display_url(url)
    if isinstance(err, UNSENDABLE):
        return ProviderError(f"the request to {where} cannot be sent: {redact(str(err), api_key)}")
    cause = ssl_cause(err) if isinstance(err, requests.exceptions.SSLError) else None
    if isinstance(cause, ssl.SSLCertVerificationError):
        return ProviderError(
            f"{where}: the server's TLS certificate was not accepted ({cause.verify_message}) — for a "
            "self-signed certificate or a private CA, point REQUESTS_CA_BUNDLE at its certificate file"
        )
    if cause is not None and cause.reason in NOT_TLS:
        return ProviderError(
            f"{where} does not answer in TLS ({cause.reason}): is it a plain-http server? "
            "Try http:// instead of https://"
        )
    return None


def ssl_cause(err: BaseException) -> ssl.SSLError | None:
    """The ``ssl.SSLError`` inside what requests raised (requests wraps urllib3, which wraps ssl)."""
    seen: set[int] = set()
    stack: list[Any] = [err]
    while stack:
        item = stack.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        if isinstance(item, ssl.SSLError):
            return item
        seen.add(id(item))
        stack.extend([getattr(item, "reason", None), item.__cause__, item.__context__, *item.args])
    return None


# beyond §4.2: a hook (the runner's display) told once when the response headers are slow to come
waiting_notice: ContextVar[Callable[[str], Any] | None] = ContextVar("waiting_notice", default=None)


@contextmanager
def notices_of_slow_headers(say: Callable[[str], Any]) -> Iterator[None]:
    """While this is open, on this thread, ``say(line)`` is called once per request whose
    response headers have not come within ``WAITING_NOTICE_SECONDS``."""
    token = waiting_notice.set(say)
    try:
        yield
    finally:
        waiting_notice.reset(token)


def post_abortably(
    send: Callable[[], requests.Response], signal: AbortSignal | None, waiting_for: str = ""
) -> requests.Response | None:
    """``send()`` on a worker thread, so that an abort ends the wait at once; None if aborted.

    Beyond §4.2: until the headers arrive, requests exposes no socket an abort could shut,
    and Python runs a Ctrl-C handler only between bytecodes of the main thread, which a
    blocked connect or header read never reaches. Waiting on an Event instead keeps it
    interruptible; an abandoned request closes its response the moment it arrives. A wait
    longer than ``WAITING_NOTICE_SECONDS`` is said once (``waiting_notice``), naming ``waiting_for``.
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
        say = waiting_notice.get()
        if say is not None and not finished.wait(WAITING_NOTICE_SECONDS):
            say(
                f"still waiting for the response headers from {display_url(waiting_for) or 'the server'} "
                f"({WAITING_NOTICE_SECONDS:.0f} s so far; given up after {HEADERS_TIMEOUT_SECONDS:.0f} s)"
            )
        finished.wait()
    finally:
        signal.remove_listener(finished.set)
    with lock:
        if "response" not in outcome and "error" not in outcome:  # woken by the abort
            outcome["abandoned"] = True
            return None
    if "error" in outcome:
        raise outcome["error"]
    response: requests.Response = outcome["response"]
    if signal.aborted:
        response.close()
        return None
    return response


def set_read_timeout(response: requests.Response, seconds: float) -> None:
    """Give the body its own timeout: requests' read timeout also bounded the header wait."""
    sock = _response_socket(response)
    if sock is not None:
        try:
            sock.settimeout(seconds)
        except OSError:
            pass


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
    """408 timeout, 409 conflict, 429 rate limit and every 5xx may succeed on a retry — but
    501 Not Implemented and 505 (a web server that does not take POST) never will."""
    return status in (408, 409, 429) or (500 <= status <= 599 and status not in (501, 505))


def backoff_seconds(attempt: int) -> float:
    """Capped exponential backoff with jitter: about 0.6 s, 1.2 s, 2.4 s … at most 8 s."""
    return float(min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)) * JITTER.uniform(0.75, 1.0))


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


# ── the article's response.body: read_body, read_failure, interrupt_response ────────────


def read_body(response: requests.Response) -> Iterator[bytes]:
    """The response body as a stream of reads — the article's ``response.body``.

    Each read returns whatever bytes have arrived (``read1``), so an event reaches the
    caller as soon as its last byte does — with chunked bodies and with bodies the server
    ends by closing the connection (``iter_content(None)`` would wait for the close then).
    No Python frame runs per read (``iter`` over ``read1``): a failure surfaces where the
    reads are consumed, and ``read_failure`` names it there.
    """
    read1 = functools.partial(response.raw.read1, READ_SIZE, decode_content=True)  # beyond §2.1: gzip/deflate
    return iter(read1, b"")


def read_failure(err: BaseException, response: requests.Response) -> ProviderError:
    """What a read that broke (one of ``READ_ERRORS``) means, in one line.

    >>> str(read_failure(ConnectionResetError("reset by peer"), requests.Response()))
    'the connection broke while reading the reply: reset by peer'
    """
    if isinstance(err, urllib3.exceptions.ReadTimeoutError):
        return ProviderError(f"the server sent nothing for {READ_TIMEOUT_SECONDS:.0f} s")
    if isinstance(err, urllib3.exceptions.DecodeError):
        encoding = response.headers.get("Content-Encoding", "")
        return ProviderError(f"the reply claims Content-Encoding {encoding!r} but does not decode")
    return ProviderError(f"the connection broke while reading the reply: {err}")


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


def abortable_sleep(seconds: float, signal: AbortSignal) -> None:
    """The wait between two attempts: an abort ends it at once."""
    signal.wait(seconds)
