"""Conversations in Redis — the second article's closing plan: "生产环境需将会话状态存入 Redis".

The promises of ``SqliteConversations`` (sessions.py), for several machines. ``hold`` is
``SET ink:lock:{S} <owner> NX PX`` — 409 when another run holds it — renewed while the run
lasts (``Leases``); then the history from the hash ``ink:conv:{S}``: its size first (413
without loading it), then each message's shape (500 for a damaged one). ``release`` writes it
back and frees the lock in one script, unless another process took the session over. A
conversation expires ``CONVERSATION_TTL_SECONDS`` after its last use (no count bound: set
Redis's ``maxmemory``). The braces are a hash tag: a session's keys share one cluster slot.

    >>> conversation_keys("session-1")
    ('ink:conv:{session-1}', 'ink:lock:{session-1}')
"""

from __future__ import annotations

import json
from typing import Any

from ..arguments import encodable_text
from ..core.messages import AgentMessage
from . import sessions
from .guards import BadRequest
from .redis_client import redis_errors, store_trouble
from .sessions import BUSY, TOO_LONG, Leases, checked_history, json_chars

CONVERSATION_TTL_SECONDS = 24 * 3600  # a conversation unused this long is forgotten
RELEASE = """
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'h', ARGV[2], 'c', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if holder then redis.call('DEL', KEYS[2]) end
return 1
"""
UNLOCK = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"


def conversation_keys(session: str) -> tuple[str, str]:
    """The history's hash and the lock of a session (its id is letters, digits, - and _: no braces)."""
    return f"ink:conv:{{{session}}}", f"ink:lock:{{{session}}}"


class RedisConversations:
    """Conversations in Redis, shared by every worker on every host."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._release, self._unlock, self._renew_one = map(client.register_script, (RELEASE, UNLOCK, RENEW))
        self._leases = Leases(self._renew)

    def hold(self, session: str) -> list[AgentMessage]:
        owner = self._leases.owner()
        conversation, lock = conversation_keys(session)
        try:
            if not self.client.set(lock, owner, nx=True, px=int(sessions.LEASE_SECONDS * 1000)):
                raise BadRequest(409, BUSY)
            with self.client.pipeline(transaction=False) as pipe:
                chars, size, _ = (
                    pipe.hget(conversation, "c")
                    .hstrlen(conversation, "h")
                    .expire(conversation, CONVERSATION_TTL_SECONDS)
                    .execute()
                )
            try:
                if int(chars or 0) > sessions.MAX_SESSION_CHARS or int(size) > sessions.MAX_STORED_CHARS:
                    raise BadRequest(413, TOO_LONG)
                stored = self.client.hget(conversation, "h")
                history = [] if stored is None else checked_history(stored.decode("utf-8", "replace"))
            except BaseException:
                self._unlock(keys=[lock], args=[owner])  # refused: not left held
                raise
        except (ValueError, TypeError):
            raise BadRequest(500, "this conversation's stored size is damaged: start a new one (新对话)") from None
        except redis_errors() as err:
            raise BadRequest(503, f"the conversation store is unavailable: {store_trouble(err)}") from None
        self._leases.add(session)
        return history

    def release(self, session: str, history: list[AgentMessage]) -> None:
        """Keep ``history``, unless another process took the session over (our lock ran out)."""
        self._leases.discard(session)
        text = encodable_text(json.dumps(history, ensure_ascii=False))  # a lone surrogate as U+FFFD, as /save
        args = [self._leases.owner(), text, json_chars(history), CONVERSATION_TTL_SECONDS]
        self._release(keys=list(conversation_keys(session)), args=args)

    def close(self) -> None:
        self._leases.close()

    def _renew(self, owner: str, held: list[str]) -> None:
        with self.client.pipeline(transaction=False) as pipe:
            for session in held:
                lock = conversation_keys(session)[1]
                self._renew_one(keys=[lock], args=[owner, int(sessions.LEASE_SECONDS * 1000)], client=pipe)
            pipe.execute()
