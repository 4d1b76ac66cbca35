"""AbortController / AbortSignal — the web API Ink's TypeScript gets for free, in Python.

Article 4.2: "用户取消" must stop receiving, produce no ``message_end``, and stop the
loop. In TypeScript, ``controller.abort()`` makes the pending ``reader.read()`` reject
and ``request.signal.aborted`` turn true. Python has neither, so this module gives:

    controller = AbortController()
    signal = controller.signal
    signal.aborted            # False
    controller.abort()        # from any thread, e.g. a Ctrl-C handler
    signal.aborted            # True; every listener has been called once

Listeners are how an abort reaches a blocked network read: the provider registers
one that shuts the response's socket, so the read returns and the generator ends
(``abort_safe`` then swallows the resulting error). ``signal.wait(seconds)`` is a
sleep that an abort cuts short, used between HTTP retries.

Differences from the web API: ``add_listener``/``remove_listener`` instead of
``addEventListener("abort", …)``; a listener added after the abort runs at once
(so there is no window where an abort is missed); listeners run in the aborting
thread, and one that raises does not stop the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

Listener = Callable[[], Any]


class AbortSignal:
    """Read-only view of an abort: ``aborted``, ``reason``, listeners and ``wait``."""

    def __init__(self) -> None:
        self._event = threading.Event()  # set once, never cleared
        self._lock = threading.Lock()  # guards _listeners against the aborting thread
        self._listeners: list[Listener] = []
        self.reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener()`` once when the signal aborts (at once if it already has)."""
        with self._lock:
            if not self._event.is_set():
                self._listeners.append(listener)
                return
        _call_quietly(listener)  # already aborted: run it now, outside the lock

    def remove_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True early (and at once) if aborted."""
        return self._event.wait(seconds)

    def _abort(self, reason: str | None) -> None:
        with self._lock:
            if self._event.is_set():
                return  # abort is idempotent: listeners run once
            self.reason = reason
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


def _call_quietly(listener: Listener) -> None:
    try:
        listener()
    except Exception:  # a listener's failure must not stop the abort (e.g. socket already closed)
        pass
