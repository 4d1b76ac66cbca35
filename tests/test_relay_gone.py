"""A resume never starts a run (issue 33, item 1): what the store no longer has is one ``error`` event.

With ``Last-Event-ID`` or ``after=``, a run the store does not have — expired after
``INK_RUN_TTL``, evicted from Redis, never there — gets one ``error`` event and the end,
whatever else the URL says (the page's EventSource URL carries ``query=``), on every host:
the one that produced it too (its copy of the run goes with the run's end). In memory (one
``ink-py serve`` relay) and on two relays sharing a real ``redis-server``; the TTL is the
store's own, made short by its constructor. With Redis, what an evicting policy can take is
taken key by key here, as eviction would: the run's record (gone for every host), its log alone
(one error, never a reader that spins), and a record taken but its log left behind (a new run of
that id never serves the old answer's events as its own).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.course.checks.helpers import text_reply
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article.follow import TRIMMED
from ink_py.second_article.relay import RelayServer, make_relay_server
from ink_py.second_article.runs import GONE, MemoryRuns, RunLog

from .raw_servers import SSE_HEAD, RawServer
from .redis_servers import NEEDS_REDIS, RedisServer, module_redis, read_events
from .test_relay import README, README_QUESTION

WAIT_SECONDS = 20.0  # an upper bound on any one wait, never a speed check
TTL = 1  # INK_RUN_TTL of these stores (the setting's own minimum is 10 s: the constructor takes less)
needs_redis = pytest.mark.skipif(NEEDS_REDIS is not None, reason=NEEDS_REDIS or "")
Hosts = Callable[[], tuple[RelayServer, RelayServer]]


redis_server = module_redis()


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as server:
        yield server


@pytest.fixture(params=["memory", pytest.param("redis", marks=needs_redis)])
def hosts(request: pytest.FixtureRequest, model: ModelServer, tmp_path: Path) -> Iterator[Hosts]:
    """Two relays with runs kept TTL seconds: two hosts on one Redis, or (memory) one relay twice."""
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    started: list[RelayServer] = []

    def relay(run_log: RunLog, **more: Any) -> RelayServer:
        provider = lambda: OpenAICompletionsProvider(model.base_url)  # noqa: E731
        started.append(
            make_relay_server(provider_factory=provider, model="m", workspace=tmp_path, run_log=run_log, **more)
        )
        return started[-1].start()

    def start() -> tuple[RelayServer, RelayServer]:
        if request.param == "memory":
            only = relay(MemoryRuns(ttl=TTL))
            return only, only
        server: RedisServer = request.getfixturevalue("redis_server")
        server.client().flushdb()
        pair = []
        for _ in range(2):
            store, run_log = redis_stores(server, TTL)
            pair.append(relay(run_log, store=store))
        return pair[0], pair[1]

    yield start
    for server in started:
        server.close()


def redis_stores(server: RedisServer, ttl: int) -> tuple[Any, Any]:
    from ink_py.second_article.redis_client import connect_redis
    from ink_py.second_article.stores import redis_stores as stores_on

    conversations, runs = stores_on(connect_redis(server.url), ttl, 10.0)
    return conversations, runs


def stream(relay: RelayServer, **params: Any) -> requests.Response:
    headers = {"Last-Event-ID": str(params.pop("last_event_id"))} if "last_event_id" in params else {}
    return requests.get(f"{relay.url}chat/stream", params=params, headers=headers, stream=True, timeout=30)


def eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


ONE_ERROR = [{"id": None, "event": "error", "data": {"message": GONE}}]


def test_a_resume_after_the_ttl_is_one_error_on_every_host_and_never_a_new_run(
    hosts: Hosts, model: ModelServer
) -> None:
    first, second = hosts()
    session, run = str(uuid.uuid4()), str(uuid.uuid4())
    events = read_events(stream(first, query=README_QUESTION, session=session, run=run))
    assert events[-1]["event"] == "done"
    key = (session, run)
    eventually(lambda: first.app.run_log.status(key).state == "unknown", "the answer to expire")  # TTL: a second
    asked = len(model.requests)
    for host in (first, second):  # the host that produced it as well as the other
        for resume in ({"last_event_id": 3}, {"after": 3}, {"last_event_id": 3, "after": 1}):
            response = stream(host, query=README_QUESTION, session=session, run=run, **resume)  # the page's URL
            assert response.status_code == 200 and read_events(response) == ONE_ERROR
    assert len(model.requests) == asked  # a resume never starts a run


@needs_redis
def test_what_an_evicting_redis_takes_is_gone_for_every_host_and_never_spliced(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    redis_server.client().flushdb()
    answers = iter(range(1, 100))  # each answer says its number: one run's events are told from another's

    def numbered(conn: Any, raw: RawServer) -> None:
        raw.read_request(conn)
        conn.sendall(SSE_HEAD + text_reply(f"第 {next(answers)} 个回答"))

    model = RawServer(numbered)
    provider = lambda: OpenAICompletionsProvider(model.base_url)  # noqa: E731
    relays = []
    for _ in range(2):
        store, run_log = redis_stores(redis_server, 600)  # nothing expires here: only what is evicted goes
        relays.append(make_relay_server(provider_factory=provider, model="m", workspace=tmp_path, run_log=run_log))
        relays[-1].start()
    first, second = relays
    client = redis_server.client()
    try:

        def answered(question: str = README_QUESTION) -> tuple[str, list[dict[str, Any]]]:
            run = str(uuid.uuid4())
            return run, read_events(stream(first, query=question, run=run))

        run, _ = answered()
        client.delete(f"ink:run:{{-/{run}}}", f"ink:log:{{-/{run}}}")  # both keys evicted
        for host in (first, second):
            assert read_events(stream(host, query=README_QUESTION, run=run, last_event_id=2)) == ONE_ERROR

        run, _ = answered()
        client.delete(f"ink:log:{{-/{run}}}")  # its log evicted, its record left ("ended", last N)
        for host in (first, second):
            response = stream(host, run=run, after=0)
            assert read_events(response) == [{"id": None, "event": "error", "data": {"message": TRIMMED}}]

        run, old = answered()
        assert text_of(old) == "第 3 个回答"
        client.delete(f"ink:run:{{-/{run}}}")  # its record evicted, its log left behind
        new = read_events(stream(second, query=README_QUESTION, run=run))  # the same id, asked afresh: a new run
        assert text_of(new) == "第 4 个回答" and new[-1]["event"] == "done"  # its own answer, not the old one's
        assert [event["id"] for event in new] == list(range(1, len(new) + 1))
        assert read_events(stream(first, run=run, after=0)) == new  # every host: the new run's log only
    finally:
        for relay in relays:
            relay.close()
        model.stop()


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(event["data"]["text"] for event in events if event["event"] == "text")
