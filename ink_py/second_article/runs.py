"""Every answer kept as a log of numbered events — beyond the second article, its closing plan ("支持断线重连").

A run is one question's agent loop, named by ``(session, run id)``: ``RunKey``. Its events go
to a log, numbered 1, 2, 3 …; one producer writes it (``claim`` gives it a fencing token that
``append`` checks), any number of readers follow it (``read`` after an id, waiting for more):
the request that started it, a browser that reconnected with ``Last-Event-ID``, a second tab.
The producer's ``beat`` renews its lease and says whether it was asked to stop (``stop``) or
no reader came (``seen``) within the grace; a reader that finds the lease run out ends the
run for it (``take_over``). A log expires ``ttl`` seconds after its last write and keeps at
most ``MAX_RUN_EVENTS``; beyond its ``Quotas`` (quotas.py) a claim is refused (429: the client
has as many runs going as it may) and an append past ``run_bytes`` raises ``RunFull``.
``MemoryRuns`` keeps runs in this process; ``RedisRuns`` (redis_runs.py) in Redis, for several
workers and hosts.

    >>> runs, key = MemoryRuns(), ("session-1", "run-0001")
    >>> token = runs.claim(key)
    >>> runs.append(key, token, "text", {"text": "你好"}), runs.read(key, 0, 0).events
    (1, [(1, 'text', {'text': '你好'})])
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from json.encoder import encode_basestring  # json.dumps's own (C) for a string with ensure_ascii=False
from typing import Any, Protocol

from .guards import BadRequest
from .quotas import BUSY_RETRY_SECONDS, DEFAULTS, Quotas, fair_victim

RunKey = tuple[str, str]  # (session id, or NO_SESSION; run id)
LoggedEvent = tuple[int, str, dict[str, Any]]  # (id, SSE event name, data)
NO_SESSION = "-"  # the session part of a run started without &session= (no real id is this short)
TERMINAL = ("done", "error")  # a run's last event is one of these
RUN_TTL_SECONDS = 600  # INK_RUN_TTL: a log is kept this long after its last write (its end)
RESUME_GRACE_SECONDS = 10.0  # INK_RESUME_GRACE: a run with no reader for this long is aborted
LEASE_SECONDS = 5.0  # a producer whose last beat is older is taken as dead
MAX_RUN_EVENTS = 10_000  # a log keeps its newest events; a resume from before them gets GONE
BATCH = 500  # most events one read returns
RUNS_IN_MEMORY = 1000  # MemoryRuns forgets finished runs beyond this many (of the client holding most)
GONE = "this answer is no longer available (it ended more than INK_RUN_TTL seconds ago, or never ran here)"
TOO_LONG = "this answer grew past INK_MAX_RUN_BYTES: it was stopped there"


class StoreError(Exception):
    """The run store failed (Redis unreachable, a damaged entry); the message is safe to show."""


class Fenced(Exception):
    """The run is no longer this producer's: a reader took it over, or it expired."""


class RunFull(Exception):
    """The run's log holds ``run_bytes`` (INK_MAX_RUN_BYTES): it takes nothing now but an ``error`` to end it."""


def stored(data: dict[str, Any]) -> bytes:
    """An event's data as a log keeps it: JSON, a lone surrogate as its JSON escape."""
    return json.dumps(data, ensure_ascii=False).encode("utf-8", "backslashreplace")


def event_bytes(name: str, data: dict[str, Any]) -> int:
    """What one event adds to a log's size (INK_MAX_RUN_BYTES): its name and ``stored(data)``, as Redis
    counts them; a text event's without encoding it whole (most events are: it keeps appends cheap).

    >>> event_bytes("text", {"text": "读\\n"}) == len("text") + len(stored({"text": "读\\n"}))
    True
    """
    text = data.get("text")
    if len(data) == 1 and isinstance(text, str):
        return len(name) + len('{"text": }') + len(encode_basestring(text).encode("utf-8", "backslashreplace"))
    return len(name) + len(stored(data))


def too_busy(running: int) -> BadRequest:
    """The 429 for a client with as many runs going as INK_MAX_RUNS_PER_CLIENT allows."""
    message = f"this address has {running} answers running (INK_MAX_RUNS_PER_CLIENT): wait for one to end"
    return BadRequest(429, message, retry_after=BUSY_RETRY_SECONDS)


@dataclass
class Batch:
    """What one ``read`` found: events after the id asked for, and — when there were none — the run's state."""

    events: list[LoggedEvent]
    state: str = "running"  # "running", "ended" or "unknown" (expired, or never started)
    last: int = 0  # the newest event's id (0: none yet)
    stale: bool = False  # running, but its producer has not beaten for LEASE_SECONDS


@dataclass
class Beat:
    """What a producer learns from renewing its lease."""

    fenced: bool = False  # the run is no longer its own: stop writing
    stop: str | None = None  # someone asked it to stop (chat/stop): why
    readers_gone: bool = False  # no reader has been seen for the grace


class RunLog(Protocol):
    """Where runs' events live: one producer writes, any number of readers follow."""

    grace: float  # INK_RESUME_GRACE

    def claim(self, key: RunKey, client: str = "") -> int | None:
        """Start run ``key`` for ``client``: its producer's fencing token, or None if it exists (join it
        instead). BadRequest: 429 beyond the client's runs, 503 when the store is full."""
        ...

    def append(self, key: RunKey, token: int, name: str, data: dict[str, Any], last: bool = False) -> int | None:
        """Write one event (``last``: the terminal one); its id, if known at once (Redis: queued, in order).
        Fenced if the token lost the run, RunFull past ``run_bytes`` (then only an ``error`` may end it),
        StoreError if the store failed (for an earlier event, perhaps)."""
        ...

    def read(self, key: RunKey, after: int, wait: float) -> Batch:
        """Events with ids above ``after``, waiting up to ``wait`` seconds for the first."""
        ...

    def status(self, key: RunKey) -> Batch:
        """The run's state and newest id, no events."""
        ...

    def seen(self, key: RunKey) -> None:
        """A reader is following: the grace starts again."""
        ...

    def beat(self, owned: list[tuple[RunKey, int]]) -> list[Beat]:
        """Renew the leases of the runs this process produces (with their tokens), one Beat each."""
        ...

    def stop(self, key: RunKey, reason: str) -> str:
        """Ask the run's producer to stop; the state it was in ("running", "ended", "unknown")."""
        ...

    def take_over(self, key: RunKey, message: str) -> None:
        """If the run's lease ran out, end it with an ``error`` event saying ``message``."""
        ...

    def forget(self, key: RunKey, token: int) -> None:
        """Drop a run claimed but never started (its session was busy)."""
        ...

    def close(self) -> None: ...


# ── in this process's memory ────────────────────────────────────────────────────────────


@dataclass
class _Run:
    changed: threading.Condition  # readers of this run wait here (on the store's one lock)
    client: str = ""
    events: deque[LoggedEvent] = field(default_factory=lambda: deque(maxlen=MAX_RUN_EVENTS))
    token: int = 1
    last: int = 0
    ended: bool = False
    size: int = 0  # bytes of its events as stored, all it ever had
    full: bool = False  # it reached run_bytes: nothing more goes in but the error that ends it
    stop: str | None = None
    written: float = field(default_factory=time.monotonic)  # last write or beat: expiry counts from here
    beat: float = field(default_factory=time.monotonic)
    seen: float = field(default_factory=time.monotonic)


class MemoryRuns:
    """Runs in this process (``ink-py serve``, one worker): the same promises as Redis, one process only."""

    def __init__(
        self, ttl: float = RUN_TTL_SECONDS, grace: float = RESUME_GRACE_SECONDS, quotas: Quotas = DEFAULTS
    ) -> None:
        self.ttl, self.grace, self.quotas = ttl, grace, quotas
        self._runs: dict[RunKey, _Run] = {}  # oldest first
        self._lock = threading.Lock()

    def claim(self, key: RunKey, client: str = "") -> int | None:
        with self._lock:
            self._expire()
            if key in self._runs:
                return None
            mine = [(other, run) for other, run in self._runs.items() if run.client == client]
            running = sum(not run.ended for _, run in mine)
            if running >= self.quotas.runs_per_client:
                raise too_busy(running)
            finished = [other for other, run in mine if run.ended]
            if len(finished) >= self.quotas.answers_per_client:  # beyond §七: its own oldest answer goes
                del self._runs[finished[0]]
            self._runs[key] = _Run(threading.Condition(self._lock), client)
            return 1

    def append(self, key: RunKey, token: int, name: str, data: dict[str, Any], last: bool = False) -> int:
        size = event_bytes(name, data)
        with self._lock:
            run = self._runs.get(key)
            if run is None or run.token != token or run.ended:
                raise Fenced(f"run {key[1]} is no longer this producer's")
            if run.full and not (last and name == "error"):  # beyond §七: a full log ends only with an error
                raise RunFull(TOO_LONG)
            if not last and run.size + size > self.quotas.run_bytes:
                run.full = True  # what follows would splice the answer: nothing more but the error that ends it
                raise RunFull(TOO_LONG)
            run.size += size
            return self._write(run, name, data, last)

    def read(self, key: RunKey, after: int, wait: float) -> Batch:
        with self._lock:
            run = self._alive(key)
            if run is not None and run.last <= after and not run.ended and wait > 0:
                run.changed.wait(wait)  # woken by the next write to this run only
                run = self._alive(key)
            if run is None:
                return Batch([], "unknown")
            first = run.last - len(run.events) + 1  # the oldest id still kept
            start = max(after + 1 - first, 0)
            events = [run.events[i] for i in range(start, min(start + BATCH, len(run.events)))]
            stale = time.monotonic() - run.beat > LEASE_SECONDS
            return Batch(events, "ended" if run.ended else "running", run.last, stale and not run.ended)

    def status(self, key: RunKey) -> Batch:
        return self.read(key, 1 << 62, 0)

    def seen(self, key: RunKey) -> None:
        with self._lock:
            if key in self._runs:
                self._runs[key].seen = time.monotonic()

    def beat(self, owned: list[tuple[RunKey, int]]) -> list[Beat]:
        now, beats = time.monotonic(), []
        with self._lock:
            for key, token in owned:
                run = self._runs.get(key)
                if run is None or run.token != token or run.ended:
                    beats.append(Beat(fenced=True))
                    continue
                run.beat = run.written = now
                beats.append(Beat(stop=run.stop, readers_gone=now - run.seen > self.grace))
        return beats

    def stop(self, key: RunKey, reason: str) -> str:
        with self._lock:
            run = self._alive(key)
            if run is None:
                return "unknown"
            if not run.ended:
                run.stop = reason
            return "ended" if run.ended else "running"

    def take_over(self, key: RunKey, message: str) -> None:
        with self._lock:
            run = self._runs.get(key)
            if run is not None and not run.ended and time.monotonic() - run.beat > LEASE_SECONDS:
                run.token += 1  # the old producer's appends now raise Fenced
                self._write(run, "error", {"message": message}, True)

    def forget(self, key: RunKey, token: int) -> None:
        with self._lock:
            if key in self._runs and self._runs[key].token == token:
                del self._runs[key]

    def close(self) -> None:
        pass

    def _write(self, run: _Run, name: str, data: dict[str, Any], last: bool) -> int:
        run.last += 1
        run.events.append((run.last, name, data))
        run.ended, run.written = last, time.monotonic()
        run.changed.notify_all()
        return run.last

    def _alive(self, key: RunKey) -> _Run | None:
        """The run, unless its TTL has passed (then it is forgotten now: a resume must not find it)."""
        run = self._runs.get(key)
        if run is not None and time.monotonic() - run.written > self.ttl:
            del self._runs[key]
            return None
        return run

    def _expire(self) -> None:
        """Forget runs past their TTL and, beyond RUNS_IN_MEMORY, finished ones of the client holding most."""
        now = time.monotonic()
        for key in [key for key, run in self._runs.items() if now - run.written > self.ttl]:
            del self._runs[key]
        while len(self._runs) >= RUNS_IN_MEMORY:
            victim = fair_victim((key, run.client) for key, run in self._runs.items() if run.ended)
            if victim is None:
                return
            del self._runs[victim]
