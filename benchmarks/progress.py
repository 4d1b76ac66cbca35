"""Where a long benchmark is: one status line on stderr, in place on a terminal, plain lines elsewhere.

    progress = Progress(stages=7)
    progress.stage("timing chunks", total=75)  # a new stage of 75 runs: its own line in both forms
    progress.advance("1 MiB")                  # one unit done: redrawn in place on a terminal;
                                               # elsewhere a plain line when the note changes
    progress.print("a result")                 # stdout, the status line cleared first, redrawn after

On a terminal (stderr is a tty) the line reads ``[3/7 · 12 s] timing chunks · 1 MiB · 37/75 runs``,
rewritten after a carriage return. In a pipe or a CI log the same facts come as plain lines, one
per stage and one per new note (a size begun), never a carriage return. Nothing but the standard
library: tqdm would add a rate and an estimate, not worth a dependency for this.

    >>> import io; out = io.StringIO(); p = Progress(stages=2, stream=out)
    >>> p.stage("timing", total=2); p.advance("1 MiB"); p.advance("1 MiB"); p.stage("memory")
    >>> [line.split("] ")[1] for line in out.getvalue().splitlines()]
    ['timing', 'timing · 1 MiB · 1/2 runs', 'memory']
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stages: int, stream: TextIO | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.in_place = self.stream.isatty()
        self.stages, self.unit = stages, "runs"
        self.started = time.monotonic()
        self.number, self.name, self.done, self.total, self.note = 0, "", 0, 0, ""
        self.shown = False  # a status line is on the screen (terminal form)

    def stage(self, name: str, total: int = 0, unit: str = "runs") -> None:
        """A new stage of ``total`` units (0: not counted)."""
        self.number, self.name, self.done, self.total, self.note = self.number + 1, name, 0, total, ""
        self.unit = unit
        if self.in_place:
            self.clear()
        self.draw(end="" if self.in_place else "\n")

    def advance(self, note: str = "", units: int = 1) -> None:
        fresh = note != self.note
        self.done, self.note = self.done + units, note
        if self.in_place:
            self.draw(end="")
        elif fresh:
            self.draw(end="\n")

    def print(self, *lines: str) -> None:
        """Lines for stdout; on a terminal the status line steps aside for them."""
        if self.in_place and self.shown:
            self.clear()
        print(*lines, sep="\n", flush=True)
        if self.in_place and self.name:
            self.draw(end="")

    def finish(self) -> None:
        """The status line's last state stays, on a line of its own; nothing is drawn after."""
        if self.in_place and self.shown:
            self.stream.write("\n")
            self.stream.flush()
        self.shown, self.name = False, ""

    def width(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80  # 0: a terminal that never said
        except (OSError, ValueError):
            return 80

    def clear(self) -> None:
        self.stream.write("\r\x1b[K")  # back to the line's start, erase it
        self.stream.flush()
        self.shown = False

    def draw(self, end: str) -> None:
        parts = [self.name, self.note, f"{self.done}/{self.total} {self.unit}" if self.total and self.done else ""]
        text = " · ".join(part for part in parts if part)
        line = f"[{self.number}/{self.stages} · {time.monotonic() - self.started:.0f} s] {text}"
        if self.in_place:  # one screen line, or the carriage return would not reach its start
            line = "\r\x1b[K" + line[: self.width() - 1]
        self.stream.write(line + end)
        self.stream.flush()
        self.shown = self.in_place
