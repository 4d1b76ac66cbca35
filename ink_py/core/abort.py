"""AbortController / AbortSignal — the web API Ink's TypeScript gets for free (article §4.2).

A user's cancel must stop receiving, produce no ``message_end`` and stop the loop. In
TypeScript ``controller.abort()`` rejects the pending ``reader.read()`` and turns
``request.signal.aborted`` true; here listeners do the first (the provider registers one
that shuts the socket) and ``aborted`` is a plain attribute, so ``if signal.aborted:``
reads like ``if (request.signal?.aborted)`` and steps into nothing. ``NEVER_ABORTED``
is the default where no signal is given, as ``?.`` is in TypeScript.

    >>> controller = AbortController()
    >>> controller.signal.aborted, controller.abort(), controller.signal.aborted
    (False, None, True)
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Listener = Callable[[], Any]


class AbortSignal:
    """Read-only view of an abort: ``aborted``, ``reason``, listeners and ``wait``."""

    def __init__(self) -> None:
        self.aborted = False  # set once, by the controller, never cleared
        self.reason: str | None = None
        self._event = threading.Event()  # for wait(): set together with aborted
        self._lock = threading.Lock()  # guards _listeners against the aborting thread
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener()`` once when the signal aborts (at once if it already has)."""
        with self._lock:
            if not self.aborted:
                self._listeners.append(listener)
                return
        _call_quietly(listener)  # beyond the web API: added after the abort, it runs now

    def remove_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True early (and at once) if aborted."""
        return self._event.wait(seconds)

    def _abort(self, reason: str | None) -> None:
        with self._lock:
            if self.aborted:
                return  # abort is idempotent: listeners run once
            self.reason = reason
            self.aborted = True
            self._event.set()
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            _call_quietly(listener)

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self.aborted})"


class AbortController:
    """Owns a signal and can abort it: ``AbortController().abort()``."""

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: str | None = "aborted") -> None:
        self.signal._abort(reason)


class _NeverAborted(AbortSignal):
    """No controller owns it, so it never aborts and need not keep listeners."""

    def add_listener(self, listener: Listener) -> None:
        pass


NEVER_ABORTED: AbortSignal = _NeverAborted()


def _call_quietly(listener: Listener) -> None:
    try:
        listener()
    except Exception:  # a listener's failure must not stop the abort (e.g. socket already closed)
        pass


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread meanwhile; threads started inside inherit the block.

    Beyond Ink, which has one thread: a Ctrl-C delivered to a helper thread sets Python's
    flag but wakes nobody, and the main thread, blocked in a wait, would sleep on. Blocked
    in every helper, the signal always lands on the main thread, where the handler runs.
    A Ctrl-C pressed meanwhile waits, and is raised as the block ends: after the work inside.
    """
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no per-thread masks
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # the mask as it is, nothing changed
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # a Ctrl-C raised here is restored from too
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start_thread(thread: threading.Thread) -> None:
    """Start a helper ``thread`` that Ctrl-C never lands on (see sigint_blocked)."""
    with sigint_blocked():
        thread.start()
