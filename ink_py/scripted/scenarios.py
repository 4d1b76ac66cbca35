"""The article's scenarios by name, and where their fixtures live.

One registry serves the built-in scripted model (``ink-py --scenario NAME``), the
step-through demo (``ink-py demo NAME``) and the tests, so all of them read the
same raw ``.sse`` bodies from ``fixtures/`` (the model decodes them, then writes them with
every field its dialect's provider adds: ``turn.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TypedDict


class Scenario(TypedDict):
    title: str  # the article's name for it
    section: str  # where the article discusses it
    fixture: str  # the first reply's raw body, under fixtures/
    summary: str  # one line for --list


SCENARIOS: dict[str, Scenario] = {
    "readme": {
        "title": "读取 README",
        "section": "§2",
        "fixture": "article/readme.sse",
        "summary": "text, then a read call whose path arrives in two fragments",
    },
    "interleaved": {
        "title": "两次读取交错到达",
        "section": "§2.2",
        "fixture": "article/interleaved.sse",
        "summary": "two read calls whose fragments arrive interleaved, kept apart by index",
    },
    "missing-finish": {
        "title": "缺少结束原因",
        "section": "§4.1",
        "fixture": "article/missing_finish.sse",
        "summary": "the body ends without finish_reason: an error, never a message",
    },
    "abort": {
        "title": "用户中断",
        "section": "§4.2",
        "fixture": "article/abort.sse",
        "summary": "the user cancels mid-stream: no message_end, the loop stops",
    },
    "invalid-json": {
        "title": "参数拼接后仍不是 JSON",
        "section": "§4.3",
        "fixture": "article/invalid_json.sse",
        "summary": "the collected arguments miss a brace: a _parseError record, the call blocked (beyond §4.3)",
    },
    "length-tool": {
        "title": "达到输出上限(含工具调用)",
        "section": "§4.4",
        "fixture": "article/length_tool.sse",
        "summary": "finish_reason length with tool calls: no call runs, each gets an error",
    },
    "length-text": {
        "title": "达到输出上限(纯文本)",
        "section": "§4.4",
        "fixture": "article/length_text.sse",
        "summary": "finish_reason length without tool calls: the answer is marked truncated",
    },
}


def fixtures_dir() -> Path:
    """``fixtures/`` of the source checkout, or the copy a regular install puts in <prefix>/share."""
    for candidate in (
        Path(__file__).resolve().parents[2] / "fixtures",
        Path(sys.prefix) / "share" / "ink_py" / "fixtures",
        *reference_fixtures(),  # a course copy (my_ink) outside the checkout: the reference's
    ):
        if (candidate / "article").is_dir():
            return candidate
    raise FileNotFoundError("ink_py's fixtures/ folder was not found (reinstall with: pip install -e .)")


def reference_fixtures() -> list[Path]:
    """Where the installed reference keeps its fixtures — located, never imported."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("ink_py")
    except (ImportError, ValueError):
        return []
    origin = spec.origin if spec is not None else None
    return [Path(origin).resolve().parents[1] / "fixtures"] if origin else []


def fixture_path(name: str) -> Path:
    """The path of a fixture such as ``"article/readme.sse"``: every fixture is read through here."""
    return fixtures_dir() / name


def fixture_names() -> list[str]:
    """Every SSE fixture, as ``fixture_path`` takes it (``"article/readme.sse"``, …), sorted.

    >>> "article/readme.sse" in fixture_names()
    True
    """
    folders = [folder for folder in fixtures_dir().iterdir() if folder.is_dir()]  # iterdir: a Traversable too
    return sorted(f"{d.name}/{item.name}" for d in folders for item in d.iterdir() if item.name.endswith(".sse"))
