"""Helpers only the project's own tests share: where the checkout is, a child's environment, Ctrl-C for it.

What the course's checks share too (fixture bytes, byte splits, streamed replies, a scripted
provider, the expected messages) lives with them, in ``ink_py/course/checks/helpers.py``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"  # the peers' vectors and the recorded requests beside the .sse bodies


# What points ink-py at an endpoint: without them the built-in scripted model answers.
ENDPOINT_SETTINGS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "INK_MODEL", "INK_API")

# The event that ends a reply in each dialect: a stream without it "may be truncated".
END_EVENT = {
    "openai_completions": "finish_reason",
    "anthropic_messages": "message_stop",
    "openai_responses": "response.completed",
}


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a child ``python -m ink_py``: no endpoint setting, no NO_COLOR, this checkout
    on PYTHONPATH, then ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (*ENDPOINT_SETTINGS, "NO_COLOR") and not k.startswith("ANTHROPIC_")
    }
    return {**env, "PYTHONPATH": str(ROOT), **extra}


@contextmanager
def ctrl_c_reaches_children() -> Iterator[None]:
    """Children started meanwhile take SIGINT at its default disposition, as a terminal's foreground job.

    For every test that sends a child Ctrl-C. pytest started from a script's background job runs with
    SIGINT ignored, and so would each child: a program started with SIGINT ignored keeps it so (POSIX's
    convention; Python, the shell's traps and ink-py follow it), and the test's Ctrl-C would do nothing.
    Meanwhile this process handles SIGINT by doing nothing — still deaf to Ctrl-C — and exec resets a
    handled signal to its default, where an ignored one stays ignored. Main thread only (signal.signal).
    """
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield  # pytest's KeyboardInterrupt handler, or the default: a child starts at the default already
        return
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
