"""The conversations the relay keeps, one per page session — beyond the second article, bounded.

The page sends a session id with each question (``&session=ID``; 新对话 makes a new one);
the run continues that session's history and the next question sees it. A store is
``SessionStore``, two calls: ``hold`` (the history, held for one run: 409 while another
run holds it, 413 once it is longer than ``MAX_SESSION_CHARS`` as JSON, 429 for a client
starting more new ones a minute than its ``Quotas`` allow) and ``release`` (the history as the
run left it). At most ``SESSIONS_KEPT`` are kept, the least recently used forgotten first (in
memory: of the client holding most, and at most ``conversations_per_client`` each).
``Conversations`` keeps them in this process's memory (``ink-py serve``'s default);
``SqliteConversations`` in a SQLite file (``INK_SESSION_DB=FILE``), so that every worker
process of a server sees every conversation; ``RedisConversations`` (redis_conversations.py)
in Redis, for several machines.

    >>> store = Conversations()
    >>> history = store.hold("session-1")
    >>> history.append({"role": "user", "content": "你好"})
    >>> store.release("session-1", history)
    >>> store.hold("session-1")   # the next question continues it
    [{'role': 'user', 'content': '你好'}]
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Protocol

from ..arguments import UsageError, encodable_text
from ..chat import message_problem
from ..core.abort import start_thread
from ..core.messages import AgentMessage
from .guards import BadRequest
from .quotas import DEFAULTS, Quotas, Window, fair_victim

SESSIONS_KEPT = 100  # conversations remembered; the least recently used is forgotten first
MAX_SESSION_CHARS = 2_000_000  # a conversation this long (as JSON) takes no further questions
BUSY = "this conversation is still answering its previous question"
TOO_LONG = "this conversation is too long to continue: start a new one (新对话)"
UNAVAILABLE = "the conversation store is unavailable"  # what a client is told; the server's log has why
UNAVAILABLE_RETRY_SECONDS = 5


def json_chars(history: list[AgentMessage]) -> int:
    """A conversation's size as MAX_SESSION_CHARS counts it: characters of its JSON."""
    return len(json.dumps(history, ensure_ascii=False))


class SessionStore(Protocol):
    """Where conversations live between questions (one per session id)."""

    def hold(self, session: str, client: str = "") -> list[AgentMessage]:
        """The history a run continues, held for it alone; BadRequest (409 busy, 413 too long, 429 for a
        ``client`` starting too many new conversations, 503)."""
        ...

    def release(self, session: str, history: list[AgentMessage]) -> None:
        """The run is over: keep ``history`` as the session's, and let its next question in."""
        ...

    def close(self) -> None: ...


class Conversations:
    """In memory: session id → its history, most recently used last; one process only.

    >>> store = Conversations()
    >>> _ = store.hold("session-1")
    >>> try:
    ...     store.hold("session-1")
    ... except BadRequest as bad:
    ...     print(bad.status, bad)
    409 this conversation is still answering its previous question
    """

    def __init__(self, quotas: Quotas = DEFAULTS) -> None:
        self.histories: OrderedDict[str, list[AgentMessage]] = OrderedDict()  # session id → its history
        self.quotas, self.new = quotas, Window(quotas.new_sessions_per_minute, "INK_MAX_NEW_SESSIONS_PER_MINUTE")
        self._clients: dict[str, str] = {}  # session id → the client that started it
        self._busy: set[str] = set()  # sessions with a run in flight
        self._lock = threading.Lock()  # one thread per browser connection: they all come here

    def hold(self, session: str, client: str = "") -> list[AgentMessage]:
        with self._lock:
            if session in self._busy:
                raise BadRequest(409, BUSY)
            history = self.histories.pop(session, None)
            if history is None:  # beyond §七: a new conversation counts against its client
                self.new.admit(client)
                mine = [other for other in self.histories if self._clients.get(other) == client]  # oldest first
                idle = [other for other in mine if other not in self._busy]
                if len(mine) >= self.quotas.conversations_per_client and idle:
                    self._forget(idle[0])  # its own least recently used, never another client's
                history, self._clients[session] = [], client
            self.histories[session] = history  # most recently used last
            if json_chars(history) > MAX_SESSION_CHARS:
                raise BadRequest(413, TOO_LONG)
            self._forget_beyond_bound()
            self._busy.add(session)
        return history  # the run appends to it in place

    def release(self, session: str, history: list[AgentMessage]) -> None:
        with self._lock:
            self._busy.discard(session)
            self.histories[session] = history  # back, even if it was forgotten meanwhile
            self.histories.move_to_end(session)
            self._clients.setdefault(session, "")
            self._forget_beyond_bound()

    def close(self) -> None:
        pass

    def _forget_beyond_bound(self) -> None:
        """Beyond SESSIONS_KEPT: the least recently used of the client holding most (never one a run holds)."""
        while len(self.histories) > SESSIONS_KEPT:
            idle = (
                (session, self._clients.get(session, "")) for session in self.histories if session not in self._busy
            )
            victim = fair_victim(idle)
            if victim is None:
                return
            self._forget(victim)

    def _forget(self, session: str) -> None:
        self.histories.pop(session, None)
        self._clients.pop(session, None)


# ── in a SQLite file: every worker process sees every conversation ──────────────────────

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id      TEXT PRIMARY KEY,
    history TEXT NOT NULL,     -- the messages as JSON (ASCII: any text survives)
    chars   INTEGER NOT NULL,  -- json_chars(history), for the 413 without loading it
    used    INTEGER NOT NULL,  -- order of last use across all processes: higher is more recent
    owner   TEXT,              -- the process whose run holds it, or NULL
    lease   REAL               -- that hold counts until this time (renewed while the process lives)
)
"""
LEASE_SECONDS = 30.0  # a worker that died holding a conversation frees it after this
DB_TIMEOUT_SECONDS = 10.0  # how long one call waits for another process's write to finish
MAX_STORED_CHARS = 6 * MAX_SESSION_CHARS + 1000  # an ASCII JSON text longer than this was not written by us


class Leases:
    """The sessions this process holds, under one owner name, and a thread that renews their
    leases every LEASE_SECONDS / 3 while the process lives (``renew(owner, held)``)."""

    def __init__(self, renew: Callable[[str, list[str]], None]) -> None:
        self.held: set[str] = set()
        self._renew = renew
        self._lock = threading.Lock()
        self._pid = -1  # the process the owner name and the renewer belong to (a fork starts afresh)
        self._owner = ""
        self._stop = threading.Event()

    def owner(self) -> str:
        """This process's owner name; the first call in a process starts its renewer."""
        with self._lock:
            if self._pid != os.getpid():  # first use here, or a forked worker: nothing held yet
                self._pid, self._owner, self.held = os.getpid(), uuid.uuid4().hex, set()
                start_thread(threading.Thread(target=self._run, args=(self._owner,), name="ink-lease", daemon=True))
            return self._owner

    def add(self, session: str) -> None:
        with self._lock:
            self.held.add(session)

    def discard(self, session: str) -> None:
        with self._lock:
            self.held.discard(session)

    def close(self) -> None:
        self._stop.set()

    def _run(self, owner: str) -> None:
        while not self._stop.wait(LEASE_SECONDS / 3):
            with self._lock:
                held = sorted(self.held)
            if held:
                try:
                    self._renew(owner, held)
                except Exception:
                    pass  # busy or unreachable for a moment: the next round tries again


class SqliteConversations:
    """In a SQLite file, for servers with several worker processes (``gunicorn -w 4``).

    Each call opens its own connection (safe across threads and forks) and changes the
    file in one ``BEGIN IMMEDIATE`` transaction, so two workers never hand one conversation
    to two runs. A hold is a lease that this process renews while it lives: a crashed
    worker's conversations are free again after ``LEASE_SECONDS``. New conversations a minute
    are counted per worker process.
    """

    def __init__(self, path: str | os.PathLike[str], quotas: Quotas = DEFAULTS) -> None:
        self.path = os.fspath(path)
        self.new = Window(quotas.new_sessions_per_minute, "INK_MAX_NEW_SESSIONS_PER_MINUTE")
        self._leases = Leases(self._renew)
        try:
            with closing(sqlite3.connect(self.path, timeout=DB_TIMEOUT_SECONDS, isolation_level=None)) as db:
                db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
                db.execute(SCHEMA)
                db.execute("SELECT id, history, chars, used, owner, lease FROM conversations LIMIT 0")
        except sqlite3.Error as err:
            raise UsageError(f"INK_SESSION_DB={self.path}: {err} (give a new file, or one ink-py made)") from None

    def hold(self, session: str, client: str = "") -> list[AgentMessage]:
        owner = self._leases.owner()
        now = time.time()
        try:
            with self._writing() as db:
                row = db.execute(
                    "SELECT owner, lease, chars, length(history) FROM conversations WHERE id = ?", (session,)
                ).fetchone()
                if row is not None and row[0] is not None and row[1] > now:
                    raise BadRequest(409, BUSY)
                if row is None:
                    self.new.admit(client)  # 429: rolled back
                too_long = row is not None and (row[2] > MAX_SESSION_CHARS or row[3] > MAX_STORED_CHARS)
                history = [] if row is None or too_long else stored_history(db, session)
                db.execute(
                    "INSERT INTO conversations (id, history, chars, used, owner, lease) VALUES (?, '[]', 2, ?, ?, ?) "
                    "ON CONFLICT (id) DO UPDATE SET used = excluded.used, owner = excluded.owner, "
                    "lease = excluded.lease",
                    (session, next_use(db), None if too_long else owner, None if too_long else now + LEASE_SECONDS),
                )
                forget_beyond_bound(db, now)
        except sqlite3.Error as err:
            raise BadRequest(503, UNAVAILABLE, retry_after=UNAVAILABLE_RETRY_SECONDS, detail=str(err)) from None
        if too_long:
            raise BadRequest(413, TOO_LONG)  # after the commit: it counts as used, as in memory
        self._leases.add(session)
        return history

    def release(self, session: str, history: list[AgentMessage]) -> None:
        """Keep ``history``, unless another process took the session over (our lease ran out)."""
        self._leases.discard(session)
        text = encodable_text(json.dumps(history, ensure_ascii=False))  # a lone surrogate as U+FFFD, as /save
        with self._writing() as db:
            db.execute(
                "INSERT INTO conversations (id, history, chars, used, owner, lease) VALUES (?, ?, ?, ?, NULL, NULL) "
                "ON CONFLICT (id) DO UPDATE SET history = excluded.history, chars = excluded.chars, "
                "owner = NULL, lease = NULL WHERE owner = ? OR owner IS NULL OR lease <= ?",
                (session, text, json_chars(history), next_use(db), self._leases.owner(), time.time()),
            )
            forget_beyond_bound(db, time.time())

    def close(self) -> None:
        self._leases.close()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own in one write transaction, committed at the end (rolled back on an error)."""
        db = sqlite3.connect(self.path, timeout=DB_TIMEOUT_SECONDS, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
            yield db
            db.execute("COMMIT")
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
            db.close()

    def _renew(self, owner: str, held: list[str]) -> None:
        with self._writing() as db:
            db.execute("UPDATE conversations SET lease = ? WHERE owner = ?", (time.time() + LEASE_SECONDS, owner))


def next_use(db: sqlite3.Connection) -> int:
    """The next number in the order of use, shared by every process (inside the write transaction)."""
    return int(db.execute("SELECT coalesce(max(used), 0) + 1 FROM conversations").fetchone()[0])


def forget_beyond_bound(db: sqlite3.Connection, now: float) -> None:
    """Delete the least recently used conversations beyond SESSIONS_KEPT; never one a run holds."""
    excess = int(db.execute("SELECT count(*) FROM conversations").fetchone()[0]) - SESSIONS_KEPT
    if excess > 0:
        db.execute(
            "DELETE FROM conversations WHERE id IN (SELECT id FROM conversations "
            "WHERE owner IS NULL OR lease <= ? ORDER BY used LIMIT ?)",
            (now, excess),
        )


def stored_history(db: sqlite3.Connection, session: str) -> list[AgentMessage]:
    [text] = db.execute("SELECT history FROM conversations WHERE id = ?", (session,)).fetchone()
    return checked_history(text)


def checked_history(text: str) -> list[AgentMessage]:
    """A stored history, checked as ``--resume`` checks a file: the store may have been edited."""
    try:
        history = json.loads(text)
    except (ValueError, RecursionError, TypeError):
        history = None
    if not isinstance(history, list):
        problem = "not a JSON list"
    else:
        problem = next((wrong for wrong in map(message_problem, history) if wrong), "")
    if problem:
        raise BadRequest(500, f"this conversation's stored history is damaged ({problem}): start a new one (新对话)")
    checked: list[AgentMessage] = history
    return checked


def open_store(path: str | None, quotas: Quotas = DEFAULTS) -> SessionStore:
    """``INK_SESSION_DB``: a SQLite file, or (unset or empty) this process's memory."""
    return SqliteConversations(path, quotas) if path else Conversations(quotas)
