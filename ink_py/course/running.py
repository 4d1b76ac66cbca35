"""The tests running in a child pytest, and how far they are, shown while they run.

``check`` runs ``python -m pytest`` in a child (``run_child``); its plugin (check_plugin.py) appends
one JSON line to the file ``PROGRESS_ENV`` names when the tests are collected (``{"total": N}``) and
one as each test ends (``{"done": k, "test": nodeid, "marks": [exercises]}``). ``run_child`` reads
them as they come and hands them to a ``Progress``: on a terminal one line rewritten in place
(``\\r``), otherwise plain lines — the start, each quarter of the way, the end. The words are the
student's (``language.say``). Ctrl-C (or any other exception) while the child runs kills it at
once and goes up: nothing is left half-written, the child's files are in a temporary folder.

    >>> lines = []
    >>> plain = Progress(lines.append, terminal=False)
    >>> plain.begin("the whole suite on your copy"); plain.update(0, 40, "", []); plain.update(10, 40, "", [])
    >>> lines[-1]
    'the whole suite on your copy: 10/40 tests\\n'
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .language import columns, say

PROGRESS_ENV = "INK_EXERCISE_PROGRESS"  # the file the plugin appends its progress lines to
POLL_SECONDS = 0.1  # how often the file is read while the child runs
QUARTERS = 4  # plain lines: one each quarter of the way


class Progress:
    """How far the tests are, written with ``write``: in place on a terminal, else as plain lines."""

    def __init__(self, write: Callable[[str], Any], terminal: bool, width: int = 80) -> None:
        self.write, self.terminal, self.width = write, terminal, width
        self.what = ""
        self.shown = ""  # the line on the terminal now ("" once cleared)
        self.quarter = -1  # the last quarter a plain line was written for
        self.latest = self.written = ""  # plain lines: the newest count, and the last one written

    @classmethod
    def on_stderr(cls, always: bool = True) -> Progress | None:
        """A Progress on stderr: in place if it is a terminal; plain lines otherwise, or None unless ``always``."""
        terminal = sys.stderr.isatty()
        if not terminal and not always:
            return None
        try:
            width = os.get_terminal_size(sys.stderr.fileno()).columns or 80  # a new pseudo-terminal says 0
        except OSError:
            width = 80

        def write(text: str) -> None:
            try:
                sys.stderr.write(text)
                sys.stderr.flush()
            except OSError:  # a terminal that has closed: no line to show (SIGHUP ends the run, not this)
                pass

        return cls(write, terminal, width)

    def begin(self, what: str) -> None:
        self.what, self.quarter = what, -1
        self.show(say("progress_collecting", what=what))

    def update(self, done: int, total: int, where: str, numbers: list[int]) -> None:
        line = say("progress_count", what=self.what, done=done, total=total)
        if where and self.terminal:  # where the run is now: on a terminal only, it changes every test
            marks = say("progress_of_exercise", numbers=", ".join(map(str, numbers))) if numbers else ""
            line += say("progress_now", where=where) + marks
        quarter = done * QUARTERS // max(total, 1)
        self.latest = line
        if self.terminal or quarter > self.quarter:
            self.quarter = quarter
            self.show(line)

    def show(self, line: str) -> None:
        if not self.terminal:
            self.write(line + "\n")
            self.written = line
            return
        fitted = cut_to(line, self.width - 1)
        self.write("\r" + fitted + " " * max(0, columns(self.shown) - columns(fitted)) + "\r" + fitted)
        self.shown = fitted

    def clear(self) -> None:
        """The run is over: a terminal's line is emptied (what follows is written on a clean line);
        plain lines end with the count the run reached, if it is not written yet."""
        if not self.terminal and self.latest != self.written:
            self.show(self.latest)
        if self.terminal and self.shown:
            self.write("\r" + " " * columns(self.shown) + "\r")
            self.shown = ""


def cut_to(line: str, width: int) -> str:
    """``line`` cut to ``width`` terminal columns (a Chinese character takes two)."""
    while columns(line) > width:
        line = line[:-1]
    return line


def run_child(command: list[str], cwd: Path, env: dict[str, str], scratch: Path, progress: Progress | None) -> str:
    """Run ``command`` (a pytest with check_plugin.py), showing its progress; its output's last lines.

    The child writes its progress to ``scratch``; an exception here (Ctrl-C) kills it before going up."""
    lines_file = scratch / "progress.jsonl"
    output_file = scratch / "output.txt"
    with output_file.open("w", encoding="utf-8", errors="replace") as output:
        child = subprocess.Popen(
            command, cwd=cwd, env={**env, PROGRESS_ENV: str(lines_file)}, stdout=output, stderr=subprocess.STDOUT
        )
        try:
            follow(child, lines_file, progress)
        except BaseException:
            child.kill()  # Ctrl-C: the child goes now, not when it is done
            child.wait()
            raise
        finally:
            if progress is not None:
                progress.clear()
    return output_file.read_text(encoding="utf-8", errors="replace")


def follow(child: subprocess.Popen[bytes], lines_file: Path, progress: Progress | None) -> None:
    """Wait for ``child``, handing each progress line it writes to ``progress`` as it comes."""
    read = 0
    total = 0
    while True:
        ended = child.poll() is not None  # read once more after the end: the last lines
        if progress is not None and lines_file.exists():
            with lines_file.open("rb") as source:
                source.seek(read)
                data = source.read()
            complete = data[: data.rfind(b"\n") + 1]
            read += len(complete)
            for line in complete.splitlines():
                entry = json.loads(line)
                total = entry.get("total", total)
                if "done" in entry:
                    progress.update(entry["done"], total, entry.get("test", ""), entry.get("marks", []))
                elif "total" in entry:
                    progress.update(0, total, "", [])
        if ended:
            return
        time.sleep(POLL_SECONDS)
