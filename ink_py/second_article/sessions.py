"""The conversations ``ink-py serve`` keeps, one per page session — beyond the second article, bounded.

The page sends a session id with each question (``&session=ID``; 新对话 makes a new one);
the run continues that session's history, appending to it in place, and the next question
sees it. ``Conversations`` is the store: a history per session id, the least recently
used forgotten first once ``SESSIONS_KEPT`` are kept, a conversation longer than
``MAX_SESSION_CHARS`` (as JSON) closed to further questions, one question at a time each.
A stream without a session gets a history of its own, forgotten afterwards.

    >>> store = Conversations()
    >>> with store.hold("session-1") as history:
    ...     history.append({"role": "user", "content": "你好", "timestamp": 0})
    >>> with store.hold("session-1") as history:   # the next question continues it
    ...     len(history)
    1
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from ..core.messages import AgentMessage
from .guards import BadRequest

SESSIONS_KEPT = 100  # conversations remembered; the least recently used is forgotten first
MAX_SESSION_CHARS = 2_000_000  # a conversation this long (as JSON) takes no further questions


class Conversations:
    """Session id → its history, most recently used last; a session with a run in flight is busy."""

    def __init__(self) -> None:
        self.histories: OrderedDict[str, list[AgentMessage]] = OrderedDict()  # session id → its history
        self._busy: set[str] = set()  # sessions with a run in flight
        self._lock = threading.Lock()  # one thread per browser connection: they all come here

    @contextmanager
    def hold(self, session: str | None) -> Iterator[list[AgentMessage]]:
        """The history a run continues (appended in place), held for this run alone; BadRequest if busy.

        No session: a history of its own, forgotten afterwards (one question per stream, as before).

        >>> store = Conversations()
        >>> with store.hold("session-1"):
        ...     try:
        ...         with store.hold("session-1"):
        ...             pass
        ...     except BadRequest as bad:
        ...         print(bad.status, bad)
        409 this conversation is still answering its previous question
        """
        if session is None:
            yield []
            return
        with self._lock:
            if session in self._busy:
                raise BadRequest(409, "this conversation is still answering its previous question")
            history = self.histories.pop(session, [])
            if len(json.dumps(history, ensure_ascii=False)) > MAX_SESSION_CHARS:
                self.histories[session] = history
                raise BadRequest(413, "this conversation is too long to continue: start a new one (新对话)")
            self.histories[session] = history  # most recently used last
            while len(self.histories) > SESSIONS_KEPT:
                self.histories.popitem(last=False)
            self._busy.add(session)
        try:
            yield history
        finally:
            self.release(session)

    def release(self, session: str | None) -> None:
        """The session's run is over: it may take its next question (before the stream's last byte goes)."""
        with self._lock:
            self._busy.discard(session or "")
