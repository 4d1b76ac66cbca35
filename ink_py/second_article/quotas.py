"""Per-client quotas — beyond the second article (issue 33): no client can cost another its answer.

A client is its address (ink_py/peers.py). ``Quotas`` holds what each may do — runs at once,
new conversations a minute, readers of one run, and (in memory) conversations and finished
answers kept — and how large one answer's log may grow; stores.py reads them from the
environment, runs.py, sessions.py and redis_quotas.py enforce them. Here: a rate over a sliding
minute (``Window``), the eviction that takes from the client holding most (``fair_victim``),
and the readers of each run in this process (``Readers``). Beyond a rate or a count, a
``BadRequest(429)`` with ``Retry-After``.

    >>> fair_victim([("a1", "alice"), ("m1", "mallory"), ("a2", "alice"), ("m2", "mallory"), ("m3", "mallory")])
    'm1'
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from ..bounded_server import CountedByKey
from .guards import BadRequest

K = TypeVar("K", bound=Hashable)
BUSY_RETRY_SECONDS = 5  # Retry-After when a client has as many runs (or a run as many readers) as it may
MAX_CLIENTS_TRACKED = 100_000  # a Window forgets idle clients beyond this many


@dataclass(frozen=True)
class Quotas:
    """What one client may do (docs/relay-wsgi.md, "Limits and quotas"); the defaults are the documented ones."""

    runs_per_client: int = 8  # INK_MAX_RUNS_PER_CLIENT: answers running at once
    new_sessions_per_minute: int = 20  # INK_MAX_NEW_SESSIONS_PER_MINUTE
    readers_per_run: int = 10  # INK_MAX_READERS_PER_RUN, in each worker process
    conversations_per_client: int = 20  # INK_MAX_CONVERSATIONS_PER_CLIENT, in memory
    answers_per_client: int = 100  # INK_MAX_ANSWERS_PER_CLIENT: finished answers kept in memory
    run_bytes: int = 4 * 1024 * 1024  # INK_MAX_RUN_BYTES: one answer's log, as stored


DEFAULTS = Quotas()
UNLIMITED = Quotas(*[1 << 62] * 6)  # the Redis writer's local copies: Redis has counted already


def fair_victim(entries: Iterable[tuple[K, str]]) -> K | None:
    """The entry to forget when a shared bound is hit: the least recently used of the client
    holding the most. ``entries``: (key, client), least recently used first."""
    listed = list(entries)
    if not listed:
        return None
    most = Counter(client for _, client in listed).most_common(1)[0][0]
    return next(key for key, client in listed if client == most)


class Window:
    """At most ``limit`` events per client in any ``seconds``; ``admit`` counts one or refuses (429).

    >>> window = Window(2, "INK_MAX_NEW_SESSIONS_PER_MINUTE")
    >>> window.admit("10.0.0.1"), window.admit("10.0.0.1"), window.admit("10.0.0.2")
    (None, None, None)
    >>> try:
    ...     window.admit("10.0.0.1")
    ... except BadRequest as bad:
    ...     print(bad.status, bad.retry_after)
    429 60
    """

    def __init__(self, limit: int, setting: str, seconds: float = 60.0) -> None:
        self.limit, self.setting, self.seconds = limit, setting, seconds
        self._times: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def admit(self, client: str) -> None:
        now = time.monotonic()
        with self._lock:
            times = self._times.setdefault(client, deque())
            while times and times[0] <= now - self.seconds:
                times.popleft()
            if len(times) >= self.limit:
                wait = max(1, round(times[0] + self.seconds - now + 0.5))
                raise BadRequest(429, too_many(len(times), self.setting, wait), retry_after=wait)
            times.append(now)
            if len(self._times) > MAX_CLIENTS_TRACKED:  # forget those with nothing in the window
                self._times = {name: kept for name, kept in self._times.items() if kept[-1] > now - self.seconds}


def too_many(count: int, setting: str, wait: int) -> str:
    """The 429's message for a rate: what was counted, the setting, when to come back."""
    return f"too many new conversations from this address ({count} in the last minute, {setting}): retry in {wait} s"


# ── the readers of each run, in this process ────────────────────────────────────────────


class Readers:
    """How many requests follow each run in this process: at most ``limit`` each (429 beyond).

    >>> readers = Readers(1)
    >>> release = readers.enter(("session-1", "run-0001"))
    >>> try:
    ...     readers.enter(("session-1", "run-0001"))
    ... except BadRequest as bad:
    ...     print(bad.status, bad)
    429 this answer already has 1 readers here (INK_MAX_READERS_PER_RUN): close another tab, or try again
    >>> release(); readers.enter(("session-1", "run-0001")) is not None
    True
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._readers = CountedByKey()

    def enter(self, key: Hashable) -> Callable[[], None]:
        """Count one more reader of ``key``, or refuse; the function that counts it out (once)."""
        if not self._readers.enter(key, self.limit):
            message = (
                f"this answer already has {self.limit} readers here (INK_MAX_READERS_PER_RUN): "
                "close another tab, or try again"
            )
            raise BadRequest(429, message, retry_after=BUSY_RETRY_SECONDS)
        left = threading.Lock()  # taken by the first release: a second one counts nothing out

        def release() -> None:
            if left.acquire(blocking=False):
                self._readers.leave(key)

        return release


class Counted(Iterator[Any]):
    """``items`` with ``release`` called once when they end or are closed — even if never started
    (a generator's ``finally`` would not run then; a WSGI server may close a body it never read)."""

    def __init__(self, items: Iterator[Any], release: Callable[[], None]) -> None:
        self.items, self.release = items, release

    def __next__(self) -> Any:
        try:
            return next(self.items)
        except BaseException:
            self.release()
            raise

    def close(self) -> None:
        try:
            close = getattr(self.items, "close", None)
            if close is not None:
                close()
        finally:
            self.release()
