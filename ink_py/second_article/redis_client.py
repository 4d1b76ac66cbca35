"""Connecting to Redis, and what its errors look like to a user — beyond the article.

redis-py is optional: it is imported only here, once a Redis URL was given (stores.py), and
a missing package, a bad URL, a Redis older than 7 or one that does not answer PING becomes one
``UsageError``. The stores (redis_runs.py, redis_conversations.py, redis_quotas.py) run their
calls ``translated()``: a ``StoreError``, whose ``store_trouble`` line goes to the server's log;
what starts something new runs ``admitting()`` too: a Redis over ``maxmemory`` is a 503 then.
Every script begins with what it may do under memory pressure (``NEW``, ``GOING``, ``READING``:
Redis 7's flags). A password in the URL is never shown, not even inside an error that quotes it.

    >>> redacted("redis://:hunter2@cache.internal:6379/0")
    'redis://:***@cache.internal:6379/0'
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from ..arguments import UsageError
from ..terminal import first_line
from .guards import BadRequest
from .runs import StoreError

REDIS_TIMEOUT_SECONDS = 3.0  # any one Redis command (a reader's blocking read waits far less)
REDIS_CONNECT_SECONDS = 2.0
REDIS_CONNECTIONS = 1000  # per process: each reader waiting for events holds one (XREAD BLOCK, at most 0.25 s)
INSTALL_REDIS = "pip install -e '.[redis]'"
FULL_RETRY_SECONDS = 30  # Retry-After when Redis is full: memory frees as answers expire (INK_RUN_TTL)
FULL = "the relay's store is full: new questions are refused for now (answers already running go on)"
NEW = "#!lua\n"  # a script that starts something: Redis over maxmemory refuses it whole
GOING = "#!lua flags=allow-oom\n"  # one that keeps an admitted run going: it may write beyond maxmemory
READING = "#!lua flags=no-writes\n"  # one that only reads
NOW = "local function now() local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000) end\n"


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
        version = str(client.info("server").get("redis_version", "0"))
    except ValueError as err:  # not a redis://, rediss:// or unix:// URL
        raise UsageError(f"Redis URL {shown}: {scrubbed(err, url)} (give redis://HOST:PORT/DB)") from None
    except redis_errors() as err:
        raise UsageError(f"cannot reach Redis at {shown}: {scrubbed(err, url)}") from None
    if not version.partition(".")[0].isdecimal() or int(version.partition(".")[0]) < 7:
        raise UsageError(f"Redis at {shown} is version {version[:20]}: the relay needs 7 or newer (script flags)")
    return client


def redis_errors() -> tuple[type[Exception], ...]:
    """What a Redis call may raise (redis-py is imported only once a URL was given)."""
    from redis.exceptions import RedisError

    return RedisError, OSError


def is_out_of_memory(err: BaseException) -> bool:
    """Redis refused a write because it is over maxmemory ("OOM command not allowed …")."""
    from redis.exceptions import OutOfMemoryError

    return isinstance(err, OutOfMemoryError)


@contextmanager
def translated() -> Iterator[None]:
    """Redis's errors — and a reply of a shape no script of ours gives — as StoreError, one short line."""
    try:
        yield
    except (ValueError, TypeError) as err:
        raise StoreError(f"an unexpected reply from Redis ({store_trouble(err)})") from None
    except redis_errors() as err:
        raise StoreError(store_trouble(err)) from None


@contextmanager
def admitting() -> Iterator[None]:
    """Inside ``translated()``, around what starts something new: a Redis over maxmemory refused
    it, which is a 503 with ``Retry-After`` for the client, not a failure of the store."""
    try:
        yield
    except redis_errors() as err:
        if is_out_of_memory(err):
            raise BadRequest(503, FULL, retry_after=FULL_RETRY_SECONDS) from None
        raise


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
