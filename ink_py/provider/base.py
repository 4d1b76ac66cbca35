"""What the three wire dialects share: the HTTP provider, the finished message, one policy for bad chunks.

Article §2.3: every provider turns its server's stream into the same ``LLMEvent``s. Each
dialect module (``openai_completions``, ``anthropic_messages``, ``openai_responses``) gives
its ``assemble_stream``, request body and URL; ``HttpProvider.stream`` is the article's
``provider.stream`` around them — post (part 01), read the body, hand it to the dialect's
loop, close it after; what the loop yields passes two stages on its way out (beyond §2:
``bounded_reply``, bounded and well formed, and redaction.py's ``redacted_events``). Then what
every loop ends with (``finished_message``, ``finish_tool_arguments``) and the malformed-chunk
policy: a field of the wrong JSON type is the server's fault, named in one line (``field``).
Recording wraps any of them (recording.py).

    >>> field({"delta": []}, "delta", dict)
    Traceback (most recent call last):
    ink_py.provider.types.ProviderError: the server sent a malformed chunk: "delta" is an array, expected an object
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

import requests

from ..arguments import LONE_SURROGATES, encodable_text
from ..core.abort import NEVER_ABORTED, AbortSignal
from ..core.messages import AssistantBlock, AssistantMessage, StopReason, ToolCallBlock, Usage
from . import shared
from .errors import display_url, server_message
from .redaction import map_strings, redact, redact_reads, redacted_events
from .shared import safe_parse_json, sniffed
from .transport import READ_ERRORS, interrupt_response, post_json_with_retry, read_body, read_failure
from .types import LLMEvent, LLMRequest, ProviderError

EMPTY_REPLY_TEXT = "(empty)"  # Ink's placeholder when a reply has no blocks at all


# ── the provider: stream(request) ───────────────────────────────────────────────────────


class HttpProvider:
    """The article's ``provider``: holds where to connect; ``stream(request)`` does the rest.

    A dialect subclass sets ``name``, ``path`` and the two functions of its module:
    ``build_request_body`` (part 01) and ``assemble_stream`` (§2). The address and the key's
    header are OpenAI's unless it says otherwise (anthropic_messages.py does).
    """

    name: ClassVar[str]  # the --api name
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"  # both OpenAI dialects'
    path: ClassVar[str]  # after the base URL: "/chat/completions", …
    key_header: ClassVar[str] = "Authorization"  # a Bearer token; Anthropic's bare x-api-key
    extra_headers: ClassVar[dict[str, str]] = {}

    @staticmethod
    def build_request_body(request: LLMRequest) -> dict[str, Any]:
        """Part 01: the JSON body of one turn, in the dialect's words."""
        raise NotImplementedError

    @staticmethod
    def assemble_stream(body: Iterable[bytes], signal: AbortSignal | None = None) -> Iterator[LLMEvent]:
        """§2: the dialect's core loop, SSE bytes → LLMEvents ending with message_end."""
        raise NotImplementedError

    def __init__(self, base_url: str | None = None, api_key: str | None = None) -> None:
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self._api_key = api_key  # never printed: see __repr__ and errors.api_error
        self._session = requests.Session()  # keeps the connection alive between turns

    def __repr__(self) -> str:
        shown = display_url(self.base_url)  # a password in the URL is never shown either
        return f"{type(self).__name__}(base_url={shown!r}, api_key={'***' if self._api_key else None})"

    def stream(self, request: LLMRequest) -> Iterator[LLMEvent]:
        """POST the request and yield its LLMEvents as the reply streams in."""
        signal = request.get("signal") or NEVER_ABORTED
        body = self.build_request_body(request)
        try:
            response = self.post(body, signal)
        except ProviderError as err:
            raise self.said(err) from None  # beyond §2: redacted, see said
        if response is None:
            return  # aborted before the reply started
        wake = lambda: interrupt_response(response)  # noqa: E731  # an abort wakes a read blocked in this thread
        signal.add_listener(wake)
        try:
            content_type = response.headers.get("Content-Type", "")
            reads = sniffed(self.read(response), content_type, *self.whole_reply(body))  # beyond §2
            yield from self.checked(self.assemble_stream(reads, signal))  # checked: beyond §2, see below
        except Exception as err:
            if signal.aborted:
                return  # the abort shut the socket under the first read (§4.2, as abort_safe)
            if isinstance(err, READ_ERRORS):  # beyond §4.2: a read that broke, said in words
                raise self.said(read_failure(err, response)) from None
            if isinstance(err, ProviderError):
                raise self.said(err) from None
            raise
        finally:
            signal.remove_listener(wake)
            response.close()

    def url(self) -> str:
        return self.base_url + self.path

    def checked(self, events: Iterator[LLMEvent]) -> Iterator[LLMEvent]:
        """Beyond §2: the dialect's events, bounded in size, encodable, and without the key."""
        events = bounded_reply(events)
        return redacted_events(events, self._api_key) if self._api_key else events

    def said(self, err: ProviderError) -> ProviderError:
        """Beyond §2: an error's message, like every text, without the key and encodable."""
        return ProviderError(encodable_text(redact(str(err), self._api_key)))

    def post(self, body: dict[str, Any], signal: AbortSignal) -> requests.Response | None:
        """Part 01: send the body, retrying only before any byte of the reply is read."""
        return post_json_with_retry(
            self.url(), body, api_key=self._api_key, key_header=self.key_header,
            headers=self.extra_headers, signal=signal, session=self._session,
        )  # fmt: skip

    def read(self, response: requests.Response) -> Iterable[bytes]:
        """The response body as reads — the article's ``response.body``; beyond the article, a
        key the server echoes back is replaced before anything (parser, recording) sees it."""
        reads = read_body(response)
        return redact_reads(reads, self._api_key) if self._api_key else reads

    def whole_reply(self, body: dict[str, Any]) -> tuple[Callable[[bytes], bytes], str]:
        """What a 200 reply that is one JSON body becomes (beyond §2), and a note for an empty one."""
        return refuse_whole_reply, ""


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


# ── beyond §2: the stages every reply's events pass ─────────────────────────────────────

PIECE_BYTES = 64  # what keeping one delta costs beyond its text: a str object and a list slot
CALL_BYTES = 1024  # what one tool call costs beyond its name and id: its block, its tables' entries


def bounded_reply(events: Iterable[LLMEvent]) -> Iterator[LLMEvent]:
    """Pass a reply's events on, each checked as it goes by (one stage: a debugger steps
    through one frame per event, not two):

    - bounded: once the reply's text, reasoning and tool calls pass ``MAX_REPLY_BYTES``
      (shared.py), ProviderError — the dialect's loop keeps every piece until the end, so an
      endless stream of deltas would otherwise grow without bound (1 GB in 6 s);
    - well formed: a lone surrogate (JSON's ``"\\ud800"``) becomes U+FFFD, so that what is
      shown, traced, relayed or sent back in the next request can be encoded as UTF-8.

    >>> list(bounded_reply([{"type": "text_delta", "text": "a\\ud800"}]))
    [{'type': 'text_delta', 'text': 'a\\ufffd'}]
    """
    limit = shared.MAX_REPLY_BYTES  # read at each call: a test may lower it
    size = 0
    for event in events:
        if event["type"] == "text_delta" or event["type"] == "thinking_delta":  # inlined: no call per event
            text = event["text"]
            size += PIECE_BYTES + (len(text) if text.isascii() else utf8_size(text))
        elif event["type"] == "tool_call_delta":
            text = event["jsonDelta"]
            size += PIECE_BYTES + (len(text) if text.isascii() else utf8_size(text))
        else:  # a tool call's start, the finished message: looked at whole, in one pass
            if event["type"] == "tool_call_start":
                size += CALL_BYTES + utf8_size(event["name"]) + utf8_size(event["id"])
            text = json.dumps(event, ensure_ascii=False)
        if size > limit:
            raise ProviderError(
                f"the reply grew past {limit // (1024 * 1024)} MiB of text, reasoning and tool arguments "
                "(MAX_REPLY_BYTES); the rest was not read"
            )
        plain = text.isascii() or not LONE_SURROGATES.search(text)
        yield event if plain else map_strings(event, encodable_text)  # the usual event is plain: untouched


def utf8_size(text: str) -> int:
    """What ``text`` takes as UTF-8 (a lone surrogate counted as the 3 bytes it will become)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


# ── what every dialect's loop ends with ─────────────────────────────────────────────────


def finished_message(blocks: list[AssistantBlock], usage: Usage, stop_reason: StopReason) -> AssistantMessage:
    """The assistant message of a stream that ended properly, with Ink's two fallbacks
    (the article's "省略未知结束原因的映射兜底和空回复占位")."""
    if stop_reason is None and any(block["type"] == "toolCall" for block in blocks):
        stop_reason = "tool_use"  # an unknown finish reason, but tool calls ended the turn
    if not blocks:
        blocks.append({"type": "text", "text": EMPTY_REPLY_TEXT})
    return {"role": "assistant", "blocks": blocks, "usage": usage, "stopReason": stop_reason}


def finish_tool_arguments(block: ToolCallBlock, parts: list[str]) -> None:
    """Join a call's fragments and parse them: blank → {}, bad JSON → a _parseError record (§4.3)."""
    raw = "".join(parts)
    block["arguments"] = {} if raw.strip() == "" else safe_parse_json(raw)


# ── the malformed-chunk policy ──────────────────────────────────────────────────────────

JSON_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", int: "a number", bool: "a boolean"}


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type: ``'an array'``, ``'null'`` …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def field(container: dict[str, Any], key: str, expected: type, required: bool = False) -> Any:
    """``container[key]`` if absent/null (unless ``required``) or of the ``expected`` JSON type;
    otherwise the server is at fault: ProviderError naming the field and both types."""
    value = container.get(key)
    if value is None and not required:
        return None
    if isinstance(value, expected) and not (expected is int and isinstance(value, bool)):
        return value
    raise malformed(key, value, JSON_TYPE_NAMES[expected])


def check_fields(data: dict[str, Any], fields: tuple[tuple[str, tuple[type, ...]], ...]) -> None:
    """Each ``(key, type)`` of ``fields`` that ``data`` has (not null) is of that JSON type, or
    ProviderError names it: the check an event of the Messages or Responses dialect passes.

    >>> check_fields({"index": 0, "delta": "x"}, (("index", (int, str)), ("delta", (dict,))))
    Traceback (most recent call last):
    ink_py.provider.types.ProviderError: the server sent a malformed chunk: "delta" is a string, expected an object
    """
    for key, expected in fields:
        value = data.get(key)
        if value is not None and type(value) not in expected:  # exact types: a boolean is no number
            raise malformed(key, value, " or ".join(JSON_TYPE_NAMES[kind] for kind in expected))


def malformed(key: str, value: Any, expected: str) -> ProviderError:
    """The one line for a field of the wrong type: ``"delta" is an array, expected an object``."""
    return ProviderError(f'the server sent a malformed chunk: "{key}" is {json_type(value)}, expected {expected}')


def token_count(reported: dict[str, Any], key: str) -> int:
    """A usage number: absent is 0; anything but a whole number ≥ 0 is the server's fault.

    >>> token_count({"output_tokens": 7.0}, "output_tokens"), token_count({}, "input_tokens")
    (7, 0)
    """
    value = reported.get(key)
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = repr(json.dumps(value)[:40])
        raise ProviderError(
            f'the server sent a malformed chunk: usage "{key}" is {shown}, expected a whole number of tokens'
        )
    return value
