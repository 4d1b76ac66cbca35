"""Connecting to Redis, and what its errors look like to a user — beyond the article.

redis-py is optional: it is imported only here, once a Redis URL was given (stores.py), and
a missing package, a bad URL or a Redis that does not answer PING becomes one ``UsageError``.
The run log and the conversations (redis_runs.py, redis_conversations.py) catch
``redis_errors()`` and show ``store_trouble``: one short line. A password in the URL is never
shown, not even inside an error that quotes the URL.

    >>> redacted("redis://:hunter2@cache.internal:6379/0")
    'redis://:***@cache.internal:6379/0'
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..arguments import UsageError
from ..terminal import first_line

REDIS_TIMEOUT_SECONDS = 3.0  # any one Redis command (a reader's blocking read waits far less)
REDIS_CONNECT_SECONDS = 2.0
REDIS_CONNECTIONS = 1000  # per process: each reader waiting for events holds one (XREAD BLOCK, at most 0.25 s)
INSTALL_REDIS = "pip install -e '.[redis]'"


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
