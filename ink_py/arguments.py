"""One parser style for every ``ink-py`` command: ``--help`` everywhere, mistakes as one line.

Not in Ink. Every subcommand (``ink-py``, ``chat``, ``demo``, ``exercise``, ``serve``, ``serve-model``)
builds its flags on ``CliParser``, so a usage mistake is one ``error: …`` line and exit
code 1 — exit 2 stays "the answer was cut at the output limit" — and a bad flag value
(a port of 99999, an unknown scenario) is a usage mistake, never a traceback.
``COMMANDS`` names the subcommands; ``ink_py.__main__`` dispatches to them. Text a user
gives (a prompt, ``--system``, a chat line) is made encodable here, where it enters
(``encodable_text``), so no request built from it can fail to encode later.

    >>> positive_int("3"), port_number("8765"), encodable_text("caf\\udce9")
    (3, 8765, 'caf�')
"""

from __future__ import annotations

import argparse
import errno
import re
from collections.abc import Callable
from typing import NoReturn, TypeVar

T = TypeVar("T")
EXIT_USAGE = 1  # the same code as any other error: 2 means "answer truncated"

# `ink-py <command> …` → (module under ink_py, what it does); anything else is a prompt.
COMMANDS = {
    "chat": ("chat", "a conversation: one message per line, the history kept across turns (/help inside)"),
    "demo": ("course.demo", "step through the article's §3 demo (or any recorded .sse): terminal or --web"),
    "exercise": ("course.exercises", "course exercises: list, start, check, hint, reset, diff, report, watch"),
    "serve": ("second_article.relay", "serve the agent to a browser page over SSE (second article)"),
    "serve-model": ("scripted.server", "run the built-in scripted model alone and print its base URL"),
}


LONE_SURROGATES = re.compile("[\ud800-\udfff]")  # what UTF-8 cannot encode


class UsageError(Exception):
    """A mistake in how ink-py was called: reported as one ``error:`` line."""


class CliParser(argparse.ArgumentParser):
    """argparse that reports mistakes as one ``error:`` line and exit code 1 (2 means "truncated")."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


def encodable_text(text: str) -> str:
    """``text`` that UTF-8 can encode: each lone surrogate becomes U+FFFD (�).

    Python keeps bytes that are not UTF-8 in argv, the environment or a pipe as lone
    surrogates (``\\udce9`` for the byte 0xE9); sent on, they would fail when the request is
    encoded, turns later. Beyond Ink: replaced once, at the edge where the text came in.
    """
    return LONE_SURROGATES.sub("\ufffd", text)


def positive_int(text: str) -> int:
    value = number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def port_number(text: str) -> int:
    value = number(text, int, "a port number")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 65535")
    return value


def non_negative_float(text: str) -> float:
    value = number(text, float, "a number")
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def number(text: str, kind: Callable[[str], T], what: str) -> T:
    """``kind(text)``, or the flag's one-line mistake: ``'x' is not a port number``."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def cannot_listen(host: str, port: int, err: OSError) -> str:
    """The one line for a server that cannot bind: what failed, and with a port in use, what to do.

    >>> cannot_listen("127.0.0.1", 8000, OSError(errno.EADDRINUSE, "Address already in use"))
    'cannot listen on 127.0.0.1:8000: Address already in use — another program has that port; --port 0 picks a free one'
    """
    line = f"cannot listen on {host}:{port}: {err.strerror or err}"
    if err.errno == errno.EADDRINUSE:
        line += " — another program has that port; --port 0 picks a free one"
    return line
