"""One round trip for many events: the Redis run log's writer thread, and the copy local readers follow.

Written one by one, each event of each run costs its producer a round trip to Redis and its
reader another (XREAD): a few hundred streams at once, and a process spends its time switching
threads, not streaming (benchmarks/results/relay_load.md). So a producer's ``put`` only queues
the event; one thread per process, the writer, sends all that is queued, for every run, in one
pipeline (``send``), then copies what Redis accepted into ``local`` — a MemoryRuns of the runs
produced here — which this process's readers follow without a round trip. Only what Redis
accepted is copied, so a reader here and one on another host see the same events, the same ids;
a copy lives while its run does: once the end is in, readers here too read Redis, so an answer
Redis no longer has (expired, evicted) is gone for every host alike. A failure sticks to its run: the
run's next ``put`` raises it (Fenced, StoreError: its copy is dropped, readers go to Redis;
RunFull: only an ``error`` may end that run), and the last event waits for Redis's answer.

    >>> writer = Writer(lambda batch: list(range(1, len(batch) + 1)))
    >>> writer.start_run(("session-1", "run-0001"))
    >>> writer.put(("session-1", "run-0001"), 1, "text", {"text": "一"}, last=False)
    >>> writer.local.read(("session-1", "run-0001"), 0, 1.0).events
    [(1, 'text', {'text': '一'})]
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.abort import start_thread
from .quotas import UNLIMITED
from .runs import Fenced, MemoryRuns, RunFull, RunKey, StoreError

MAX_QUEUED = 5000  # events waiting for the writer; then producers wait (backpressure)
MAX_BATCH = 1000  # most events in one pipeline
LAST_WAIT_SECONDS = 10.0  # how long a run's last event waits for Redis's answer
FAILED_KEPT = 1000  # runs whose failure is remembered for their next put


@dataclass
class Queued:
    """One event waiting for the writer."""

    key: RunKey
    token: int
    name: str
    data: dict[str, Any]
    last: bool
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None  # once done: its id, or the exception it met


Send = Callable[[list[Queued]], list[Any]]  # one pipeline → per event: its id, or the exception it met


class Writer:
    """The writer thread of one process, and ``local``: the runs it writes, as Redis accepted them."""

    def __init__(self, send: Send) -> None:
        self.local = MemoryRuns(quotas=UNLIMITED)  # the runs produced here, while they run: Redis counts quotas
        self._send = send
        self._queue: list[Queued] = []
        self._failed: OrderedDict[RunKey, Exception] = OrderedDict()
        self._changed = threading.Condition()
        self._pid = -1  # the process the thread runs in (a forked worker starts its own)
        self._closed = False

    def start_run(self, key: RunKey) -> None:
        """A run claimed here: readers here follow its copy."""
        with self._changed:
            self._failed.pop(key, None)
        self.local.claim(key)

    def put(self, key: RunKey, token: int, name: str, data: dict[str, Any], last: bool) -> None:
        """Queue one event; raise the failure an earlier one met. The last waits for its answer."""
        item = Queued(key, token, name, data, last)
        with self._changed:
            self._raise_failure(key, last)
            while len(self._queue) >= MAX_QUEUED and not self._closed:
                self._changed.wait(0.1)  # Redis is slower than the producers: they wait
            self._queue.append(item)
            self._changed.notify_all()
            if self._pid != os.getpid():
                self._pid = os.getpid()
                start_thread(threading.Thread(target=self._write, name="ink-redis-writer", daemon=True))
        if last:
            if not item.done.wait(LAST_WAIT_SECONDS):
                raise StoreError("Redis did not answer in time")
            with self._changed:
                if isinstance(item.result, Exception):
                    raise item.result  # RunFull too: a log that is full ends only with an error
                self._raise_failure(key, last)

    def close(self) -> None:
        """Write what is queued (a bounded while), then stop the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            pending = list(self._queue)
        for item in pending:
            item.done.wait(LAST_WAIT_SECONDS)

    def _raise_failure(self, key: RunKey, last: bool) -> None:
        failure = self._failed.get(key)
        if failure is not None and not (last and isinstance(failure, RunFull)):  # Redis says whether the end fits
            raise failure

    def _write(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._closed:
                    self._changed.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                self._changed.notify_all()  # room for waiting producers
            try:
                results = self._send(batch)
            except StoreError as err:
                results = [err] * len(batch)
            for item, result in zip(batch, results, strict=True):
                self._settle(item, result)

    def _settle(self, item: Queued, result: Any) -> None:
        with self._changed:
            before = self._failed.get(item.key)
            if isinstance(result, Exception) and (before is None or isinstance(before, RunFull)):
                self._failed[item.key] = result
                while len(self._failed) > FAILED_KEPT:
                    self._failed.popitem(last=False)
        if isinstance(before, (Fenced, StoreError)) or isinstance(result, RunFull):
            pass  # settled already, or not written (a full log): the copy stays as Redis has it
        elif isinstance(result, (Fenced, StoreError)):
            self.local.forget(item.key, 1)  # readers here go to Redis, which has the run's end
        elif self.local.status(item.key).state == "running":
            if self.local.append(item.key, 1, item.name, item.data, item.last) != result or item.last:
                self.local.forget(item.key, 1)  # ended (or out of step, which it cannot be): Redis from now on
        item.result = result
        item.done.set()
