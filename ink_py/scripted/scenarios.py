"""The article's scenarios by name, and where their fixtures live.

One registry serves the built-in scripted model (``ink-py --scenario NAME``), the
step-through demo (``ink-py demo NAME``) and the tests, so all of them read the
same raw ``.sse`` bodies from ``fixtures/`` (the model decodes them, then writes them with
every field its dialect's provider adds: ``turn.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TypedDict

from ..installed import in_its_source, pip_install

PACKAGE = (__package__ or "ink_py").partition(".")[0]  # "ink_py", or a course copy's own name (my_ink)


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


@functools.cache
def fixtures_dir() -> Path:
    """``fixtures/``, wherever this package was installed from or to.

    A wheel carries it inside the package (setup.cfg maps ``ink_py.fixtures`` onto the checkout's
    top-level ``fixtures/``), read through ``importlib.resources`` — a venv, ``--user``, ``--target``
    and ``--prefix`` alike; a checkout, its editable install and the sdist unpacked keep it beside the
    package. A course copy (my_ink) has none of its own: the installed reference's is read.
    """
    for package in dict.fromkeys((PACKAGE, "ink_py")):
        for candidate in shipped_or_beside(package):
            if (candidate / "article").is_dir():
                return candidate
    raise FileNotFoundError(f"ink_py's fixtures/ folder was not found (reinstall with: {pip_install(reinstall=True)})")


def shipped_or_beside(package: str) -> Iterator[Path]:
    """``package``'s own ``fixtures/`` (a wheel's), then the one at the top of its source checkout."""
    try:
        root = resources.files(package)
    except ImportError:  # a course copy run where the reference is not installed
        return
    if isinstance(root, Path):  # (a zipped install's could not be read as files)
        yield root / "fixtures"
        if in_its_source(root):
            yield root.parent / "fixtures"


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
