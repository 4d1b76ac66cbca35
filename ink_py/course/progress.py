"""How far the student is, read from the progress file: ``list``, the next exercise to do, and ``hint``.

``status`` says where one exercise stands (not started, stub still present, last check red or
green), ``list_exercises`` is the table of them all, and ``next_step`` names the first exercise, in
article order, that is not green yet — ``check`` ends with it too. ``hint`` shows one more hint each
time it is asked, first those the last failed check calls for; it keeps them in the copy, or in the
current folder before there is a copy. All of it in the student's language (``language.say``).

    >>> pad("§2 ①", 6) + "|", pad("提示", 6) + "|"
    ('§2 ①  |', '提示  |')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .catalogue import EXERCISES, ExerciseError, hints_in_order, reading
from .language import columns, course_language, say
from .state import is_working_copy, load_state, save_state
from .stubs import MarkerError, available, find_regions, group_by_file, is_stub, package_regions
from .working_copy import dir_argument, shown

# ── list and the next step ────────────────────────────────────────────────────────────


def status(number: int, folder: Path, state: dict[str, Any]) -> str:
    """not started / started (stub still present) / started (…) / passed (last check green)."""
    if not available(number):
        return say("status_skipped" if number == 9 else "status_unavailable")
    if number not in state.get("started", []):
        return say("status_not_started")
    if state.get("checks", {}).get(str(number)) == "green":
        return say("status_passed")
    for relative in group_by_file(package_regions()[number]):
        try:
            text = (folder / relative).read_text(encoding="utf-8")
            if any(r["number"] == number and is_stub(text, r) for r in find_regions(text)):
                return say("status_stub")
        except (OSError, MarkerError):
            pass
    if state.get("checks", {}).get(str(number)) == "red":
        return say("status_red")
    return say("status_unchecked")


def list_exercises(folder: Path) -> str:
    copy = is_working_copy(folder)
    state = load_state(folder) if copy else {}
    if copy:
        where = say("list_copy", folder=shown(folder))
    elif folder.exists():
        where = say("list_not_copy", folder=shown(folder))
    else:
        where = say("list_no_copy", folder=shown(folder))
    rows = [
        f"  {number}  {exercise['slug']:<16} {pad(exercise['section'], 12)} {status(number, folder, state)}"
        for number, exercise in EXERCISES.items()
    ]
    follow = next_step(state, folder)
    return "\n".join([say("list_heading", where=where), "", *rows, "", follow])


def pad(text: str, width: int) -> str:
    """Left-justify for a terminal, where a Chinese character takes two columns."""
    return text + " " * max(0, width - columns(text))


def next_step(state: dict[str, Any], folder: Path, after: int = 0) -> str:
    """What to do next: the first exercise, in article order, that is not green yet; once every
    exercise's own checks pass, every exercise is green (unless ``check --all --whole-suite`` found the
    project's whole suite red on the copy)."""
    checks = state.get("checks", {})
    for number, exercise in EXERCISES.items():
        if number <= after or not available(number) or checks.get(str(number)) == "green":
            continue
        verb = "check" if number in state.get("started", []) else "start"
        return say("next", n=number, slug=exercise["slug"], verb=verb, dir=dir_argument(folder))
    if any(checks.get(str(n)) != "green" for n in EXERCISES if available(n)):  # one before `after` is not
        return next_step(state, folder)
    suite = state.get("suite")  # the whole suite, when check --all --whole-suite ran it
    if suite == "red":
        return say("suite_red", dir=dir_argument(folder))
    return say("all_green_suite" if suite == "green" else "all_green")


# ── hints ─────────────────────────────────────────────────────────────────────────────


def hint(number: int, folder: Path) -> str:
    """One more hint than last time (all shown so far, the newest last), the next being the first the
    last failed check calls for (``hints_in_order``); counted in the copy, or here before there is one."""
    hints = EXERCISES[number]["hints"]
    if not hints:
        raise ExerciseError(say("no_hints", n=number))
    place = folder if is_working_copy(folder) else Path.cwd()
    state = load_state(place)
    shown_before = [i for i in state.get("shown_hints", {}).get(str(number), []) if i < len(hints)]
    counted = int(state.get("hints", {}).get(str(number), 0))
    if len(shown_before) < counted:  # a file from before the order was kept: the table's order
        shown_before = list(range(counted))
    failed = state.get("failures", {}).get(str(number), "")
    following = [i for i in hints_in_order(number, failed) if i not in shown_before]
    shown_now = shown_before + following[:1]
    state.setdefault("hints", {})[str(number)] = len(shown_now)
    state.setdefault("shown_hints", {})[str(number)] = shown_now
    save_state(place, state)
    language = course_language()
    lines = [say("hint_heading", n=number, slug=EXERCISES[number]["slug"], reading=reading(number))]
    for count, index in enumerate(shown_now, 1):
        words = hints[index]["zh"] if language == "zh" else hints[index]["en"]
        lines.append(say("hint_label", i=count, n=len(hints)) + words)
    if not following:
        lines.append(say("hint_last"))
    return "\n".join(lines)
