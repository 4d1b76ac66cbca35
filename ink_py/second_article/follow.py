"""A reader of a run's log: the events after the id a client has, then the live ones — beyond §二 and §七.

The article's browser reads its answer once, on the connection that started it. Here any
request for the run reads its log (runs.py): the one that started it, EventSource reconnecting
with ``Last-Event-ID``, a reloaded page (``after=``), a second tab. ``follow`` yields each event
once, in order, up to the terminal one (``done``/``error``); while nothing comes it yields
``None`` (a keep-alive), tells the log a reader is here, and takes over a producer whose lease
ran out (its worker was killed): a last ``error`` event, never a hang. What the log cannot give
is one ``error`` event without an id: expired or never run (``GONE``), trimmed or evicted, store
lost (why goes to ``report``, the server's log: a client never sees the store's address).

    >>> from .runs import MemoryRuns
    >>> runs, key = MemoryRuns(), ("session-1", "run-0001")
    >>> token = runs.claim(key)
    >>> runs.append(key, token, "text", {"text": "一"}), runs.append(key, token, "done", {}, last=True)
    (1, 2)
    >>> list(follow(runs, key, 1, keep_alive=2.0))
    [(2, 'done', {})]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..terminal import terminal_safe
from .runs import GONE, TERMINAL, RunKey, RunLog, StoreError

WATCH_SECONDS = 0.25  # the longest one read waits: then the reader looks at the browser and the producer
SEEN_SECONDS = 1.0  # how often a reader tells the log it is here (at most)
Item = tuple[int | None, str, dict[str, Any]] | None  # an event (its id, None for the reader's own), or a keep-alive
DEAD_PRODUCER = (
    "the worker answering this question stopped (killed, or cut off from the store): the answer is cut short"
)
TRIMMED = "this answer is too long to replay from that point: its beginning is no longer available"
LOST = "the relay lost its run store; the answer is incomplete"


def to_stderr(line: str) -> None:
    print(f"ink-py serve: {terminal_safe(line)}", file=sys.stderr)


def follow(
    log: RunLog,
    key: RunKey,
    after: int,
    keep_alive: float,
    disconnected: Callable[[], bool] = lambda: False,
    report: Callable[[str], None] = to_stderr,
) -> Iterator[Item]:
    """The events of run ``key`` with ids above ``after``, as they come, then the end."""
    wait = min(WATCH_SECONDS, keep_alive, log.grace / 3)
    seen_every = min(SEEN_SECONDS, log.grace / 3)  # the reader is seen well within the grace
    quiet_since = seen_at = time.monotonic()
    looked_again = False  # an ended run's missing events were looked for twice: they are gone
    while True:
        try:
            batch = log.read(key, after, wait)
            if time.monotonic() - seen_at >= seen_every:
                log.seen(key)
                seen_at = time.monotonic()
            if not batch.events and batch.stale:
                log.take_over(key, DEAD_PRODUCER)  # the next read finds its error event
                continue
        except StoreError as err:
            report(f"a reader of run {key[1]}: {err}")
            yield None, "error", {"message": LOST}
            return
        if batch.events and batch.events[0][0] != after + 1:
            yield None, "error", {"message": TRIMMED}  # the events after ``after`` were trimmed
            return
        for event in batch.events:
            yield event
            after = event[0]
            if event[1] in TERMINAL:
                return
        if batch.events:
            quiet_since, looked_again = time.monotonic(), False
            continue
        if batch.state == "ended" and after < batch.last:
            if looked_again:  # its log lost them (an evicting Redis): say so rather than loop
                yield None, "error", {"message": TRIMMED}
                return
            looked_again = True
            continue  # it ended between the read and the look at its state: read the end
        if batch.state != "running":  # expired meanwhile ("ended": it had the end already)
            if batch.state == "unknown":
                yield None, "error", {"message": GONE}
            return
        if disconnected():
            return  # the browser hung up; the run goes on for the grace
        if time.monotonic() - quiet_since >= keep_alive:
            quiet_since = time.monotonic()
            yield None
