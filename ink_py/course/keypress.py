"""One key from the terminal, without Enter: how ``ink-py demo`` steps on (any key) and quits (``q``).

The terminal is put in cbreak mode for the read only — keys arrive as they are pressed and are
not echoed, Ctrl-C still interrupts — and is put back however the read ends: a key, Ctrl-C
(``KeyboardInterrupt``), SIGTERM or SIGHUP (turned into ``SystemExit`` for that moment, so the
``finally`` runs). A terminal is never left without echo. Without termios (not POSIX) a line
is read, as before. ``QUIT`` are the keys that end the demo; a key that sends several bytes
(an arrow, a Chinese character) is read whole, and only it: a key typed ahead waits its turn.

    >>> [wants_to_quit(key) for key in ("q", "Q", "\\x04", "", " ", "\\x1b[C")]
    [True, True, True, True, False, False]
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO

QUIT = ("q", "Q", "\x04")  # q, and Ctrl-D (which cbreak mode delivers as a character, not as the end of input)


def wants_to_quit(key: str) -> bool:
    """``q`` (either case), Ctrl-D, or the end of the input."""
    return key == "" or key.strip() in QUIT


def read_key(stream: IO[str]) -> str:
    """The next key pressed on ``stream`` (a terminal), as text; "" at the end of the input."""
    try:
        import termios
        import tty
    except ImportError:  # not POSIX: the line, as Enter ends it
        return stream.readline()
    descriptor = stream.fileno()
    saved = termios.tcgetattr(descriptor)
    with exits_as_exceptions():
        try:
            tty.setcbreak(descriptor, termios.TCSANOW)  # not TCSAFLUSH: a key typed ahead is kept
            data = os.read(descriptor, 1)
            data += os.read(descriptor, following(data)) if following(data) else b""  # a character's rest
            while data[:1] == b"\x1b" and len(data) < 8 and select.select([descriptor], [], [], 0)[0]:
                data += os.read(descriptor, 1)  # an escape sequence (an arrow) arrives at once: one key
        finally:
            termios.tcsetattr(descriptor, termios.TCSADRAIN, saved)
    return data.decode("utf-8", "replace")


def following(first: bytes) -> int:
    """How many bytes follow this first byte of a UTF-8 character.

    >>> [following(b) for b in (b"q", "读".encode()[:1], b"")]
    [0, 2, 0]
    """
    lead = first[0] if first else 0
    return 3 if lead >= 0xF0 else 2 if lead >= 0xE0 else 1 if lead >= 0xC0 else 0


@contextmanager
def exits_as_exceptions() -> Iterator[None]:
    """While active, SIGTERM and SIGHUP raise SystemExit (128 + the signal), so ``finally`` blocks
    run; the handlers before are put back after. Off the main thread nothing changes."""

    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = {}
    try:
        for number in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if number is not None:
                previous[number] = signal.signal(number, leave)
    except ValueError:  # not the main thread: signals cannot be handled here
        pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
