"""The relay's conversation stores (second_article/sessions.py): in memory, in a SQLite file, in Redis.

All keep the same promises, in one table of cases: a session continues its history; one
run at a time (409); a conversation too long to continue gets 413; memory and SQLite keep at
most SESSIONS_KEPT, the least recently used forgotten first (Redis: an expiry instead). The
Redis store (redis_conversations.py, a real ``redis-server`` started here; skipped, saying why,
where it or redis-py is absent) also: a damaged entry is one line, its keys expire, and a worker
that died holding a session frees it after the lease. The SQLite store also: every process sees every
conversation (two relays on one file continue each other's), two processes never hold one
session at once, a worker that died holding one frees it after the lease, a damaged or
hostile file is refused with one line, and any text (a lone surrogate too) survives.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ink_py.arguments import UsageError
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.scripted.server import start_model_server
from ink_py.second_article import sessions
from ink_py.second_article.guards import BadRequest
from ink_py.second_article.relay import make_relay_server
from ink_py.second_article.sessions import Conversations, SessionStore, SqliteConversations, open_store

from .redis_servers import NEEDS_REDIS, RedisServer, module_redis
from .test_relay import README, README_QUESTION, ask_in, named, streamed_text, wait_until

HELLO = {"role": "user", "content": "你好"}
needs_redis = pytest.mark.skipif(NEEDS_REDIS is not None, reason=NEEDS_REDIS or "")


redis_server = module_redis()


def redis_store(server: RedisServer) -> SessionStore:
    from ink_py.second_article.redis_client import connect_redis
    from ink_py.second_article.stores import redis_stores

    return redis_stores(connect_redis(server.url), 600, 10.0)[0]


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=needs_redis)])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], SessionStore]:
    """A new store of any kind; for SQLite and Redis, each call opens the same store (as another worker would)."""
    if request.param == "memory":
        store = Conversations()
        return lambda: store
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        server.client().flushdb()
        return lambda: redis_store(server)
    return lambda: SqliteConversations(tmp_path / "conversations.db")


def refusal(call: Callable[[], Any]) -> tuple[int, str]:
    with pytest.raises(BadRequest) as caught:
        call()
    return caught.value.status, str(caught.value)


def test_a_session_continues_its_history_one_run_at_a_time(make_store) -> None:
    store = make_store()
    history = store.hold("session-1")
    assert history == []
    assert refusal(lambda: make_store().hold("session-1"))[0] == 409  # still answering
    history.append(HELLO)
    store.release("session-1", history)
    assert make_store().hold("session-1") == [HELLO]  # the next question, in any worker


def test_a_conversation_too_long_to_continue_gets_413(make_store, monkeypatch) -> None:
    store = make_store()
    store.release("session-1", [HELLO] * 10)
    monkeypatch.setattr(sessions, "MAX_SESSION_CHARS", 100)
    status, message = refusal(lambda: store.hold("session-1"))
    assert status == 413 and "新对话" in message
    assert refusal(lambda: store.hold("session-1"))[0] == 413  # and it is not left held


def test_the_least_recently_used_are_forgotten_first(make_store, monkeypatch, request) -> None:
    if "redis" in request.node.callspec.id:
        return  # Redis bounds conversations by their expiry: test_redis_conversations_expire
    monkeypatch.setattr(sessions, "SESSIONS_KEPT", 2)
    store = make_store()
    for name in ("session-a1", "session-b2"):
        store.release(name, store.hold(name) + [HELLO])
    store.release("session-a1", store.hold("session-a1"))  # a1 is used again: b2 is now the oldest
    store.release("session-c3", store.hold("session-c3") + [HELLO])
    assert store.hold("session-a1") == [HELLO]
    assert store.hold("session-b2") == []  # forgotten


def test_a_session_held_by_a_run_is_never_the_one_forgotten(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sessions, "SESSIONS_KEPT", 1)
    store = SqliteConversations(tmp_path / "c.db")
    busy = store.hold("session-busy")
    store.release("session-new", [HELLO])
    store.release("session-busy", busy + [HELLO])
    assert store.hold("session-busy") == [HELLO]


def hold_in_a_child(path: str, session: str, release: bool, results: Any) -> None:
    store = SqliteConversations(path)
    try:
        history = store.hold(session)
        results.put("held")
        if release:
            store.release(session, history + [HELLO])
    except BadRequest as bad:
        results.put(bad.status)


def test_two_processes_never_hold_one_session_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    SqliteConversations(path)  # the file and its table
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    children = [context.Process(target=hold_in_a_child, args=(path, "session-x", False, results)) for _ in range(6)]
    for child in children:
        child.start()
    for child in children:
        child.join(30)
    outcomes = sorted(str(results.get(timeout=10)) for _ in children)
    assert outcomes == ["409"] * 5 + ["held"]


def test_a_worker_that_died_holding_a_session_frees_it_after_the_lease(tmp_path: Path, monkeypatch) -> None:
    path = str(tmp_path / "c.db")
    SqliteConversations(path).release("session-x", [HELLO])
    with sqlite3.connect(path) as db:  # as a worker that was killed mid-run leaves it
        db.execute("UPDATE conversations SET owner = 'dead-worker', lease = 0 WHERE id = 'session-x'")
    assert SqliteConversations(path).hold("session-x") == [HELLO]  # its lease ran out: free again


def test_a_held_session_stays_held_while_its_process_lives(tmp_path: Path, monkeypatch) -> None:
    def lease() -> float:
        with sqlite3.connect(tmp_path / "c.db") as db:
            return db.execute("SELECT lease FROM conversations WHERE id = 'session-x'").fetchone()[0]

    monkeypatch.setattr(sessions, "LEASE_SECONDS", 0.3)  # renewed every 0.1 s
    store = SqliteConversations(tmp_path / "c.db")
    store.hold("session-x")
    first = lease()
    wait_until(lambda: lease() > first + 0.6, "the lease renewed two leases after the first ran out")
    # Whether a stranger is refused must not depend on the renewer being scheduled within 0.3 s on a busy
    # machine: a lease that now outlasts the check (the renewer reads LEASE_SECONDS at each round).
    monkeypatch.setattr(sessions, "LEASE_SECONDS", 60.0)
    wait_until(lambda: lease() > time.time() + 30, "a renewal with the longer lease")
    assert refusal(lambda: SqliteConversations(tmp_path / "c.db").hold("session-x"))[0] == 409
    store.close()


@pytest.mark.parametrize(
    ("stored", "status", "words"),
    [
        ("not json", 500, "damaged (not a JSON list)"),
        ('{"role": "user"}', 500, "damaged (not a JSON list)"),
        ('[{"role": "system", "content": "x"}]', 500, "damaged (role must be user, assistant or toolResult)"),
        ("[" * 100_000, 500, "damaged"),  # nested past the recursion limit
        ("[]" + " " * (sessions.MAX_STORED_CHARS + 1), 413, "too long"),  # never loaded at all
    ],
)
def test_a_damaged_or_hostile_row_is_refused_with_one_line(
    tmp_path: Path, stored: str, status: int, words: str
) -> None:
    path = tmp_path / "c.db"
    SqliteConversations(path).release("session-x", [])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE conversations SET history = ? WHERE id = 'session-x'", (stored,))
    got, message = refusal(lambda: SqliteConversations(path).hold("session-x"))
    assert (got, words in message) == (status, True), message
    assert SqliteConversations(path).hold("session-other") == []  # the rest of the store still works


def test_any_text_survives_the_round_trip_a_lone_surrogate_as_the_replacement_character(tmp_path: Path) -> None:
    store = SqliteConversations(tmp_path / "c.db")
    odd = [{"role": "user", "content": "\ud800 lone surrogate, \x00 NUL, 🙂, \u202e bidi"}]
    store.release("session-x", odd)
    assert store.hold("session-x") == [{"role": "user", "content": "\ufffd lone surrogate, \x00 NUL, 🙂, \u202e bidi"}]


@pytest.mark.parametrize("contents", [b"not a database at all, just text", None])
def test_a_file_that_is_not_a_store_is_one_error(tmp_path: Path, contents: bytes | None) -> None:
    path = tmp_path / "c.db"
    if contents is None:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE conversations (id TEXT)")  # someone else's table of that name
    else:
        path.write_bytes(contents)
    with pytest.raises(UsageError, match=r"^INK_SESSION_DB=.*c\.db: .*\(give a new file, or one ink-py made\)$"):
        open_store(str(path))
    assert isinstance(open_store(None), Conversations) and isinstance(open_store(""), Conversations)


def test_two_relays_on_one_file_continue_each_others_conversations(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    with start_model_server(port=0, delay=0) as model:
        relays = [  # two ink-py serve processes, as it were, sharing INK_SESSION_DB
            make_relay_server(
                provider_factory=lambda: OpenAICompletionsProvider(model.base_url),
                model="m",
                workspace=tmp_path,
                store=SqliteConversations(tmp_path / "conversations.db"),
            ).start()
            for _ in range(2)
        ]
        try:
            assert named(ask_in(relays[0], README_QUESTION, "session-shared"), "tool_start")
            follow_up = ask_in(relays[1], "它的标题是什么?", "session-shared")
        finally:
            for relay in relays:
                relay.close()
    assert "没有再读一次" in streamed_text(follow_up) and named(follow_up, "done")[0]["messages"] == 6


# ── Redis ───────────────────────────────────────────────────────────────────────────────


@needs_redis
def test_redis_conversations_expire_and_a_dead_workers_lock_frees_itself(redis_server: RedisServer) -> None:
    from ink_py.second_article.redis_conversations import CONVERSATION_TTL_SECONDS, conversation_key

    client, key = redis_server.client(), conversation_key("session-x")
    client.flushdb()
    store = redis_store(redis_server)
    store.release("session-x", store.hold("session-x") + [HELLO])
    ttls = {name: ttl for name, ttl in redis_server.keys_and_ttls().items() if not name.startswith("ink:new:")}
    assert list(ttls) == [key] and 0 < ttls[key] <= CONVERSATION_TTL_SECONDS * 1000  # its one key expires
    assert sorted(client.hkeys(key)) == [b"c", b"h"]  # the hold ended with the release: no lock field left
    seconds, micros = client.time()
    client.hset(key, mapping={"owner": "dead-worker", "lease": seconds * 1000 + micros // 1000 + 600})
    assert refusal(lambda: store.hold("session-x"))[0] == 409  # a killed worker's hold, for 0.6 s more
    deadline = time.monotonic() + 10
    while (held := hold_or_status(store, "session-x")) == 409 and time.monotonic() < deadline:
        time.sleep(0.05)  # its lease runs out: nobody renews it
    assert held == [HELLO]
    assert all(ttl > 0 for ttl in redis_server.keys_and_ttls().values())  # every key expires


def hold_or_status(store: SessionStore, session: str) -> Any:
    try:
        return store.hold(session)
    except BadRequest as refused:
        return refused.status


@needs_redis
@pytest.mark.parametrize(
    ("fields", "status", "words"),
    [
        ({"h": "not json", "c": "8"}, 500, "damaged (not a JSON list)"),
        ({"h": '[{"role": "system", "content": "x"}]', "c": "3"}, 500, "damaged (role must be"),
        ({"h": "[]", "c": "many"}, 500, "stored size is damaged"),
        ({"h": "[]", "c": str(10**9)}, 413, "too long"),  # never loaded at all
    ],
)
def test_a_damaged_redis_entry_is_refused_with_one_line(
    redis_server: RedisServer, fields: dict[str, str], status: int, words: str
) -> None:
    from ink_py.second_article.redis_conversations import conversation_key

    redis_server.client().flushdb()
    redis_server.client().hset(conversation_key("session-x"), mapping=fields)
    store = redis_store(redis_server)
    got, message = refusal(lambda: store.hold("session-x"))
    assert (got, words in message) == (status, True), message
    assert redis_server.client().hget(conversation_key("session-x"), "owner") is None  # not left held
    assert store.hold("session-other") == []


@needs_redis
def test_an_unreachable_redis_is_a_503_not_a_traceback(tmp_path: Path) -> None:
    doomed = RedisServer(tmp_path / "redis")
    store = redis_store(doomed)
    doomed.kill()  # Redis goes away after the relay started
    status, message = refusal(lambda: store.hold("session-x"))
    assert status == 503 and message == "the conversation store is unavailable"  # not Redis's address
