"""``ink-py --record DIR``: keep every streamed reply, byte for byte, to replay it later.

Not in Ink, and not on the article's path: ``Recording`` is one mixin that wraps any
provider's two edges, ``post`` and ``read`` (``recording(ProviderClass)`` makes the twin).
A stream captured once from a real provider becomes a fixture like those in ``fixtures/``:
``ink-py demo --file DIR/001-response.sse`` steps through it offline. For each request, numbered in order:

    DIR/001-request.json    the JSON body sent (the API key travels in a header: never written)
    DIR/001-response.sse    the response body exactly as it arrived (a key echoed back: ***)

    >>> from .openai_completions import OpenAICompletionsProvider
    >>> recording(OpenAICompletionsProvider)("http://127.0.0.1:9/v1", "sk-secret", record_dir="rec")
    RecordingOpenAICompletionsProvider(base_url='http://127.0.0.1:9/v1', api_key=***)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import requests

from ..core.abort import AbortSignal
from .base import HttpProvider


class Recording(HttpProvider):
    """Writes ``NNN-request.json`` as each request goes out and ``NNN-response.sse`` as it streams in."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, record_dir: str) -> None:
        super().__init__(base_url, api_key)
        self.record_dir = Path(record_dir)
        self._prefix = self.record_dir / "000"  # the exchange being recorded

    def post(self, body: dict[str, Any], signal: AbortSignal) -> requests.Response | None:
        self._prefix = next_record_prefix(self.record_dir)
        record_request(self._prefix, body)
        return super().post(body, signal)

    def read(self, response: requests.Response) -> Iterable[bytes]:
        return tee_body(super().read(response), self._prefix)


def recording(provider_class: type[HttpProvider]) -> type[HttpProvider]:
    """``provider_class`` with its two edges recorded: ``Recording`` mixed in front of it."""
    return type(f"Recording{provider_class.__name__}", (Recording, provider_class), {})


def next_record_prefix(record_dir: Path) -> Path:
    """``DIR/NNN`` for the next exchange; numbering continues across runs into the same DIR."""
    record_dir.mkdir(parents=True, exist_ok=True)
    taken = [int(p.name[:3]) for p in record_dir.glob("[0-9][0-9][0-9]-request.json")]
    return record_dir / f"{max(taken, default=0) + 1:03d}"


def record_request(prefix: Path, body: dict[str, Any]) -> None:
    prefix.with_name(prefix.name + "-request.json").write_text(
        json.dumps(body, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )


def tee_body(reads: Iterable[bytes], prefix: Path) -> Iterator[bytes]:
    """Pass each read on unchanged, appending it to ``NNN-response.sse`` first."""
    with open(prefix.with_name(prefix.name + "-response.sse"), "wb") as sink:
        for read in reads:
            sink.write(read)
            sink.flush()  # an aborted or broken stream is still on disk up to its last byte
            yield read
