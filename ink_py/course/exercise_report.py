"""What ``ink-py exercise report`` hands a teacher: the course's state as JSON and as JUnit XML.

``report`` (ink_py/course/exercises.py) checks every started exercise afresh — the
progress file is the student's, the tests are the truth — and passes one row per
exercise here: state (green, red, not started, not available), tests passed of those
selected, attempts and hints from the progress file, the time of the first green check.
``junit_xml`` turns the rows into the JUnit format CI systems and autograders read: one
testcase per exercise, a ``<failure>`` for red, ``<skipped>`` for the rest.

    >>> print(junit_xml("my_ink", [{"number": 1, "slug": "parse-frame", "state": "green", "summary": ""}]))
    ... # doctest: +ELLIPSIS
    <?xml version="1.0" encoding="utf-8"?>
    <testsuites ...><testsuite name="ink_py course · my_ink" tests="1" failures="0" skipped="0">...
"""

from __future__ import annotations

import json
from typing import TypedDict
from xml.sax.saxutils import quoteattr


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


def report_json(copy: str, generated: str, rows: list[Row]) -> str:
    green = sum(row["state"] == "green" for row in rows)
    return json.dumps(
        {"copy": copy, "generated": generated, "green": green, "exercises": rows}, ensure_ascii=False, indent=2
    )


def junit_xml(copy: str, rows: list[Row]) -> str:
    failures = sum(row["state"] == "red" for row in rows)
    skipped = sum(row["state"] not in ("green", "red") for row in rows)
    suite = f"ink_py course · {copy}"
    cases = []
    for row in rows:
        name = quoteattr(f"exercise {row['number']} · {row['slug']}")
        if row["state"] == "green":
            cases.append(f"<testcase classname={quoteattr(suite)} name={name}/>")
        elif row["state"] == "red":
            message = quoteattr(row.get("summary") or "the last check failed")
            cases.append(f"<testcase classname={quoteattr(suite)} name={name}><failure message={message}/></testcase>")
        else:
            cases.append(
                f"<testcase classname={quoteattr(suite)} name={name}><skipped message={quoteattr(row['state'])}/>"
                "</testcase>"
            )
    head = (
        f'<testsuites tests="{len(rows)}" failures="{failures}" skipped="{skipped}">'
        f'<testsuite name={quoteattr(suite)} tests="{len(rows)}" failures="{failures}" skipped="{skipped}">'
    )
    return '<?xml version="1.0" encoding="utf-8"?>\n' + head + "".join(cases) + "</testsuite></testsuites>"
