"""How far the student is, read from the progress file: ``list``, the next exercise to do, and ``hint``.

``status`` says where one exercise stands (not started, stub still present, last check red or
green), ``list_exercises`` is the table of them all, and ``next_step`` names the first exercise, in
article order, that is not green yet — ``check`` ends with it too. ``hint`` shows one more hint each
time it is asked; it counts them in the copy, or in the current folder before there is a copy.

    >>> pad("§2 ①", 6) + "|", pad("提示", 6) + "|"
    ('§2 ①  |', '提示  |')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .catalogue import EXERCISES, ExerciseError
from .language import columns, say
from .state import is_working_copy, load_state, save_state
from .stubs import MarkerError, available, find_regions, group_by_file, is_stub, package_regions
from .working_copy import dir_argument, shown

# ── list and the next step ────────────────────────────────────────────────────────────


def status(number: int, folder: Path, state: dict[str, Any]) -> str:
    """not started / started (stub still present) / started (…) / passed (last check green)."""
    if not available(number):
        return "skipped until chunks.py has exercise markers" if number == 9 else "not available yet"
    if number not in state.get("started", []):
        return "not started"
    if state.get("checks", {}).get(str(number)) == "green":
        return "passed (last check green)"
    for relative in group_by_file(package_regions()[number]):
        try:
            text = (folder / relative).read_text(encoding="utf-8")
            if any(r["number"] == number and is_stub(text, r) for r in find_regions(text)):
                return "started (stub still present)"
        except (OSError, MarkerError):
            pass
    if state.get("checks", {}).get(str(number)) == "red":
        return "started (last check red)"
    return "started (not checked yet)"


def list_exercises(folder: Path) -> str:
    copy = is_working_copy(folder)
    state = load_state(folder) if copy else {}
    if copy:
        where = f"working copy: {shown(folder)}"
    elif folder.exists():
        where = f"{shown(folder)} is not a working copy"
    else:
        where = f"no working copy at {shown(folder)} yet"
    rows = [
        f"  {number}  {exercise['slug']:<16} {pad(exercise['section'], 12)} {status(number, folder, state)}"
        for number, exercise in EXERCISES.items()
    ]
    follow = next_step(state, folder)
    return "\n".join([f"Course exercises ({where})", "", *rows, "", follow])


def pad(text: str, width: int) -> str:
    """Left-justify for a terminal, where a Chinese character takes two columns."""
    return text + " " * max(0, width - columns(text))


def next_step(state: dict[str, Any], folder: Path, after: int = 0) -> str:
    """What to do next: the first exercise, in article order, that is not green yet — and once every
    exercise's own tests pass, the whole suite on the copy (``check --all``): only when that passes
    too is every exercise green."""
    checks = state.get("checks", {})
    for number, exercise in EXERCISES.items():
        if number <= after or not available(number) or checks.get(str(number)) == "green":
            continue
        verb = "check" if number in state.get("started", []) else "start"
        return say("next", n=number, slug=exercise["slug"], verb=verb, dir=dir_argument(folder))
    if any(checks.get(str(n)) != "green" for n in EXERCISES if available(n)):  # one before `after` is not
        return next_step(state, folder)
    suite = state.get("suite")
    if suite == "green":
        return say("all_green")
    return say("suite_red" if suite == "red" else "every_exercise_passes", dir=dir_argument(folder))


# ── hints ─────────────────────────────────────────────────────────────────────────────


def hint(number: int, folder: Path) -> str:
    """One more hint than last time (all shown so far, the newest last); counted in the copy, or here."""
    hints = EXERCISES[number]["hints"]
    if not hints:
        raise ExerciseError(f"exercise {number} has no hints yet")
    place = folder if is_working_copy(folder) else Path.cwd()
    state = load_state(place)
    shown_before = int(state.get("hints", {}).get(str(number), 0))
    count = min(shown_before + 1, len(hints))
    state.setdefault("hints", {})[str(number)] = count
    save_state(place, state)
    exercise = EXERCISES[number]
    lines = [f"exercise {number} · {exercise['slug']} — walkthrough.md {exercise['section']}"]
    lines += [f"提示 {i}/{len(hints)}:{hints[i - 1]}" for i in range(1, count + 1)]
    if shown_before >= len(hints):
        lines.append("(that was the last hint — the reference is in ink_py, if you want to compare)")
    return "\n".join(lines)
