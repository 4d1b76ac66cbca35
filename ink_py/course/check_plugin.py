"""The pytest plugin behind ``ink-py exercise check``: the first failure, as plain data.

``check`` (ink_py/course/checker.py) runs the exercise's checks in a separate ``python -m pytest``
with ``-p ink_py.course.check_plugin`` and ``INK_EXERCISE_REPORT=<file>``. These hooks (their
names are pytest's) report how far the run is as it goes (``PROGRESS_ENV``, read by running.py),
and record how many tests passed and failed, which exercises each selected test belongs to, and
for the first failure: the test, the parameters it was fed, the
comparison that failed (both sides, bounded), the line in the student's copy where it
broke, and whether it was a stub of another exercise. ``check`` turns that into a few
plain lines. Without ``INK_EXERCISE_REPORT`` the plugin does nothing.
"""

from __future__ import annotations

import json
import os
import pprint
import re
import textwrap
from pathlib import Path
from typing import Any

from ..atomic import write_text_atomically
from .checker import REPORT_ENV
from .language import course_language, say
from .places import SOURCE_ROOT
from .running import PROGRESS_ENV
from .stubs import MarkerError, find_regions, stub_number

_report: dict[str, Any] = {}
_compare: dict[str, str] | None = None  # the last failing comparison of the running test
_progress: list[int] = []  # the descriptor progress lines go to (PROGRESS_ENV), and the tests done


def pytest_configure(config: Any) -> None:
    # Taken out of the environment: a test of the suite that runs pytest itself must not write here.
    report, progress = os.environ.pop(REPORT_ENV, ""), os.environ.pop(PROGRESS_ENV, "")
    if report:
        _report.update(passed=0, failed=0, failure=None, selected={}, outcomes={}, path=report)
    if progress:
        _progress[:] = [os.open(progress, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 0]


def progress_line(entry: dict[str, Any]) -> None:
    """One line for ``check`` to show how far the run is (running.py reads them as they come)."""
    if _progress:
        os.write(_progress[0], json.dumps(entry).encode("utf-8") + b"\n")


def pytest_collection_finish(session: Any) -> None:
    if _report:
        _report["rootdir"] = str(session.config.rootpath)  # node ids are relative to it
        for item in session.items:
            marks = sorted(int(m.name[2:]) for m in item.iter_markers() if re.fullmatch(r"ex\d+", m.name))
            _report["selected"][item.nodeid] = marks
    progress_line({"total": len(session.items)})


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if _progress:
        _progress[1] += 1
        marks = _report["selected"].get(nodeid, []) if _report else []
        progress_line({"done": _progress[1], "test": str(location[0]), "marks": marks})


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    global _compare
    _compare = None


def pytest_assertrepr_compare(config: Any, op: str, left: Any, right: Any) -> None:
    global _compare
    if _report:
        _compare = {"op": op, "left": show_value(left), "right": show_value(right)}
    return None  # keep pytest's own explanation


def pytest_runtest_logreport(report: Any) -> None:
    if not _report:
        return
    if report.when == "call" or report.failed:
        if report.failed or report.nodeid not in _report["outcomes"]:
            _report["outcomes"][report.nodeid] = report.outcome
    if report.when == "call" and report.passed:
        _report["passed"] += 1
    elif report.failed:
        _report["failed"] += 1


def pytest_exception_interact(node: Any, call: Any, report: Any) -> None:
    if not _report or _report["failure"] is not None or call.excinfo is None:
        return
    _report["failure"] = describe_exception(node, call.excinfo)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _report:
        _report["exitstatus"] = int(exitstatus)
        path = _report.pop("path")
        write_text_atomically(path, json.dumps(_report, ensure_ascii=False))


def describe_exception(node: Any, excinfo: Any) -> dict[str, Any]:
    """What a failed test fed in, what broke and where — as plain data for ``check``."""
    error = excinfo.value
    function = getattr(node, "function", None)
    path = Path(str(getattr(node, "path", ""))).resolve()
    params = getattr(getattr(node, "callspec", None), "params", {})
    failure: dict[str, Any] = {
        "nodeid": getattr(node, "nodeid", ""),
        "name": getattr(node, "name", ""),
        "file": path.relative_to(SOURCE_ROOT).as_posix() if path.is_relative_to(SOURCE_ROOT) else str(path),
        "line": (node.location[1] or 0) + 1 if hasattr(node, "location") else 0,
        "doc": about(getattr(function, "__doc__", None) or "", course_language()),
        "params": {k: show_value(v) for k, v in params.items()},
        "fixtures": fixture_files(function),
        "notes": short_notes([str(note) for note in getattr(error, "__notes__", [])]),
        "compare": _compare,
        "exercise": None,
        "regions": [],  # the exercises whose code (in the copy) the error passed through, innermost first
    }
    impl = node.config.getoption("impl", None) if hasattr(node, "config") else None
    copy = Path(impl).resolve() if impl else None
    skip = {*getattr(node, "fixturenames", ()), *params}
    conclusion = str(error).strip()  # a local holding the failure's own message is no input
    for entry in excinfo.traceback:  # the test's own line that failed; the innermost frame in the copy
        where = Path(str(entry.path)).resolve()
        if where == path and entry.name == getattr(function, "__name__", None):
            statement = str(entry.statement).strip()
            failure["test_line"] = statement.split("\n")[0]
            failure["raises"] = expected_raise(path, entry.lineno + 1)
            failure["locals"] = shown_locals(entry.locals, skip, conclusion)
            failure["expected_value"] = expected_value(statement, entry.locals)
        if copy is not None and where.is_relative_to(copy):
            relative = where.relative_to(copy).as_posix()
            failure["in_copy"] = say(
                "in_function", where=f"{copy.name}/{relative}:{entry.lineno + 1}", function=entry.name
            )
            region = region_at(where, entry.lineno + 1)
            if region is not None:
                failure["regions"] = [region, *[r for r in failure["regions"] if r != region]]
            failure["region"] = region  # the innermost frame's
    if isinstance(error, SyntaxError) and error.filename:  # the copy does not even import
        broken = Path(error.filename).resolve()
        shown_as = (
            f"{copy.name}/{broken.relative_to(copy).as_posix()}" if copy and broken.is_relative_to(copy) else broken
        )
        failure["in_copy"] = f"{shown_as}:{error.lineno}"
    message = str(error).strip()
    stub = stub_number(message) if isinstance(error, NotImplementedError) else None
    if stub is not None:
        failure.update(kind="stub", exercise=stub, message=message)
    elif EXPLAINED.search(message) and isinstance(error, AssertionError | failed_exception()):
        failure.update(kind="explained", message=message)
    elif isinstance(error, AssertionError):
        failure.update(kind="assert", message="\n".join(message.split("\n")[:8]))
    elif message.startswith("DID NOT RAISE"):
        failure.update(kind="did_not_raise", message=message.split("\n")[0])
    else:
        failure.update(kind="error", message=f"{type(error).__name__}: {message.split(chr(10))[0][:300]}")
    return failure


EXPLAINED = re.compile(r"^expected: .*\n(?:.*\n)*?got: ", re.MULTILINE)  # a test's own "expected:/got:" words


def failed_exception() -> type:
    """The exception ``pytest.fail`` raises."""
    import pytest

    return pytest.fail.Exception


def region_at(path: Path, line: int) -> int | None:
    """The exercise whose region (markers, or a whole function) holds ``line`` of ``path`` now."""
    try:
        regions = find_regions(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, MarkerError):
        return None
    inside = [r["number"] for r in regions if r["start"] + 2 <= line <= r["end"]]
    return inside[-1] if inside else None


def expected_raise(test_file: Path, line: int) -> str | None:
    """``OSError`` when ``line`` of the test lies in ``with pytest.raises(OSError…)``: what must propagate."""
    import ast

    try:
        tree = ast.parse(test_file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    found = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.With) or not node.lineno <= line <= (node.end_lineno or 0):
            continue
        for item in node.items:
            call = item.context_expr
            if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("raises") and call.args:
                name = ast.unparse(call.args[0]).rpartition(".")[2]
                match = next((k.value for k in call.keywords if k.arg == "match"), None)
                if isinstance(match, ast.Constant):
                    name += f" (its message matching {match.value!r})"
                found = name  # the innermost such block wins: ast.walk goes outside in
    return found


def show_value(value: Any, max_lines: int = 14) -> str:
    """A readable, bounded repr for the report: long strings cut, at most ``max_lines`` lines."""
    text = pprint.pformat(shorten_long_strings(value), width=100, sort_dicts=False)
    lines = text.split("\n")
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], say("more_lines", count=len(lines) - max_lines)]
    text = "\n".join(lines)
    return text if len(text) <= 2000 else text[:2000] + " …"


class Shortened:
    """Stands for a long string or bytes in a report: its start, and how long it really was."""

    def __init__(self, value: str | bytes, keep: int = 80) -> None:
        size = say("characters" if isinstance(value, str) else "bytes", count=len(value))
        self.text = f"{value[:keep]!r}… {size}"

    def __repr__(self) -> str:
        return self.text


def shorten_long_strings(value: Any) -> Any:
    """``value`` with every string or bytes longer than 120 replaced by a Shortened."""
    if isinstance(value, (str, bytes)) and len(value) > 120:
        return Shortened(value)
    if isinstance(value, dict):
        return {key: shorten_long_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shorten_long_strings(item) for item in value]
    if isinstance(value, tuple):  # a named tuple (pytest's CaptureResult) is shown as a plain one
        return tuple(shorten_long_strings(item) for item in value)
    return value


def about(doc: str, language: str) -> str:
    """The test's first paragraph, in whole sentences, in ``language``: a paragraph of the
    docstring that starts ``中文:`` is the Chinese (tests/test_exercise_todos.py keeps one for
    every exercise test that has a docstring).

    >>> about("Never held back\\n    until the next read.\\n\\n    中文:不会留到下一次读取。", "zh")
    '不会留到下一次读取。'
    >>> about("Never held back\\n    until the next read.\\n\\n    中文:不会留到下一次读取。", "en")
    'Never held back until the next read.'
    """
    paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", doc.strip()) if part.strip()]
    chinese = [p.removeprefix("中文:").strip() for p in paragraphs if p.startswith("中文:")]
    english = [p for p in paragraphs if not p.startswith("中文:")]
    if language == "zh" and chinese:
        return chinese[0]
    return english[0] if english else ""


def short_notes(notes: list[str]) -> list[str]:
    """The notes a test left (Hypothesis's falsifying example), a few short lines: no fixture
    objects, no 100-line dump, no reproduce blob."""
    kept: list[str] = []
    for note in notes[:6]:
        lines = [line for line in note.split("\n") if " at 0x" not in line and "reproduce_failure" not in line]
        lines = [line for line in lines if not re.match(r"\s*ink=", line)]
        text = "\n".join(lines[:8]) + ("\n    " + say("more_lines", count=len(lines) - 8) if len(lines) > 8 else "")
        kept.append(text if len(text) <= 600 else text[:600] + " …")
    return kept


DATA = (str, bytes, int, float, bool, list, tuple, dict, type(None))


def shown_locals(values: dict[str, Any], skip: set[str], conclusion: str = "") -> dict[str, str]:
    """The test's own variables at the failure — the input it built — as short reprs (no fixtures, and
    not a verdict: a string that is the failure's own message).

    >>> shown_locals({"frame": "data: x", "verdict": "expected: linear"}, set(), "expected: linear")
    {'frame': "'data: x'"}
    """
    shown: dict[str, str] = {}
    for name, value in values.items():
        if name in skip or name.startswith("_") or name.startswith("@") or not isinstance(value, DATA):
            continue
        if conclusion and isinstance(value, str) and value.strip() == conclusion:
            continue
        shown[name] = show_value(value, max_lines=4)
        if len(shown) == 5:
            break
    return shown


def expected_value(statement: str, values: dict[str, Any]) -> str | None:
    """What ``assert got == expected`` (or ``is``) wants, for a test whose line raised before comparing:
    the value of the right-hand name, or its source.

    >>> expected_value("assert f(x) == expected", {"expected": [1]}), expected_value("assert f() is None", {})
    ('[1]', 'None')
    """
    import ast

    try:
        [node] = ast.parse(textwrap.dedent(statement)).body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare) or len(node.test.ops) != 1:
        return None
    if not isinstance(node.test.ops[0], ast.Eq | ast.Is):
        return None
    right = node.test.comparators[0]
    if isinstance(right, ast.Name) and right.id in values:
        return show_value(values[right.id])
    return ast.unparse(right)


def fixture_files(function: Any) -> list[str]:
    """The SSE fixtures a test reads (``fixture_bytes("article/readme")`` → fixtures/article/readme.sse)."""
    import inspect

    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return []
    return [f"fixtures/{name}.sse" for name in dict.fromkeys(re.findall(r'fixture_bytes\("([^"]+)"\)', source))]
