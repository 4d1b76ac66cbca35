"""``check --all`` and ``report`` show where they are while the tests run, and Ctrl-C stops them cleanly.

Each run of the tests says which exercise it checks (or that it is the whole suite) and how many
tests are done of how many: on a terminal one line rewritten in place, otherwise plain lines (the
start, each quarter, the end) — from pytest's own hooks in the child (check_plugin.py), read as they
come (ink_py/course/running.py). Ctrl-C — SIGINT to the real command — ends it with 130, kills the
child pytest, and leaves the progress file and any report as they were, no temporary file behind
(issue 29 item 2). Waits are bounded; nothing here asserts a speed.
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ink_py.course.running import Progress

from .helpers import ctrl_c_reaches_children
from .test_course_language import environment
from .test_exercise_command import run
from .test_exercises import put_back


def test_plain_lines_the_start_each_quarter_and_the_end():
    lines = []
    progress = Progress(lines.append, terminal=False)
    progress.begin("checking exercise 1 · parse-frame")
    for done in range(0, 41):
        progress.update(done, 40, "ink_py/course/checks/test_parse_frame.py", [1])
    progress.clear()
    assert lines == [
        "checking exercise 1 · parse-frame: collecting the tests …\n",
        *[f"checking exercise 1 · parse-frame: {done}/40 tests\n" for done in (0, 10, 20, 30, 40)],
    ]
    lines.clear()
    progress.begin("the whole suite on your copy")
    progress.update(0, 40, "", [])
    progress.update(7, 40, "tests/test_loop.py", [7, 8])  # stopped at the first failure
    progress.clear()
    assert lines[-1] == "the whole suite on your copy: 7/40 tests\n"  # the count it reached, at the end


def test_on_a_terminal_one_line_is_rewritten_in_place_and_cleared_at_the_end():
    full = "the whole suite on your copy: 812/2013 tests · now tests/test_loop.py (exercise 7, 8)"
    for width, shown in [(200, full), (60, full[:59])]:  # never wider than the terminal: no wrapped line
        written = []
        progress = Progress(written.append, terminal=True, width=width)
        progress.begin("the whole suite on your copy")
        progress.update(812, 2013, "tests/test_loop.py", [7, 8])
        progress.clear()
        text = "".join(written)
        assert "\n" not in text and text.count("\r") >= 4
        assert "\r" + shown + "\r" in text or text.count("\r" + shown) == 2
        assert text.endswith("\r" + " " * len(shown) + "\r")  # nothing left on the line


def copy_with_exercise_1(tmp_path, monkeypatch, capsys) -> Path:
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    put_back(tmp_path / "my_ink", 1)
    return tmp_path / "my_ink"


def spawn(folder: Path, *argv: str, stderr=subprocess.PIPE, language: str = "en") -> subprocess.Popen:
    with ctrl_c_reaches_children():
        return subprocess.Popen(
            [sys.executable, "-m", "ink_py", "exercise", *argv],
            cwd=folder,
            env=environment(language, "locale"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )


def read_until(fd: int, pattern: re.Pattern, limit: float = 120.0) -> tuple[bytes, float]:
    """Read ``fd`` until ``pattern`` matches what was read (or it ends); (what was read, seconds it took)."""
    seen, started = b"", time.monotonic()
    while not pattern.search(seen) and time.monotonic() - started < limit:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # a terminal whose other end closed
                break
            if not data:
                break
            seen += data
    return seen, time.monotonic() - started


def test_check_all_prints_plain_progress_lines_when_stderr_is_no_terminal(tmp_path, monkeypatch, capsys):
    copy = copy_with_exercise_1(tmp_path, monkeypatch, capsys)
    process = spawn(tmp_path, "check", "--all")
    try:
        seen, _ = read_until(process.stderr.fileno(), re.compile(rb"31/31 tests\n"))
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    lines = (seen + err).decode().splitlines()
    assert lines[0] == "checking exercise 1 · parse-frame: collecting the tests …"
    counts = [
        int(m[1]) for line in lines if (m := re.fullmatch(r"checking exercise 1 · parse-frame: (\d+)/31 tests", line))
    ]
    assert counts[0] == 0 and counts[-1] == 31 and counts == sorted(counts) and 3 <= len(counts) <= 5
    assert process.returncode == 0 and json.loads((copy / ".exercises.json").read_text())["checks"] == {"1": "green"}


def test_check_all_rewrites_one_line_in_place_on_a_terminal(tmp_path, monkeypatch, capsys):
    copy_with_exercise_1(tmp_path, monkeypatch, capsys)
    ours, theirs = pty.openpty()
    process = spawn(tmp_path, "check", "--all", stderr=theirs, language="zh")
    os.close(theirs)
    try:
        seen, _ = read_until(ours, re.compile("31/31 个测试".encode()))
        out, _ = process.communicate(timeout=120)
        seen += read_until(ours, re.compile(rb"\r$"), limit=2.0)[0]
    finally:
        process.kill()
        os.close(ours)
    shown = seen.decode("utf-8", "replace")
    updates = re.findall(r"\r(正在检查练习 1 · parse-frame:(\d+)/31 个测试 · 正在跑 test_parse_frame\.py)", shown)
    assert len({done for _, done in updates}) >= 5  # in place, test after test
    assert "\n" not in shown.split("正在收集测试")[1]  # never a new line while it runs
    assert process.returncode == 0 and "1 parse-frame      通过      31/31" in out.decode()


def child_pytests(copy: Path) -> list[int]:
    """The processes still running pytest on ``copy``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and b"pytest" in command and str(copy.resolve()).encode() in command:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("command", [["check", "--all"], ["report"]])
def test_ctrl_c_stops_at_once_with_130_and_leaves_every_file_whole(tmp_path, monkeypatch, capsys, command):
    copy = copy_with_exercise_1(tmp_path, monkeypatch, capsys)
    (tmp_path / "exercise-report.json").write_text('{"an": "earlier report"}\n')
    before = {path: path.read_bytes() for path in [copy / ".exercises.json", tmp_path / "exercise-report.json"]}
    process = spawn(tmp_path, *command)
    try:
        seen, took = read_until(process.stderr.fileno(), re.compile(rb"\d+/\d+ tests\n"))
        assert b"tests\n" in seen, seen  # the child is running its tests now
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        stopped = time.monotonic() - interrupted
    finally:
        process.kill()
    assert process.returncode == 130, (seen, stopped)
    assert {path: path.read_bytes() for path in before} == before
    assert not (tmp_path / "exercise-report.xml").exists()
    assert [p.name for p in [*tmp_path.iterdir(), *copy.iterdir()] if p.name.endswith(".tmp")] == []
    assert child_pytests(copy) == []
    print(f"first count after {took:.1f} s; stopped {stopped:.2f} s after SIGINT")  # for the record (-s)


def test_a_pytest_the_suite_runs_itself_never_writes_into_the_checks_progress_or_report(tmp_path, monkeypatch):
    """The whole suite holds tests that run pytest (and ink-py exercise) themselves: the plugin takes
    its two files out of the environment as it starts, so those children cannot inherit them (a
    child's "4 tests" once became the suite's total: "107/4 tests")."""
    from ink_py.course import check_plugin
    from ink_py.course.checker import REPORT_ENV
    from ink_py.course.running import PROGRESS_ENV

    monkeypatch.setenv(REPORT_ENV, str(tmp_path / "report.json"))
    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "progress.jsonl"))
    monkeypatch.setattr(check_plugin, "_report", {})
    monkeypatch.setattr(check_plugin, "_progress", [])
    check_plugin.pytest_configure(None)
    try:
        assert REPORT_ENV not in os.environ and PROGRESS_ENV not in os.environ
        check_plugin.progress_line({"total": 3})
        assert (tmp_path / "progress.jsonl").read_text() == '{"total": 3}\n'
        check_plugin.pytest_sessionfinish(None, 0)
        assert json.loads((tmp_path / "report.json").read_text())["exitstatus"] == 0
    finally:
        os.close(check_plugin._progress[0])
