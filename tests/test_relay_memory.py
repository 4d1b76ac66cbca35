"""Memory pressure (issue 33, item 2): no client's flood can end another's answer, and a log is bounded in bytes.

A real ``redis-server`` with a small ``maxmemory`` and the documented ``noeviction`` policy
(tests/redis_servers.py; skipped, saying why, without it). What the design stands on, checked
against Redis itself: over ``maxmemory`` Redis 7 refuses a new run's script whole — nothing of
it written, a 503 with ``Retry-After`` — while what keeps an admitted run going (append, beat,
presence, stop, take-over, the conversation's release) still writes. Above the high-water mark
a new run gets the same 503 before Redis is full. Then the issue's scene over HTTP: one client
floods two hosts from its own address, beyond its quotas, until Redis is full, while three
others read their answers throughout — every one of those completes. A Redis that evicts keys
gets one ``warning:`` at start. And an answer past ``INK_MAX_RUN_BYTES`` ends with one ``error``
event, its end always logged — in memory and in Redis alike.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from ink_py.course.checks.helpers import text_reply
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.second_article import redis_quotas
from ink_py.second_article.guards import BadRequest
from ink_py.second_article.quotas import DEFAULTS, Quotas
from ink_py.second_article.relay import RelayServer, make_relay_server
from ink_py.second_article.runs import TOO_LONG, MemoryRuns, event_bytes, stored

from .addresses import NEEDS_LOOPBACKS, loopback, session_from
from .raw_servers import SSE_HEAD, RawServer, sse_server
from .redis_servers import NEEDS_REDIS, RedisServer, events_of, model_switch, read_events

needs_redis = pytest.mark.skipif(NEEDS_REDIS is not None, reason=NEEDS_REDIS or "")
needs_loopbacks = pytest.mark.skipif(NEEDS_LOOPBACKS is not None, reason=NEEDS_LOOPBACKS or "")
WAIT_SECONDS = 30.0  # an upper bound on any one wait, never a speed check
FULL_REDIS = ("--maxmemory", "8mb", "--maxmemory-policy", "noeviction")  # as docs/relay-wsgi.md says, small


def stores_on(server: RedisServer, quotas: Quotas = DEFAULTS) -> tuple[Any, Any]:
    from ink_py.second_article.redis_client import connect_redis
    from ink_py.second_article.stores import redis_stores

    return redis_stores(connect_redis(server.url), 600, 10.0, quotas)


def fill(server: RedisServer, share: float) -> None:
    """Junk until Redis's used memory is over ``share`` of its maxmemory (written past it if need be)."""
    client = server.client()
    most = int(client.info("memory")["maxmemory"])
    number = 0
    while int(client.info("memory")["used_memory"]) <= share * most:
        client.eval("#!lua flags=allow-oom\nredis.call('SET', KEYS[1], string.rep('x', 100000))", 1, f"junk:{number}")
        number += 1


def refusal(call: Any) -> BadRequest:
    with pytest.raises(BadRequest) as refused:
        call()
    return refused.value


@pytest.fixture
def full_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis", *FULL_REDIS)
    yield server
    server.kill()


# ── what Redis does over maxmemory, and what the scripts ask of it ──────────────────────


@needs_redis
def test_over_maxmemory_a_new_run_is_refused_whole_and_a_running_one_writes_on(
    full_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_quotas, "HIGH_WATER", 100.0)  # past the gauge: Redis itself must refuse
    conversations, runs = stores_on(full_redis)
    running, held = ("session-1", "run-running"), conversations.hold("session-1", "10.0.0.1")
    assert runs.claim(running, "10.0.0.1") == 1
    runs.append(running, 1, "text", {"text": "一"})
    fill(full_redis, 1.05)  # over maxmemory: Redis answers OOM to what may not go beyond

    before = sorted(full_redis.client().keys("ink:*"))
    for start in (lambda: runs.claim(("session-2", "run-new"), "10.0.0.2"), lambda: conversations.hold("session-3")):
        refused = refusal(start)
        assert (refused.status, refused.retry_after) == (503, 30) and "store is full" in str(refused)
    assert sorted(full_redis.client().keys("ink:*")) == before  # refused whole: not one key more

    runs.seen(running)  # a reader is here
    assert [beat.fenced for beat in runs.beat([(running, 1)])] == [False]  # the lease renewed
    assert runs.stop(running, "stopped (chat/stop)") == "running"
    runs.append(running, 1, "text", {"text": "二"})
    runs.append(running, 1, "done", {"stopReason": "aborted"}, last=True)  # waits for Redis: written
    conversations.release("session-1", [*held, {"role": "user", "content": "你好"}])
    other = stores_on(full_redis)[1]  # another host reads it from Redis
    assert [event[1:] for event in other.read(running, 0, 0).events] == [
        ("text", {"text": "一"}),
        ("text", {"text": "二"}),
        ("done", {"stopReason": "aborted"}),
    ]
    kept = full_redis.client().hget("ink:conv:{session-1}", "h")
    assert json.loads(kept) == [{"role": "user", "content": "你好"}]  # the turn was kept (a next one: 503)
    runs.close()


@needs_redis
def test_above_the_high_water_mark_new_runs_get_503_until_memory_frees(full_redis: RedisServer) -> None:
    runs = stores_on(full_redis)[1]
    fill(full_redis, redis_quotas.HIGH_WATER + 0.05)  # above the mark, under maxmemory: Redis would still take it
    refused = refusal(lambda: runs.claim(("session-1", "run-1"), "10.0.0.1"))
    assert (refused.status, refused.retry_after) == (503, 30)
    full_redis.client().delete(*full_redis.client().keys("junk:*"))  # answers expire: memory frees
    deadline = time.monotonic() + WAIT_SECONDS
    while True:  # INFO memory is read again within a second
        try:
            assert runs.claim(("session-1", "run-1"), "10.0.0.1") == 1
            break
        except BadRequest:
            assert time.monotonic() < deadline, "the gauge never read memory again"
            time.sleep(0.05)
    runs.close()


@needs_redis
@pytest.mark.parametrize(("policy", "warned"), [("allkeys-lru", True), ("volatile-ttl", True), ("noeviction", False)])
def test_a_redis_that_evicts_keys_gets_one_warning_at_start(
    tmp_path: Path, policy: str, warned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    from ink_py.second_article.stores import open_stores

    server = RedisServer(tmp_path / "redis", "--maxmemory", "64mb", "--maxmemory-policy", policy)
    try:
        store, runs = open_stores(server.url, {})
        runs.close()
    finally:
        server.kill()
    lines = capsys.readouterr().err.splitlines()
    assert lines == ([f"warning: Redis evicts keys when it is full (maxmemory-policy {policy}): a flood of "
                      "questions could then end other clients' answers; set --maxmemory-policy noeviction "
                      "(docs/relay-wsgi.md)"] if warned else [])  # fmt: skip


# ── the scene: one client floods two hosts until Redis is full ──────────────────


@needs_redis
@needs_loopbacks
def test_a_flood_from_one_client_ends_no_one_elses_answer(full_redis: RedisServer, tmp_path: Path) -> None:
    quotas = Quotas(runs_per_client=4)
    full = threading.Event()  # the flood has been refused for memory: the victims' models may finish

    def until_redis_is_full(conn: Any, model: RawServer) -> None:  # the victims' model: text until then
        model.read_request(conn)
        conn.sendall(SSE_HEAD)
        deadline = time.monotonic() + WAIT_SECONDS
        while not full.is_set() and time.monotonic() < deadline:
            conn.sendall(text_reply("一").split(b"\n\n")[0] + b"\n\n")
            full.wait(0.05)
        conn.sendall(text_reply("完。"))

    with sse_server(text_reply("字" * 60_000)) as flood_answer, RawServer(until_redis_is_full) as paced:
        model = model_switch({b"[flood]": flood_answer.port}, paced.port)  # 180 KB a flood run
        hosts = [relay_on(model.base_url, tmp_path, quotas, *stores_on(full_redis, quotas)) for _ in range(2)]
        try:
            statuses, victims, peak = flood_while_others_read(hosts, full_redis, full)
        finally:
            for relay in hosts:
                relay.close()
            model.stop()
    assert statuses[503] >= 5 and statuses[429] > 0  # refused beyond its runs, then beyond Redis's memory
    assert set(statuses) <= {200, 429, 503} and peak > redis_quotas.HIGH_WATER * 8 * 1024 * 1024
    for events in victims:  # read throughout, every one whole, though Redis was full meanwhile
        assert [event["id"] for event in events] == list(range(1, len(events) + 1))
        assert events[-1]["event"] == "done" and events[-1]["data"]["stopReason"] == "completed", events[-1]
        assert "".join(e["data"]["text"] for e in events if e["event"] == "text").endswith("一完。")


def relay_on(base_url: str, workspace: Path, quotas: Quotas, store: Any = None, run_log: Any = None) -> RelayServer:
    return make_relay_server(
        provider_factory=lambda: OpenAICompletionsProvider(base_url), model="m", workspace=workspace,
        store=store, run_log=run_log, quotas=quotas,
    ).start()  # fmt: skip


def flood_while_others_read(
    hosts: list[RelayServer], redis: RedisServer, full: threading.Event
) -> tuple[Counter[int], list[list[dict[str, Any]]], int]:
    """Three victims ask on both hosts; once each is streaming, the flooder's eight threads ask as fast
    as they can until the victims are done (``full`` set once five were refused for memory). The
    flood's statuses, the victims' events, Redis's peak memory while they read."""
    statuses: Counter[int] = Counter()
    victims: list[list[dict[str, Any]]] = [[] for _ in range(3)]
    go, done = threading.Event(), threading.Event()
    streaming = threading.Barrier(3, action=go.set)  # all three victims have text: the flood begins

    def victim(number: int) -> None:
        client, relay = session_from(loopback(2 + number)), hosts[number % 2]
        params = {"query": "讲个故事", "session": str(uuid.uuid4()), "run": str(uuid.uuid4())}
        response = client.get(f"{relay.url}chat/stream", params=params, stream=True, timeout=60)
        received = b""
        pieces = response.iter_content(chunk_size=None)
        while b"event: text" not in received:
            received += next(pieces)
        streaming.wait(WAIT_SECONDS)
        victims[number] = events_of(received + b"".join(pieces))

    def flooder(number: int) -> None:
        client = session_from(loopback(1))  # one address: one client, however many connections
        go.wait(WAIT_SECONDS)
        while not done.is_set():
            relay = hosts[number % 2]
            response = client.get(f"{relay.url}chat/stream", params={"query": f"[flood] {uuid.uuid4()}"}, timeout=60)
            statuses[response.status_code] += 1
            if statuses[503] >= 5:
                full.set()

    readers = [threading.Thread(target=victim, args=(n,)) for n in range(3)]
    floods = [threading.Thread(target=flooder, args=(n,)) for n in range(8)]
    for thread in [*readers, *floods]:
        thread.start()
    peak = 0
    while any(thread.is_alive() for thread in readers):
        peak = max(peak, int(redis.client().info("memory")["used_memory"]))
        time.sleep(0.05)
    done.set()
    for thread in floods:
        thread.join(WAIT_SECONDS)
    return statuses, victims, peak


# ── a log bounded in bytes ──────────────────────────────────────────────────────────────


@pytest.mark.parametrize("kind", ["memory", pytest.param("redis", marks=needs_redis)])
def test_an_answer_past_ink_max_run_bytes_ends_with_one_error_event_logged_whole(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    quotas = Quotas(run_bytes=64 * 1024)
    if kind == "redis":
        server = RedisServer(tmp_path / "redis")
        request.addfinalizer(server.kill)
        store, run_log = stores_on(server, quotas)
    else:
        store, run_log = None, MemoryRuns(quotas=quotas)

    def many_pieces(conn: Any) -> None:
        for _ in range(100):  # 100 pieces of 3 KB: 300 KB of answer
            conn.sendall(text_reply("长" * 1000).split(b"\n\n")[0] + b"\n\n")
        conn.sendall(b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n')

    with sse_server(many_pieces) as model:
        relay = relay_on(model.base_url, tmp_path, quotas, store, run_log)
        try:
            run = str(uuid.uuid4())
            response = requests.get(f"{relay.url}chat/stream", params={"query": "长", "run": run}, timeout=30)
            events = events_of(response.content)
            again = requests.get(f"{relay.url}chat/stream", params={"run": run, "after": 0}, timeout=30)
        finally:
            relay.close()
    assert [event["id"] for event in events] == list(range(1, len(events) + 1))  # the end is logged: it has an id
    assert events[-1] == {"id": len(events), "event": "error", "data": {"message": TOO_LONG}}
    text = "".join(event["data"]["text"] for event in events if event["event"] == "text")
    assert 50_000 < len(text.encode()) <= 64 * 1024 and set(text) == {"长"}  # all it could hold, then nothing
    assert read_events(again) == events  # and so does every later reader


ODD = ["\ud800", "\udfff", '"', "\\", "\n", "\x00", "\u2028", "字"]  # lone surrogates, what JSON escapes


@given(text=st.text(alphabet=st.one_of(st.characters(), st.sampled_from(ODD)), max_size=50))
def test_a_text_events_size_is_counted_as_redis_counts_its_json(text: str) -> None:
    """The fast count of memory's appends equals the bytes Redis is sent (controls, quotes, lone surrogates)."""
    assert event_bytes("text", {"text": text}) == len("text") + len(stored({"text": text}))
