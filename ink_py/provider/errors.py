"""What a failed request says: one line, the server's own words, never the key — beyond part 01.

Sections: ``api_error`` (an HTTP error status → ``API error 401: … — check …``, with the
hint a first contact needs), ``server_message`` (the human part of any error payload),
``display_url`` (a URL with its password hidden) and ``redact`` (the key replaced in any
text built from a server's or a library's message).

    >>> server_message({"error": {"message": "model not found", "type": "invalid_request_error"}})
    'model not found'
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from ..terminal import one_line
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


def redact(text: str, api_key: str | None) -> str:
    """``text`` with every occurrence of the key replaced by ``***``.

    >>> redact("Bearer sk-1 refused", "sk-1")
    'Bearer *** refused'
    """
    return text.replace(api_key, "***") if api_key else text
