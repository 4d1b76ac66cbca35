"""``ink-py --record DIR``: keep every streamed reply, byte for byte, to replay it later.

Not in Ink. A stream captured once from a real provider becomes a fixture like the ones
in ``fixtures/``: ``ink-py demo --file DIR/001-response.sse`` steps through it offline.
For each request the provider writes, numbered in order:

    DIR/001-request.json    the JSON body sent (the API key travels in a header: never written)
    DIR/001-response.sse    the response body exactly as it arrived
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


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
