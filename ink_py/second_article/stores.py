"""Where the relay keeps conversations and runs: this process, a SQLite file, or Redis — beyond the article.

``open_stores`` reads the settings (docs/relay-wsgi.md) and opens a pair — conversations
(sessions.py) and run logs (runs.py):

    nothing                     both in this process's memory (``ink-py serve``, one worker)
    INK_SESSION_DB=FILE         conversations in a SQLite file (several workers), runs in memory
    INK_REDIS_URL=redis://…     both in Redis (several workers, several hosts): redis_*.py

redis-py is optional and imported only when a URL is given (redis_client.py); without it, or
when Redis does not answer, ``open_stores`` raises one ``UsageError`` (create_app: exit 4).
``INK_RESUME_GRACE`` and ``INK_RUN_TTL`` are checked here too.

    >>> open_stores(None, {"INK_RUN_TTL": "5"})
    Traceback (most recent call last):
    ...
    ink_py.arguments.UsageError: INK_RUN_TTL='5': give a number of seconds from 10 to 604800
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..arguments import UsageError
from .redis_client import connect_redis
from .runs import RESUME_GRACE_SECONDS, RUN_TTL_SECONDS, MemoryRuns, RunLog
from .sessions import SessionStore, open_store


def open_stores(redis_url: str | None, environ: Mapping[str, str]) -> tuple[SessionStore, RunLog]:
    """Conversations and runs as the settings say; UsageError for a setting that cannot be used."""
    grace = seconds_setting(environ, "INK_RESUME_GRACE", RESUME_GRACE_SECONDS, 0.1, 3600)
    ttl = seconds_setting(environ, "INK_RUN_TTL", RUN_TTL_SECONDS, 10, 7 * 24 * 3600)
    if not redis_url:
        return open_store(environ.get("INK_SESSION_DB")), MemoryRuns(ttl, grace)
    if environ.get("INK_SESSION_DB"):
        raise UsageError("INK_SESSION_DB and a Redis URL are both set: conversations live in one store (unset one)")
    client = connect_redis(redis_url)
    from .redis_conversations import RedisConversations
    from .redis_runs import RedisRuns

    return RedisConversations(client), RedisRuns(client, int(ttl), grace)


def seconds_setting(environ: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    """A number of seconds from the environment, or ``default``; UsageError naming the variable.

    >>> seconds_setting({"INK_RUN_TTL": "60"}, "INK_RUN_TTL", 600, 10, 3600)
    60.0
    """
    text = environ.get(name, "").strip()
    if not text:
        return float(default)
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:  # NaN fails this too
        raise UsageError(f"{name}={text[:40]!r}: give a number of seconds from {low:g} to {high:g}")
    return value


def env_redis_url(flag: str | None) -> str | None:
    """``--redis URL``, else ``INK_REDIS_URL``."""
    return flag or os.environ.get("INK_REDIS_URL") or None
