"""Resumable answers (issue 27): a dropped stream picks up exactly where it broke, on any host.

Every test runs twice: on one ``ink-py serve`` relay with everything in its memory, and on two
relays in this process sharing one real ``redis-server`` (started by the test, on a free port)
— two hosts: a stream started on the first is resumed, joined or stopped on the second. Real
HTTP on 127.0.0.1 throughout; the model is the built-in scripted one, paced so that a run lasts
a few seconds. Covers: ``Last-Event-ID`` and ``after=`` give exactly the missing events (no gap,
no duplicate, one run only), a second client joins from the start, 204 after the end, stop from
the other host, a run no one comes back to aborted after the grace, another session's run id is
an unknown run, and hostile resume points (forged, huge, negative, non-ASCII; 1000 resumes; a
resume storm while Redis is slow) — bounded, one clear error each. The Redis half skips, saying
why, where ``redis-server`` or redis-py is absent.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article import runs as runs_module
from ink_py.second_article.follow import TRIMMED
from ink_py.second_article.producer import STOPPED
from ink_py.second_article.quotas import DEFAULTS, Quotas
from ink_py.second_article.relay import RelayServer, make_relay_server
from ink_py.second_article.runs import GONE, MemoryRuns, RunLog
from ink_py.second_article.sessions import Conversations, SessionStore

from .raw_servers import SSE_HEAD, RawServer
from .redis_servers import NEEDS_REDIS, RedisServer, SlowProxy, cut_after, module_redis, read_events, read_until
from .test_relay import README, README_QUESTION

WAIT_SECONDS = 30.0  # an upper bound on any one wait, never a speed check
needs_redis = pytest.mark.skipif(NEEDS_REDIS is not None, reason=NEEDS_REDIS or "")
Stores = Callable[..., tuple[SessionStore, RunLog]]


redis_server = module_redis()


@pytest.fixture(params=["memory", pytest.param("redis", marks=needs_redis)])
def stores(request: pytest.FixtureRequest) -> Stores:
    """``stores(grace=…)`` → (conversations, run log) of one host: in memory, or on the shared Redis."""
    if request.param == "memory":
        shared = (Conversations(), MemoryRuns())

        def in_memory(grace: float = 10.0, url: str | None = None) -> tuple[SessionStore, RunLog]:
            shared[1].grace = grace
            return shared  # one process: both "hosts" are the same relay's stores

        return in_memory
    server: RedisServer = request.getfixturevalue("redis_server")
    server.client().flushdb()
    return lambda grace=10.0, url=None: redis_stores(url or server.url, 600, grace)


def redis_stores(url: str, ttl: int, grace: float, quotas: Quotas = DEFAULTS) -> tuple[SessionStore, RunLog]:
    """Conversations and run logs on the Redis at ``url``: one host's."""
    from ink_py.second_article.redis_client import connect_redis
    from ink_py.second_article.stores import redis_stores as stores_on

    return stores_on(connect_redis(url), ttl, grace, quotas)


def redis_relay(
    url: str, model: ModelServer, workspace: Path, ttl: int = 600, quotas: Quotas = DEFAULTS
) -> RelayServer:
    """A relay (started) on the Redis at ``url``, in front of ``model``: one host."""
    store, run_log = redis_stores(url, ttl, 10.0, quotas)
    return make_relay_server(
        provider_factory=lambda: OpenAICompletionsProvider(model.base_url),
        model="m",
        workspace=workspace,
        store=store,
        run_log=run_log,
        quotas=quotas,
    ).start()


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0.02) as server:  # the README run takes about three seconds
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


@pytest.fixture
def hosts(stores: Stores, workspace: Path) -> Iterator[Callable[..., tuple[RelayServer, RelayServer]]]:
    """``hosts(base_url, grace=…)`` → two relays: two hosts on one Redis, or one relay twice (memory)."""
    started: list[RelayServer] = []

    def start(base_url: str, grace: float = 10.0, url: str | None = None) -> tuple[RelayServer, RelayServer]:
        pair = []
        for _ in range(2):
            store, run_log = stores(grace, url)
            if started and run_log is started[0].app.run_log:
                pair.append(started[0])  # memory: the same relay
                continue
            relay = make_relay_server(
                provider_factory=lambda: OpenAICompletionsProvider(base_url),
                model="m",
                workspace=workspace,
                store=store,
                run_log=run_log,
            )
            started.append(relay.start())
            pair.append(relay)
        return pair[0], pair[1]

    yield start
    for relay in started:
        relay.close()


def stream(relay: RelayServer, **params: Any) -> requests.Response:
    headers = {"Last-Event-ID": str(params.pop("last_event_id"))} if "last_event_id" in params else {}
    response = requests.get(f"{relay.url}chat/stream", params=params, headers=headers, stream=True, timeout=30)
    return response


def new_id() -> str:
    return str(uuid.uuid4())


def shown(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """What a page shows of events: their names and data, in order."""
    return [(event["event"], event["data"]) for event in events]


def uninterrupted(relay: RelayServer) -> list[tuple[str, Any]]:
    """The README question answered from start to end, on a fresh session: what a resumed run must equal."""
    return shown(read_events(stream(relay, query=README_QUESTION, session=new_id(), run=new_id())))


def assert_one_whole_run(events: list[dict[str, Any]], expected: list[tuple[str, Any]]) -> None:
    assert [event["id"] for event in events] == list(range(1, len(expected) + 1))  # no gap, no duplicate
    assert shown(events) == expected


# ── resume, join, the end ───────────────────────────────────────────────────────────────


@pytest.mark.parametrize("how", ["Last-Event-ID", "after"])
def test_a_dropped_stream_resumes_on_the_other_host_exactly_where_it_broke(hosts, model, how: str) -> None:
    first, second = hosts(model.base_url)
    expected = uninterrupted(first)
    asked = len(model.requests)
    session, run = new_id(), new_id()
    before = cut_after(stream(first, query=README_QUESTION, session=session, run=run), 5)  # the network drops
    last = before[-1]["id"]
    resume = {"last_event_id": last} if how == "Last-Event-ID" else {"after": last}
    response = stream(second, query=README_QUESTION, session=session, run=run, **resume)
    assert response.status_code == 200 and response.headers["Ink-Run"] == run
    assert_one_whole_run(before + read_events(response), expected)
    assert len(model.requests) - asked == 2  # one run: its two model requests, never a second run for R


def test_a_second_client_joins_from_the_start_and_both_see_the_whole_answer(hosts, model) -> None:
    first, second = hosts(model.base_url)
    expected = uninterrupted(first)
    session, run = new_id(), new_id()
    starter = stream(first, query=README_QUESTION, session=session, run=run)
    joiner = stream(second, query=README_QUESTION, session=session, run=run)  # the same R, no id: a second tab
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(read_events, [starter, joiner]))
    for events in results:
        assert_one_whole_run(events, expected)
    late = stream(second, session=session, run=run)  # after the end, within the TTL: every event again
    assert_one_whole_run(read_events(late), expected)


def test_after_the_last_event_a_resume_gets_204_and_before_it_the_rest(hosts, model) -> None:
    first, second = hosts(model.base_url)
    session, run = new_id(), new_id()
    events = read_events(stream(first, query=README_QUESTION, session=session, run=run))
    end = events[-1]["id"]
    assert events[-1]["event"] == "done"
    for resume in ({"last_event_id": end}, {"after": end}, {"last_event_id": end + 50}):
        response = stream(second, session=session, run=run, **resume)
        assert response.status_code == 204 and response.content == b""  # WHATWG: EventSource stops reconnecting
    rest = read_events(stream(second, session=session, run=run, last_event_id=end - 2))
    assert [event["id"] for event in rest] == [end - 1, end] and shown(rest) == shown(events[-2:])


def test_a_resume_of_a_run_that_expired_or_never_was_is_one_error_event(hosts, model) -> None:
    first, _ = hosts(model.base_url)
    for resume in ({"last_event_id": 3}, {"after": 0}):
        response = stream(first, query=README_QUESTION, session=new_id(), run=new_id(), **resume)
        assert response.status_code == 200
        assert read_events(response) == [{"id": None, "event": "error", "data": {"message": GONE}}]
    assert list(model.requests) == []  # a resume never starts a run


def test_without_a_run_id_the_relay_makes_one_and_says_it(hosts, model) -> None:
    first, second = hosts(model.base_url)
    response = stream(first, query=README_QUESTION)  # curl, a script: no session, no run
    run = response.headers["Ink-Run"]
    uuid.UUID(run)  # a UUID: unguessable
    events = read_events(response)
    again = read_events(stream(second, run=run, last_event_id=events[-3]["id"]))
    assert shown(again) == shown(events[-2:])


# ── stop, and disconnect that is not stop ───────────────────────────────────────────────


def test_stop_on_the_other_host_ends_the_stream_with_a_stopped_done(hosts, workspace) -> None:
    with start_model_server(port=0, scenario="slow", delay=0) as slow:  # about twenty seconds of text
        first, second = hosts(slow.base_url)
        session, run = new_id(), new_id()
        response = stream(first, query="讲一段慢慢的回答", session=session, run=run)
        pieces = response.iter_content(chunk_size=None)
        received = b""
        while b"event: text" not in received:
            received += next(pieces)
        stop = requests.post(f"{second.url}chat/stop", params={"run": run, "session": session}, timeout=WAIT_SECONDS)
        assert stop.status_code == 202 and stop.json() == {"run": run, "state": "running"}
        events = [*read_events_from(received, pieces)]
    done = [event["data"] for event in events if event["event"] == "done"]
    assert done and done[0]["stopReason"] == "aborted" and done[0]["abortReason"] == STOPPED
    assert events[-1]["event"] == "done"  # the stream ended with it
    again = requests.post(f"{first.url}chat/stop", params={"run": run, "session": session}, timeout=WAIT_SECONDS)
    assert again.status_code == 200 and again.json()["state"] == "ended"


def read_events_from(received: bytes, pieces: Iterator[bytes]) -> list[dict[str, Any]]:
    from .redis_servers import events_of

    return events_of(received + b"".join(pieces))


def test_a_run_no_one_comes_back_to_is_aborted_after_the_grace(hosts) -> None:
    def first_word_then_silence(conn: Any, model: RawServer) -> None:
        from ink_py.course.checks.helpers import sse

        model.read_request(conn)
        conn.sendall(SSE_HEAD + sse({"choices": [{"index": 0, "delta": {"content": "一"}}]}))
        model.wait_for_hang_up(conn, 60)

    with RawServer(first_word_then_silence) as model:
        first, second = hosts(model.base_url, grace=0.5)
        session, run = new_id(), new_id()
        cut_after(stream(first, query="讲个长故事", session=session, run=run), 1)  # the browser leaves for good
        assert model.closed_by_client.wait(WAIT_SECONDS), "the model request was still open"
        assert len(model.requests) == 1
        events = read_events(stream(second, session=session, run=run, after=1))  # what the log kept
    assert events[-1]["event"] == "done" and events[-1]["data"]["stopReason"] == "aborted"


# ── who may read a run ──────────────────────────────────────────────────────────────────


def test_another_session_cannot_read_join_or_stop_a_run(hosts, workspace) -> None:
    with start_model_server(port=0, scenario="slow", delay=0) as slow:
        first, second = hosts(slow.base_url)
        session, run, stranger = new_id(), new_id(), new_id()
        owner = stream(first, query="讲一段慢慢的回答", session=session, run=run)
        pieces = owner.iter_content(chunk_size=None)
        received = read_until(pieces, 1)  # the model's first words: the owner's model request was made
        for other in ({"session": stranger}, {}):  # another session's id, or none at all
            resumed = stream(second, run=run, last_event_id=1, **other)
            assert read_events(resumed) == [{"id": None, "event": "error", "data": {"message": GONE}}]
            refused = requests.post(f"{second.url}chat/stop", params={"run": run, **other}, timeout=WAIT_SECONDS)
            assert refused.status_code == 404 and "no answer" in refused.json()["error"]
        assert len(slow.requests) == 1  # nothing was started for the stranger either
        stop = requests.post(f"{second.url}chat/stop", params={"run": run, "session": session}, timeout=WAIT_SECONDS)
        assert stop.status_code == 202  # the owner's stop still works: the stranger's did nothing
        events = read_events_from(received, pieces)
    assert events[-1]["data"]["abortReason"] == STOPPED


# ── hostile resume points ───────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "value",
    ["-1", "1e3", "0x10", "7 8", "1" * 10, "9" * 5000, "١٢", "７", "12abc", "\u00e9\u00e9"],
    ids=["negative", "exponent", "hex", "space", "ten-digits", "huge", "arabic-digits", "fullwidth", "junk", "latin1"],
)
@pytest.mark.parametrize("where", ["Last-Event-ID", "after"])
def test_a_resume_point_that_is_not_an_event_id_is_one_400(hosts, model, value: str, where: str) -> None:
    first, _ = hosts(model.base_url)
    if where == "Last-Event-ID":
        raw = value.encode("utf-8").decode("latin-1")  # a header's bytes, as a WSGI server hands them on
        response = requests.get(
            f"{first.url}chat/stream", params={"query": "hi", "run": new_id()}, headers={"Last-Event-ID": raw},
            timeout=WAIT_SECONDS,
        )  # fmt: skip
    else:
        response = requests.get(
            f"{first.url}chat/stream", params={"query": "hi", "run": new_id(), "after": value}, timeout=WAIT_SECONDS
        )
    assert response.status_code == 400
    message = response.json()["error"]
    assert message.startswith(f"{where} must be an event id, a whole number from 0 to 999999999 (got ")
    assert len(message) < 200  # a huge value is not echoed back
    assert list(model.requests) == []


def test_a_forged_id_past_the_answers_events_is_one_error_event_while_it_runs(hosts, workspace) -> None:
    with start_model_server(port=0, scenario="slow", delay=0) as slow:
        first, second = hosts(slow.base_url)
        session, run = new_id(), new_id()
        owner = stream(first, query="讲一段慢慢的回答", session=session, run=run)
        next(owner.iter_content(chunk_size=None))
        forged = read_events(stream(second, session=session, run=run, last_event_id=999_999_999))
        assert [event["event"] for event in forged] == ["error"] and forged[0]["id"] is None
        assert "is not one it sent" in forged[0]["data"]["message"]
        owner.close()


def test_a_thousand_resumes_of_one_run_each_get_exactly_the_events_after_their_id(hosts, model) -> None:
    first, second = hosts(model.base_url)
    session, run = new_id(), new_id()
    events = read_events(stream(first, query=README_QUESTION, session=session, run=run))
    threads_before = threading.active_count()
    points = [random.Random(n).randrange(0, len(events) - 1) for n in range(1000)]

    def resume(point: int) -> list[dict[str, Any]]:
        with requests.Session() as client:
            response = client.get(
                f"{second.url}chat/stream", params={"session": session, "run": run, "after": point}, timeout=30
            )
            return read_events(response)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(resume, points))
    for point, got in zip(points, results, strict=True):
        assert got == events[point:], point
    deadline = time.monotonic() + WAIT_SECONDS
    while threading.active_count() > threads_before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # the handler threads wind down: nothing kept per resume
    assert threading.active_count() <= threads_before + 2


# ── Redis only: expiries, a capped log, a slow Redis ────────────────────────────────────


@needs_redis
def test_every_redis_key_has_an_expiry_while_running_and_after(redis_server: RedisServer, workspace) -> None:
    redis_server.client().flushdb()
    with start_model_server(port=0, delay=0.02) as model:
        relay = redis_relay(redis_server.url, model, workspace, ttl=120)
        try:
            response = stream(relay, query=README_QUESTION, session=new_id(), run=new_id())
            pieces = response.iter_content(chunk_size=None)
            next(pieces)
            running = redis_server.keys_and_ttls()
            b"".join(pieces)
            ended = redis_server.keys_and_ttls()
        finally:
            relay.close()
    kinds = {key.split(":")[1] for key in running} | {key.split(":")[1] for key in ended}
    assert {"run", "log", "conv", "runs"} <= kinds  # a run, its log, its conversation, its client's runs
    for keys in (running, ended):
        assert all(ttl > 0 for ttl in keys.values()), keys  # PTTL -1 would be a key kept for ever
    runs_left = [ttl for key, ttl in ended.items() if key.startswith(("ink:run:", "ink:log:"))]
    assert runs_left and all(ttl <= 120_000 for ttl in runs_left)  # INK_RUN_TTL after the end


def test_a_resume_from_before_a_capped_logs_oldest_event_says_so(hosts, model, monkeypatch) -> None:
    monkeypatch.setattr(runs_module, "MAX_RUN_EVENTS", 10)  # read by MemoryRuns' logs
    monkeypatch.setattr("ink_py.second_article.redis_runs.MAX_RUN_EVENTS", 10, raising=False)
    first, second = hosts(model.base_url)
    session, run = new_id(), new_id()
    events = read_events(stream(first, query=README_QUESTION, session=session, run=run))
    assert len(events) > 20  # longer than the log keeps
    kept = read_events(stream(second, session=session, run=run, after=len(events) - 10))
    assert kept == events[-10:]  # the newest ten are kept
    cut = read_events(stream(second, session=session, run=run, after=2))
    assert cut == [{"id": None, "event": "error", "data": {"message": TRIMMED}}]


@needs_redis
def test_a_resume_storm_while_redis_is_slow_loses_nothing_and_each_fails_once_when_it_is_too_slow(
    redis_server: RedisServer, workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INK_MAX_CONNECTIONS_PER_CLIENT", "0")  # 60 readers at once, all from 127.0.0.1
    redis_server.client().flushdb()
    slow = SlowProxy(redis_server.port, 0.01)  # every reply 10 ms late
    with start_model_server(port=0, delay=0) as model:
        far_url = f"redis://127.0.0.1:{slow.port}/0"  # the second host reaches Redis slowly
        many = Quotas(readers_per_run=100)  # 60 readers of one run at once: beyond INK_MAX_READERS_PER_RUN
        relays = [redis_relay(url, model, workspace, quotas=many) for url in (redis_server.url, far_url)]
        first, far = relays
        try:
            session, run = new_id(), new_id()
            events = read_events(stream(first, query=README_QUESTION, session=session, run=run))
            points = [random.Random(n).randrange(0, len(events) - 1) for n in range(60)]

            def resume(point: int) -> list[dict[str, Any]]:
                return read_events(stream(far, session=session, run=run, after=point))

            connections = redis_server.client().info("clients")["connected_clients"]
            began = time.monotonic()
            with ThreadPoolExecutor(60) as pool:  # all at once, on the host whose Redis is slow
                results = list(pool.map(resume, points))
            assert time.monotonic() - began < 120  # bounded: never a hang
            for point, got in zip(points, results, strict=True):
                assert got == events[point:]  # nothing lost, nothing twice
            opened = redis_server.client().info("clients")["connected_clients"] - connections
            assert opened <= 60 + 5  # bounded: at most one per resume at once (kept in the pool for the next)

            slow.delay = 5.0  # now slower than the relay waits for Redis (3 s)

            def resume_status(point: int) -> tuple[int, list[Any]]:
                response = stream(far, session=session, run=run, after=point)
                body = read_events(response) if response.status_code == 200 else [response.json()]
                return response.status_code, body

            with ThreadPoolExecutor(20) as pool:
                answers = list(pool.map(resume_status, points[:20]))
        finally:
            slow.delay = 0
            for relay in relays:
                relay.close()
            slow.close()
    for status, body in answers:
        assert (status, len(body)) == (503, 1), (status, body)  # one clear error each
        assert body[0]["error"] == "the run store is unavailable"  # Redis's words, its address: the log's
