"""Per-client quotas (issue 33, items 3 and 4): no client can cost another its answer, over real HTTP.

Each client speaks from its own loopback address (tests/addresses.py: 127.0.0.2, 127.0.0.3 …),
so ``REMOTE_ADDR`` tells them apart as the Internet would. Where the store matters a test runs
twice: one ``ink-py serve`` relay with everything in memory, and two relays in this process on
one real ``redis-server`` — two hosts, across which a quota must hold. Covers: runs at once per
client (429, ``Retry-After``, one JSON line; the others go on; a run ended frees its place; a
killed worker's places free themselves), new conversations a minute (memory, SQLite, Redis),
readers of one run, one client's many conversations and answers never pushing out another's
(fair-share eviction in memory), a trusted proxy's X-Forwarded-For naming its clients (an
untrusted one's ignored, with one warning), the query string bounded before it is parsed and
parsed once, and the settings: a bad one is one ``error:`` line and exit 4 from create_app.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.peers import parse_trusted
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article import guards, runs, sessions
from ink_py.second_article.quotas import Quotas
from ink_py.second_article.relay import RelayServer, create_app, make_relay_server
from ink_py.second_article.runs import GONE, MemoryRuns
from ink_py.second_article.sessions import Conversations, SqliteConversations

from .addresses import NEEDS_LOOPBACKS, loopback, session_from
from .redis_servers import NEEDS_REDIS, RedisServer, module_redis, read_events
from .test_relay import README, README_QUESTION, named, streamed_text

WAIT_SECONDS = 20.0  # an upper bound on any one wait, never a speed check
needs_loopbacks = pytest.mark.skipif(NEEDS_LOOPBACKS is not None, reason=NEEDS_LOOPBACKS or "")
needs_redis = pytest.mark.skipif(NEEDS_REDIS is not None, reason=NEEDS_REDIS or "")
MALLORY, ALICE, BOB = loopback(1), loopback(2), loopback(3)  # a flooder and two others
SLOW = "讲一段慢慢的回答"  # the slow scenario's question: about twenty seconds of text


redis_server = module_redis()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


@pytest.fixture
def slow_model() -> Iterator[ModelServer]:
    with start_model_server(port=0, scenario="slow", delay=0) as model:
        yield model


@pytest.fixture
def readme_model() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as model:
        yield model


Hosts = Callable[..., tuple[RelayServer, RelayServer]]


@pytest.fixture(params=["memory", pytest.param("redis", marks=needs_redis)])
def hosts(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Hosts]:
    """``hosts(model, quotas)`` → two relays: two hosts on one Redis, or (memory) one relay twice."""
    started: list[RelayServer] = []

    def start(model: ModelServer, quotas: Quotas, **more: Any) -> tuple[RelayServer, RelayServer]:
        if request.param == "memory":
            started.append(relay_on(model, workspace, quotas, **more))
            return started[0], started[0]
        server: RedisServer = request.getfixturevalue("redis_server")
        server.client().flushdb()
        from ink_py.second_article.redis_client import connect_redis
        from ink_py.second_article.stores import redis_stores

        for _ in range(2):
            store, run_log = redis_stores(connect_redis(server.url), 600, 10.0, quotas)
            started.append(relay_on(model, workspace, quotas, store=store, run_log=run_log, **more))
        return started[-2], started[-1]

    yield start
    for relay in started:
        relay.close()


def relay_on(model: ModelServer, workspace: Path, quotas: Quotas, **more: Any) -> RelayServer:
    return make_relay_server(
        provider_factory=lambda: OpenAICompletionsProvider(model.base_url),
        model="m",
        workspace=workspace,
        quotas=quotas,
        **more,
    ).start()


def ask(relay: RelayServer, client: str, query: str = README_QUESTION, **params: Any) -> requests.Response:
    """GET chat/stream from ``client``'s address (stream=True: the caller reads or closes it)."""
    headers = {"Last-Event-ID": str(params.pop("last_event_id"))} if "last_event_id" in params else {}
    return session_from(client).get(
        f"{relay.url}chat/stream", params={"query": query, **params}, headers=headers, stream=True, timeout=30
    )


def until_text(response: requests.Response) -> requests.Response:
    """Read until the first text event: the run is going. The rest stays unread (the caller closes)."""
    assert response.status_code == 200, response.text
    received = b""
    for piece in response.iter_content(chunk_size=None):
        received += piece
        if b"event: text" in received:
            return response
    raise AssertionError("the stream ended before any text")


def refused(response: requests.Response, status: int = 429) -> str:
    """The response is one JSON error line with ``status`` and a Retry-After; its message."""
    assert response.status_code == status, response.text[:300]
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    body = response.json()
    assert list(body) == ["error"] and "\n" not in response.text
    return str(body["error"])


def eventually(attempt: Callable[[], Any], what: str) -> Any:
    """``attempt()`` until it returns something true; bounded by WAIT_SECONDS (a real failure only)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not (result := attempt()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)
    return result


def new_id() -> str:
    return str(uuid.uuid4())


# ── runs at once ────────────────────────────────────────────────────────────────────────


@needs_loopbacks
def test_a_client_beyond_its_runs_gets_429_and_no_one_else_does(hosts: Hosts, slow_model: ModelServer) -> None:
    first, second = hosts(slow_model, Quotas(runs_per_client=2))
    going = [until_text(ask(first, MALLORY, SLOW, run=new_id())) for _ in range(2)]
    asked = len(slow_model.requests)
    message = refused(ask(second, MALLORY, SLOW, run=new_id()))  # on the other host too: the quota is the client's
    assert "2 answers running (INK_MAX_RUNS_PER_CLIENT)" in message
    assert len(slow_model.requests) == asked  # refused before any model was asked
    others = [until_text(ask(host, client, SLOW)) for host, client in ((first, ALICE), (second, BOB))]
    stop = session_from(MALLORY).post(f"{first.url}chat/stop", params={"run": going[0].headers["Ink-Run"]}, timeout=30)
    assert stop.status_code == 202
    read_events(going[0])  # its end: the place is free again
    again = eventually(lambda: (r := ask(second, MALLORY, SLOW)).status_code == 200 and r, "a free place")
    for response in [*going[1:], *others, again]:
        response.close()


@needs_redis
def test_a_killed_workers_runs_free_their_clients_places_by_themselves(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ink_py.second_article import redis_quotas
    from ink_py.second_article.guards import BadRequest
    from ink_py.second_article.redis_client import connect_redis
    from ink_py.second_article.stores import redis_stores

    monkeypatch.setattr(redis_quotas, "LEASE_SECONDS", 0.5)  # a worker's lease on the client's place
    redis_server.client().flushdb()
    dead = redis_stores(connect_redis(redis_server.url), 600, 10.0, Quotas(runs_per_client=2))[1]
    for number in range(2):
        assert dead.claim(("-", f"run-of-the-dead-{number}"), MALLORY) == 1  # its worker dies: no beat, no end
    alive = redis_stores(connect_redis(redis_server.url), 600, 10.0, Quotas(runs_per_client=2))[1]
    with pytest.raises(BadRequest) as full:
        alive.claim(("-", "run-after"), MALLORY)
    assert full.value.status == 429
    began = time.monotonic()

    def claimed() -> bool:
        try:
            return alive.claim(("-", "run-after"), MALLORY) == 1
        except BadRequest:
            return False

    eventually(claimed, "the dead worker's places to expire")
    assert time.monotonic() - began >= 0.3  # not at once: when their leases ended


# ── new conversations a minute ──────────────────────────────────────────────────────────


@needs_loopbacks
@pytest.mark.parametrize("kind", ["memory", "sqlite", pytest.param("redis", marks=needs_redis)])
def test_new_conversations_beyond_the_rate_get_429_and_old_ones_go_on(
    kind: str, readme_model: ModelServer, workspace: Path, request: pytest.FixtureRequest
) -> None:
    quotas = Quotas(new_sessions_per_minute=2)
    if kind == "redis":
        from ink_py.second_article.redis_client import connect_redis
        from ink_py.second_article.stores import redis_stores

        server: RedisServer = request.getfixturevalue("redis_server")
        server.client().flushdb()
        store, run_log = redis_stores(connect_redis(server.url), 600, 10.0, quotas)
    else:
        store = Conversations(quotas) if kind == "memory" else SqliteConversations(workspace / "c.db", quotas)
        run_log = MemoryRuns(quotas=quotas)
    relay = relay_on(readme_model, workspace, quotas, store=store, run_log=run_log)
    try:
        mine = [new_id(), new_id()]
        for session in mine:
            assert named(read_events_of(ask(relay, MALLORY, session=session)), "done")
        asked = len(readme_model.requests)
        message = refused(ask(relay, MALLORY, session=new_id()))
        assert "2 in the last minute, INK_MAX_NEW_SESSIONS_PER_MINUTE" in message
        assert len(readme_model.requests) == asked
        follow_up = read_events_of(ask(relay, MALLORY, "它的标题是什么?", session=mine[0]))  # not a new one
        assert "没有再读一次" in streamed_text(follow_up)
        assert named(read_events_of(ask(relay, ALICE, session=new_id())), "done")  # another client: its own rate
    finally:
        relay.close()


def read_events_of(response: requests.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return [{"event": event["event"], "data": event["data"]} for event in read_events(response)]


# ── readers of one run ──────────────────────────────────────────────────────────────────


@needs_loopbacks
def test_readers_of_one_run_beyond_the_quota_get_429(hosts: Hosts, slow_model: ModelServer) -> None:
    first, second = hosts(slow_model, Quotas(readers_per_run=2))
    session, run = new_id(), new_id()
    starter = until_text(ask(first, ALICE, SLOW, session=session, run=run))
    joiner = until_text(ask(first, BOB, SLOW, session=session, run=run))  # a second tab, elsewhere
    message = refused(ask(first, MALLORY, SLOW, session=session, run=run))
    assert "already has 2 readers here (INK_MAX_READERS_PER_RUN)" in message
    elsewhere = until_text(ask(second, MALLORY, SLOW, session=new_id()))  # another run: its own readers
    joiner.close()  # one leaves: a place for the next
    late = eventually(
        lambda: (r := ask(first, MALLORY, SLOW, session=session, run=run)).status_code == 200 and r, "a place"
    )
    for response in (starter, elsewhere, late):
        response.close()


# ── in memory: one client's share never evicts another's ───────────────────────────────


@needs_loopbacks
def test_one_clients_new_conversations_never_push_out_anothers(
    readme_model: ModelServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "SESSIONS_KEPT", 10)  # the issue: 101 sessions against 100 kept
    relay = relay_on(readme_model, workspace, Quotas(conversations_per_client=3, new_sessions_per_minute=1000))
    try:
        victim = new_id()
        read_events_of(ask(relay, ALICE, session=victim))  # it read README.md
        flood = {loopback(10 + n): [new_id() for _ in range(6)] for n in range(5)}  # 30 from five addresses
        for client, started in flood.items():
            for session in started:
                read_events_of(ask(relay, client, "你好", session=session))
        kept = list(relay.sessions)
        assert victim in kept and len(kept) == 10
        for started in flood.values():
            assert [s for s in kept if s in started] == started[-len([s for s in kept if s in started]) :]  # newest
            assert 1 <= len([s for s in kept if s in started]) <= 3  # its share: never more than 3
        follow_up = read_events_of(ask(relay, ALICE, "它的标题是什么?", session=victim))
        assert "没有再读一次" in streamed_text(follow_up)  # the history is whole
    finally:
        relay.close()


@needs_loopbacks
def test_one_clients_answers_never_push_out_anothers_within_the_ttl(
    readme_model: ModelServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "RUNS_IN_MEMORY", 12)  # the issue: 1000 short runs against 1000 kept
    relay = relay_on(readme_model, workspace, Quotas(answers_per_client=4))
    try:
        victim = new_id()
        whole = read_events_of(ask(relay, ALICE, "你好", run=victim))
        flood = {loopback(10 + n): [new_id() for _ in range(6)] for n in range(5)}  # 30 from five addresses
        for client, started in flood.items():
            for run in started:
                read_events_of(ask(relay, client, "你好", run=run))
        assert read_events_of(ask(relay, ALICE, run=victim, after=0)) == whole  # still there, whole
        for client, started in flood.items():
            gone = read_events_of(ask(relay, client, run=started[0], after=0))
            assert gone == [{"event": "error", "data": {"message": GONE}}]  # each one's own oldest went
            assert named(read_events_of(ask(relay, client, run=started[-1], after=0)), "done")
    finally:
        relay.close()


# ── who a client is, behind a proxy ─────────────────────────────────────────────────────


@needs_loopbacks
def test_a_trusted_proxys_forwarded_for_names_its_clients_and_an_untrusted_ones_is_ignored_once(
    slow_model: ModelServer, workspace: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    relay = relay_on(slow_model, workspace, Quotas(runs_per_client=1), trusted=parse_trusted(ALICE))  # ALICE: nginx
    opened: list[requests.Response] = []
    try:

        def via(peer: str, forwarded: str) -> requests.Response:
            response = session_from(peer).get(
                f"{relay.url}chat/stream", params={"query": SLOW}, headers={"X-Forwarded-For": forwarded},
                stream=True, timeout=30,
            )  # fmt: skip
            opened.append(response)
            return response

        until_text(via(ALICE, "198.51.100.1"))
        refused(via(ALICE, "6.6.6.6, 198.51.100.1"))  # the same client, whatever it wrote before
        until_text(via(ALICE, "198.51.100.2"))  # another client behind the same proxy
        until_text(via(BOB, "198.51.100.3"))  # BOB is no proxy: BOB is the client
        refused(via(BOB, "198.51.100.4"))  # still BOB
    finally:
        for response in opened:
            response.close()
        relay.close()
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: X-Forwarded-For from {BOB}, which FORWARDED_ALLOW_IPS does not list: ignored, so every "
        "client behind it shares one quota"
    ]


# ── the query string: bounded, then parsed once ─────────────────────────────────────────


@needs_loopbacks
def test_the_query_string_is_bounded_before_it_is_parsed_and_parsed_once(
    readme_model: ModelServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []
    real = guards.parse_qsl
    monkeypatch.setattr(guards, "parse_qsl", lambda text, **kw: parsed.append(len(text)) or real(text, **kw))
    relay = relay_on(readme_model, workspace, Quotas())
    try:
        question = "读" * 4000  # the longest question: about 36 KB percent-encoded
        response = ask(relay, ALICE, question, session=new_id(), run=new_id())
        assert response.status_code == 200 and len(parsed) == 1  # one parse for the whole request
        response.close()
        parsed.clear()
        for method, path in (("GET", "/chat/stream"), ("POST", "/chat/stop")):  # under gunicorn, waitress
            said: list[Any] = []
            environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "query=" + "%E8%AF%BB" * 10_000}
            environ |= {"SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "HTTP_HOST": "127.0.0.1:8000"}
            body = b"".join(relay.app(environ, lambda *args, said=said: said.append(args)))
            assert said[0][0] == "414 URI Too Long" and parsed == []  # refused unparsed
            assert json.loads(body) == {"error": "the query string is 90006 characters; at most 65536 are accepted"}
    finally:
        relay.close()


# ── the settings ────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("INK_MAX_RUNS_PER_CLIENT", "0", "give a whole number from 1 to 1000000"),
        ("INK_MAX_NEW_SESSIONS_PER_MINUTE", "many", "give a whole number from 1 to 1000000"),
        ("INK_MAX_READERS_PER_RUN", "-3", "give a whole number from 1 to 1000000"),
        ("INK_MAX_CONVERSATIONS_PER_CLIENT", "2.5", "give a whole number from 1 to 1000000"),
        ("INK_MAX_ANSWERS_PER_CLIENT", "٣", "give a whole number from 1 to 1000000"),
        ("INK_MAX_RUN_BYTES", "1000", "give a whole number from 65536 to 1073741824"),
        ("INK_MAX_RUN_BYTES", "9" * 5000, "give a whole number from 65536 to 1073741824"),
        ("FORWARDED_ALLOW_IPS", "10.0.0.5,proxy.internal", "'proxy.internal' is not an IP address or network"),
    ],
)
def test_a_setting_it_cannot_use_is_one_error_line_and_exit_4(
    name: str, value: str, words: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never asked: the app fails to load first
    monkeypatch.setenv("INK_MODEL", "m")
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exit_:
        create_app()
    assert exit_.value.code == 4
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {name}") and words in line


def test_the_settings_reach_the_stores_and_the_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("INK_MODEL", "m")
    for name, value in [("INK_MAX_RUNS_PER_CLIENT", "3"), ("INK_MAX_READERS_PER_RUN", "4")]:
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("INK_MAX_RUN_BYTES", "100000")
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.0.0.0/8")
    app = create_app()
    try:
        assert isinstance(app.run_log, MemoryRuns)
        assert (app.run_log.quotas.runs_per_client, app.run_log.quotas.run_bytes) == (3, 100000)
        assert app.readers.limit == 4 and [str(n) for n in app.trusted] == ["10.0.0.0/8"]
    finally:
        app.close()
