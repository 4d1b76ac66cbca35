"""The relay under load: N browsers at once through ``ink-py serve`` and through gunicorn.

    pip install -e '.[bench]'              # gunicorn (and matplotlib for the plot)
    python benchmarks/relay_load.py        # about two minutes; writes benchmarks/results/relay_load.*
    python benchmarks/relay_load.py --sizes 20 --out /tmp/x   # a quick look
    python benchmarks/relay_load.py --before /tmp/old          # and ink-py serve from another checkout

One unpaced ``ink-py serve-model`` (the built-in scripted model, no pauses) answers every
model request. In front of it, in turn, a fresh relay process for each N:

    ink-py serve          one process, the zero-dependency server (at most 256 connections)
    gunicorn -w 2         the WSGI application, two worker processes of --threads each,
                          conversations in memory (no session is sent: one question each)

N clients (50, 150, 300) open ``/chat/stream?query=<the README question>`` at the same
moment — each a thread with its own connection, like a browser tab — and read the stream
to its end. Per (contender, N): streams completed (``done`` received), 5xx answers, streams
that ended in ``error``, p50/p95 time to the first ``text`` event, the wall time until the
last stream ended, and the relay's peak memory (the sum of VmRSS over its processes,
sampled every 50 ms; Linux). The machine is shared and small: read the shape, not the
milliseconds. This is a benchmark, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import http.client
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUESTION = "读取 README.md,告诉我项目怎样启动"
GUNICORN_THREADS = 160  # per worker: two workers hold 320 streams
STREAM_TIMEOUT = 180.0  # one client gives up after this
URL_LINE = re.compile(rb"(?:Listening at: |^)http://127\.0\.0\.1:(\d+)/?", re.M)


def start(argv: list[str], env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server process; return it and the port it printed (ink-py's first line, gunicorn's log)."""
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not (found := URL_LINE.search(log.read_bytes())):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{argv[2]} did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.05)
    return process, int(found[1])


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


def one_stream(port: int, gate: threading.Barrier, results: list[dict[str, Any]]) -> None:
    """A browser tab: open the stream when all are ready, read it to the end, note what happened."""
    outcome: dict[str, Any] = {"status": None, "first_text": None, "done": False, "error": False, "failed": ""}
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=STREAM_TIMEOUT)
        gate.wait()
        began = time.perf_counter()
        connection.request("GET", "/chat/stream?query=" + quote(QUESTION), headers={"Connection": "close"})
        response = connection.getresponse()
        outcome["status"] = response.status
        seen = b""
        while piece := response.read1(65536):
            seen = seen[-64:] + piece
            if outcome["first_text"] is None and b"event: text" in seen:
                outcome["first_text"] = time.perf_counter() - began
            outcome["done"] = outcome["done"] or b"event: done" in seen
            outcome["error"] = outcome["error"] or b"event: error" in seen
        connection.close()
    except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as err:
        outcome["failed"] = type(err).__name__
    results.append(outcome)


def run_load(port: int, pid: int, clients: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    gate = threading.Barrier(clients + 1)
    threads = [threading.Thread(target=one_stream, args=(port, gate, results), daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    peak = [tree_rss_kib(pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            peak[0] = max(peak[0], tree_rss_kib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    gate.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join(STREAM_TIMEOUT + 10)
    wall = time.perf_counter() - began
    stop.set()
    sampler.join()
    firsts = sorted(r["first_text"] for r in results if r["first_text"] is not None)
    return {
        "clients": clients,
        "completed": sum(r["done"] for r in results),
        "5xx": sum((r["status"] or 0) >= 500 for r in results),
        "error_events": sum(r["error"] for r in results),
        "failed": sum(bool(r["failed"]) for r in results),
        "p50_first_text_s": statistics.median(firsts) if firsts else None,
        "p95_first_text_s": firsts[max(0, int(len(firsts) * 0.95) - 1)] if firsts else None,
        "wall_s": wall,
        "peak_rss_mib": peak[0] / 1024,
    }


def contenders(model_url: str, before: str | None) -> dict[str, tuple[list[str], str]]:
    """name → (argv, PYTHONPATH)."""
    python = sys.executable
    serve = [python, "-m", "ink_py", "serve", "--port", "0", "--base-url", model_url, "--model", "bench",
             "--workspace", str(ROOT)]  # fmt: skip
    found = {"ink-py serve (before)": (serve, before)} if before else {}
    return found | {
        "ink-py serve": (serve, str(ROOT)),
        f"gunicorn -w 2 --threads {GUNICORN_THREADS}": ([
            python, "-m", "gunicorn", "-k", "gthread", "-w", "2", "--threads", str(GUNICORN_THREADS),
            "--limit-request-line", "0", "-b", "127.0.0.1:0", "ink_py.second_article.relay:create_app()",
        ], str(ROOT)),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,150,300", help="clients at once, comma-separated (default 50,150,300)")
    parser.add_argument("--out", default=str(HERE / "results"), help="folder for relay_load.{md,csv,png}")
    parser.add_argument("--before", metavar="DIR", help="also ink-py serve from the checkout in DIR (e.g. git archive)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="relay-load-"))
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(logs)}
    model, model_port = start([sys.executable, "-m", "ink_py", "serve-model", "--delay", "0"], env, logs / "model.log")
    model_url = f"http://127.0.0.1:{model_port}/v1"
    relay_env = {**env, "OPENAI_BASE_URL": model_url, "INK_MODEL": "bench", "INK_WORKSPACE": str(ROOT)}
    rows: list[dict[str, Any]] = []
    try:
        for clients in sizes:  # interleaved: each N through both, one after the other
            for name, (argv, path) in contenders(model_url, args.before).items():
                relay, port = start(argv, {**relay_env, "PYTHONPATH": path}, logs / f"{len(rows)}.log")
                try:
                    wait_ready(port)
                    row = {"relay": name, **run_load(port, relay.pid, clients)}
                finally:
                    relay.terminate()
                    relay.wait(30)
                rows.append(row)
                print(format_row(row), flush=True)
    finally:
        model.terminate()
        model.wait(30)
    write(out, rows)
    return 0


def format_row(row: dict[str, Any]) -> str:
    def seconds(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    return (
        f"| {row['relay']} | {row['clients']} | {row['completed']} | {row['5xx']} | {row['error_events']} "
        f"| {row['failed']} | {seconds(row['p50_first_text_s'])} | {seconds(row['p95_first_text_s'])} "
        f"| {row['wall_s']:.1f} | {row['peak_rss_mib']:.0f} |"
    )


def write(out: Path, rows: list[dict[str, Any]]) -> None:
    with open(out / "relay_load.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# The relay under load",
        "",
        f"`python benchmarks/relay_load.py` — {when}; {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "on " + platform.system() + "; clients, relay and model share the machine. `ink-py serve (before)`: the same",
        "command from the checkout given with `--before` (the relay before it became a WSGI application).",
        "",
        "| relay | clients | completed | 5xx | error events | failed | p50 first text s | p95 first text s "
        "| wall s | peak memory MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *map(format_row, rows),
        "",
    ]
    if plot(out, rows):
        lines[6:6] = ["![the relay under load](relay_load.png)", ""]
    (out / "relay_load.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {out / 'relay_load.md'}")


def plot(out: Path, rows: list[dict[str, Any]]) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)", file=sys.stderr)
        return False
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(13, 4))
    for name in dict.fromkeys(row["relay"] for row in rows):
        mine = [row for row in rows if row["relay"] == name]
        clients = [row["clients"] for row in mine]
        left.plot(clients, [row["completed"] for row in mine], marker="o", label=name)
        middle.plot(clients, [row["p95_first_text_s"] or 0 for row in mine], marker="o", label=name)
        right.plot(clients, [row["peak_rss_mib"] for row in mine], marker="o", label=name)
    left.plot(clients, clients, color="grey", linestyle=":", label="all")
    titles = {left: "streams completed", middle: "p95 time to first text (s)", right: "peak memory (MiB)"}
    for axes, title in titles.items():
        axes.set_xlabel("clients at once")
        axes.set_title(title)
        axes.grid(alpha=0.3)
    left.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "relay_load.png", dpi=110)
    return True


if __name__ == "__main__":
    raise SystemExit(main())
