"""A run's one producer: the agent loop on its own thread, its events written to the run's log (runs.py).

The article's ``from(stream)`` lives as long as its subscriber: the browser goes, the
generation stops. Here the run outlives its reader — beyond §二, for the article's closing
plan (断线重连): a browser that reconnects within ``INK_RESUME_GRACE`` finds it still going.
``Producers`` starts each run (``start``) and keeps one thread per process, the keeper,
that renews every run's lease each ``BEAT_SECONDS`` and aborts a run — the model request
closed, seed 004's point about wasted tokens — when it was asked to stop (``chat/stop``),
when no reader came back within the grace, when its lease was taken over, or when the
store is lost. ``events_within_bounds`` keeps what one logged event holds bounded; a run whose
log reaches INK_MAX_RUN_BYTES is aborted and ends with one ``error`` event saying so.

    >>> [len(data["text"]) for _, data in events_within_bounds("text", {"text": "字" * 600_000})]
    [262144, 262144, 75712]
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..core.abort import AbortController, start_thread
from ..terminal import terminal_safe
from .runs import LEASE_SECONDS, TOO_LONG, Fenced, RunFull, RunKey, RunLog, StoreError

BEAT_SECONDS = 0.5  # the keeper renews leases and looks for stop requests this often
STOP_WAIT_SECONDS = 10.0  # how long close() waits for aborted runs to write their last event
MAX_LOGGED_CHARS = 256 * 1024  # one logged event's text at most; longer text goes as several events
STOPPED = "stopped (chat/stop)"
NO_READER = "no one came back for the answer (INK_RESUME_GRACE)"
TAKEN_OVER = "this worker lost its lease on the run"
SHUTTING_DOWN = "the server is shutting down"
LOST_STORE = "the relay lost its run store"  # what readers are told; why goes to the server's stderr
Event = tuple[str, Any]
Send = Callable[[str, Any], None]
Work = Callable[[Send], Event]  # runs the agent, sending its events; returns the last one (done or error)


def events_within_bounds(name: str, data: dict[str, Any]) -> Iterator[Event]:
    """One event as the log keeps it: long text in pieces, oversized arguments left out."""
    if name in ("text", "thinking") and len(data["text"]) > MAX_LOGGED_CHARS:
        text = data["text"]
        for start in range(0, len(text), MAX_LOGGED_CHARS):
            yield name, {"text": text[start : start + MAX_LOGGED_CHARS]}
    elif name == "tool_start" and len(shown := json.dumps(data["args"], ensure_ascii=False)) > MAX_LOGGED_CHARS:
        yield name, {**data, "args": {"(not shown)": f"{len(shown)} characters of arguments"}}
    else:
        yield name, data


class Producers:
    """The runs this process produces, and the keeper thread that watches over them."""

    def __init__(self, log: RunLog) -> None:
        self.log = log
        self._owned: dict[RunKey, tuple[int, AbortController, threading.Thread]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._keeper_pid = -1  # the process the keeper runs in (a forked worker starts its own)

    def start(self, key: RunKey, token: int, controller: AbortController, work: Work) -> None:
        """Run ``work`` on a thread of its own; its events go to ``key``'s log under ``token``."""
        thread = threading.Thread(target=self._produce, args=(key, token, controller, work), name="ink-relay-run")
        thread.daemon = True
        with self._lock:
            self._owned[key] = (token, controller, thread)
            if self._keeper_pid != os.getpid():
                self._keeper_pid = os.getpid()
                start_thread(threading.Thread(target=self._keep, name="ink-relay-keeper", daemon=True))
        start_thread(thread)  # Ctrl-C must reach the main thread, never this one

    def close(self, reason: str = SHUTTING_DOWN) -> None:
        """Abort every run and wait (a bounded while) for each to write its last event."""
        with self._lock:
            owned = list(self._owned.values())
        for _, controller, _ in owned:
            controller.abort(reason)
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        for _, _, thread in owned:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        self._closed.set()

    def _produce(self, key: RunKey, token: int, controller: AbortController, work: Work) -> None:
        lost: list[str] = []  # why the log stopped taking this run's events, if it did

        def send(name: str, data: Any) -> None:
            for piece in events_within_bounds(name, data):
                if not lost:
                    lost.extend(self._append(key, token, controller, piece, last=False))

        try:
            last = work(send)
        except Exception as err:  # a bug in ink_py: one line on stderr, the stream still ends
            print(f"ink-py serve: internal error ({terminal_safe(repr(err))})", file=sys.stderr)
            last = ("error", {"message": f"internal error ({type(err).__name__})"})
        finally:
            with self._lock:
                self._owned.pop(key, None)
        if not lost:
            lost = self._append(key, token, controller, last, last=True)
        if lost == [TOO_LONG]:  # beyond §七: the log is full (perhaps found only now), but an error end fits
            self._append(key, token, controller, ("error", {"message": TOO_LONG}), last=True)

    def _append(self, key: RunKey, token: int, controller: AbortController, event: Event, last: bool) -> list[str]:
        """Write one event; on failure abort the run and return why (empty: written)."""
        try:
            self.log.append(key, token, *event, last=last)
            return []
        except Fenced:
            why = TAKEN_OVER
        except RunFull:
            why = TOO_LONG
        except StoreError as err:
            why = LOST_STORE
            print(f"ink-py serve: run {key[1]}: {LOST_STORE}: {terminal_safe(str(err))}", file=sys.stderr)
        controller.abort(why)  # no one could read what it writes: close the model request
        if last and why != TOO_LONG:
            print(f"ink-py serve: run {key[1]} could not write its end: {terminal_safe(why)}", file=sys.stderr)
        return [why]

    def _keep(self) -> None:
        """The keeper: every BEAT_SECONDS, renew each run's lease and abort those that must stop."""
        renewed = time.monotonic()
        while not self._closed.wait(BEAT_SECONDS):
            with self._lock:
                owned = [(key, token, controller) for key, (token, controller, _) in self._owned.items()]
            if not owned:
                renewed = time.monotonic()
                continue
            try:
                beats = self.log.beat([(key, token) for key, token, _ in owned])
            except StoreError as err:
                if time.monotonic() - renewed > LEASE_SECONDS:  # readers will take the runs over: stop first
                    print(f"ink-py serve: {LOST_STORE}: {terminal_safe(str(err))}", file=sys.stderr)
                    for _, _, controller in owned:
                        controller.abort(LOST_STORE)
                continue
            renewed = time.monotonic()
            for (_, _, controller), beat in zip(owned, beats, strict=True):
                if beat.fenced:
                    controller.abort(TAKEN_OVER)
                elif beat.stop is not None:
                    controller.abort(beat.stop)
                elif beat.readers_gone:
                    controller.abort(NO_READER)
