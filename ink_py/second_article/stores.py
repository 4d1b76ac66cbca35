"""Where the relay keeps conversations and runs: this process, a SQLite file, or Redis — beyond the article.

``open_stores`` reads the settings (docs/relay-wsgi.md) and opens a pair — conversations
(sessions.py) and run logs (runs.py):

    nothing                     both in this process's memory (``ink-py serve``, one worker)
    INK_SESSION_DB=FILE         conversations in a SQLite file (several workers), runs in memory
    INK_REDIS_URL=redis://…     both in Redis (several workers, several hosts): redis_*.py

redis-py is optional and imported only when a URL is given (redis_client.py); without it, or
when Redis does not answer, ``open_stores`` raises one ``UsageError`` (create_app: exit 4); a
Redis that evicts keys when full gets one ``warning:`` line. ``INK_RESUME_GRACE``, ``INK_RUN_TTL``
the per-client quotas (``quotas_from``: ``INK_MAX_…``) and the proxies trusted to name a client
(``trusted_from``: ``FORWARDED_ALLOW_IPS``) are checked here too.

    >>> open_stores(None, {"INK_RUN_TTL": "5"})
    Traceback (most recent call last):
    ...
    ink_py.arguments.UsageError: INK_RUN_TTL='5': give a number of seconds from 10 to 604800
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from ..arguments import UsageError
from ..peers import Trusted, parse_trusted
from .quotas import DEFAULTS, Quotas
from .redis_client import connect_redis
from .runs import RESUME_GRACE_SECONDS, RUN_TTL_SECONDS, MemoryRuns, RunLog
from .sessions import SessionStore, open_store

COUNTS = {  # the per-client quotas: variable → Quotas' field (docs/relay-wsgi.md, "Limits and quotas")
    "INK_MAX_RUNS_PER_CLIENT": "runs_per_client",
    "INK_MAX_NEW_SESSIONS_PER_MINUTE": "new_sessions_per_minute",
    "INK_MAX_READERS_PER_RUN": "readers_per_run",
    "INK_MAX_CONVERSATIONS_PER_CLIENT": "conversations_per_client",
    "INK_MAX_ANSWERS_PER_CLIENT": "answers_per_client",
}
MAX_COUNT = 1_000_000
RUN_BYTES_RANGE = (64 * 1024, 1024**3)  # INK_MAX_RUN_BYTES: 64 KiB to 1 GiB


def open_stores(
    redis_url: str | None, environ: Mapping[str, str], quotas: Quotas = DEFAULTS
) -> tuple[SessionStore, RunLog]:
    """Conversations and runs as the settings say; UsageError for a setting that cannot be used."""
    grace = seconds_setting(environ, "INK_RESUME_GRACE", RESUME_GRACE_SECONDS, 0.1, 3600)
    ttl = seconds_setting(environ, "INK_RUN_TTL", RUN_TTL_SECONDS, 10, 7 * 24 * 3600)
    if not redis_url:
        return open_store(environ.get("INK_SESSION_DB"), quotas), MemoryRuns(ttl, grace, quotas)
    if environ.get("INK_SESSION_DB"):
        raise UsageError("INK_SESSION_DB and a Redis URL are both set: conversations live in one store (unset one)")
    client = connect_redis(redis_url)
    from .redis_quotas import memory_warning

    warning = memory_warning(client)
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    return redis_stores(client, int(ttl), grace, quotas)


def redis_stores(client: object, ttl: int, grace: float, quotas: Quotas = DEFAULTS) -> tuple[SessionStore, RunLog]:
    """Conversations and runs in the Redis ``client`` talks to, counting the quotas there."""
    from .redis_conversations import RedisConversations
    from .redis_quotas import RedisQuotas
    from .redis_runs import RedisRuns

    counted = RedisQuotas(client, quotas)
    return RedisConversations(client, counted), RedisRuns(client, ttl, grace, counted)


def quotas_from(environ: Mapping[str, str]) -> Quotas:
    """The per-client quotas the environment sets (the rest: their defaults); UsageError naming a bad one.

    >>> quotas_from({"INK_MAX_RUNS_PER_CLIENT": "2"}).runs_per_client
    2
    >>> quotas_from({"INK_MAX_RUN_BYTES": "1k"})
    Traceback (most recent call last):
    ...
    ink_py.arguments.UsageError: INK_MAX_RUN_BYTES='1k': give a whole number from 65536 to 1073741824
    """
    given = {field: count_setting(environ, name, 1, MAX_COUNT) for name, field in COUNTS.items()}
    given["run_bytes"] = count_setting(environ, "INK_MAX_RUN_BYTES", *RUN_BYTES_RANGE)
    return Quotas(**{field: value for field, value in given.items() if value is not None})


def trusted_from(environ: Mapping[str, str]) -> Trusted:
    """``FORWARDED_ALLOW_IPS``: the proxies whose X-Forwarded-For names the client (none by default).

    >>> trusted_from({"FORWARDED_ALLOW_IPS": "10.0.0.5, localhost"})
    Traceback (most recent call last):
    ...
    ink_py.arguments.UsageError: FORWARDED_ALLOW_IPS: 'localhost' is not an IP address or network (or *)
    """
    try:
        return parse_trusted(environ.get("FORWARDED_ALLOW_IPS", ""))
    except ValueError as err:
        raise UsageError(f"FORWARDED_ALLOW_IPS: {err}") from None


def count_setting(environ: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    """A whole number from the environment, or None when unset; UsageError naming the variable."""
    text = environ.get(name, "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdecimal() and len(text) <= 12) or not low <= int(text) <= high:
        raise UsageError(f"{name}={text[:40]!r}: give a whole number from {low} to {high}")
    return int(text)


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
