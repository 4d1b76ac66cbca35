"""Vectors from other projects' own test suites, run over several chunkings through ink_py's readers.

``fixtures/peers/<source>/vectors.json``: each vector names its repository, commit, file and test, the
input bytes and the outcome that test expects, in ink_py's terms. Two kinds:

- SSE framing (eventsource-parser, web-platform-tests ``eventsource/format-*``, the SDKs'
  ``tests/test_streaming.py``): the events ``parse_sse(guarded(body))`` yields — the stage all three
  readers read through — with JSON decoding left out (these vectors carry plain text);
- a whole reply (``"reader"``: the SDKs' recorded bodies, the Vercel AI SDK's ``doStream`` tests): the
  message that dialect's ``assemble_stream`` makes — its text, its calls, its stop reason — or its error.

Where ink_py differs on purpose, the vector keeps the peer's expectation (``peer_expects``) beside
ink_py's and names the rule and the line that explains it (``by_design``), in walkthrough.md or in the
docs/ page its section moved to (the real servers' section: docs/real-servers.md).
docs/peer-vectors.md gives the counts per source; a test keeps them true.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from .helpers import FIXTURES, ROOT

PEERS = FIXTURES / "peers"
SOURCES = sorted(path.parent.name for path in PEERS.glob("*/vectors.json"))
EXPLAINED_IN = ["walkthrough.md", "docs/real-servers.md", "docs/dialects.md", "docs/hardening.md"]
EXPLANATIONS = "\n".join((ROOT / page).read_text(encoding="utf-8") for page in EXPLAINED_IN)
COUNTS_DOC = ROOT / "docs" / "peer-vectors.md"


def load(source: str) -> dict[str, Any]:
    return json.loads((PEERS / source / "vectors.json").read_text(encoding="utf-8"))


def all_vectors() -> list[Any]:
    return [
        pytest.param(vector, id=f"{source}/{vector['test']}"[:150])
        for source in SOURCES
        for vector in load(source)["vectors"]
    ]


def chunkings(body: bytes) -> dict[str, list[bytes]]:
    """The same bytes as a network might deliver them: whole, line by line, in small and odd reads."""
    lines = re.split(b"(?<=\n)", body)
    small = 1 if len(body) <= 16 * 1024 else 7
    cuts = sorted(random.Random(len(body)).sample(range(1, max(len(body), 2)), min(12, max(len(body) - 1, 0))))
    return {
        "whole": [body],
        "lines": [line for line in lines if line],
        f"every {small} bytes": [body[i : i + small] for i in range(0, len(body), small)],
        "every 5 bytes": [body[i : i + 5] for i in range(0, len(body), 5)],
        "random cuts": [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)],
    }


class NoJson:
    """parse_frame's JSON decoder, left out: the event's data as the text it is."""

    @staticmethod
    def decode(text: str) -> str:
        return text


def outcome(ink: Any, vector: dict[str, Any], reads: list[bytes], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What ink_py makes of ``reads``, in the shape of the vector's ``expect``."""
    if "reader" not in vector:
        with monkeypatch.context() as patch:
            patch.setattr(ink.shared, "FINITE_JSON", NoJson)
            try:
                events = list(ink.shared.parse_sse(ink.shared.guarded(iter(reads))))
            except ink.shared.ProviderError as err:
                return {"error": str(err)}
        return {"events": [[event["event"], event["data"]] for event in events]}
    try:
        events = list(getattr(ink, vector["reader"]).assemble_stream(iter(reads)))
    except ink.shared.ProviderError as err:
        return {"error": str(err)}
    message = events[-1]["message"]
    blocks = message["blocks"]
    found = {
        "text": "".join(b["text"] for b in blocks if b["type"] == "text" and b["text"] != "(empty)"),
        "calls": [[b["name"], b["arguments"]] for b in blocks if b["type"] == "toolCall"],
        "stop": message["stopReason"],
    }
    if "usage" in vector["expect"]:
        found["usage"] = message["usage"]
    return found


@pytest.mark.parametrize("vector", all_vectors())
def test_a_peer_vector_over_every_chunking(ink, vector, monkeypatch):
    body = vector["input"].encode("utf-8")
    expected = vector["expect"]
    for name, reads in chunkings(body).items():
        got = outcome(ink, vector, reads, monkeypatch)
        if "error" in expected:
            assert "error" in got and expected["error"] in got["error"], f"{name}: {got}"
        else:  # a peer that asserts only the stop reason is compared on that
            assert {key: got.get(key) for key in expected} == expected, f"chunking {name!r}"


@pytest.mark.parametrize("vector", [v for v in all_vectors() if "by_design" in v.values[0]])
def test_each_difference_by_design_names_its_walkthrough_line(vector):
    why = vector["by_design"]
    assert why["rule"] and vector["peer_expects"] != vector["expect"]
    assert why["walkthrough"] in EXPLANATIONS, f"neither walkthrough.md nor docs/ says now: {why['walkthrough']}"


def counts() -> dict[str, tuple[int, int]]:
    """Per source: vectors, and how many of them differ by design (every vector passes)."""
    found = {}
    for source in SOURCES:
        vectors = load(source)["vectors"]
        found[source] = (len(vectors), sum("by_design" in v for v in vectors))
    return found


def test_the_counts_in_the_docs_are_the_vectors_run():
    rows = re.findall(
        r"^\| `([\w-]+)` \| [^|]+ \| (\d+) \| (\d+) \| (\d+) \|$", COUNTS_DOC.read_text(encoding="utf-8"), re.M
    )
    documented = {source: (int(total), int(by_design)) for source, total, passing, by_design in rows}
    for source, total, passing, _by_design in rows:
        assert int(passing) == int(total), source  # every vector passes, as ink_py or as its documented rule says
    assert documented == counts()


def test_every_vector_names_where_it_comes_from():
    for source in SOURCES:
        data = load(source)
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", data["repository"])
        for vector in data["vectors"]:
            assert vector["test"] and vector["file"], vector
            assert re.fullmatch(r"[0-9a-f]{40}", vector.get("commit", data["commit"])), vector["test"]


def test_sources_are_the_peers_the_issue_names():
    assert set(SOURCES) == {"anthropic-sdk-python", "eventsource-parser", "openai-python", "vercel-ai", "wpt"}
    assert all(Path(PEERS / source / "vectors.json").stat().st_size > 0 for source in SOURCES)
