"""Conversations in Redis — the second article's closing plan: "生产环境需将会话状态存入 Redis".

The promises of ``SqliteConversations`` (sessions.py), for several machines, in one hash per
session, ``ink:conv:{S}``: the history (``h``), its size (``c``), and while a run holds it the
holder (``owner``) and the end of its lease (``lease``, Redis's clock) — no short-lived lock key
an evicting Redis would take first. ``hold`` is one script: 409 while another run's lease
lasts, 413 by the size alone (nothing loaded), else the lease and the history; a new session
first passes its client's rate (redis_quotas.py: 429). The lease is renewed while the run lasts
(``Leases``); ``release`` writes the history back and ends the lease in one script, unless
another process took the session over. A conversation expires ``CONVERSATION_TTL_SECONDS``
after its last use (no count bound: Redis's ``maxmemory``). The braces are a hash tag.

    >>> conversation_key("session-1")
    'ink:conv:{session-1}'
"""

from __future__ import annotations

import json
from typing import Any

from ..arguments import encodable_text
from ..core.messages import AgentMessage
from . import sessions
from .guards import BadRequest
from .redis_client import GOING, NEW, NOW, admitting, redis_errors, store_trouble
from .redis_quotas import RedisQuotas
from .runs import StoreError
from .sessions import BUSY, TOO_LONG, UNAVAILABLE, UNAVAILABLE_RETRY_SECONDS, Leases, checked_history, json_chars

CONVERSATION_TTL_SECONDS = 24 * 3600  # a conversation unused this long is forgotten
HOLD = (
    NEW
    + NOW
    + """
if ARGV[5] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then return {2} end
local h = redis.call('HMGET', KEYS[1], 'owner', 'lease', 'c')
if h[1] and (tonumber(h[2]) or 0) > now() then return {0} end
if h[3] and not tonumber(h[3]) then return {-2} end
if (tonumber(h[3]) or 0) > tonumber(ARGV[3]) or redis.call('HSTRLEN', KEYS[1], 'h') > tonumber(ARGV[4]) then
  return {-1}
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'lease', now() + tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[1], ARGV[6])
return {1, redis.call('HGET', KEYS[1], 'h')}
"""
)  # {2}: new, ask its client's rate first (ARGV[5] = 1 then); {0} busy; {-1} too long; {-2} damaged
RELEASE = (
    GOING
    + NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'owner', 'lease')
if h[1] and h[1] ~= ARGV[1] and (tonumber(h[2]) or 0) > now() then return 0 end
redis.call('HSET', KEYS[1], 'h', ARGV[2], 'c', ARGV[3])
redis.call('HDEL', KEYS[1], 'owner', 'lease')
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
"""
)
UNLOCK = (
    GOING + "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('HDEL', KEYS[1], 'owner', 'lease') end"
)
RENEW = (
    GOING
    + NOW
    + "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('HSET', KEYS[1], 'lease', now() + ARGV[2])"
    + " end"
)


def conversation_key(session: str) -> str:
    """A session's hash (its id is letters, digits, - and _: no braces)."""
    return f"ink:conv:{{{session}}}"


class RedisConversations:
    """Conversations in Redis, shared by every worker on every host."""

    def __init__(self, client: Any, quotas: RedisQuotas) -> None:
        self.client, self.quotas = client, quotas
        self._hold, self._release, self._unlock, self._renew_one = map(
            client.register_script, (HOLD, RELEASE, UNLOCK, RENEW)
        )
        self._leases = Leases(self._renew)

    def hold(self, session: str, client: str = "") -> list[AgentMessage]:
        owner = self._leases.owner()
        key = conversation_key(session)
        limits = [int(sessions.LEASE_SECONDS * 1000), sessions.MAX_SESSION_CHARS, sessions.MAX_STORED_CHARS]
        try:
            with admitting():
                reply = self._hold(keys=[key], args=[owner, *limits, 0, CONVERSATION_TTL_SECONDS])
                if reply[0] == 2:  # beyond §七: a new conversation counts against its client (429)
                    self.quotas.admit_session(client)
                    reply = self._hold(keys=[key], args=[owner, *limits, 1, CONVERSATION_TTL_SECONDS])
            refusals = {0: (409, BUSY), -1: (413, TOO_LONG)}
            refusals[-2] = (500, "this conversation's stored size is damaged: start a new one (新对话)")
            if reply[0] in refusals:
                raise BadRequest(*refusals[reply[0]])
            stored = reply[1] if len(reply) > 1 else None
            try:
                history = [] if stored is None else checked_history(stored.decode("utf-8", "replace"))
            except BaseException:
                self._unlock(keys=[key], args=[owner])  # refused: not left held
                raise
        except redis_errors() as err:
            raise BadRequest(503, UNAVAILABLE, UNAVAILABLE_RETRY_SECONDS, store_trouble(err)) from None
        except StoreError as err:  # from the rate's script
            raise BadRequest(503, UNAVAILABLE, UNAVAILABLE_RETRY_SECONDS, str(err)) from None
        self._leases.add(session)
        return history

    def release(self, session: str, history: list[AgentMessage]) -> None:
        """Keep ``history``, unless another process took the session over (our lease ran out)."""
        self._leases.discard(session)
        text = encodable_text(json.dumps(history, ensure_ascii=False))  # a lone surrogate as U+FFFD, as /save
        args = [self._leases.owner(), text, json_chars(history), CONVERSATION_TTL_SECONDS]
        self._release(keys=[conversation_key(session)], args=args)

    def close(self) -> None:
        self._leases.close()

    def _renew(self, owner: str, held: list[str]) -> None:
        with self.client.pipeline(transaction=False) as pipe:
            for session in held:
                args = [owner, int(sessions.LEASE_SECONDS * 1000)]
                self._renew_one(keys=[conversation_key(session)], args=args, client=pipe)
            pipe.execute()
