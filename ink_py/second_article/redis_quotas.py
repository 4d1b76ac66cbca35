"""Per-client quotas in Redis, and its memory — quotas.py's promises across every worker and host.

    ink:runs:{C}   sorted set   client C's running runs ("S/R"), each scored by the end of its lease
                                (Redis's clock, ms): a run whose worker died drops out by itself
    ink:new:{C}    sorted set   C's new conversations of the last minute, scored by when

Each script touches one client's key only (``{C}`` is a hash tag: one cluster slot), and the
run's own keys are another script's (redis_runs.py), so a claim is two steps: ``admit_run``
here, then the run's CLAIM. Before a new run, ``MemoryGauge`` reads ``INFO memory`` (at most once
a second): above ``HIGH_WATER`` of ``maxmemory`` new runs get 503 with ``Retry-After``, leaving
the rest for the runs in flight, whose writes may go beyond it (redis_runs.py: ``allow-oom``).
Every script says what it may do (``#!lua flags=…``, Redis 7): one that starts something new has
no ``allow-oom``, so a Redis over ``maxmemory`` refuses it whole — also a 503, never half done.

    >>> client_keys("2001:db8::/64")
    ('ink:runs:{2001:db8::/64}', 'ink:new:{2001:db8::/64}')
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from .guards import BadRequest
from .quotas import Quotas, too_many
from .redis_client import FULL, FULL_RETRY_SECONDS, GOING, NEW, NOW, admitting, redis_errors, translated
from .runs import LEASE_SECONDS, StoreError, too_busy

HIGH_WATER = 0.8  # above this share of maxmemory, new runs are refused (503)
MEMORY_CHECK_SECONDS = 1.0  # INFO memory is read at most this often
ADMIT = (
    NEW
    + NOW
    + """
local t = now()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)
local running = redis.call('ZCARD', KEYS[1])
if running >= tonumber(ARGV[2]) and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {0, running} end
local added = redis.call('ZADD', KEYS[1], t + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, added}
"""
)
RENEW = GOING + NOW + "redis.call('ZADD', KEYS[1], now() + tonumber(ARGV[2]), ARGV[1])\n"
RENEW += "return redis.call('PEXPIRE', KEYS[1], ARGV[2])"
LEAVE = GOING + "return redis.call('ZREM', KEYS[1], ARGV[1])"
RATE = (
    NEW
    + NOW
    + """
local t = now()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t - 60000)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, n, tonumber(oldest[2]) + 60000 - t}
end
redis.call('ZADD', KEYS[1], t, ARGV[2])
redis.call('PEXPIRE', KEYS[1], 60000)
return {1, n + 1, 0}
"""
)


def client_keys(client: str) -> tuple[str, str]:
    """A client's running runs and its new conversations (a client is an address or a /64: no braces)."""
    return f"ink:runs:{{{client}}}", f"ink:new:{{{client}}}"


class RedisQuotas:
    """The quotas of quotas.py, counted in Redis; ``gauge`` watches its memory."""

    def __init__(self, client: Any, quotas: Quotas) -> None:
        self.client, self.quotas, self.gauge = client, quotas, MemoryGauge(client)
        self._admit, self._renew, self._leave, self._rate = map(client.register_script, (ADMIT, RENEW, LEAVE, RATE))

    def admit_run(self, client: str, run: str) -> bool:
        """Count ``run`` among ``client``'s running ones, or refuse (429, 503); True if it was not counted yet."""
        if self.gauge.full():
            raise BadRequest(503, FULL, retry_after=FULL_RETRY_SECONDS)
        with translated(), admitting():
            admitted, detail = self._admit(
                keys=client_keys(client)[:1], args=[run, self.quotas.runs_per_client, lease()]
            )
        if not admitted:
            raise too_busy(int(detail))
        return bool(detail)

    def renew(self, runs: list[tuple[str, str]], pipe: Any) -> None:
        """Queue on ``pipe`` the renewal of each (client, run) a keeper keeps going."""
        for client, run in runs:
            self._renew(keys=client_keys(client)[:1], args=[run, lease()], client=pipe)

    def leave(self, client: str, run: str) -> None:
        """``run`` has ended (or never started): not ``client``'s any more. Failing is harmless: its lease ends."""
        try:
            self._leave(keys=client_keys(client)[:1], args=[run])
        except redis_errors():
            pass

    def admit_session(self, client: str) -> None:
        """Count a new conversation of ``client``, or refuse (429 beyond INK_MAX_NEW_SESSIONS_PER_MINUTE)."""
        limit = self.quotas.new_sessions_per_minute
        with translated(), admitting():
            admitted, count, wait_ms = self._rate(keys=client_keys(client)[1:], args=[limit, uuid.uuid4().hex])
        if not admitted:
            wait = max(1, -(-int(wait_ms) // 1000))
            raise BadRequest(429, too_many(int(count), "INK_MAX_NEW_SESSIONS_PER_MINUTE", wait), retry_after=wait)


def lease() -> int:
    return int(LEASE_SECONDS * 1000)


class MemoryGauge:
    """Whether Redis's memory is above HIGH_WATER of its maxmemory, from ``INFO memory`` read at most
    once every MEMORY_CHECK_SECONDS (no maxmemory, or INFO refused: never full by this measure)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._read_at, self._full = -MEMORY_CHECK_SECONDS, False
        self._lock = threading.Lock()

    def full(self) -> bool:
        with self._lock:
            if time.monotonic() - self._read_at >= MEMORY_CHECK_SECONDS:
                self._read_at = time.monotonic()
                try:
                    with translated():
                        memory = self.client.info("memory")
                        most = int(memory.get("maxmemory", 0))
                        self._full = most > 0 and int(memory.get("used_memory", 0)) > HIGH_WATER * most
                except StoreError:
                    self._full = False  # unreadable: the OOM refusal still stands behind this
            return self._full


def memory_warning(client: Any) -> str | None:
    """The start's ``warning:`` line, if Redis evicts keys when full (then a flood could end answers)."""
    try:
        memory = client.info("memory")
    except redis_errors():
        return None
    policy = str(memory.get("maxmemory_policy", "noeviction"))
    if int(memory.get("maxmemory", 0) or 0) and policy != "noeviction":
        return (
            f"warning: Redis evicts keys when it is full (maxmemory-policy {policy[:40]}): a flood of questions "
            "could then end other clients' answers; set --maxmemory-policy noeviction (docs/relay-wsgi.md)"
        )
    return None
