"""benchmarks/relay_load.py shows where it is, and Ctrl-C leaves nothing half-written (issue 29 item 2).

Run as a user runs it, on the contender that needs nothing optional (``--relays serve``) and
tiny sizes: with output to a pipe, one plain line per stage, each with the time so far, and
the result files written whole, the flood's others all completed and its flooder refused; with
output to a terminal (a pty), the same lines rewritten in
place; interrupted mid-stage with SIGINT, exit 130, one line saying nothing was written, no
result file and no temporary file in the output folder, and no server left running.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .addresses import NEEDS_LOOPBACKS
from .helpers import ROOT, ctrl_c_reaches_children

# A mark, not a module-level skip: a run that deselects these tests (pytest -m ex1) does not report them.
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty and SIGINT delivery")

BENCH = [sys.executable, str(ROOT / "benchmarks" / "relay_load.py"), "--relays", "serve"]
QUICK = ["--sizes", "3", "--storm", "3", "--latency-events", "40", "--flood", "3"]
WAIT_SECONDS = 120.0  # an upper bound on a run, never a speed check
LINE = re.compile(r"^\[ *\d+\.\ds\] ")


def in_scratch(tmp_path: Path) -> dict[str, str]:
    """The environment of a run whose temporary folder is tmp_path/scratch: its servers' logs (and HOME) go
    there, not into the machine's temporary folder, where the benchmark keeps them."""
    (tmp_path / "scratch").mkdir()
    return {**os.environ, "TMPDIR": str(tmp_path / "scratch")}


def test_progress_is_one_plain_line_per_stage_and_the_results_are_written_whole(tmp_path: Path) -> None:
    done = subprocess.run(
        [*BENCH, *QUICK, "--out", str(tmp_path)], capture_output=True, text=True, timeout=WAIT_SECONDS,
        env=in_scratch(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert all(LINE.match(line) for line in lines if not line.startswith("(no matplotlib")), lines
    said = [LINE.sub("", line) for line in lines]
    assert said[0] == "starting the model (ink-py serve-model --delay 0)"
    assert any(line.startswith("| ink-py serve | 3 | 3 | 0 | 0 | 0 |") for line in said)  # all three completed
    assert any(line.startswith("latency per event: memory p50 ") for line in said)
    assert "resume storm · ink-py serve: lost 0, duplicated 0" in said
    flood = [line for line in said if line.startswith("flood · ink-py serve: ")]
    if NEEDS_LOOPBACKS is None:  # the flooder from its own address, beyond its quotas: refused, others whole
        [line] = flood
        assert line.startswith("flood · ink-py serve: others completed 3/3, aborted 0, p95 first text ")
        assert int(line.split("the flooder got ")[1].split(" × 429")[0]) > 0
    assert said[-1] == f"wrote {tmp_path / 'relay_load.md'}"
    assert "\r" not in done.stderr  # no terminal control in a pipe
    names = sorted(path.name for path in tmp_path.iterdir())
    assert {"relay_load.md", "relay_load.csv"} <= set(names) and not [n for n in names if n.endswith(".tmp")]


def test_on_a_terminal_the_line_is_rewritten_in_place(tmp_path: Path) -> None:
    import pty

    ours, theirs = pty.openpty()
    env = in_scratch(tmp_path)
    argv = [*BENCH, *QUICK, "--flood", "0", "--out", str(tmp_path)]
    process = subprocess.Popen(argv, stdout=theirs, stderr=theirs, env=env)
    os.close(theirs)
    seen = b""
    while True:
        try:
            piece = os.read(ours, 65536)
        except OSError:  # the other end closed: the run is over
            break
        if not piece:
            break
        seen += piece
    os.close(ours)
    assert process.wait(WAIT_SECONDS) == 0
    assert b"\r\x1b[K[" in seen  # rewritten in place
    assert b"wrote " in seen


def test_ctrl_c_mid_run_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    out, scratch = tmp_path / "results", tmp_path / "scratch"
    argv = [*BENCH, "--sizes", "200", "--storm", "3", "--latency-events", "40", "--flood", "0", "--out", str(out)]
    env = in_scratch(tmp_path)  # and its servers are found by it
    with ctrl_c_reaches_children():
        process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    first = process.stderr.readline()  # the model is starting: the run is under way
    assert first.endswith("starting the model (ink-py serve-model --delay 0)\n")
    deadline = time.monotonic() + WAIT_SECONDS
    while not list(scratch.glob("relay-load-*/serve-*.log")) and time.monotonic() < deadline:
        time.sleep(0.02)  # until the relay starts: into the load stage
    process.send_signal(signal.SIGINT)
    asked = time.monotonic()
    rest = process.communicate(timeout=WAIT_SECONDS)[1]
    took = time.monotonic() - asked
    assert process.returncode == 130
    assert rest.rstrip("\n").splitlines()[-1].endswith("interrupted: no results written")
    assert "Traceback" not in rest
    assert list(out.iterdir()) == []  # no result file, whole or half, and no temporary one
    assert took < WAIT_SECONDS  # bounded; benchmarks/README.md reports what it took
    assert processes_started_in(scratch) == []  # the model and the relay are gone too


def processes_started_in(folder: Path) -> list[int]:
    """The processes whose environment names ``folder`` (the benchmark's children have HOME there)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(folder).encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
