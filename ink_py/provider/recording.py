"""``ink-py --record DIR``: keep every streamed reply, byte for byte, to replay it later.

Not in Ink, and not on the article's path: ``Recording`` is one mixin that wraps any
provider's two edges, ``post`` and ``read`` (``recording(ProviderClass)`` makes the twin).
A stream captured once from a real provider becomes a fixture like those in ``fixtures/``:
``ink-py demo --file DIR/001-response.sse`` steps through it offline. For each request, numbered in order:

    DIR/001-request.json    the JSON body sent (the API key travels in a header: never written)
    DIR/001-response.sse    the response body exactly as it arrived (a key echoed back: ***)

Numbers keep growing (…, 999, 1000) and are claimed with an exclusive create, so a second
process recording into DIR takes the next one; no file that was there is ever overwritten.

    >>> from .openai_completions import OpenAICompletionsProvider
    >>> recording(OpenAICompletionsProvider)("http://127.0.0.1:9/v1", "sk-secret", record_dir="rec")
    RecordingOpenAICompletionsProvider(base_url='http://127.0.0.1:9/v1', api_key=***)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import requests

from ..arguments import encodable_text
from ..atomic import write_text_atomically
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


RECORDED = re.compile(r"(\d{3,9})-(?:request\.json|response\.sse)")  # the names a recording folder holds
MAX_CLAIMS = 10_000  # numbers tried before giving up on a folder that other processes keep filling


def next_record_prefix(record_dir: Path) -> Path:
    """``DIR/NNN`` for the next exchange, claimed: numbering continues across runs into the same
    DIR, past 999 too (1000, 1001 …), and ``NNN-request.json`` is created exclusively (beyond
    Ink: ``O_EXCL``), so two processes recording into one DIR never take the same number.

    >>> import tempfile; scratch = tempfile.TemporaryDirectory(); folder = Path(scratch.name)
    >>> _ = (folder / "999-request.json").write_text("{}")
    >>> next_record_prefix(folder).name, next_record_prefix(folder).name
    ('1000', '1001')
    >>> scratch.cleanup()
    """
    record_dir.mkdir(parents=True, exist_ok=True)
    taken = [int(match[1]) for path in record_dir.iterdir() if (match := RECORDED.fullmatch(path.name))]
    first = max(taken, default=0) + 1
    for number in range(first, first + MAX_CLAIMS):
        prefix = record_dir / f"{number:03d}"
        try:
            os.close(os.open(request_path(prefix), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue  # another process claimed it first: the next number
        return prefix
    raise OSError(f"--record {record_dir}: no free number after {MAX_CLAIMS} tries")


def request_path(prefix: Path) -> Path:
    return prefix.with_name(prefix.name + "-request.json")


def record_request(prefix: Path, body: dict[str, Any]) -> None:
    """The body sent, whole or not at all (atomic.py): a failure leaves the claimed name empty."""
    write_text_atomically(request_path(prefix), encodable_text(json.dumps(body, ensure_ascii=False, indent=2)) + "\n")


def tee_body(reads: Iterable[bytes], prefix: Path) -> Iterator[bytes]:
    """Pass each read on unchanged, appending it to ``NNN-response.sse`` first — a name no one
    else holds (created exclusively, ``xb``), so nothing that was there can be overwritten."""
    with open(prefix.with_name(prefix.name + "-response.sse"), "xb") as sink:
        for read in reads:
            sink.write(read)
            sink.flush()  # an aborted or broken stream is still on disk up to its last byte
            yield read
