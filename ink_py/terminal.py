"""Text for a terminal: what the model or a server wrote, shown but never obeyed — beyond Ink.

Every line ink_py prints that carries someone else's text passes through here:
``terminal_safe`` (control characters, the bidirectional ones too, shown as escapes, never
obeyed), ``one_line`` (a multi-line message folded onto the one ``error: …`` line),
``show_newlines`` (a chat summary's ⏎), the colours (``wants_colour``: a terminal and no NO_COLOR; ``paint``), the
terminal's width (``terminal_columns``, ``fit_width``: a wide character takes two cells), and the
small formatters the status lines share (``shorten``, ``first_line``, ``human_size``, ``plural``).

    >>> terminal_safe("a\\x1b]52;c;aGk=\\x07b"), one_line("2 errors:\\n  content\\n  field")
    ('a\\\\x1b]52;c;aGk=\\\\x07b', '2 errors: content field')
"""

from __future__ import annotations

import os
import unicodedata
from typing import IO

# Every C0 control but \n and \t, DEL and the C1 controls → a visible escape such as \x1b.
_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)] if code not in (0x09, 0x0A)}
# The bidirectional controls (embeddings, overrides, isolates, the marks) → \u202e …: text that
# reorders what follows it on screen could make `rm -rf ~` look like something else ("Trojan Source").
BIDI_CONTROLS = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
_CONTROLS.update({code: f"\\u{code:04x}" for code in BIDI_CONTROLS})


def terminal_safe(text: str) -> str:
    """``text`` from the model or a server, made harmless for a terminal: OSC (window title,
    clipboard), CSI (clear screen, cursor moves), C1 and bidirectional controls are shown, not obeyed.

    >>> terminal_safe("a\\x1b]52;c;aGk=\\x07b\\tc\\n\\x9b2J")
    'a\\\\x1b]52;c;aGk=\\\\x07b\\tc\\n\\\\x9b2J'
    >>> terminal_safe("ok \\u202egnp.exe")
    'ok \\\\u202egnp.exe'
    """
    return text.translate(_CONTROLS)


def one_line(text: str) -> str:
    """Fold a multi-line message onto one line; control characters become spaces.

    A server's message reaches the terminal as one ``error: …`` line.
    """
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def show_newlines(text: str) -> str:
    """Newlines shown as ⏎ and other control characters as spaces: safe on one terminal line.

    >>> show_newlines("a\\nb\\x1bc")
    'a⏎b c'
    """
    return "".join("⏎" if c == "\n" else c if c.isprintable() else " " for c in text)


def wants_colour(stream: IO[str]) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything (no-color.org)."""
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def paint(text: str, code: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour and text else text


def plural(count: int, noun: str) -> str:
    """
    >>> plural(1, "turn"), plural(2, "turn"), plural(0, "turn")
    ('1 turn', '2 turns', '0 turns')
    """
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, the last one ``…`` when cut.

    >>> shorten("abcdef", 4)
    'abc…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_line(text: str, limit: int) -> str:
    """The first line of a tool's output, shortened: how an error is shown in one line."""
    return shorten(text.strip().splitlines()[0] if text.strip() else "", limit)


def human_size(text: str) -> str:
    size = len(text.encode("utf-8"))
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KB"


def cells(character: str) -> int:
    """Terminal cells one character takes: 2 for wide (CJK) ones, 0 for combining marks, else 1."""
    if unicodedata.combining(character):
        return 0
    return 2 if unicodedata.east_asian_width(character) in ("W", "F") else 1


def fit_width(text: str, columns: int) -> str:
    """At most ``columns`` terminal cells of ``text`` (one line), the last one ``…`` when cut.

    >>> fit_width("读取 README.md", 8), fit_width("abc", 8)
    ('读取 RE…', 'abc')
    """
    if sum(map(cells, text)) <= columns:
        return text
    kept, used = [], 0
    for character in text:
        used += cells(character)
        if used > columns - 1:
            break
        kept.append(character)
    return "".join(kept) + "…"


def terminal_columns(stream: IO[str]) -> int | None:
    """The width lines on ``stream`` should fit: ``COLUMNS`` if set, else the terminal's; None for a pipe."""
    setting = os.environ.get("COLUMNS", "")
    if setting.isdigit() and int(setting) > 0:
        return int(setting)
    try:
        columns = os.get_terminal_size(stream.fileno()).columns if stream.isatty() else 0
    except (OSError, ValueError, AttributeError):
        columns = 0
    return columns or None  # a terminal that reports no size (0): as a pipe
