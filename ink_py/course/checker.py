"""``ink-py exercise check``: run an exercise's tests on the copy, and tell the first failure in plain words.

``check`` runs ``python -m pytest --impl DIR -m exN -x`` on the package's checks (``ink_py/course/
checks/``, with their own ``checks.ini``: wherever ink_py is installed) with ``ink_py/course/check_plugin.py``
loaded as a pytest plugin: its hooks write the first failure — what the test fed in, what it expected,
what came back — to the JSON file ``REPORT_ENV`` names (``run_tests``; without an exercise, the
project's whole suite, from a source checkout). Sections: running the tests, and the failure
in words: ``describe_failure`` blames the exercise being checked, unless the error passed through
another exercise's code *and* that exercise's own tests fail too (``blame`` runs them);
``plain_words`` reads the report, in the student's language (``language.py``)::

    >>> failure = {"kind": "assert", "compare": {"op": "==", "left": "None", "right": "1"}, "file": "t", "line": 3}
    >>> plain_words(failure, "en")
    ('what the test builds — see t:3', '1', 'None (nothing: no value came back)')
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from .catalogue import EXERCISES, ExerciseError, reading, title
from .language import course_language, label, say
from .places import CHECKS_DIR, CHECKS_INI, PACKAGE_DIR, SOURCE_ROOT, whole_suite_tests
from .progress import next_step
from .running import Progress, run_child
from .state import is_working_copy, load_state, now, save_state
from .stubs import MarkerError, find_regions, group_by_file, is_stub, package_regions, region_name
from .working_copy import demo_command, dir_argument, shown

REPORT_ENV = "INK_EXERCISE_REPORT"  # where the plugin writes its report (the plugin is idle without it)
HYPOTHESIS_PLUGIN = "_hypothesis_pytestplugin"  # Hypothesis's pytest plugin, by its module's name

# ── running the tests ─────────────────────────────────────────────────────────────────


def check(number: int, folder: Path, progress: Progress | None = None) -> tuple[bool, str]:
    """Run ``pytest --impl folder -m exN -x``; (green?, what to tell the student). The failing test
    is kept in the progress file: ``hint`` gives the hints it calls for first."""
    if not is_working_copy(folder):
        raise ExerciseError(say("no_copy_start", folder=shown(folder), n=number))
    state = load_state(folder)
    if number not in state.get("started", []):
        raise ExerciseError(say("not_started_check", n=number, folder=shown(folder), dir=dir_argument(folder)))
    report = run_tests(folder, number, progress)
    exercise = EXERCISES[number]
    green = report["exitstatus"] == 0
    key = str(number)
    state.setdefault("checks", {})[key] = "green" if green else "red"
    attempts = state.setdefault("attempts", {})
    attempts[key] = int(attempts.get(key, 0)) + 1
    state.setdefault("tests", {})[key] = {"passed": report["passed"], "selected": len(report["selected"])}
    state.pop("suite", None)  # the code changed, perhaps: the whole suite is to be run again
    failures = state.setdefault("failures", {})
    failures.pop(key, None)
    if report.get("failure"):
        failures[key] = str(report["failure"].get("name", ""))[:500]
    if green:
        state.setdefault("first_green", {}).setdefault(key, now())
    save_state(folder, state)
    if green:
        return True, "\n".join(
            [
                say("green", n=number, slug=exercise["slug"], passed=report["passed"]),
                say("watch", demo=demo_command(folder), n=number, dir=dir_argument(folder)),
                next_step(state, folder, after=number),
            ]
        )
    return False, describe_failure(number, report, folder, progress=progress)


def progress_title(number: int) -> str:
    """What the progress line calls exercise ``number``'s run: checking exercise 3 · text-delta."""
    return say("progress_exercise", n=number, slug=EXERCISES[number]["slug"])


def marked_test_files(number: int) -> list[str]:
    """The checks that mark tests ``pytest.mark.exN`` — collecting only those is faster.

    (tests/test_exercises.py checks that they hold every test marked exN.)
    """
    marked = re.compile(rf"\bmark\.ex{number}\b")
    found = [
        str(path) for path in sorted(CHECKS_DIR.glob("test_*.py")) if marked.search(path.read_text(encoding="utf-8"))
    ]
    return found or [str(CHECKS_DIR)]


def pytest_arguments(folder: Path, number: int | None) -> list[str]:
    """What ``check`` runs after ``python -m pytest``: exercise N's checks on the copy, with their own
    configuration (or, with no number, the project's whole suite, from its checkout), up to the first failure."""
    if number is not None:  # plugin autoload is off (run_tests): Hypothesis's is named, the course's is in CHECKS_INI
        selection = ["-c", str(CHECKS_INI), "-p", HYPOTHESIS_PLUGIN, "-m", f"ex{number}", *marked_test_files(number)]
    else:
        selection = ["tests", "ink_py"]  # run from the checkout: its setup.cfg
    return [
        "--impl", str(folder.resolve()), "-x", "-q", "--tb=no", "--no-header",
        "-p", "no:cacheprovider", "-p", f"{__package__}.check_plugin", *selection,
    ]  # fmt: skip


def child_environment() -> dict[str, str]:
    """The child pytest's environment: this one, and this ink_py first on its path if Python would not find it."""
    env = dict(os.environ)
    home = PACKAGE_DIR.parent
    if home not in [Path(entry or ".").resolve() for entry in sys.path[1:]]:  # [0]: this process's own folder
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(home), env.get("PYTHONPATH", "")) if p)
    return env


def run_tests(folder: Path, number: int | None, progress: Progress | None = None) -> dict[str, Any]:
    """Run exercise ``number``'s checks on the copy; the plugin's report. ``number`` None: the project's
    whole suite on the copy, from its checkout (``whole_suite_tests``). ``progress`` shows how far it is
    while it runs (running.py); Ctrl-C stops the child at once. The child works in a temporary folder:
    nothing is written where ink_py is installed."""
    try:
        import pytest  # noqa: F401  # only to say clearly that it is missing
    except ImportError:
        raise ExerciseError(say("needs_pytest")) from None
    if number is None and whole_suite_tests() is None:
        raise ExerciseError(say("suite_needs_tests"))
    with tempfile.TemporaryDirectory() as scratch:
        report_path = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pytest", *pytest_arguments(folder, number)]
        env = {**child_environment(), REPORT_ENV: str(report_path)}
        if number is not None:  # an exercise's checks: no other pytest plugin of the student's environment —
            env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # none reorders or slows them (seconds per check)
        if progress is not None:
            progress.begin(say("progress_suite") if number is None else progress_title(number))
        output = run_child(command, SOURCE_ROOT if number is None else Path(scratch), env, Path(scratch), progress)
        output_tail = " | ".join(output.strip().splitlines()[-3:])
        if not report_path.exists():
            raise ExerciseError(say("could_not_run", tail=output_tail))
        report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    if report["exitstatus"] == 5 and number is not None:  # nothing selected: a test suite without this exercise's marks
        raise ExerciseError(say("no_marked_test", n=number))
    if report["exitstatus"] not in (0, 1):
        raise ExerciseError(say("could_not_run_exit", code=report["exitstatus"], tail=output_tail))
    return report


# ── the first failure, in plain words ─────────────────────────────────────────────────


def stubs_left(number: int, folder: Path) -> list[str]:
    """Where exercise ``number``'s stubs are still in the copy, and what is to be written there
    (``my_ink/second_article/chunks.py:276 (add_tool_piece)``) — every one of them."""
    places = []
    for relative in group_by_file(package_regions()[number]):
        try:
            text = (folder / relative).read_text(encoding="utf-8")
            reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
            ours = [r for r in find_regions(text) if r["number"] == number]
            theirs = [r for r in find_regions(reference) if r["number"] == number]
        except (OSError, UnicodeDecodeError, MarkerError):
            continue
        for mine, reference_region in zip(ours, theirs, strict=False):
            if is_stub(text, mine):
                name = region_name(reference, {**reference_region, "label": mine["label"] or reference_region["label"]})
                places.append(f"{shown(folder)}/{relative}:{mine['start'] + 1}" + (f" ({name})" if name else ""))
    return places


def describe_failure(
    number: int, report: dict[str, Any], folder: Path, language: str | None = None, progress: Progress | None = None
) -> str:
    """The first failure in a few plain lines: this exercise is to blame, unless another one's
    code broke and its own tests fail too (``blame``)."""
    language = language or course_language()
    exercise = EXERCISES[number]
    failure = report.get("failure")
    reread = say("reread", language, reading=reading(number))
    where_dir = dir_argument(folder)
    if failure is None:
        return say("no_report", language, n=number, slug=exercise["slug"], reread=reread)
    where = failure.get("in_copy") or ""
    at = say("at", language, where=where) if where else ""
    mine = stubs_left(number, folder)
    if failure["kind"] == "stub" and (failure["exercise"] == number or mine):
        if len(mine) > 1:
            lines = [say("not_written_many", language, n=number, slug=exercise["slug"], count=len(mine))]
            lines += [f"  {place}" for place in mine]
        else:
            lines = [say("not_written", language, n=number, slug=exercise["slug"], where=mine[0] if mine else where)]
        lines.append(say("write_here", language))
        other = failure["exercise"]
        if other != number:  # the test stopped at another stub before it reached this one
            about = EXERCISES.get(other, {"slug": "?", "title": "?"})
            lines.append(
                say("also_runs_stub", language, test=failure["name"], other=other, other_slug=about["slug"],
                    at=at, dir=where_dir)
            )  # fmt: skip
        lines.append(say("stuck", language, reread=reread, n=number, dir=where_dir))
        return "\n".join(lines)
    if failure["kind"] == "stub":  # this exercise is written; another one's stub is in the way
        other = failure["exercise"]
        about = EXERCISES.get(other, {"slug": "?", "title": "?"})
        return "\n".join(
            [
                say("stub_in_the_way", language, n=number, slug=exercise["slug"], test=failure["name"], other=other,
                    other_title=title(other, language) if other in EXERCISES else "?", at=at),
                say("finish_first", language, other=other, dir=where_dir),
            ]
        )  # fmt: skip

    blamed, theirs, passed_through = blame(number, report, folder, progress)
    after = failed_after(report["passed"], failure["name"], language)
    if blamed is not None:
        other = EXERCISES[blamed]
        headline = say("not_yet_elsewhere", language, n=number, slug=exercise["slug"], after=after, other=blamed,
                       other_slug=other["slug"])  # fmt: skip
    else:
        headline = say("not_yet", language, n=number, slug=exercise["slug"], after=after)
    lines = [headline, "", *failure_lines(failure, language)]
    if blamed is not None:
        other = EXERCISES[blamed]
        their_test = (theirs or {}).get("name", "?")
        lines += ["", say("fix_other_first", language, other=blamed, test=their_test, reading=reading(blamed),
                          dir=where_dir)]  # fmt: skip
    else:
        if passed_through:
            other = EXERCISES[passed_through[0]]
            lines += ["", say("passed_through", language, other=passed_through[0], other_slug=other["slug"], n=number)]
        lines += ["", say("again", language, reread=reread)]
    lines.append(say("debug", language, command=debug_command(folder, failure, report.get("rootdir"))))
    return "\n".join(lines)


def failure_lines(failure: dict[str, Any], language: str) -> list[str]:
    """test, about, fed, expected, got, where: the failure's lines, labelled."""
    fed, expected, got = plain_words(failure, language)
    lines = [f"  {label('test', language)} {failure['name']}   ({failure['file']}:{failure['line']})"]
    if failure.get("doc"):
        lines.append(f"  {label('about', language)} {failure['doc']}")
    lines += labelled("fed", fed, language) + labelled("expected", expected, language) + labelled("got", got, language)
    where = failure.get("in_copy") or ""
    if where and failure["kind"] in ("error", "did_not_raise"):
        lines.append(f"  {label('where', language)} {where}")
    return lines


def debug_command(folder: Path, failure: dict[str, Any], rootdir: str | None = None) -> str:
    """The one failing test, straight, with a debugger: from any folder (plugin.py runs a path inside the
    checks with their configuration)."""
    test = Path(rootdir) / failure["nodeid"] if rootdir else CHECKS_DIR / failure["nodeid"]
    return f"python -m pytest --impl {shlex.quote(str(folder.resolve()))} {shlex.quote(str(test))} --pdb"


def blame(
    number: int, report: dict[str, Any], folder: Path, progress: Progress | None = None
) -> tuple[int | None, dict[str, Any] | None, list[int]]:
    """(the exercise to blame instead of ``number``, its own first failure, the others the error passed
    through whose own tests pass). Another exercise is blamed only if the error passed through its
    code (written by the student) *and* its own tests fail on the copy: a green exercise never is."""
    failure = report.get("failure") or {}
    started = load_state(folder).get("started", [])
    regions = failure.get("regions") or ([failure["region"]] if failure.get("region") else [])
    others = [r for r in regions if r != number and r in EXERCISES and r in started and not stubs_left(r, folder)]
    passing = []
    for other in others:
        theirs = run_tests(folder, other, progress)
        if theirs["exitstatus"] != 0:
            return other, theirs.get("failure"), []
        passing.append(other)
    return None, None, passing


def failed_after(passed: int, test: str, language: str) -> str:
    if passed == 0:
        return say("first_failed", language, test=test)
    if passed == 1:
        return say("then_failed_one", language, test=test)
    return say("then_failed", language, passed=passed, test=test)


def labelled(key: str, text: str, language: str) -> list[str]:
    if not text:
        return []
    first, *rest = text.split("\n")
    return [f"  {label(key, language)} {first}", *[f"            {line}" for line in rest]]


def plain_words(failure: dict[str, Any], language: str | None = None) -> tuple[str, str, str]:
    """(what was fed, what was expected, what came back) for a failure the plugin recorded."""
    language = language or course_language()
    compare = failure.get("compare")
    kind, raises = failure["kind"], failure.get("raises")
    expected_value = compare["right"] if compare and compare["op"] in ("==", "is") else failure.get("expected_value")
    fed = fed_words(failure, {expected_value, compare["left"] if compare else None}, language)
    fed = fed or say("test_builds", language, file=failure["file"], line=failure["line"])

    if kind == "explained":  # the test said it in words: "expected: …" and "got: …" (and perhaps "fed: …")
        said = re.search(r"^expected: (.*?)\n(?:.*\n)*?got: (.*)$", failure["message"], re.MULTILINE | re.DOTALL)
        told = re.search(r"^fed: (.*)$", failure["message"], re.MULTILINE)
        if said:
            return (told[1].strip() if told else fed), said[1].strip(), said[2].strip().split("\nassert ")[0]
    if kind == "assert" and compare:
        op, left, right = compare["op"], got_words(compare["left"], language), compare["right"]
        if op in ("in", "not in"):
            return fed, say("in_it" if op == "in" else "not_in_it", language, left=compare["left"]), right
        if op == "!=":
            return fed, say("anything_but", language, right=right), left
        return fed, (right if op in ("==", "is") else f"{op} {right}"), left
    if kind == "assert":  # a bare `assert condition`: the condition, and pytest's account of it
        first, *where = failure["message"].split("\n")
        got = "\n".join([first.removeprefix("assert "), *[w.strip() for w in where if " at 0x" not in w][:3]])
        return fed, failure.get("test_line", "").removeprefix("assert "), got
    line = failure.get("test_line") or ""
    if kind == "did_not_raise":
        raised = raises or failure["message"].removeprefix("DID NOT RAISE").strip()
        call = say("from_line", language, line=line) if line and not line.startswith("with ") else ""
        return fed, say("propagate", language, raised=raised, call=call), say("swallowed", language)
    if raises:  # another error than the one the test waits for
        expected = say("propagate", language, raised=raises, call=say("from_line", language, line=line) if line else "")
        return fed, expected, say("different_error", language, message=failure["message"])
    if expected_value is not None:  # `assert f(x) == expected` raised before it could compare: show what it wanted
        return fed, expected_value, say("an_error", language, message=failure["message"])
    if line.startswith("assert "):  # `assert "x" in f(y)` raised: what was to hold
        return fed, line.removeprefix("assert "), say("an_error", language, message=failure["message"])
    expected = say("no_error_from", language, line=line) if line else say("no_error", language)
    return fed, expected, say("an_error", language, message=failure["message"])


def fed_words(failure: dict[str, Any], shown_elsewhere: set[str | None], language: str = "en") -> str:
    """The test's input: its parameters and own variables (not the expected value, not what came back),
    the SSE fixtures it read, and the notes it left. A property test's input is the smallest example
    Hypothesis found (its note), not the variables built from it."""
    notes = list(failure.get("notes", []))
    example = next((n for n in notes if n.startswith(HYPOTHESIS_NOTES)), None)
    if example is not None:
        notes.remove(example)
        arguments = [line.removeprefix("    ") for line in example.split("\n")[1:] if line.strip() != ")"]
        return "\n".join([say("falsifying", language), *arguments, *failure.get("fixtures", []), *notes])
    values = {**dict(failure.get("params") or {}), **dict(failure.get("locals") or {})}
    lines = [
        f"{name} = {value}"
        for name, value in values.items()
        if value not in shown_elsewhere and "expect" not in name and name not in ("events", "error", "result")
    ]
    return "\n".join([*lines[:6], *failure.get("fixtures", []), *notes])


HYPOTHESIS_NOTES = ("Falsifying example:", "Failing test case:")  # how Hypothesis's note on a failure begins


def got_words(value: str, language: str) -> str:
    """A value that came back, as the student should read it: a bare ``None`` says what it means."""
    return say("nothing_came_back", language) if value == "None" else value
