"""Where the relay keeps conversations and runs: this process, a SQLite file, or Redis — beyond the article.

``open_stores`` reads the settings (docs/relay-wsgi.md) and opens a pair — conversations
(sessions.py) and run logs (runs.py):

    nothing                     both in this process's memory (``ink-py serve``, one worker)
    INK_SESSION_DB=FILE         conversations in a SQLite file (several workers), runs in memory
    INK_REDIS_URL=redis://…     both in Redis (several workers, several hosts): redis_*.py

redis-py is optional and imported only here, when a URL is given; without it, or when Redis
does not answer, ``open_stores`` raises one ``UsageError`` (create_app: exit 4). A password in
the URL is never shown. ``INK_RESUME_GRACE`` and ``INK_RUN_TTL`` are checked here too.

    >>> redacted("redis://:hunter2@cache.internal:6379/0")
    'redis://:***@cache.internal:6379/0'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..arguments import UsageError
from ..terminal import first_line
from .runs import RESUME_GRACE_SECONDS, RUN_TTL_SECONDS, MemoryRuns, RunLog
from .sessions import SessionStore, open_store

REDIS_TIMEOUT_SECONDS = 3.0  # any one Redis command (a reader's blocking read waits far less)
REDIS_CONNECT_SECONDS = 2.0
REDIS_CONNECTIONS = 1000  # per process: each reader waiting for events holds one (XREAD BLOCK, at most 0.25 s)
INSTALL_REDIS = "pip install -e '.[redis]'"


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


def connect_redis(url: str) -> Any:
    """A redis-py client for ``url``, answering PING; UsageError otherwise."""
    try:
        import redis
        from redis.backoff import ExponentialWithJitterBackoff
        from redis.retry import Retry
    except ImportError:
        raise UsageError(f"a Redis URL needs redis-py: {INSTALL_REDIS}") from None
    shown = redacted(url)
    try:
        pool = redis.BlockingConnectionPool.from_url(  # beyond a bound, a caller waits for a free connection
            url,
            max_connections=REDIS_CONNECTIONS,
            timeout=REDIS_TIMEOUT_SECONDS,
            socket_timeout=REDIS_TIMEOUT_SECONDS,
            socket_connect_timeout=REDIS_CONNECT_SECONDS,
            retry=Retry(ExponentialWithJitterBackoff(cap=0.2, base=0.01), 1),  # one retry, then the error
        )
        client = redis.Redis(connection_pool=pool)
        client.ping()
    except ValueError as err:  # not a redis://, rediss:// or unix:// URL
        raise UsageError(f"Redis URL {shown}: {scrubbed(err, url)} (give redis://HOST:PORT/DB)") from None
    except redis_errors() as err:
        raise UsageError(f"cannot reach Redis at {shown}: {scrubbed(err, url)}") from None
    return client


def redis_errors() -> tuple[type[Exception], ...]:
    """What a Redis call may raise (redis-py is imported only once a URL was given)."""
    from redis.exceptions import RedisError

    return RedisError, OSError


def store_trouble(err: BaseException) -> str:
    """A store's error, as one short line for a user."""
    return first_line(str(err) or type(err).__name__, 200)


def scrubbed(err: BaseException, url: str) -> str:
    """``store_trouble`` without the URL's password, should an error quote it."""
    password = urlsplit(url).password
    text = store_trouble(err)
    return text.replace(password, "***") if password else text


def redacted(url: str) -> str:
    """The URL with its password (if any) as ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


def env_redis_url(flag: str | None) -> str | None:
    """``--redis URL``, else ``INK_REDIS_URL``."""
    return flag or os.environ.get("INK_REDIS_URL") or None
