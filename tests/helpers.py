"""Helpers only the project's own tests share: where the checkout is, and a child's environment.

What the course's checks share too (fixture bytes, byte splits, streamed replies, a scripted
provider, the expected messages) lives with them, in ``ink_py/course/checks/helpers.py``.
"""

from __future__ import annotations

import os
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
