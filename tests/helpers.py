"""Helpers the tests share: fixture bytes, byte splits, running the assembler."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def fixture_bytes(name: str) -> bytes:
    """Raw bytes of ``fixtures/<name>.sse``, e.g. ``fixture_bytes("article/readme")``."""
    return (FIXTURES / f"{name}.sse").read_bytes()


def all_fixture_names() -> list[str]:
    return sorted(str(p.relative_to(FIXTURES).with_suffix("")) for p in FIXTURES.glob("*/*.sse"))


def run_assembly(ink: Any, reads: list[bytes], signal: Any = None) -> tuple[list[dict], str | None]:
    """All events assemble_stream yields for ``reads``, and the error it ended with (or None)."""
    events: list[dict] = []
    try:
        for event in ink.openai_completions.assemble_stream(iter(reads), signal):
            events.append(event)
    except ink.shared.ProviderError as err:
        return events, str(err)
    return events, None


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given byte offsets: the reads a network might deliver."""
    points = [0, *sorted(set(c for c in cuts if 0 < c < len(data))), len(data)]
    return [data[a:b] for a, b in pairwise(points)]
