"""``ink-py exercise check``: run an exercise's tests on the copy, and tell the first failure in plain words.

``check`` runs ``python -m pytest --impl DIR -m exN -x`` from the source checkout with
``ink_py/course/check_plugin.py`` loaded as a pytest plugin: its hooks write the first failure —
what the test fed in, what it expected, what came back — to the JSON file ``REPORT_ENV`` names.
Sections: running the tests (``check``, ``pytest_arguments``, ``run_tests``), and the failure in words
(``describe_failure`` blames the exercise whose code it happened in; ``plain_words`` reads the report)::

    >>> plain_words({"kind": "assert", "compare": {"op": "==", "left": "None", "right": "1"}, "file": "t", "line": 3})
    ('what the test builds — see t:3', '1', 'None (nothing: no value came back)')
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .catalogue import EXERCISES, ExerciseError
from .impl_option import SOURCE_ROOT
from .progress import next_step
from .stubs import MarkerError, find_regions, group_by_file, is_stub, package_regions
from .working_copy import demo_command, dir_argument, is_working_copy, load_state, now, save_state, shown

REPORT_ENV = "INK_EXERCISE_REPORT"  # where the plugin writes its report (the plugin is idle without it)

# ── running the tests ─────────────────────────────────────────────────────────────────


def check(number: int, folder: Path) -> tuple[bool, str]:
    """Run ``pytest --impl folder -m exN -x``; (green?, what to tell the student)."""
    if not is_working_copy(folder):
        raise ExerciseError(f"no working copy at {shown(folder)} — start with: ink-py exercise start {number}")
    state = load_state(folder)
    if number not in state.get("started", []):
        raise ExerciseError(
            f"exercise {number} is not started in {shown(folder)} (its code there is still the reference's) — "
            f"run: ink-py exercise start {number}{dir_argument(folder)}"
        )
    if not (SOURCE_ROOT / "tests" / "conftest.py").is_file():
        raise ExerciseError(
            "the checks need a source checkout of ink_py (tests/ next to the package): "
            "clone the repository and pip install -e '.[test]'"
        )
    report = run_tests(folder, number)
    exercise = EXERCISES[number]
    green = report["exitstatus"] == 0
    key = str(number)
    state.setdefault("checks", {})[key] = "green" if green else "red"
    attempts = state.setdefault("attempts", {})
    attempts[key] = int(attempts.get(key, 0)) + 1
    state.setdefault("tests", {})[key] = {"passed": report["passed"], "selected": len(report["selected"])}
    if green:
        state.setdefault("first_green", {}).setdefault(key, now())
    save_state(folder, state)
    if green:
        passed = report["passed"]
        return True, "\n".join(
            [
                f"exercise {number} · {exercise['slug']} — all {passed} tests pass. Well done!",
                f"see your code at work: {demo_command(folder)} · beside the reference: "
                f"ink-py exercise diff {number}{dir_argument(folder)}",
                next_step(state, folder, after=number),
            ]
        )
    return False, describe_failure(number, report, folder)


def marked_test_files(number: int) -> list[str]:
    """The test modules that mark tests ``pytest.mark.exN`` — collecting only those is faster.

    (tests/test_exercises.py checks that they hold every test the whole suite marks exN.)
    """
    tests = SOURCE_ROOT / "tests"
    marked = re.compile(rf"\bmark\.ex{number}\b")
    found = [
        path.relative_to(SOURCE_ROOT).as_posix()
        for path in sorted(tests.glob("test_*.py"))
        if marked.search(path.read_text(encoding="utf-8"))
    ]
    return found or ["tests"]


def pytest_arguments(folder: Path, number: int) -> list[str]:
    """What ``check`` runs after ``python -m pytest``: exercise N's tests on the copy, up to the first failure."""
    return [
        "--impl", str(folder.resolve()), "-m", f"ex{number}", "-x", "-q", "--tb=no", "--no-header",
        "-p", "no:cacheprovider", "-p", f"{__package__}.check_plugin", *marked_test_files(number),
    ]  # fmt: skip


def run_tests(folder: Path, number: int) -> dict[str, Any]:
    """Run exercise ``number``'s tests on the copy (cwd: the source checkout); the plugin's report."""
    try:
        import pytest  # noqa: F401  # only to say clearly that it is missing
    except ImportError:
        raise ExerciseError("the checks need pytest: pip install -e '.[test]'") from None
    with tempfile.TemporaryDirectory() as scratch:
        report_path = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pytest", *pytest_arguments(folder, number)]
        env = {**os.environ, REPORT_ENV: str(report_path)}
        done = subprocess.run(command, cwd=SOURCE_ROOT, env=env, capture_output=True, text=True)
        output_tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        if not report_path.exists():
            raise ExerciseError(f"the tests could not run: {output_tail}")
        report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    if report["exitstatus"] == 5:  # nothing selected: a test suite without this exercise's marks
        raise ExerciseError(f"no test is marked ex{number}; the exercise cannot be checked")
    if report["exitstatus"] not in (0, 1):
        raise ExerciseError(f"the tests could not run (pytest exit {report['exitstatus']}): {output_tail}")
    return report


# ── the first failure, in plain words ─────────────────────────────────────────────────


def stubs_left(number: int, folder: Path) -> list[str]:
    """Where exercise ``number``'s stubs are still in the copy (``my_ink/provider/shared.py:120``)."""
    places = []
    for relative in group_by_file(package_regions()[number]):
        try:
            text = (folder / relative).read_text(encoding="utf-8")
            places += [
                f"{shown(folder)}/{relative}:{r['start'] + 1}"
                for r in find_regions(text)
                if r["number"] == number and is_stub(text, r)
            ]
        except (OSError, MarkerError):
            continue
    return places


def describe_failure(number: int, report: dict[str, Any], folder: Path) -> str:
    """The first failure in a few plain lines, blamed on the exercise whose code it happened in."""
    exercise = EXERCISES[number]
    failure = report.get("failure")
    reread = f"re-read walkthrough.md {exercise['section']}"
    if failure is None:
        return f"exercise {number} · {exercise['slug']} — the tests failed without a report; {reread}"
    where = failure.get("in_copy") or ""
    mine = stubs_left(number, folder)
    if failure["kind"] == "stub" and (failure["exercise"] == number or mine):
        lines = [
            f"exercise {number} · {exercise['slug']} — not written yet: the stub still raises NotImplementedError"
            f" ({mine[0] if mine else where}).",
            "Write your code in its place (the TODO lines say what it does, and the messages the tests expect).",
        ]
        other = failure["exercise"]
        if other != number:  # the test stopped at another stub before it reached this one
            about = EXERCISES.get(other, {"slug": "?", "title": "?"})
            lines.append(
                f"Its test {failure['name']} also runs exercise {other} · {about['slug']}, whose stub is still in "
                f"place{f' at {where}' if where else ''}: write that one too (ink-py exercise check {other}"
                f"{dir_argument(folder)})."
            )
        lines.append(f"{reread} · stuck? ink-py exercise hint {number}{dir_argument(folder)}")
        return "\n".join(lines)
    if failure["kind"] == "stub":  # this exercise is written; another one's stub is in the way
        other = failure["exercise"]
        about = EXERCISES.get(other, {"slug": "?", "title": "?"})
        return "\n".join(
            [
                f"exercise {number} · {exercise['slug']} — {failure['name']} also runs exercise {other} "
                f"({about['title']}), whose stub is still in place{f' at {where}' if where else ''}.",
                f"finish exercise {other} first: ink-py exercise check {other}{dir_argument(folder)}",
            ]
        )

    # Where did it break? In another exercise's region that the student wrote: that exercise is to blame.
    blamed = failure.get("region")
    started = load_state(folder).get("started", [])
    elsewhere = blamed is not None and blamed != number and blamed in EXERCISES and blamed in started
    fed, expected, got = plain_words(failure)
    debug = (
        f"python -m pytest --impl {shlex.quote(str(folder.resolve()))} "
        f"{shlex.quote(str(SOURCE_ROOT / failure['nodeid']))} --pdb"
    )
    headline = f"exercise {number} · {exercise['slug']} — not yet: {failed_after(report['passed'])}"
    if elsewhere:
        other = EXERCISES[blamed]
        headline = (
            f"exercise {number} · {exercise['slug']} — not yet: {failed_after(report['passed'])[:-1]}, "
            f"in exercise {blamed} · {other['slug']}'s code (yours), not exercise {number}'s."
        )
    lines = [headline, "", f"  test      {failure['name']}   ({failure['file']}:{failure['line']})"]
    if failure.get("doc"):
        lines.append(f"  about     {failure['doc']}")
    lines += labelled("fed", fed) + labelled("expected", expected) + labelled("got", got)
    if where and failure["kind"] in ("error", "did_not_raise"):
        lines.append(f"  where     {where}")
    if elsewhere:
        other = EXERCISES[blamed]
        lines += [
            "",
            f"fix exercise {blamed} first: re-read walkthrough.md {other['section']}, then "
            f"ink-py exercise check {blamed}{dir_argument(folder)}",
        ]
    else:
        lines += ["", f"{reread}, then run the check again."]
    lines.append(f"debug it:  {debug}")
    return "\n".join(lines)


def failed_after(passed: int) -> str:
    if passed == 0:
        return "the first test failed."
    return f"{passed} test{'s' if passed > 1 else ''} passed, then this one failed."


def labelled(label: str, text: str) -> list[str]:
    if not text:
        return []
    first, *rest = text.split("\n")
    return [f"  {label:<9} {first}", *[f"            {line}" for line in rest]]


def plain_words(failure: dict[str, Any]) -> tuple[str, str, str]:
    """(what was fed, what was expected, what came back) for a failure the plugin recorded."""
    compare = failure.get("compare")
    params = dict(failure.get("params") or {})
    # A parameter that is the expected value is not "fed": it shows on the "expected" line.
    expected_value = compare["right"] if compare and compare["op"] in ("==", "is") else None
    params = {name: value for name, value in params.items() if value != expected_value and "expect" not in name}
    fed = "\n".join(f"{name} = {value}" for name, value in params.items())
    if failure.get("fixtures"):
        fed = "\n".join(filter(None, [fed, *failure["fixtures"]]))
    if failure.get("notes"):
        fed = "\n".join(filter(None, [fed, *failure["notes"]]))
    if not fed:
        fed = f"what the test builds — see {failure['file']}:{failure['line']}"

    kind, raises = failure["kind"], failure.get("raises")
    if kind == "explained":  # the test said it in words: "expected: …" and "got: …"
        text = failure["message"]
        said = re.search(r"^expected: (.*?)\n(?:.*\n)*?got: (.*)$", text, re.MULTILINE | re.DOTALL)
        if said:
            return fed, said[1].strip(), said[2].strip().split("\nassert ")[0]
    if kind == "assert" and compare:
        op, left, right = compare["op"], value_words(compare["left"]), value_words(compare["right"])
        if op in ("in", "not in"):
            return fed, f"{left} {'' if op == 'in' else 'not '}to be in it", right
        if op == "!=":
            return fed, f"anything but {right}", left
        return fed, (right if op in ("==", "is") else f"{op} {right}"), left
    if kind == "assert":  # a bare `assert condition`: the condition, and pytest's account of it
        first, *where = failure["message"].split("\n")
        got = "\n".join([first.removeprefix("assert "), *[w.strip() for w in where if " at 0x" not in w][:3]])
        return fed, failure.get("test_line", "").removeprefix("assert "), got
    if kind == "did_not_raise":
        raised = raises or failure["message"].removeprefix("DID NOT RAISE").strip()
        line = failure.get("test_line") or ""
        call = f" from  {line}" if line and not line.startswith("with ") else ""  # not `with pytest.raises(…)`
        return fed, f"{raised} to propagate{call}", "no error: it never reached the caller (swallowed, or never raised)"
    if raises:  # another error than the one the test waits for
        return (
            fed,
            f"{raises} to propagate from  {failure.get('test_line', '')}".rstrip(),
            f"a different error — {failure['message']}",
        )
    expected = f"no error from  {failure['test_line']}" if failure.get("test_line") else "no error"
    return fed, expected, f"an error — {failure['message']}"


def value_words(value: str) -> str:
    """A reported value as the student should read it: a bare ``None`` says what it means."""
    return "None (nothing: no value came back)" if value == "None" else value
