"""The progress file ``DIR/.exercises.json``: read, validated, repaired, written whole.

It marks a folder as a working copy made here and remembers the started exercises, check
results, attempts and hints shown. It is the student's file, so it is untrusted when read:
``load_state`` validates every field (``checked_state``) and a damaged one never gives a
traceback — what is wrong is reset, the old file kept beside it under a new name
(``.exercises.json.damaged-1``), and one ``warning:`` line says so. A file that is not JSON
at all, in a folder that holds a copy of the package, is rebuilt from the copy (the started
exercises are those whose stubs or markers are there). Every write goes through
``ink_py/atomic.py``.

    >>> state, problems = checked_state({"made_by": MADE_BY, "started": [2, 2], "hints": {"1": 1e400}})
    >>> state["started"], state["hints"], problems
    ([2], {}, ["hints['1']: Infinity is not a count from 0 to 4"])
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from pathlib import Path
from typing import Any

from ..atomic import write_new_bytes_atomically, write_text_atomically
from .catalogue import EXERCISES
from .language import say
from .places import PACKAGE_DIR
from .stubs import OPEN, MarkerError, body_of, find_regions, group_by_file, is_stub, package_regions

STATE_FILE = ".exercises.json"
MADE_BY = "ink-py exercise start"
MAX_STATE_BYTES = 1 << 20  # a progress file is a few hundred bytes; anything this big is not one
MAX_COUNT = 10**6  # attempts and test counts above this are not real
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def now() -> str:
    """The time, as the progress file and the report keep it: UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_state(folder: Path) -> dict[str, Any]:
    """The progress file of ``folder``, validated ({} if there is none); a damaged one is repaired."""
    path = folder / STATE_FILE
    try:
        with path.open("rb") as source:
            raw = source.read(MAX_STATE_BYTES + 1)
    except OSError:  # none (or not readable): not a copy made here
        return {}
    try:
        if len(raw) > MAX_STATE_BYTES:
            raise ValueError(say("state_too_big", kib=MAX_STATE_BYTES // 1024))
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # not JSON, not UTF-8, a number too long, nested too deep
        return repaired(folder, rebuilt(folder), [say("state_not_file", why=str(err)[:80])])
    if not isinstance(value, dict):
        return repaired(folder, rebuilt(folder), [say("state_not_object", kind=type(value).__name__)])
    state, problems = checked_state(value)
    wrong = problems_fields(problems)
    if wrong & {"made_by", "started"}:  # what makes the folder a copy, or what was done in it: from the copy
        found = rebuilt(folder)
        if found and "made_by" in wrong:
            state["made_by"] = MADE_BY
        if found and ("started" in wrong or "started" not in state):
            state["started"] = found["started"]
    return repaired(folder, state, problems) if problems else state


def save_state(folder: Path, state: dict[str, Any]) -> None:
    write_text_atomically(folder / STATE_FILE, json.dumps(state, ensure_ascii=False, indent=2) + "\n")


def is_working_copy(folder: Path) -> bool:
    return load_state(folder).get("made_by") == MADE_BY


# ── validation ──────────────────────────────────────────────────────────────────────────


def is_count(value: Any, top: int = MAX_COUNT) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= top


def checked_state(value: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the fields that are right, one line per field or entry that is not): nothing unchecked is kept."""
    state: dict[str, Any] = {}
    problems: list[str] = []
    made_by = value.get("made_by")
    if made_by is not None:
        if made_by == MADE_BY:
            state["made_by"] = made_by
        else:
            problems.append(say("bad_made_by", value=shown(made_by), expected=repr(MADE_BY)))
    if "started" in value:
        started = value["started"]
        if isinstance(started, list) and all(is_count(n) and n in EXERCISES for n in started):
            state["started"] = sorted(set(started))
        else:
            problems.append(say("bad_started", value=shown(started)))
    rules: dict[str, tuple[Any, str]] = {  # field → (is an entry valid, what it should be: a key of words.py)
        "checks": (lambda n, v: v in ("green", "red"), "want_green_red"),
        "hints": (lambda n, v: is_count(v, len(EXERCISES[n]["hints"])), "want_count"),
        "shown_hints": (lambda n, v: is_hint_list(v, len(EXERCISES[n]["hints"])), "want_shown"),
        "failures": (lambda n, v: isinstance(v, str) and len(v) <= 500, "want_test_name"),
        "attempts": (lambda n, v: is_count(v), "want_count"),
        "tests": (
            lambda n, v: isinstance(v, dict) and set(v) == {"passed", "selected"} and all(map(is_count, v.values())),
            "want_tests",
        ),
        "first_green": (lambda n, v: isinstance(v, str) and TIMESTAMP.fullmatch(v) is not None, "want_time"),
    }
    for name, (valid, what) in rules.items():
        if name not in value:
            continue
        table = value[name]
        if not isinstance(table, dict):
            problems.append(say("bad_table", name=name, value=shown(table)))
            continue
        kept = {}
        for key, entry in table.items():
            number = int(key) if isinstance(key, str) and re.fullmatch(r"[1-9][0-9]?", key) else 0  # not "²", not "01"
            if number not in EXERCISES:
                problems.append(say("bad_key", name=name, value=shown(key)))
            elif not valid(number, entry):
                top = len(EXERCISES[number]["hints"]) if name == "hints" else MAX_COUNT
                wanted = say(what, top=top)
                problems.append(say("bad_entry", name=name, which=repr(key), value=shown(entry), wanted=wanted))
            else:
                kept[key] = entry
        state[name] = kept
    if "suite" in value:  # the whole suite on the copy, after every exercise was green (check --all)
        if value["suite"] in ("green", "red"):
            state["suite"] = value["suite"]
        else:
            problems.append(say("bad_suite", value=shown(value["suite"])))
    return state, problems


def is_hint_list(value: Any, count: int) -> bool:
    """The hints shown, by their place in the table: distinct, each one there."""
    if not isinstance(value, list) or len(set(map(repr, value))) != len(value):
        return False
    return all(is_count(index, count - 1) for index in value)


def problems_fields(problems: list[str]) -> set[str]:
    return {problem.split(":")[0].split("[")[0] for problem in problems}


def shown(value: Any) -> str:
    """A wrong value, briefly: a huge one is not printed whole."""
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


# ── repair ──────────────────────────────────────────────────────────────────────────────


def rebuilt(folder: Path) -> dict[str, Any]:
    """What a progress file can be rebuilt from: a folder holding a copy of the package is a working
    copy, and the exercises whose stubs or markers are in it were started. Anything else: nothing."""
    if not (folder / "__init__.py").is_file() or not (folder / "provider" / "shared.py").is_file():
        return {}
    started = []
    for number, regions in package_regions().items():
        for relative, wanted in group_by_file(regions).items():
            try:
                text = (folder / relative).read_text(encoding="utf-8")
                reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
                mine = [r for r in find_regions(text) if r["number"] == number]
            except (OSError, UnicodeDecodeError, MarkerError):
                continue
            lines = text.split("\n")
            marked = any(is_stub(text, r) or OPEN.match(lines[r["start"]]) for r in mine)
            edited = any(body_of(text, r) != body_of(reference, w) for r, w in zip(mine, wanted, strict=False))
            if marked or edited or len(mine) != len(wanted):
                started.append(number)
                break
    return {"made_by": MADE_BY, "started": sorted(set(started)), "checks": {}, "hints": {}}


def repaired(folder: Path, state: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """Keep the damaged file under a new name, write ``state`` in its place, and say so in one line."""
    path = folder / STATE_FILE
    try:
        kept = keep_copy(path, path.read_bytes()[:MAX_STATE_BYTES])
        if state:
            save_state(folder, state)
        else:
            path.unlink()  # nothing to rebuild: the old file is kept, the folder is as before a copy
        where = say("state_kept", kept=kept)
    except OSError as err:
        where = say("state_unrepaired", error=err.strerror or err)
    what = "; ".join(problems[:3]) + (say("and_more", count=len(problems) - 3) if len(problems) > 3 else "")
    print(say("state_damaged", path=path, what=what, where=where), file=sys.stderr)
    return state


def keep_copy(path: Path, data: bytes) -> Path:
    """``data`` under the first free name ``path.damaged-N``: never over an earlier copy."""
    for number in range(1, 1000):
        kept = path.with_name(f"{path.name}.damaged-{number}")
        try:
            write_new_bytes_atomically(kept, data)
            return kept
        except FileExistsError:
            continue
    raise OSError(f"{path.name}.damaged-1 … -999 all exist")
