"""What a failed request says: one line, the server's own words, never the key — beyond part 01.

Sections: ``api_error`` (an HTTP error status → ``API error 401: … — check …``, with the
hint a first contact needs), ``server_message`` (the human part of any error payload),
``display_url`` (a URL with its password hidden); every message is redacted (redaction.py).

    >>> server_message({"error": {"message": "model not found", "type": "invalid_request_error"}})
    'model not found'
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from ..terminal import one_line
from .redaction import redact
from .shared import loads_finite
from .types import ProviderError

ERROR_BODY_LIMIT = 65536  # how much of an error response is read for its message


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
    text = redact(raw.decode("utf-8", "replace"), api_key)  # before server_message cuts it
    page = html_page(text, response.headers.get("Content-Type", ""))
    if page is not None:  # beyond part 01: a web server, not the API — its page is no message
        return ProviderError(f"API error {status}: {page}, not {endpoint_kind(url)}{not_found_hint(url)}{note}")
    message = server_message(json_or_text(text)) or response.reason or "no message"
    hint = {
        401: f" — check the API key (--api-key or {key_env})",
        404: " — check the model name (--model) and the base URL (--base-url)" + not_found_hint(url),
    }.get(status, "")
    return ProviderError(redact(f"API error {status}: {message}{hint}{note}", api_key))


def not_found_hint(url: str) -> str:
    """What a 404 tried, and the usual fix: most servers serve the API under ``/v1``.

    >>> not_found_hint("http://127.0.0.1:11434/chat/completions")
    '; tried POST http://127.0.0.1:11434/chat/completions — most servers want the base URL to end in /v1'
    """
    if not url:
        return ""
    hint = "" if "/v1" in url else " — most servers want the base URL to end in /v1"
    return f"; tried POST {display_url(url)}{hint}"


def html_page(text: str, content_type: str) -> str | None:
    """``the server answered with an HTML page ("Error response")`` when an error body is one, else None.

    >>> html_page("<!DOCTYPE HTML><html><head><title>Error response</title>", "text/html")
    'the server answered with an HTML page ("Error response")'
    """
    start = text.lstrip()[:15].lower()
    if "html" not in content_type.lower() and not start.startswith(("<!doctype html", "<html")):
        return None
    title = re.search(r"<title[^>]*>(.*?)</title>", text[:4096], re.IGNORECASE | re.DOTALL)
    named = one_line(title.group(1))[:80] if title else ""
    return "the server answered with an HTML page" + (f' ("{named}")' if named else "")


def endpoint_kind(url: str) -> str:
    """What ``url`` should have been, from the dialect's path.

    >>> endpoint_kind("http://127.0.0.1:8000/v1/messages")
    'an Anthropic Messages endpoint (--api anthropic-messages)'
    """
    for path, kind in ENDPOINT_KINDS.items():
        if urlsplit(url).path.endswith(path):
            return kind
    return "the model API"


ENDPOINT_KINDS = {
    "/chat/completions": "an OpenAI-compatible Chat Completions endpoint",
    "/responses": "an OpenAI Responses endpoint (--api openai-responses)",
    "/messages": "an Anthropic Messages endpoint (--api anthropic-messages)",
}


def key_problem(key: str) -> str:
    """Why ``key`` cannot travel in an HTTP header, without showing it; "" if it can.

    >>> key_problem("sk-abc"), key_problem("sk-abc\\r"), key_problem("sk-\\x07")
    ('', 'holds a space or line break (character 7 of 7)', 'holds a control character (character 4 of 4)')
    """
    for position, char in enumerate(key, 1):
        if char.isspace():
            kind = "a space or line break"
        elif not char.isascii():
            kind = "a character that is not ASCII"
        elif not char.isprintable():
            kind = "a control character"
        else:
            continue
        return f"holds {kind} (character {position} of {len(key)})"
    return ""


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


def json_or_text(text: str) -> Any:
    """``text`` parsed as JSON if it is JSON, else the text itself."""
    try:
        return loads_finite(text)
    except (ValueError, RecursionError):
        return text
