"""``ink-py exercise watch``: the course's loop — the exercise checked again at every save, one key for the rest.

As in rustlings and the courses modelled on it, ``watch`` starts at the first exercise, in article
order, that is not green (``start``-ing it when needed), checks it at once (``check``), and again
within ``interval`` seconds of any save under the copy (``saves.snapshot``, polled: a save during a
check makes one more check after it, never a queue). ``h`` the next hint, ``l`` the list, ``n`` the
next exercise once this one is green, ``q`` quits — one key each on a terminal (``keypress``), one
line each otherwise, the end of the input quitting. After every check, a progress line across the
nine; once all are green, a closing message and 0. Sections: the exercise to do and the screen;
the input; the loop.

    >>> progress_line({"checks": {"1": "green", "2": "green"}}, 3, "en")
    'progress [######>>>------------------] 2/9 · now exercise 3 · text-delta'
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..terminal import terminal_safe
from .catalogue import EXERCISES, ExerciseError
from .checker import check
from .demo_screens import CLEAR
from .keypress import key_bytes, one_key_at_a_time
from .language import say
from .progress import hint, list_exercises, next_step
from .running import Progress
from .saves import MAX_FILES, Snapshot, snapshot
from .state import is_working_copy, load_state
from .stubs import available
from .working_copy import dir_argument, shown, start

POLL_SECONDS = 0.5  # how often the copy's file times are read: a save is seen within this, then checked
CELLS = 3  # the progress bar's cells per exercise
END = "\x04"  # the end of the input (or Ctrl-D, which cbreak mode passes on as this character)
MAX_LINE = 1024  # a command line longer than this is no command (and is not kept)
Input = Callable[[float], "str | None"]  # waits at most so many seconds: a key or line, or None

# ── the exercise to do, and the screen ────────────────────────────────────────────────


def to_do(state: dict[str, Any], after: int = 0) -> int | None:
    """The first exercise after ``after`` (then from the first), in article order and available here,
    whose last check is not green; None once all are.

    >>> to_do({"checks": {"1": "green", "3": "green"}}), to_do({"checks": {"9": "green"}}, after=8)
    (2, 1)
    """
    order = [number for number in EXERCISES if available(number)]
    checks = state.get("checks", {})
    later = [n for n in order if n > after] + [n for n in order if n <= after]
    return next((n for n in later if checks.get(str(n)) != "green"), None)


def progress_line(state: dict[str, Any], current: int | None, language: str | None = None) -> str:
    """``progress [###>>>---…] 1/9 · now exercise 2 · …``: a bar of the nine (``#`` green, ``>`` the
    current one, ``·`` not available here), and how many of those available are green."""
    checks, bar, done = state.get("checks", {}), "", 0
    for number in EXERCISES:
        green = checks.get(str(number)) == "green" and available(number)
        done += green
        bar += ("·" if not available(number) else "#" if green else ">" if number == current else "-") * CELLS
    total = sum(map(available, EXERCISES))
    line = say("watch_progress", language, bar=bar, done=done, total=total)
    if current is not None:
        line += say("watch_now", language, n=current, slug=EXERCISES[current]["slug"])
    return line


def start_if_needed(number: int, folder: Path) -> str:
    """What ``start`` says, if exercise ``number`` is not started in the copy (made if missing); else ""."""
    started = load_state(folder).get("started", []) if is_working_copy(folder) else []
    return "" if number in started else start(number, folder)


def checked(number: int, folder: Path, progress: Progress | None) -> tuple[bool, str]:
    """``check``'s verdict and words; a check that cannot run (``error: …``) is not green, and the watch goes on."""
    try:
        return check(number, folder, progress)
    except ExerciseError as err:
        return False, f"error: {err}"


# ── the input: keys on a terminal, lines otherwise ────────────────────────────────────


def keys_of(descriptor: int) -> Input:
    """A terminal in cbreak mode (``keypress.one_key_at_a_time``): the next key, if one is pressed in time."""

    def within(timeout: float) -> str | None:
        if not select.select([descriptor], [], [], timeout)[0]:
            return None
        try:
            data = key_bytes(descriptor)
        except OSError:  # the terminal has gone
            return END
        return data.decode("utf-8", "replace") if data else END

    return within


def lines_of(descriptor: int) -> Input:
    """A pipe or a file: the next whole line (without its newline), if one arrives in time; ``END`` at
    its end. A line over ``MAX_LINE`` bytes is no command: "" (it is dropped as it comes, not kept)."""
    pending = bytearray()
    ended = dropping = False

    def within(timeout: float) -> str | None:
        nonlocal ended, dropping
        while b"\n" not in pending and not ended and select.select([descriptor], [], [], timeout)[0]:
            timeout = 0  # what arrives with it is read at once; then the line waits for its end
            try:
                data = os.read(descriptor, 4096)
            except OSError:
                data = b""
            ended = not data
            pending.extend(data)
            if b"\n" not in pending and len(pending) > MAX_LINE:
                pending.clear()
                dropping = True
        if b"\n" in pending or (ended and (pending or dropping)):
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            too_long, dropping = dropping or len(line) > MAX_LINE, False
            return "" if too_long else line.decode("utf-8", "replace")
        return END if ended else None

    return within


# ── the loop ──────────────────────────────────────────────────────────────────────────


def watch(
    folder: Path,
    next_input: Input,
    show: Callable[[str], Any],
    interval: float = POLL_SECONDS,
    progress: Progress | None = None,
    keys: bool = True,
    clear: str = "",
) -> int:
    """The loop: check, show, wait for a save or a command. 0 once every exercise is green or when
    asked to stop; ExerciseError if the copy cannot be made or the first exercise started. ``keys``:
    the input is a terminal's keys (else lines); ``clear`` begins each check's screen."""
    for number in EXERCISES:
        if not available(number):
            show(say("watch_skipped", n=number, slug=EXERCISES[number]["slug"]))
    total = sum(map(available, EXERCISES))
    state = load_state(folder) if is_working_copy(folder) else {}
    current = to_do(state)
    if current is None:
        show("\n".join([progress_line(state, None), say("watch_done", total=total), next_step(state, folder)]))
        return 0
    before = start_if_needed(current, folder)
    prompt = say("watch_keys" if keys else "watch_lines", folder=shown(folder))
    warned = False
    while True:
        seen = snapshot(folder)
        green, said = checked(current, folder, progress)
        state = load_state(folder)
        done = to_do(state) is None
        lines = ["\n\n".join(filter(None, [before, said])), "", progress_line(state, None if done else current)]
        show(clear + terminal_safe("\n".join([*lines, say("watch_done", total=total) if done else prompt])))
        if done:
            return 0
        if not seen["complete"] and not warned:
            show(say("watch_too_many", folder=shown(folder), count=MAX_FILES))
            warned = True
        following = wait(folder, seen, next_input, show, interval, current, green, prompt)
        if following is None:
            show(say("watch_bye", folder=shown(folder), dir=dir_argument(folder)))
            return 0
        current, before = following


def wait(
    folder: Path, seen: Snapshot, next_input: Input, show: Callable[[str], Any],
    interval: float, current: int, green: bool, prompt: str,
) -> tuple[int, str] | None:  # fmt: skip
    """Answer commands until there is something to check — after a save, ``current`` again; after ``n``
    once it is green, the next exercise (with what ``start`` said of it) — or until ``q`` (None). Every
    ``interval`` seconds the copy's files are looked at."""
    while True:
        command = next_input(interval)
        if command is not None:
            key = command.strip().lower() or command  # an empty line, or Enter alone: an unknown command
            try:
                if key in ("q", END):
                    return None
                if key == "h":
                    show(terminal_safe(hint(current, folder)))
                elif key == "l":
                    show(terminal_safe(list_exercises(folder)))
                elif key == "n" and green:
                    following = to_do(load_state(folder), after=current) or current
                    return following, start_if_needed(following, folder)
                elif key == "n":
                    show(say("watch_not_green", n=current, slug=EXERCISES[current]["slug"]))
                else:
                    show(prompt)
            except ExerciseError as err:  # the next exercise cannot be started (its code was edited): stay
                show(f"error: {err}")
        if snapshot(folder)["files"] != seen["files"]:
            return current, ""


def watch_command(folder: Path, interval: float = POLL_SECONDS) -> int:
    """``ink-py exercise watch [DIR]`` on this process's terminal (keys, held in cbreak mode until it
    ends, however it ends) or its piped stdin (lines)."""

    def show(text: str) -> None:
        print(text, flush=True)

    clear = CLEAR if sys.stdout.isatty() and os.environ.get("TERM") != "dumb" else ""
    progress = Progress.on_stderr(always=False)  # in place while a check runs, on a terminal only
    stdin = sys.stdin
    if stdin is None:  # no stdin at all: as at the end of the input, one check and out
        return watch(folder, lambda timeout: END, show, interval, progress, keys=False, clear=clear)
    if stdin.isatty():
        with one_key_at_a_time(stdin) as descriptor:
            return watch(folder, keys_of(descriptor), show, interval, progress, keys=True, clear=clear)
    return watch(folder, lines_of(stdin.fileno()), show, interval, progress, keys=False, clear=clear)
