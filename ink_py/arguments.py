"""One parser style for every ``ink-py`` command: ``--help`` everywhere, mistakes as one line.

Not in Ink. Every subcommand (``ink-py``, ``chat``, ``demo``, ``exercise``, ``serve``, ``serve-model``)
builds its flags on ``CliParser``, so a usage mistake is one ``error: …`` line and exit
code 1 — exit 2 stays "the answer was cut at the output limit" — and a bad flag value
(a port of 99999, an unknown scenario) is a usage mistake, never a traceback.
``COMMANDS`` names the subcommands; ``ink_py.__main__`` dispatches to them.

    >>> positive_int("3"), port_number("8765")
    (3, 8765)
"""

from __future__ import annotations

import argparse
from typing import NoReturn

EXIT_USAGE = 1  # the same code as any other error: 2 means "answer truncated"

# `ink-py <command> …` → (module under ink_py, what it does); anything else is a prompt.
COMMANDS = {
    "chat": ("chat", "a conversation: one message per line, the history kept across turns (/help inside)"),
    "demo": ("course.demo", "step through the article's §3 demo (or any recorded .sse): terminal or --web"),
    "exercise": ("course.exercises", "course exercises: list, start, check, hint, reset, diff, report"),
    "serve": ("second_article.relay", "serve the agent to a browser page over SSE (second article)"),
    "serve-model": ("scripted.server", "run the built-in scripted model alone and print its base URL"),
}


class UsageError(Exception):
    """A mistake in how ink-py was called: reported as one ``error:`` line."""


class CliParser(argparse.ArgumentParser):
    """argparse that reports mistakes as one ``error:`` line and exit code 1 (2 means "truncated")."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 65535")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value
