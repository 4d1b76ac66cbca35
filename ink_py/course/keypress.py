"""One key from the terminal, without Enter: how ``ink-py demo`` steps on (any key) and quits (``q``).

The terminal is put in cbreak mode (``one_key_at_a_time``) — keys arrive as they are pressed and
are not echoed, Ctrl-C still interrupts — for one read (``read_key``, the demo) or for a whole
session (``ink-py exercise watch``), and is put back however it ends: a key, Ctrl-C
(``KeyboardInterrupt``), SIGTERM or SIGHUP (turned into ``SystemExit`` for that moment, so the
``finally`` runs); Ctrl-Z puts it back until ``fg``. A terminal is never left without echo.
Without termios (not POSIX) a line is read, as before. ``QUIT`` are the keys that end the demo; a
key that sends several bytes (an arrow, a Chinese character) is read whole, and only it: a key
typed ahead waits its turn.

    >>> [wants_to_quit(key) for key in ("q", "Q", "\\x04", "", " ", "\\x1b[C")]
    [True, True, True, True, False, False]
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO, Any

QUIT = ("q", "Q", "\x04")  # q, and Ctrl-D (which cbreak mode delivers as a character, not as the end of input)


def wants_to_quit(key: str) -> bool:
    """``q`` (either case), Ctrl-D, or the end of the input."""
    return key == "" or key.strip() in QUIT


def read_key(stream: IO[str]) -> str:
    """The next key pressed on ``stream`` (a terminal), as text; "" at the end of the input."""
    try:
        import termios  # noqa: F401  # only to know whether this is POSIX
    except ImportError:  # not POSIX: the line, as Enter ends it
        return stream.readline()
    with one_key_at_a_time(stream) as descriptor:
        return key_bytes(descriptor).decode("utf-8", "replace")


@contextmanager
def one_key_at_a_time(stream: IO[str]) -> Iterator[int]:
    """While active, the terminal ``stream`` is in cbreak mode (its descriptor is given): keys arrive
    as they are pressed, not echoed, Ctrl-C still interrupts; Ctrl-Z gives the terminal back until
    ``fg``. Put back however it ends — also after SIGTERM or SIGHUP (``exits_as_exceptions``), and
    quietly if the terminal has gone meanwhile."""
    import termios
    import tty

    descriptor = stream.fileno()
    saved = termios.tcgetattr(descriptor)

    def cbreak() -> None:
        tty.setcbreak(descriptor, termios.TCSANOW)  # not TCSAFLUSH: a key typed ahead is kept

    def stop() -> None:  # Ctrl-Z: the shell gets its terminal as it was; after fg, cbreak again
        try:
            termios.tcsetattr(descriptor, termios.TCSADRAIN, saved)
            os.kill(os.getpid(), signal.SIGSTOP)  # stopped here until fg (SIGCONT)
            cbreak()
        except termios.error:  # the terminal has gone
            pass

    with exits_as_exceptions(stopped=stop):
        try:
            cbreak()
            yield descriptor
        finally:
            try:
                termios.tcsetattr(descriptor, termios.TCSADRAIN, saved)
            except termios.error:  # a terminal that closed (SIGHUP): nothing is left to put back
                pass


def key_bytes(descriptor: int) -> bytes:
    """One key's bytes from a terminal in cbreak mode: a character whole, an escape sequence whole; b"" at its end."""
    data = os.read(descriptor, 1)
    data += os.read(descriptor, following(data)) if following(data) else b""  # a character's rest
    while data[:1] == b"\x1b" and not sequence_ended(data) and select.select([descriptor], [], [], 0)[0]:
        data += os.read(descriptor, 1)  # an escape sequence (an arrow) arrives at once: one key
    return data


def sequence_ended(data: bytes) -> bool:
    """Is this escape sequence whole — ``ESC [ … final`` (an arrow), ``ESC O x``, ``ESC x`` — or too
    long to be one? What was typed after it is the next key.

    >>> [sequence_ended(s) for s in (b"\\x1b", b"\\x1b[", b"\\x1b[1;5", b"\\x1b[1;5C", b"\\x1bOP", b"\\x1bq")]
    [False, False, False, True, True, True]
    """
    if len(data) < 2 or len(data) >= 8:
        return len(data) >= 8
    if data[1:2] == b"[":
        return len(data) > 2 and 0x40 <= data[-1] <= 0x7E  # CSI: parameters, then one final byte
    return data[1:2] != b"O" or len(data) > 2  # SS3 takes one byte more; Alt+x is ESC x


def following(first: bytes) -> int:
    """How many bytes follow this first byte of a UTF-8 character.

    >>> [following(b) for b in (b"q", "读".encode()[:1], b"")]
    [0, 2, 0]
    """
    lead = first[0] if first else 0
    return 3 if lead >= 0xF0 else 2 if lead >= 0xE0 else 1 if lead >= 0xC0 else 0


@contextmanager
def exits_as_exceptions(stopped: Callable[[], object] | None = None) -> Iterator[None]:
    """While active, SIGTERM and SIGHUP raise SystemExit (128 + the signal), so ``finally`` blocks
    run, and Ctrl-Z (SIGTSTP) calls ``stopped`` instead of stopping; the handlers before are put
    back after. Off the main thread nothing changes."""

    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    handlers: dict[int | None, Any] = {signal.SIGTERM: leave, getattr(signal, "SIGHUP", None): leave}
    if stopped is not None:
        handlers[getattr(signal, "SIGTSTP", None)] = lambda signum, frame: stopped()
    previous = {}
    try:
        for number, handler in handlers.items():
            if number is not None:
                previous[number] = signal.signal(number, handler)
    except ValueError:  # not the main thread: signals cannot be handled here
        pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
