"""Run logs in Redis — runs.py's promises across workers and hosts: a reconnect to any of them resumes.

Each run ``(S, R)`` has two keys, both with an expiry:

    ink:run:{S/R}   hash    state (running | ended), token (fencing), last (newest id), beat and seen
                            (Redis's clock, ms: the producer's lease, a reader's presence), stop,
                            client, size (bytes logged) and full (INK_MAX_RUN_BYTES reached)
    ink:log:{S/R}   stream  the events, entry ids 0-1, 0-2 … (ours, so that Last-Event-ID N is 0-N),
                            fields e (name) and d (JSON); capped at MAX_RUN_EVENTS (XADD MAXLEN)

Every write is one Lua script, so it is atomic: an append checks the producer's token and the
log's size before its XADD (a producer taken over can write nothing more), a take-over bumps the
token, a beat renews the lease with Redis's own clock (hosts' clocks may differ). Liveness lives
in the run's own hash: no short-lived key that an evicting Redis would take first. A claim is
``NEW`` (refused whole when Redis is over maxmemory: a 503), what keeps a run going ``GOING``
(it may write beyond: no flood ends another's answer), the client's quota is redis_quotas.py's.
Readers block in ``XREAD``. Keys expire ``ttl`` seconds after the run's last write. What is read
back is checked before it is sent (``logged_event``). The braces are a hash tag: a run's keys
share one cluster slot.

    >>> run_keys(("session-1", "run-0001"))[1]
    'ink:log:{session-1/run-0001}'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .redis_client import GOING, NEW, NOW, READING, admitting, store_trouble, translated
from .redis_quotas import RedisQuotas
from .redis_writer import Queued, Writer
from .runs import (
    BATCH,
    LEASE_SECONDS,
    MAX_RUN_EVENTS,
    TOO_LONG,
    Batch,
    Beat,
    Fenced,
    LoggedEvent,
    RunFull,
    RunKey,
    StoreError,
    stored,
)

EVENT_NAMES = {"text", "thinking", "tool_preparing", "tool_start", "tool_end", "done", "error"}
MAX_STORED_EVENT_BYTES = 2 * 1024 * 1024  # producer.py writes at most 256 Ki characters of text per event
_ENTRY_ID = re.compile(rb"0-([0-9]{1,9})")
WRITE = """
local function write(name, data, last, cap, ttl)
  local id = redis.call('HINCRBY', KEYS[1], 'last', 1)
  redis.call('XADD', KEYS[2], 'MAXLEN', cap, '0-' .. id, 'e', name, 'd', data)
  if last == '1' then redis.call('HSET', KEYS[1], 'state', 'ended') end
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
  return id
end
"""
CLAIM = (
    NEW
    + NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
local t = now()
redis.call('HSET', KEYS[1], 'state', 'running', 'token', 1, 'last', 0, 'beat', t, 'seen', t, 'client', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""
)  # DEL: the log of an evicted run of the same name must not pass for this one's
APPEND = (
    GOING
    + WRITE
    + """
local h = redis.call('HMGET', KEYS[1], 'token', 'state', 'size', 'full')
if h[1] ~= ARGV[1] or h[2] ~= 'running' then return -1 end
local size = (tonumber(h[3]) or 0) + string.len(ARGV[2]) + string.len(ARGV[3])
if ARGV[4] ~= '1' or ARGV[2] ~= 'error' then
  if h[4] then return -2 end
  if ARGV[4] ~= '1' and size > tonumber(ARGV[7]) then
    redis.call('HSET', KEYS[1], 'full', 1)
    return -2
  end
end
redis.call('HSET', KEYS[1], 'size', size)
return write(ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
"""
)  # -2: the log is full (INK_MAX_RUN_BYTES): nothing more goes in but an error that ends it
BEAT = (
    GOING
    + NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'token', 'state', 'stop', 'seen')
if h[1] ~= ARGV[1] or h[2] ~= 'running' then return {0, '', 0} end
local t = now()
redis.call('HSET', KEYS[1], 'beat', t)
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
local gone = 0
if t - (tonumber(h[4]) or 0) > tonumber(ARGV[3]) then gone = 1 end
return {1, h[3] or '', gone}
"""
)
SEEN = (
    GOING
    + NOW
    + "if redis.call('HGET', KEYS[1], 'state') == 'running' then redis.call('HSET', KEYS[1], 'seen', now()) end"
)
STATUS = (
    READING
    + NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'state', 'last', 'beat')
if not h[1] then return {'', 0, 0} end
local stale = 0
if h[1] == 'running' and now() - tonumber(h[3]) > tonumber(ARGV[1]) then stale = 1 end
return {h[1], tonumber(h[2]), stale}
"""
)
STOP = (
    GOING
    + """
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'running' then redis.call('HSET', KEYS[1], 'stop', ARGV[1]) end
return state or ''
"""
)
TAKE_OVER = (
    GOING
    + NOW
    + WRITE
    + """
local h = redis.call('HMGET', KEYS[1], 'state', 'beat')
if h[1] ~= 'running' or now() - tonumber(h[2]) <= tonumber(ARGV[1]) then return 0 end
redis.call('HINCRBY', KEYS[1], 'token', 1)
return write('error', ARGV[2], '1', ARGV[3], ARGV[4])
"""
)
FORGET = (
    GOING
    + "if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then return redis.call('DEL', unpack(KEYS)) end return 0"
)


def run_keys(key: RunKey) -> list[str]:
    """A run's hash and stream (its ids are letters, digits, - and _: no braces)."""
    tag = "{" + "/".join(key) + "}"
    return [f"ink:run:{tag}", f"ink:log:{tag}"]


def logged_event(entry_id: bytes, fields: Mapping[bytes, bytes]) -> LoggedEvent:
    """A stream entry read back, checked: Redis is shared, and what it holds may not be ours.

    >>> logged_event(b"0-3", {b"e": b"text", b"d": '{"text": "读"}'.encode()})
    (3, 'text', {'text': '读'})
    """
    number = _ENTRY_ID.fullmatch(entry_id)
    name = fields.get(b"e", b"").decode("ascii", "replace")
    raw = fields.get(b"d", b"")
    try:
        if number is None or name not in EVENT_NAMES or len(raw) > MAX_STORED_EVENT_BYTES:
            raise ValueError("not an event of ours")
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except (ValueError, RecursionError) as err:
        raise StoreError(f"a stored event is damaged ({entry_id[:20]!r}: {err})") from None
    return int(number[1]), name, data


class RedisRuns:
    """Run logs in Redis, shared by every worker on every host."""

    def __init__(self, client: Any, ttl: int, grace: float, quotas: RedisQuotas) -> None:
        self.client, self.ttl, self.grace, self.quotas = client, ttl, grace, quotas
        scripts = (CLAIM, APPEND, BEAT, SEEN, STATUS, STOP, TAKE_OVER, FORGET)
        self._claim, self._append, self._beat, self._seen, self._status, self._stop, self._take_over, self._forget = (
            map(client.register_script, scripts)
        )
        self.writer = Writer(self._write)
        self._clients: dict[RunKey, str] = {}  # the runs produced here → the client each counts against

    def claim(self, key: RunKey, client: str = "") -> int | None:
        added = self.quotas.admit_run(client, "/".join(key))  # 429, 503
        try:
            with translated(), admitting():
                claimed = self._claim(keys=run_keys(key), args=[self.ttl, client])
        except BaseException:
            self.quotas.leave(client, "/".join(key))
            raise
        if not claimed:
            if added:  # it was running already: not counted twice
                self.quotas.leave(client, "/".join(key))
            return None
        self._clients[key] = client
        self.writer.start_run(key)
        return 1

    def append(self, key: RunKey, token: int, name: str, data: dict[str, Any], last: bool = False) -> None:
        try:
            self.writer.put(key, token, name, data, last)  # queued; the last one waits for Redis
        finally:
            if last:
                self._leave(key)

    def read(self, key: RunKey, after: int, wait: float) -> Batch:
        here = self.writer.local.read(key, after, wait)  # a run produced here: what Redis accepted, in memory
        if here.state != "unknown":
            return Batch(here.events, here.state, here.last)  # its producer is this process: never stale
        log = run_keys(key)[1]
        with translated():
            block = max(1, int(wait * 1000)) if wait > 0 else None  # block=0 would wait for ever
            reply = self.client.xread({log: f"0-{after}"}, count=BATCH, block=block) or []
            streams = reply.items() if isinstance(reply, dict) else reply  # RESP3 answers a map
            entries = [entry for _, found in streams for entry in found]
        if entries:
            return Batch([logged_event(entry_id, fields) for entry_id, fields in entries])
        return self.status(key)

    def status(self, key: RunKey) -> Batch:
        here = self.writer.local.status(key)
        if here.state != "unknown":
            return Batch([], here.state, here.last)
        with translated():
            state, last, stale = self._status(keys=run_keys(key)[:1], args=[int(LEASE_SECONDS * 1000)])
            found = {b"running": "running", b"ended": "ended"}.get(state, "unknown")
            return Batch([], found, int(last), bool(stale)) if found != "unknown" else Batch([], "unknown")

    def seen(self, key: RunKey) -> None:
        with translated():
            self._seen(keys=run_keys(key)[:1])

    def beat(self, owned: list[tuple[RunKey, int]]) -> list[Beat]:
        beats = []
        counted = [(self._clients[key], "/".join(key)) for key, _ in owned if key in self._clients]
        with translated(), self.client.pipeline(transaction=False) as pipe:
            for key, token in owned:
                self._beat(keys=run_keys(key), args=[token, self.ttl, self._grace_ms()], client=pipe)
            self.quotas.renew(counted, pipe)  # the client's count of its runs lives while they do
            for mine, stop, gone in pipe.execute()[: len(owned)]:
                reason = stop.decode("utf-8", "replace")[:200] if isinstance(stop, bytes) and stop else None
                beats.append(Beat(fenced=not mine, stop=reason, readers_gone=bool(gone)))
        self.writer.local.beat([(key, 1) for key, _ in owned])  # the copies live while their producer does
        return beats

    def stop(self, key: RunKey, reason: str) -> str:
        with translated():
            state = self._stop(keys=run_keys(key)[:1], args=[reason])
        return {b"running": "running", b"ended": "ended"}.get(state, "unknown")

    def take_over(self, key: RunKey, message: str) -> None:
        args = [int(LEASE_SECONDS * 1000), stored({"message": message}), MAX_RUN_EVENTS, self.ttl]
        with translated():
            self._take_over(keys=run_keys(key), args=args)

    def forget(self, key: RunKey, token: int) -> None:
        self.writer.local.forget(key, 1)
        self._leave(key)
        with translated():
            self._forget(keys=run_keys(key), args=[token])

    def close(self) -> None:
        self.writer.close()
        self.client.close()

    def _leave(self, key: RunKey) -> None:
        client = self._clients.pop(key, None)
        if client is not None:
            self.quotas.leave(client, "/".join(key))

    def _write(self, batch: list[Queued]) -> list[Any]:
        """The writer's one round trip: each queued event's APPEND; per event its id, Fenced, RunFull or
        StoreError."""
        most = self.quotas.quotas.run_bytes
        with translated(), self.client.pipeline(transaction=False) as pipe:
            for item in batch:
                args = [item.token, item.name, stored(item.data), int(item.last), MAX_RUN_EVENTS, self.ttl, most]
                self._append(keys=run_keys(item.key), args=args, client=pipe)
            replies = pipe.execute(raise_on_error=False)
        return [settled(reply) for reply in replies]

    def _grace_ms(self) -> int:
        return max(1, int(self.grace * 1000))


def settled(reply: Any) -> int | Exception:
    """One APPEND's reply in a pipeline: the event's id, or why it was not written."""
    if isinstance(reply, Exception):
        return StoreError(store_trouble(reply))
    if not isinstance(reply, int):
        return StoreError(f"an unexpected reply from Redis ({reply!r:.60})")
    if reply == -2:
        return RunFull(TOO_LONG)
    return reply if reply > 0 else Fenced("the run is no longer this producer's")
