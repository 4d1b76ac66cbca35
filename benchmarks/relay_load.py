"""The relay under load: N browsers at once, one process in memory against two hosts sharing Redis.

    pip install -e '.[bench]'              # gunicorn, redis-py, matplotlib; apt-get install redis-server
    python benchmarks/relay_load.py        # a few minutes; writes benchmarks/results/relay_load.*
    python benchmarks/relay_load.py --sizes 20 --storm 20 --out /tmp/x       # a quick look
    python benchmarks/relay_load.py --relays serve                          # no gunicorn, no Redis
    python benchmarks/relay_load.py --flood 0                               # without the flood stage

One unpaced ``ink-py serve-model`` answers every model request. In front of it, for each N:

    ink-py serve            one process, the zero-dependency server, everything in its memory
    gunicorn -w 1           one worker process (--threads 320), everything in its memory
    2 × gunicorn + Redis    two gunicorn processes on two ports (two hosts) and one redis-server;
                            the clients alternate between the two

Stages: (1) load — N clients open the README question at the same moment and read to the end:
completed, 5xx, error events, p50/p95 time to first text, wall time, peak memory (relay processes,
and redis-server for the last); (2) latency per event through the run log — one producer, one
reader, 2000 events 2 ms apart (``--latency-events``), in memory and in Redis: what Redis adds;
(3) a resume storm — every client drops once after a few events and resumes with Last-Event-ID
(on the other host): events lost and duplicated; (4) what one stream costs Redis — commands (INFO commandstats) and
memory (INFO memory, MEMORY USAGE); (5) a flood — one client, from its own address (127.0.0.2),
asks from 32 connections at once, each a new conversation, beyond its quotas (runs at once, new
conversations a minute), while ``--flood`` others ask the README question: what the others saw
(completed, aborted, time to first text) and what the flooder got (429s). Every client speaks from
its own loopback address (Linux routes 127/8 to lo), as browsers would: the relay's quotas count per
address. Progress: a line per stage and size with the time so far (in place on a terminal). Ctrl-C
stops within a second with exit 130; the result files are written at the end only, each whole (a
temporary file, renamed). A benchmark: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import http.client
import io
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # this checkout's ink_py, for the run logs (stage 2) and atomic writes

from ink_py.atomic import write_bytes_atomically, write_text_atomically  # noqa: E402

QUESTION = "读取 README.md,告诉我项目怎样启动"
THREADS = 320  # gunicorn threads per process: every stream holds one
STREAM_TIMEOUT = 180.0  # one client gives up after this
URL_LINE = re.compile(rb"(?:Listening at: |^)http://127\.0\.0\.1:(\d+)/?", re.M)
RELAYS = {"serve": "ink-py serve", "gunicorn": "gunicorn -w 1", "redis": "2 × gunicorn + Redis"}
STARTED: list[subprocess.Popen[bytes]] = []  # every child process, killed on the way out
FLOODER = "127.0.0.2"  # the flood's one address; the others are 127.0.1.x and beyond
FLOOD_CONNECTIONS = 32  # the flooder's requests at once: four times INK_MAX_RUNS_PER_CLIENT's default


def address(number: int) -> str:
    """Client ``number``'s own loopback address (127.0.1.0 on): one browser, one address."""
    return f"127.0.{1 + number // 256}.{number % 256}"


def several_addresses() -> bool:
    """Whether this machine routes 127.0.0.2 and beyond to lo (Linux does; macOS has 127.0.0.1 alone)."""
    try:
        with socket.socket() as probe:
            probe.bind((FLOODER, 0))
        return True
    except OSError:
        return False


# ── progress ────────────────────────────────────────────────────────────────────────────


class Progress:
    """One line per stage with the time so far: rewritten in place on a terminal, plain lines otherwise."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream, self.began, self.tty = stream, time.monotonic(), stream.isatty()

    def say(self, text: str, done: bool = True) -> None:
        """``done``: the stage's last word (a line of its own); otherwise an update, shown on a terminal only."""
        line = f"[{time.monotonic() - self.began:6.1f}s] {text}"
        if self.tty:
            self.stream.write("\r\033[K" + line + ("\n" if done else ""))
        elif done:
            self.stream.write(line + "\n")
        self.stream.flush()


# ── processes ───────────────────────────────────────────────────────────────────────────


@contextmanager
def stops_deferred() -> Iterator[None]:
    """A Ctrl-C (or SIGTERM) meanwhile raises KeyboardInterrupt as this ends, not inside: a process started
    here is in STARTED by then, and killed on the way out (raised inside Popen, it ran on, unknown)."""
    signals = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is signal.default_int_handler]
    stopped: list[int] = []
    for number in signals:
        signal.signal(number, lambda signum, frame: stopped.append(signum))
    try:
        yield
    finally:
        for number in signals:
            signal.signal(number, signal.default_int_handler)
    if stopped:
        raise KeyboardInterrupt


def start(argv: list[str], env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server process; return it and the port it printed (ink-py's first line, gunicorn's log)."""
    with stops_deferred(), open(log, "wb") as out:
        process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        STARTED.append(process)
    deadline = time.monotonic() + 30
    while not (found := URL_LINE.search(log.read_bytes())):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{argv[2]} did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.05)
    return process, int(found[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes] | None, str | None]:
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        raise SystemExit(
            "the Redis contender needs redis-server (apt-get install redis-server), or --relays serve,gunicorn"
        )
    port = free_port()
    argv = [redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    with stops_deferred():
        process = subprocess.Popen([*argv, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        STARTED.append(process)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis_client(url)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            return process, url
        except OSError as err:  # redis-py's ConnectionError is an OSError too
            if time.monotonic() > deadline:
                raise SystemExit(f"redis-server did not start: {err}") from None
            time.sleep(0.05)


def redis_client(url: str) -> Any:
    try:
        import redis
    except ImportError:
        raise SystemExit("the Redis contender needs redis-py: pip install -e '.[bench]'") from None
    return redis.Redis.from_url(url)


def wait_ready(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"nothing answers on port {port}")
        time.sleep(0.1)


def tree_rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` and all its descendants, in KiB (0 where /proc is not there)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status)[1])  # type: ignore[index]
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, TypeError):
            continue
    return total


class Relay:
    """One contender running: its processes and the ports its clients use (two for two hosts)."""

    def __init__(self, name: str, model_url: str, logs: Path, redis_url: str | None) -> None:
        self.name, self.processes, self.ports = name, [], []
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),
            "HOME": str(logs),
            "OPENAI_BASE_URL": model_url,
            "INK_MODEL": "bench",
            "INK_WORKSPACE": str(ROOT),
            "INK_MAX_CONNECTIONS_PER_CLIENT": "0",  # ink-py serve: every stream here comes from 127.0.0.1
        }
        if not several_addresses():  # every client from 127.0.0.1: one client to the quotas, so lift them
            env |= {"INK_MAX_RUNS_PER_CLIENT": "1000000", "INK_MAX_NEW_SESSIONS_PER_MINUTE": "1000000"}
        python = sys.executable
        serve = [python, "-m", "ink_py", "serve", "--port", "0", "--base-url", model_url, "--model", "bench",
                 "--workspace", str(ROOT)]  # fmt: skip
        app = "ink_py.second_article.relay:create_app()"
        gunicorn = [python, "-m", "gunicorn", "-k", "gthread", "-w", "1", "--threads", str(THREADS),
                    "--limit-request-line", "0", "-b", "127.0.0.1:0", app]  # fmt: skip
        if name == "serve":
            commands = [(serve, env)]
        elif name == "gunicorn":
            commands = [(gunicorn, env)]
        else:
            commands = [(gunicorn, {**env, "INK_REDIS_URL": str(redis_url)})] * 2  # two hosts
        for number, (argv, process_env) in enumerate(commands):
            process, port = start(argv, process_env, logs / f"{name}-{number}-{uuid.uuid4().hex[:6]}.log")
            self.processes.append(process)
            self.ports.append(port)
        for port in self.ports:
            wait_ready(port)

    def rss_kib(self) -> int:
        return sum(tree_rss_kib(process.pid) for process in self.processes)

    def close(self) -> None:
        for process in self.processes:
            stop(process)


# ── stage 1: load ───────────────────────────────────────────────────────────────────────


def read_stream(
    port: int, path: str, headers: dict[str, str], cut_after: int | None = None, source: str | None = None
) -> dict[str, Any]:
    """One browser tab's stream: its status, time to first text, and the events it got (id, name, data).
    ``cut_after``: close the socket once that many events have come (a network that drops); ``source``:
    the client's own address (None: 127.0.0.1)."""
    outcome: dict[str, Any] = {"status": None, "first_text": None, "events": [], "failed": ""}
    began = time.perf_counter()
    bound = (source, 0) if source is not None and several_addresses() else None
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=STREAM_TIMEOUT, source_address=bound)
        connection.request("GET", path, headers={"Connection": "close", **headers})
        response = connection.getresponse()
        outcome["status"] = response.status
        buffer = b""
        while piece := response.read1(65536):
            buffer += piece
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                event = parse_frame(frame)
                if event is None:
                    continue
                if event[1] == "text" and outcome["first_text"] is None:
                    outcome["first_text"] = time.perf_counter() - began
                outcome["events"].append(event)
            if cut_after is not None and len(outcome["events"]) >= cut_after:
                break
        connection.close()
    except (OSError, http.client.HTTPException) as err:
        outcome["failed"] = type(err).__name__
    return outcome


def parse_frame(frame: bytes) -> tuple[int | None, str, Any] | None:
    fields = dict(line.split(": ", 1) for line in frame.decode("utf-8").split("\n") if ": " in line)
    if "data" not in fields:
        return None
    return (int(fields["id"]) if "id" in fields else None), fields.get("event", "message"), json.loads(fields["data"])


def stream_path(session: str, run: str) -> str:
    return f"/chat/stream?query={quote(QUESTION)}&session={session}&run={run}"


def run_load(relay: Relay, clients: int, progress: Progress) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    gate = threading.Barrier(clients + 1)

    def client(number: int) -> None:
        port = relay.ports[number % len(relay.ports)]
        try:
            gate.wait()
        except threading.BrokenBarrierError:
            return
        results.append(read_stream(port, stream_path(str(uuid.uuid4()), str(uuid.uuid4())), {}, source=address(number)))

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    peak = [relay.rss_kib()]
    finished = threading.Event()

    def sample() -> None:
        while not finished.wait(0.05):
            peak[0] = max(peak[0], relay.rss_kib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    gate.wait()
    began = time.perf_counter()
    for thread in threads:
        while thread.is_alive():  # short joins: Ctrl-C is heard at once
            thread.join(0.5)
            progress.say(f"{RELAYS[relay.name]} · {clients} streams · {len(results)} done", done=False)
    wall = time.perf_counter() - began
    finished.set()
    sampler.join()
    firsts = sorted(r["first_text"] for r in results if r["first_text"] is not None)
    return {
        "relay": RELAYS[relay.name],
        "clients": clients,
        "completed": sum(any(e[1] == "done" for e in r["events"]) for r in results),
        "5xx": sum((r["status"] or 0) >= 500 for r in results),
        "error_events": sum(any(e[1] == "error" for e in r["events"]) for r in results),
        "error_messages": dict(
            Counter(e[2].get("message", "")[:100] for r in results for e in r["events"] if e[1] == "error")
        ),
        "failed": sum(bool(r["failed"]) for r in results),
        "p50_first_text_s": percentile(firsts, 50),
        "p95_first_text_s": percentile(firsts, 95),
        "wall_s": wall,
        "peak_rss_mib": peak[0] / 1024,
    }


def percentile(values: list[float], p: int) -> float | None:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)] if ordered else None


# ── stage 2: the latency one event gains through Redis ──────────────────────────────────


def event_latency(redis_url: str | None, events: int) -> dict[str, dict[str, float]]:
    """p50/p95 seconds from a producer's append to a reader's receipt: in memory; through Redis with the
    reader in the producer's process (the copy Redis accepted) and on another host (XREAD)."""
    from ink_py.second_article.runs import MemoryRuns

    memory = MemoryRuns()
    found = {"memory": one_latency(memory, memory, events)}
    if redis_url is not None:
        from ink_py.second_article.redis_client import connect_redis
        from ink_py.second_article.stores import redis_stores

        here, there = (redis_stores(connect_redis(redis_url), 600, 10.0)[1] for _ in range(2))
        found["Redis, reader in the same process"] = one_latency(here, here, events)
        found["Redis, reader on another host"] = one_latency(here, there, events)
    return found


def one_latency(writer: Any, reader: Any, events: int) -> dict[str, float]:
    """One producer writes ``events`` events 2 ms apart; one reader follows: p50/p95 append → receipt."""
    from ink_py.second_article.follow import follow

    key = ("bench-latency", str(uuid.uuid4()))
    token = writer.claim(key) or 0
    written: dict[int, float] = {}

    def produce() -> None:
        for number in range(1, events + 1):
            if number % 100 == 0:
                writer.beat([(key, token)])  # the lease a producer renews (producer.py's keeper)
            written[number] = time.perf_counter()
            writer.append(key, token, "text", {"text": "字"}, last=number == events)
            time.sleep(0.002)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    latencies = []
    for item in follow(reader, key, 0, keep_alive=60.0):
        if item is not None and item[0] is not None:
            latencies.append(time.perf_counter() - written[item[0]])
    producer.join()
    return {"p50": percentile(latencies, 50) or 0.0, "p95": percentile(latencies, 95) or 0.0}


# ── stage 3: every client drops once and resumes ────────────────────────────────────────


def resume_storm(relay: Relay, clients: int, progress: Progress) -> dict[str, Any]:
    """Each client cuts its stream after a few events and resumes with Last-Event-ID, on the other host."""
    whole = read_stream(relay.ports[0], stream_path(str(uuid.uuid4()), str(uuid.uuid4())), {})
    reference = [event[1:] for event in whole["events"]]
    outcomes: list[dict[str, int]] = []

    def client(number: int) -> None:
        session, run = str(uuid.uuid4()), str(uuid.uuid4())
        first, second = relay.ports[number % len(relay.ports)], relay.ports[(number + 1) % len(relay.ports)]
        cut = random.Random(number).randint(1, 12)
        before = read_stream(first, stream_path(session, run), {}, cut_after=cut, source=address(number))["events"]
        last = before[-1][0] if before else None
        headers = {"Last-Event-ID": str(last)} if last is not None else {}
        after = read_stream(second, stream_path(session, run), headers, source=address(number))["events"]
        ids = [event[0] for event in before + after]
        expected = set(range(1, len(reference) + 1))
        outcomes.append({
            "lost": len(expected - set(ids)),
            "duplicated": len(ids) - len(set(ids)),
            "different": int([e[1:] for e in before + after] != reference),
        })  # fmt: skip

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(0.5)
            progress.say(f"resume storm · {RELAYS[relay.name]} · {len(outcomes)}/{clients} resumed", done=False)
    return {
        "relay": RELAYS[relay.name],
        "clients": clients,
        "resumed": len(outcomes),
        "events_lost": sum(o["lost"] for o in outcomes),
        "events_duplicated": sum(o["duplicated"] for o in outcomes),
        "answers_different": sum(o["different"] for o in outcomes),
    }


# ── stage 5: one client floods while others ask ────────────────────────────────────────


def flood(relay: Relay, others: int, progress: Progress, connections: int = FLOOD_CONNECTIONS) -> dict[str, Any]:
    """The flooder asks from ``connections`` connections at once (half of them each a new conversation,
    half no conversation at all, as a script would) for as long as the others take; once it is under
    way, ``others`` clients ask the README question, each once. ``connections`` 0: the others alone."""
    statuses: dict[int, int] = {}
    results: list[dict[str, Any]] = []
    under_way, done = threading.Event(), threading.Event()
    if not connections:
        under_way.set()

    def flooder(number: int) -> None:
        port = relay.ports[number % len(relay.ports)]
        while not done.is_set():
            session = f"&session={uuid.uuid4()}" if number % 2 else ""
            path = f"/chat/stream?query=flood{session}&run={uuid.uuid4()}"
            status = read_stream(port, path, {}, source=FLOODER)["status"] or 0
            statuses[status] = statuses.get(status, 0) + 1
            if sum(statuses.values()) >= connections:
                under_way.set()

    def other(number: int) -> None:
        under_way.wait(30)
        port = relay.ports[number % len(relay.ports)]
        path = stream_path(str(uuid.uuid4()), str(uuid.uuid4()))
        results.append(read_stream(port, path, {}, source=address(number)))

    floods = [threading.Thread(target=flooder, args=(n,), daemon=True) for n in range(connections)]
    asking = [threading.Thread(target=other, args=(n,), daemon=True) for n in range(others)]
    for thread in [*floods, *asking]:
        thread.start()
    for thread in asking:
        while thread.is_alive():
            thread.join(0.5)
            progress.say(f"flood · {RELAYS[relay.name]} · {len(results)}/{others} others done", done=False)
    done.set()
    for thread in floods:
        while thread.is_alive():
            thread.join(0.5)
    firsts = sorted(r["first_text"] for r in results if r["first_text"] is not None)
    ends = [r["events"][-1] if r["events"] else (None, "", {}) for r in results]
    return {
        "relay": RELAYS[relay.name],
        "flooder": f"{connections} at once" if connections else "none",
        "others": others,
        "completed": sum(end[1] == "done" and end[2].get("stopReason") == "completed" for end in ends),
        "aborted": sum(end[1] == "error" or end[2].get("stopReason") == "aborted" for end in ends),
        "refused": sum((r["status"] or 0) != 200 for r in results),
        "p50_first_text_s": percentile(firsts, 50),
        "p95_first_text_s": percentile(firsts, 95),
        "flood_requests": sum(statuses.values()),
        "flood_200": statuses.get(200, 0),
        "flood_429": statuses.get(429, 0),
        "flood_503": statuses.get(503, 0),
    }


def format_flood(row: dict[str, Any]) -> str:
    return (
        f"| {row['relay']} | {row['flooder']} | {row['others']} | {row['completed']} | {row['aborted']} "
        f"| {row['refused']} | {seconds(row['p50_first_text_s'])} | {seconds(row['p95_first_text_s'])} "
        f"| {row['flood_requests']} | {row['flood_200']} | {row['flood_429']} | {row['flood_503']} |"
    )


# ── stage 4: what one stream costs Redis ────────────────────────────────────────────────


def redis_cost(client: Any, streams: int, used_before: int) -> dict[str, Any]:
    stats = client.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): value["calls"] for name, value in stats.items()}
    used = int(client.info("memory")["used_memory"])
    sample: dict[str, int] = {}
    for kind in ("log", "run", "conv"):
        key = next(iter(client.scan_iter(match=f"ink:{kind}:*", count=1000)), None)
        sample[kind] = int(client.memory_usage(key) or 0) if key is not None else 0
    return {
        "streams": streams,
        "commands_per_stream": {name: round(count / streams, 1) for name, count in sorted(calls.items())},
        "memory_per_stream_bytes": (used - used_before) // max(streams, 1),
        "memory_usage_log_bytes": sample["log"],
        "memory_usage_run_bytes": sample["run"],
        "memory_usage_conv_bytes": sample["conv"],
        "keys": int(client.dbsize()),
    }


# ── main ────────────────────────────────────────────────────────────────────────────────


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,200,300", help="clients at once, comma-separated (default 100,200,300)")
    parser.add_argument("--storm", type=int, default=100, help="clients in the resume storm (default 100)")
    parser.add_argument("--relays", default="serve,gunicorn,redis", help="contenders: serve, gunicorn, redis")
    parser.add_argument("--latency-events", type=int, default=2000, help="events in the latency stage (default 2000)")
    parser.add_argument("--flood", type=int, default=50, help="others asking during the flood (default 50; 0: none)")
    parser.add_argument("--out", default=str(HERE / "results"), help="folder for relay_load.{md,csv,png}")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    names = [name for name in args.relays.split(",") if name]
    if set(names) - set(RELAYS):
        parser.error(f"--relays: choose from {', '.join(RELAYS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stopped like Ctrl-C
    try:
        results = measure(sizes, names, args.storm, args.latency_events, args.flood, progress)
    except KeyboardInterrupt:
        for process in STARTED:
            process.kill()  # no graceful shutdown: out within a second
        progress.say("interrupted: no results written")
        return 130
    finally:
        for process in STARTED:
            if process.poll() is None:
                stop(process)
    write(out, results)
    progress.say(f"wrote {out / 'relay_load.md'}")
    return 0


def measure(
    sizes: list[int], names: list[str], storm: int, events: int, others: int, progress: Progress
) -> dict[str, Any]:
    logs = Path(tempfile.mkdtemp(prefix="relay-load-"))
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(logs)}
    progress.say("starting the model (ink-py serve-model --delay 0)")
    _, model_port = start([sys.executable, "-m", "ink_py", "serve-model", "--delay", "0"], env, logs / "model.log")
    model_url = f"http://127.0.0.1:{model_port}/v1"
    redis_process, redis_url = start_redis(logs) if "redis" in names else (None, None)
    redis = redis_client(redis_url) if redis_url else None
    results: dict[str, Any] = {"load": [], "storm": [], "latency": {}, "redis": None, "flood": []}
    began_load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    for clients in sizes:  # interleaved: each N through every contender, one after the other
        for name in names:
            progress.say(f"{RELAYS[name]} · {clients} streams · starting", done=False)
            if redis is not None:
                redis.flushall()
                redis.config_resetstat()
            used_before = int(redis.info("memory")["used_memory"]) if redis is not None else 0
            relay = Relay(name, model_url, logs, redis_url)
            try:
                row = run_load(relay, clients, progress)
                if redis_process is not None and redis is not None and name == "redis":
                    row["peak_rss_mib"] += tree_rss_kib(redis_process.pid) / 1024  # and redis-server's own
                    if clients == max(sizes):
                        results["redis"] = redis_cost(redis, clients, used_before)
            finally:
                relay.close()
            results["load"].append(row)
            progress.say(format_row(row))
    progress.say(f"latency per event through the run log ({events} events, 2 ms apart)", done=False)
    results["latency"] = event_latency(redis_url, events)
    progress.say(
        "latency per event: " + ", ".join(f"{k} p50 {v['p50'] * 1000:.2f} ms" for k, v in results["latency"].items())
    )
    for name in names:
        relay = Relay(name, model_url, logs, redis_url)
        try:
            row = resume_storm(relay, storm, progress)
        finally:
            relay.close()
        results["storm"].append(row)
        progress.say(f"resume storm · {row['relay']}: lost {row['events_lost']}, duplicated {row['events_duplicated']}")
    if others and not several_addresses():
        progress.say("flood: skipped (it needs several loopback addresses: Linux routes 127/8 to lo)")
    for name in names if others and several_addresses() else []:
        if redis is not None:
            redis.flushall()
        relay = Relay(name, model_url, logs, redis_url)
        try:
            rows = [flood(relay, others, progress, 0), flood(relay, others, progress)]  # alone, then flooded
        finally:
            relay.close()
        results["flood"] += rows
        row = rows[-1]
        progress.say(
            f"flood · {row['relay']}: others completed {row['completed']}/{row['others']}, aborted {row['aborted']}, "
            f"p95 first text {seconds(row['p95_first_text_s'])} s (alone {seconds(rows[0]['p95_first_text_s'])} s); "
            f"the flooder got {row['flood_429']} × 429 of {row['flood_requests']}"
        )
    results["load_average"] = (began_load, os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0)
    return results


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def format_row(row: dict[str, Any]) -> str:
    return (
        f"| {row['relay']} | {row['clients']} | {row['completed']} | {row['5xx']} | {row['error_events']} "
        f"| {row['failed']} | {seconds(row['p50_first_text_s'])} | {seconds(row['p95_first_text_s'])} "
        f"| {row['wall_s']:.1f} | {row['peak_rss_mib']:.0f} |"
    )


def write(out: Path, results: dict[str, Any]) -> None:
    rows = results["load"]
    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=[name for name in rows[0] if name != "error_messages"])
    writer.writeheader()
    writer.writerows({name: value for name, value in row.items() if name != "error_messages"} for row in rows)
    write_text_atomically(out / "relay_load.csv", table.getvalue())
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# The relay under load",
        "",
        f"`python benchmarks/relay_load.py` — {when}; {os.cpu_count()} CPUs, Python {platform.python_version()}",
        f"on {platform.system()}; clients, relays, Redis and the model share the machine. One run: read the ratios.",
        f"Load average when it began and ended: {results['load_average'][0]:.1f} and {results['load_average'][1]:.1f}"
        f" (above {os.cpu_count()}: other work shared the machine too).",
        "",
        "| relay | clients | completed | 5xx | error events | failed | p50 first text s | p95 first text s "
        "| wall s | peak memory MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *map(format_row, rows),
        "",
    ]
    said = [(row, message, count) for row in rows for message, count in row["error_messages"].items()]
    lines += [
        f"- error events, {row['relay']} × {row['clients']}: {count} × “{message}”" for row, message, count in said
    ]
    lines += [""] * bool(said)
    latency = results["latency"]
    lines += ["## Latency per event through the run log", "", "| store | p50 ms | p95 ms |", "|---|---|---|"]
    lines += [f"| {name} | {value['p50'] * 1000:.2f} | {value['p95'] * 1000:.2f} |" for name, value in latency.items()]
    for name in [name for name in latency if name != "memory"]:
        added = {p: (latency[name][p] - latency["memory"][p]) * 1000 for p in ("p50", "p95")}
        lines += [f"| added by {name} | {added['p50']:.2f} | {added['p95']:.2f} |"]
    lines += ["", "## Resume storm: every client drops once and resumes", ""]
    lines += [
        "| relay | clients | resumed | events lost | events duplicated | answers different |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['relay']} | {r['clients']} | {r['resumed']} | {r['events_lost']} | {r['events_duplicated']} "
        f"| {r['answers_different']} |"
        for r in results["storm"]
    ]
    if results["flood"]:
        lines += [
            "",
            "## A flood: one client, from its own address, beyond its quotas while others ask",
            "",
            f"The flooder keeps {FLOOD_CONNECTIONS} requests going at once (half each a new conversation, half none),",
            "its quotas at their defaults (8 runs at once, 20 new conversations a minute); the others ask the",
            "README question once each, every one from its own address — alone first, then during the flood.",
            "",
            "| relay | flooder | others | completed | aborted | refused | p50 first text s | p95 first text s "
            "| flood requests | flood 200 | flood 429 | flood 503 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *map(format_flood, results["flood"]),
        ]
    cost = results["redis"]
    if cost is not None:
        commands = ", ".join(f"{name} {count}" for name, count in cost["commands_per_stream"].items())
        lines += [
            "",
            f"## What one stream costs Redis ({cost['streams']} streams of the README question)",
            "",
            f"- commands per stream: {commands}",
            f"- memory per stream kept for INK_RUN_TTL: {cost['memory_per_stream_bytes']} bytes (INFO used_memory);"
            f" MEMORY USAGE of one log {cost['memory_usage_log_bytes']} bytes, of its run hash"
            f" {cost['memory_usage_run_bytes']} bytes, of one conversation {cost['memory_usage_conv_bytes']} bytes;"
            f" {cost['keys']} keys",
            "- EVALSHA is one script call (an append, a beat, a claim…); the commands the scripts run inside Redis"
            " (HINCRBY, XADD, EXPIRE, HMGET, TIME…) are counted too. Appends go in pipelines: one round trip"
            " carries many.",
        ]
    if plot(out, results):
        lines[6:6] = ["![the relay under load](relay_load.png)", ""]
    write_text_atomically(out / "relay_load.md", "\n".join(lines) + "\n")


def plot(out: Path, results: dict[str, Any]) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)", file=sys.stderr)
        return False
    rows = results["load"]
    figure, (left, middle, right, latency) = plt.subplots(1, 4, figsize=(17, 4))
    for name in dict.fromkeys(row["relay"] for row in rows):
        mine = [row for row in rows if row["relay"] == name]
        clients = [row["clients"] for row in mine]
        left.plot(clients, [row["completed"] for row in mine], marker="o", label=name)
        line = middle.plot(clients, [row["p95_first_text_s"] or 0 for row in mine], marker="o", label=f"{name} p95")
        middle.plot(clients, [row["p50_first_text_s"] or 0 for row in mine], marker=".", linestyle="--",
                    color=line[0].get_color(), label=f"{name} p50")  # fmt: skip
        right.plot(clients, [row["peak_rss_mib"] for row in mine], marker="o", label=name)
    left.plot(clients, clients, color="grey", linestyle=":", label="all")
    stores = list(results["latency"])
    for offset, p in ((-0.2, "p50"), (0.2, "p95")):
        latency.bar([n + offset for n in range(len(stores))], [results["latency"][s][p] * 1000 for s in stores], 0.4,
                    label=p)  # fmt: skip
    latency.set_xticks(range(len(stores)), [name.replace(", ", ",\n") for name in stores], fontsize=7)
    latency.set_ylabel("ms")
    titles = {left: "streams completed", middle: "time to first text (s)", right: "peak memory (MiB)"}
    for axes, title in titles.items():
        axes.set_xlabel("clients at once")
        axes.set_title(title)
        axes.grid(alpha=0.3)
    latency.set_title("latency per event through the run log")
    latency.grid(alpha=0.3, axis="y")
    for axes in (left, middle, latency):
        axes.legend(fontsize=7)
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=110)
    write_bytes_atomically(out / "relay_load.png", image.getvalue())
    return True


if __name__ == "__main__":
    raise SystemExit(main())
