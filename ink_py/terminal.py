"""Text for a terminal: what the model or a server wrote, shown but never obeyed — beyond Ink.

Every line ink_py prints that carries someone else's text passes through here:
``terminal_safe`` (control characters and bidirectional controls shown as escapes, never
obeyed), ``well_formed`` (a lone surrogate, which no stream can encode, shown as U+FFFD),
``one_line`` (a multi-line message folded onto the one ``error: …`` line), ``show_newlines`` (a chat
summary's ⏎), the colours (``wants_colour``: a terminal and no NO_COLOR; ``paint``), and the
small formatters the status lines share (``shorten``, ``first_line``, ``human_size``, ``plural``).

    >>> terminal_safe("a\\x1b]52;c;aGk=\\x07b"), one_line("2 errors:\\n  content\\n  field")
    ('a\\\\x1b]52;c;aGk=\\\\x07b', '2 errors: content field')
"""

from __future__ import annotations

import os
import re
from typing import IO

# Every C0 control but \n and \t, DEL and the C1 controls → a visible escape such as \x1b.
_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)] if code not in (0x09, 0x0A)}
# The bidirectional controls (embeddings, overrides, isolates, the marks) → \u202e …: text that
# reorders what follows it on screen could make `rm -rf ~` look like something else ("Trojan Source").
BIDI_CONTROLS = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
_CONTROLS.update({code: f"\\u{code:04x}" for code in BIDI_CONTROLS})


def terminal_safe(text: str) -> str:
    """``text`` from the model or a server, made harmless for a terminal: OSC (window title,
    clipboard), CSI (clear screen, cursor moves), C1 and bidirectional controls are shown, not
    obeyed; a lone surrogate becomes U+FFFD (``well_formed``), so the line can be written.

    >>> terminal_safe("a\\x1b]52;c;aGk=\\x07b\\tc\\n\\x9b2J")
    'a\\\\x1b]52;c;aGk=\\\\x07b\\tc\\n\\\\x9b2J'
    >>> terminal_safe("ok \\u202egnp.exe \\ud800")
    'ok \\\\u202egnp.exe \\ufffd'
    """
    return (text if text.isascii() or not SURROGATE.search(text) else well_formed(text)).translate(_CONTROLS)


def well_formed(text: str) -> str:
    """``text`` as UTF-8 can carry it: a surrogate pair kept apart is joined, a lone surrogate
    (JSON's ``"\\ud800"``, a file name's undecodable byte) becomes U+FFFD — beyond Ink, whose
    JavaScript strings write them silently. Text without surrogates is returned as it is.

    >>> well_formed("a\\ud800b"), well_formed("\\ud83d\\ude00"), well_formed("读")
    ('a\\ufffdb', '😀', '读')
    """
    if text.isascii() or not SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


SURROGATE = re.compile("[\\ud800-\\udfff]")  # what UTF-8 cannot carry: searched before anything is copied


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
