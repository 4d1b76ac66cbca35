"""Two hosts, one Redis (issue 27): the relay under two gunicorn processes on two ports, as a deployer runs it.

A real ``redis-server`` (started here, on a free port, nothing on disk) and two ``gunicorn``
processes with ``INK_REDIS_URL`` stand for two machines behind a load balancer. A stream
started on one and cut after a few events resumes on the other — ``Last-Event-ID`` or ``after=``
— with exactly the events it missed, one run only; a second client joins on the other; after
the end, 204; an answer Redis expired or evicted is one error on both hosts, never a second
run; stop works from the other host; a run no one comes back to is aborted after
``INK_RESUME_GRACE`` (its model request closed); a worker killed with SIGKILL is noticed (its
readers get a last ``error`` event, never a hang); Redis killed mid-run ends the stream with
an ``error`` event while the worker keeps serving; every key has an expiry; another session
can neither read nor stop a run; Redis unreachable at start is one ``error:`` line and gunicorn
halts; ``ink-py serve --redis URL`` does the same on the standard library's server. Skips, saying
why, where redis-server, redis-py or gunicorn is absent (``.ci/run`` installs all three).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.course.checks.helpers import sse
from ink_py.scripted.server import start_model_server
from ink_py.second_article.follow import DEAD_PRODUCER, LOST
from ink_py.second_article.producer import STOPPED
from ink_py.second_article.runs import GONE

from .helpers import ROOT, ctrl_c_reaches_children
from .raw_servers import SSE_HEAD, RawServer
from .redis_servers import NEEDS_REDIS, RedisServer, cut_after, events_of, model_switch, read_events
from .test_relay import README, README_QUESTION
from .test_relay_wsgi import COMMANDS, Served

MISSING = NEEDS_REDIS or (
    "needs gunicorn (pip install -r .ci/requirements.txt)" if importlib.util.find_spec("gunicorn") is None
    else "gunicorn does not run on Windows" if sys.platform == "win32" else None
)  # fmt: skip
# A mark, not a module-level skip: a run that deselects these tests (pytest -m ex1) does not report them.
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
WAIT_SECONDS = 30.0  # an upper bound on any one wait, never a speed check
GRACE = 2.0  # INK_RESUME_GRACE of the two hosts
SLOW, SILENT = "[slow] 讲一段慢慢的回答", "[silent] 讲个长故事"  # questions the model switch sends elsewhere


def first_word_then_silence(conn: Any, model: RawServer) -> None:
    model.read_request(conn)
    conn.sendall(SSE_HEAD + sse({"choices": [{"index": 0, "delta": {"content": "一"}}]}))
    model.wait_for_hang_up(conn, 120)  # the model thinks on, its connection open


class Hosts:
    """The models, Redis, and two gunicorn processes sharing it; ``a`` and ``b`` are their URLs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.readme = start_model_server(port=0, delay=0.02)  # the README run lasts about a second
        self.slow = start_model_server(port=0, scenario="slow", delay=0)  # about twenty seconds of text
        self.silent = RawServer(first_word_then_silence)
        port = {model: int(model.base_url.split(":")[2].split("/")[0]) for model in (self.readme, self.slow)}
        self.model = model_switch({b"[slow]": port[self.slow], b"[silent]": self.silent.port}, port[self.readme])
        workspace = folder / "workspace"
        workspace.mkdir()
        (workspace / "README.md").write_text(README, encoding="utf-8")
        self.workspace = workspace
        self.redis = RedisServer(folder / "redis")
        self.served: list[Served] = []
        self.a, self.b = self.start(), self.start()

    def start(self, **settings: str) -> Served:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(ROOT),
            "HOME": str(self.folder),
            "INK_WORKSPACE": str(self.workspace),
            "OPENAI_BASE_URL": self.model.base_url,
            "INK_MODEL": "test-model",
            "INK_REDIS_URL": self.redis.url,
            "INK_RESUME_GRACE": str(GRACE),
            **settings,
        }
        self.served.append(Served(COMMANDS["gunicorn"], env, self.folder / f"gunicorn-{len(self.served)}.log"))
        return self.served[-1]

    def close(self) -> list[str]:
        logs = [served.stop() for served in self.served]
        for model in (self.readme, self.slow):
            model.close()
        for raw in (self.silent, self.model):
            raw.stop()
        self.redis.kill()
        return logs


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    both = Hosts(tmp_path_factory.mktemp("two-hosts"))
    yield both
    for log in both.close():
        assert "Traceback" not in log, log


def new_id() -> str:
    return str(uuid.uuid4())


def stream(host: Served, **params: Any) -> requests.Response:
    headers = {"Last-Event-ID": str(params.pop("last_event_id"))} if "last_event_id" in params else {}
    headers["Connection"] = "close"
    return requests.get(f"{host.url}chat/stream", params=params, headers=headers, stream=True, timeout=30)


def stop(host: Served, **params: str) -> requests.Response:
    return requests.post(f"{host.url}chat/stop", params=params, timeout=WAIT_SECONDS)


def shown(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(event["event"], event["data"]) for event in events]


def until_text(response: requests.Response) -> tuple[bytes, Iterator[bytes]]:
    """Read until the first text event has come; the bytes so far and the rest to read."""
    pieces = response.iter_content(chunk_size=None)
    received = b""
    while b"event: text" not in received:
        received += next(pieces)
    return received, pieces


# ── resume, join, the end ───────────────────────────────────────────────────────────────


@pytest.mark.parametrize("how", ["Last-Event-ID", "after"])
def test_a_stream_cut_on_one_host_resumes_on_the_other_exactly_where_it_broke(hosts: Hosts, how: str) -> None:
    expected = shown(read_events(stream(hosts.a, query=README_QUESTION, session=new_id(), run=new_id())))
    asked = len(hosts.readme.requests)
    session, run = new_id(), new_id()
    before = cut_after(stream(hosts.a, query=README_QUESTION, session=session, run=run), 4)  # the socket closed
    last = before[-1]["id"]
    resume = {"last_event_id": last} if how == "Last-Event-ID" else {"after": last}
    after = read_events(stream(hosts.b, query=README_QUESTION, session=session, run=run, **resume))
    events = before + after
    assert [event["id"] for event in events] == list(range(1, len(expected) + 1))  # no gap, no duplicate
    assert shown(events) == expected
    assert len(hosts.readme.requests) - asked == 2  # one run: never a second one for R


def test_a_second_client_joins_on_the_other_host_and_after_the_end_gets_204(hosts: Hosts) -> None:
    session, run = new_id(), new_id()
    starter = stream(hosts.a, query=README_QUESTION, session=session, run=run)
    received, pieces = until_text(starter)
    joined = read_events(stream(hosts.b, query=README_QUESTION, session=session, run=run))  # the same R, no id
    started = events_of(received + b"".join(pieces))
    assert shown(joined) == shown(started) and [event["id"] for event in joined] == [e["id"] for e in started]
    end = started[-1]["id"]
    assert started[-1]["event"] == "done"
    for host in (hosts.a, hosts.b):
        over = stream(host, session=session, run=run, last_event_id=end)
        assert over.status_code == 204  # EventSource stops reconnecting


def test_stop_on_the_other_host_ends_the_stream_with_a_stopped_done(hosts: Hosts) -> None:
    session, run = new_id(), new_id()
    response = stream(hosts.a, query=SLOW, session=session, run=run)
    received, pieces = until_text(response)
    asked = time.monotonic()
    refused = stop(hosts.b, run=run, session=new_id())  # another session's stop: as if the run did not exist
    assert refused.status_code == 404
    accepted = stop(hosts.b, run=run, session=session)
    assert accepted.status_code == 202 and accepted.json()["state"] == "running"
    events = events_of(received + b"".join(pieces))
    took = time.monotonic() - asked
    assert events[-1]["event"] == "done" and events[-1]["data"]["abortReason"] == STOPPED
    assert took < WAIT_SECONDS  # an upper bound only; the issue asks for 2 s, the docs report what was seen


def test_another_session_can_neither_read_nor_join_a_run(hosts: Hosts) -> None:
    session, run = new_id(), new_id()
    events = read_events(stream(hosts.a, query=README_QUESTION, session=session, run=run))
    for other in ({"session": new_id()}, {}):
        for resume in ({"last_event_id": 2}, {"after": 0}):
            got = read_events(stream(hosts.b, run=run, **other, **resume))
            assert got == [{"id": None, "event": "error", "data": {"message": GONE}}]
    assert read_events(stream(hosts.b, session=session, run=run, after=0)) == events  # the owner still can


@pytest.mark.parametrize("how", ["expired", "evicted"])
def test_a_resume_of_an_answer_redis_no_longer_has_is_one_error_on_both_hosts(hosts: Hosts, how: str) -> None:
    session, run = new_id(), new_id()
    events = read_events(stream(hosts.a, query=README_QUESTION, session=session, run=run))
    assert events[-1]["event"] == "done"
    client = hosts.redis.client()
    keys = [f"ink:run:{{{session}/{run}}}", f"ink:log:{{{session}/{run}}}"]
    for key in keys:
        client.pexpire(key, 1) if how == "expired" else client.delete(key)  # Redis's expiry, or its eviction
    deadline = time.monotonic() + WAIT_SECONDS
    while client.exists(*keys):
        assert time.monotonic() < deadline, "Redis kept keys that had expired"
        time.sleep(0.01)  # expired keys go within milliseconds
    asked = len(hosts.readme.requests)
    for host in (hosts.a, hosts.b):  # the producing host (a) as well as the other
        for resume in ({"last_event_id": 3}, {"after": 3}):
            got = read_events(stream(host, query=README_QUESTION, session=session, run=run, **resume))
            assert got == [{"id": None, "event": "error", "data": {"message": GONE}}]
    assert len(hosts.readme.requests) == asked  # never a second run


# ── faults ──────────────────────────────────────────────────────────────────────────────


def test_a_run_no_one_comes_back_to_is_aborted_after_the_grace_and_its_model_request_closed(hosts: Hosts) -> None:
    hosts.silent.closed_by_client.clear()
    session, run = new_id(), new_id()
    cut_after(stream(hosts.a, query=SILENT, session=session, run=run), 1)  # the browser leaves for good
    assert hosts.silent.closed_by_client.wait(WAIT_SECONDS), "the model request was still open"
    events = read_events(stream(hosts.b, session=session, run=run, after=1))
    assert events[-1]["event"] == "done" and events[-1]["data"]["stopReason"] == "aborted"


def worker_pids(served: Served) -> list[int]:
    return [int(pid) for pid in re.findall(r"Booting worker with pid: (\d+)", served.log.read_text())]


def test_a_worker_killed_mid_run_is_noticed_and_its_readers_get_an_error_not_a_hang(hosts: Hosts) -> None:
    producer = hosts.start()  # a third host, whose worker is about to die
    session, run = new_id(), new_id()
    received, _ = until_text(stream(producer, query=SLOW, session=session, run=run))
    reader = stream(hosts.b, session=session, run=run, after=0)  # another host follows it
    reader_pieces = reader.iter_content(chunk_size=None)
    followed = next(reader_pieces)
    [worker] = worker_pids(producer)
    os.kill(worker, signal.SIGKILL)
    killed = time.monotonic()
    events = events_of(followed + b"".join(reader_pieces))  # ends: never a hang
    assert time.monotonic() - killed < GRACE + 5 + 5  # the bound (grace + 5 s), and room for a busy machine
    assert events[-1] == {"id": events[-1]["id"], "event": "error", "data": {"message": DEAD_PRODUCER}}
    assert [event["id"] for event in events] == list(range(1, len(events) + 1))
    again = stream(hosts.a, session=session, run=run, last_event_id=events[-1]["id"])
    assert again.status_code == 204  # the run is over for every host


def test_every_key_the_relay_writes_has_an_expiry(hosts: Hosts) -> None:
    read_events(stream(hosts.a, query=README_QUESTION, session=new_id(), run=new_id()))
    keys = hosts.redis.keys_and_ttls()
    assert {key.split(":")[1] for key in keys} >= {"run", "log", "conv"}
    assert all(ttl > 0 for ttl in keys.values()), {key: ttl for key, ttl in keys.items() if ttl <= 0}


def test_redis_lost_mid_run_ends_the_stream_with_an_error_and_the_worker_keeps_serving(tmp_path: Path) -> None:
    both = Hosts(tmp_path)
    try:
        response = stream(both.a, query=SLOW, session=new_id(), run=new_id())
        received, pieces = until_text(response)
        both.redis.kill()
        events = events_of(received + b"".join(pieces))
        assert events[-1]["event"] == "error" and events[-1]["id"] is None
        assert events[-1]["data"]["message"] == LOST  # never Redis's address: the log has it
        assert requests.get(both.a.url, timeout=WAIT_SECONDS).status_code == 200  # the worker serves on
        refused = stream(both.b, query=README_QUESTION, run=new_id())
        assert refused.status_code == 503 and refused.json() == {"error": "the run store is unavailable"}
        assert refused.headers["Retry-After"] == "5"
    finally:
        logs = both.close()
    for log in logs:
        assert "Traceback" not in log, log


def test_redis_unreachable_at_start_is_one_error_line_and_gunicorn_halts(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env |= {"INK_WORKSPACE": str(tmp_path), "INK_REDIS_URL": "redis://:s3cret@127.0.0.1:9/0"}  # nothing listens
    done = subprocess.run(COMMANDS["gunicorn"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0  # gunicorn halts: "App failed to load"
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) >= 1 and lines[0].startswith("error: cannot reach Redis at redis://:***@127.0.0.1:9/0: ")
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr


def test_ink_py_serve_with_redis_resumes_a_stream_a_gunicorn_host_started(hosts: Hosts) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(hosts.folder)}
    argv = [sys.executable, "-m", "ink_py", "serve", "--port", "0", "--workspace", str(hosts.workspace)]
    argv += ["--base-url", hosts.model.base_url, "--model", "m", "--redis", hosts.redis.url]
    with ctrl_c_reaches_children():
        process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        session, run = new_id(), new_id()
        before = cut_after(stream(hosts.a, query=README_QUESTION, session=session, run=run), 3)
        rest = requests.get(
            f"{url}chat/stream", params={"session": session, "run": run},
            headers={"Last-Event-ID": str(before[-1]["id"])}, stream=True, timeout=30,
        )  # fmt: skip
        events = before + read_events(rest)
        assert [event["id"] for event in events] == list(range(1, len(events) + 1))
        assert events[-1]["event"] == "done" and events[-1]["data"]["stopReason"] == "completed"
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=WAIT_SECONDS)
    assert process.returncode == 0 and "Traceback" not in err


def test_a_setting_it_cannot_use_is_one_error_line(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env |= {"INK_WORKSPACE": str(tmp_path), "INK_RESUME_GRACE": "soon"}
    done = subprocess.run(COMMANDS["gunicorn"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "error: INK_RESUME_GRACE='soon': give a number of seconds from 0.1 to 3600" in done.stderr
    assert "Traceback" not in done.stderr
