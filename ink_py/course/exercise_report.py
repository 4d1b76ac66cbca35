"""``check --all`` and ``report``: where every exercise stands, as a table for the student, as JSON and JUnit XML.

Both check every started exercise afresh — the progress file is the student's, the tests are the
truth. ``check_all`` prints a table (state, tests passed, hints used); ``write_report`` makes one
``Row`` per exercise for a teacher: state (green, red, not started, not available), tests passed of
those selected, attempts and hints from the progress file, the time of the first green check.
``junit_xml`` turns the rows into the JUnit format CI systems and autograders read: one testcase
per exercise, a ``<failure>`` for red, ``<skipped>`` for the rest. "Every exercise green" means
every exercise's own checks pass; with ``--whole-suite`` (a source checkout: minutes) both then run
the project's whole suite on the copy too (``whole_suite``), a testcase of its own.

    >>> print(junit_xml("my_ink", [{"number": 1, "slug": "parse-frame", "state": "green", "summary": ""}]))
    ... # doctest: +ELLIPSIS
    <?xml version="1.0" encoding="utf-8"?>
    <testsuites ...><testsuite name="ink_py course · my_ink" tests="1" failures="0" skipped="0">...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TypedDict
from xml.sax.saxutils import quoteattr

from ..atomic import write_text_atomically
from .catalogue import EXERCISES, ExerciseError, reading
from .checker import check, debug_command, describe_failure, failed_after, failure_lines, run_tests
from .language import columns, course_language, say
from .places import whole_suite_tests
from .progress import next_step, pad
from .running import Progress
from .state import is_working_copy, load_state, now, save_state
from .stubs import available
from .working_copy import shown

REPORT_JSON, REPORT_XML = "exercise-report.json", "exercise-report.xml"  # what `report` writes by default


class Row(TypedDict, total=False):
    number: int
    slug: str
    title: str
    section: str
    state: str  # green, red, not started, not available
    tests_passed: int
    tests_selected: int
    attempts: int
    hints_used: int
    hints_total: int
    first_green: str | None  # UTC, e.g. 2026-12-01T10:12:00Z
    summary: str  # red: the first line of what check said


class Suite(TypedDict):
    state: str  # green, red, or not run (some exercise is not green yet)
    summary: str  # red: the first line of what check --all said


def report_json(copy: str, generated: str, rows: list[Row], suite: Suite | None = None) -> str:
    green = sum(row["state"] == "green" for row in rows)
    suite = suite or {"state": "not run", "summary": ""}
    return json.dumps(
        {"copy": copy, "generated": generated, "green": green, "exercises": rows, "whole_suite": suite},
        ensure_ascii=False,
        indent=2,
    )


def junit_xml(copy: str, rows: list[Row], suite: Suite | None = None) -> str:
    """One testcase per exercise, and one for the whole suite once it has run."""
    suite_name = f"ink_py course · {copy}"
    cases = []
    outcomes = [(f"exercise {row['number']} · {row['slug']}", row["state"], row.get("summary", "")) for row in rows]
    if suite is not None and suite["state"] != "not run":
        outcomes.append((f"the whole suite on {copy}", suite["state"], suite["summary"]))
    for title, state, summary in outcomes:
        name = quoteattr(title)
        if state == "green":
            cases.append(f"<testcase classname={quoteattr(suite_name)} name={name}/>")
        elif state == "red":
            message = quoteattr(summary or "the last check failed")
            cases.append(
                f"<testcase classname={quoteattr(suite_name)} name={name}><failure message={message}/></testcase>"
            )
        else:
            cases.append(
                f"<testcase classname={quoteattr(suite_name)} name={name}><skipped message={quoteattr(state)}/>"
                "</testcase>"
            )
    failures = sum(state == "red" for _, state, _ in outcomes)
    skipped = sum(state not in ("green", "red") for _, state, _ in outcomes)
    counts = f'tests="{len(outcomes)}" failures="{failures}" skipped="{skipped}"'
    head = f"<testsuites {counts}><testsuite name={quoteattr(suite_name)} {counts}>"
    return '<?xml version="1.0" encoding="utf-8"?>\n' + head + "".join(cases) + "</testsuite></testsuites>"


# ── check --all and report ────────────────────────────────────────────────────────────


def check_all(folder: Path, progress: Progress | None = None, suite: bool = False) -> tuple[bool, str]:
    """``check --all``: every started exercise checked, then a table; with ``suite``, once all nine are
    green, the project's whole suite on the copy too (``pytest --impl folder``, from a source checkout).
    ``progress`` shows which exercise is being checked and how far its tests are."""
    if not is_working_copy(folder):
        raise ExerciseError(say("no_copy_all", folder=shown(folder)))
    if suite and whole_suite_tests() is None:  # said before minutes of checks, not after
        raise ExerciseError(say("suite_needs_tests"))
    started = load_state(folder).get("started", [])
    if not started:
        raise ExerciseError(say("none_started", folder=shown(folder)))
    for number in started:
        if available(number):
            check(number, folder, progress)
    state = load_state(folder)
    green = all(state.get("checks", {}).get(str(n)) == "green" for n in started if available(n))
    suite_words: list[str] = []
    if suite and green and all(state.get("checks", {}).get(str(n)) == "green" for n in EXERCISES if available(n)):
        outcome, words = whole_suite(folder, progress)
        green = outcome == "green"
        suite_words = ["", words] if words else []
        state = load_state(folder)
    rows = [
        (say("col_exercise"), say("col_state"), say("col_tests"), say("col_hints")),
        *[
            (
                f"{number} {exercise['slug']}",
                say("state_" + exercise_state(number, state).replace(" ", "_")),
                tests_passed(number, state),
                f"{state.get('hints', {}).get(str(number), 0)}/{len(exercise['hints'])}",
            )
            for number, exercise in EXERCISES.items()
        ],
    ]
    widths = [max(columns(row[column]) for row in rows) for column in range(4)]
    table = ["  ".join(pad(cell, width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    heading = say("table_heading", folder=shown(folder))
    return green, "\n".join([heading, "", *table, *suite_words, "", next_step(state, folder)])


def whole_suite(folder: Path, progress: Progress | None = None) -> tuple[str, str]:
    """The project's whole suite on the copy (``--whole-suite``), once every exercise's own tests pass:
    ("green" or "red", in words: how many passed, or the first failure). Kept in the progress file:
    ``next_step`` reads it."""
    print(say("suite_running"), file=sys.stderr, flush=True)
    report = run_tests(folder, None, progress)
    suite = "green" if report["exitstatus"] == 0 else "red"
    state = load_state(folder)
    state["suite"] = suite
    save_state(folder, state)
    failure = report.get("failure")
    language = course_language()
    if suite == "green":
        return suite, say("suite_passed", language, passed=report["passed"])
    if failure is None:
        return suite, ""
    lines = [say("suite_failed", language, after=failed_after(report["passed"], failure["name"], language)), ""]
    lines += failure_lines(failure, language)
    ran = [n for n in (failure.get("regions") or []) if n in EXERCISES]
    marked = [n for n in report["selected"].get(failure["nodeid"], []) if n in EXERCISES]
    blamed = (ran or marked or [None])[0]
    if blamed is None:
        lines += ["", say("suite_no_exercise", language)]
    else:
        other = EXERCISES[blamed]
        lines += ["", say("suite_blames", language, other=blamed, other_slug=other["slug"], reading=reading(blamed))]
    lines.append(say("debug", language, command=debug_command(folder, failure, report.get("rootdir"))))
    return suite, "\n".join(lines)


def write_report(
    folder: Path, json_path: Path, xml_path: Path, progress: Progress | None = None, suite: bool = False
) -> str:
    """``report``: every started exercise checked afresh (attempts are not counted), written as JSON and JUnit;
    with ``suite``, once all are green, the project's whole suite too (a testcase of its own)."""
    if not is_working_copy(folder):
        raise ExerciseError(say("no_copy_report", folder=shown(folder)))
    if suite and whole_suite_tests() is None:
        raise ExerciseError(say("suite_needs_tests"))
    state = load_state(folder)
    rows: list[Row] = []
    for number, exercise in EXERCISES.items():
        key = str(number)
        row: Row = {
            "number": number, "slug": exercise["slug"], "title": exercise["title"], "section": exercise["section"],
            "state": exercise_state(number, state), "tests_passed": 0, "tests_selected": 0,
            "attempts": int(state.get("attempts", {}).get(key, 0)),
            "hints_used": int(state.get("hints", {}).get(key, 0)), "hints_total": len(exercise["hints"]),
            "first_green": state.get("first_green", {}).get(key), "summary": "",
        }  # fmt: skip
        if number in state.get("started", []) and available(number):
            report = run_tests(folder, number, progress)
            green = report["exitstatus"] == 0
            row["state"], row["tests_passed"] = ("green" if green else "red"), report["passed"]
            row["tests_selected"] = len(report["selected"])
            if not green:
                row["summary"] = describe_failure(number, report, folder, progress=progress).split("\n")[0]
        rows.append(row)
    outcome: Suite = {"state": "not run", "summary": ""}
    if suite and all(row["state"] == "green" for row in rows if available(row["number"])):
        state_of_suite, words = whole_suite(folder, progress)
        outcome = {"state": state_of_suite, "summary": words.split("\n")[0]}
    write_text_atomically(json_path, report_json(folder.name, now(), rows, outcome) + "\n")
    write_text_atomically(xml_path, junit_xml(folder.name, rows, outcome) + "\n")
    green = sum(row["state"] == "green" for row in rows)
    whole = "" if outcome["state"] == "not run" else say("report_whole", state=say("state_" + outcome["state"]))
    return say("report_written", green=green, total=len(rows), whole=whole, json=json_path, xml=xml_path)


def exercise_state(number: int, state: dict[str, Any]) -> str:
    """green / red / not started / not available — as the table and the report say it."""
    if not available(number):
        return "not available"
    if number not in state.get("started", []):
        return "not started"
    return str(state.get("checks", {}).get(str(number), "not checked"))


def tests_passed(number: int, state: dict[str, Any]) -> str:
    tests = state.get("tests", {}).get(str(number))
    return f"{tests['passed']}/{tests['selected']}" if tests else "-"
