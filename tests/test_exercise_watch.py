"""``ink-py exercise watch`` (issue 34 item 3): the course's loop, as a student meets it.

On a pseudo-terminal that is the command's controlling terminal (so a typed ``\\x03`` is a real
SIGINT from the terminal driver): each key without Enter, a save that turns red into green and
``n`` moving on, Ctrl-C in the middle of a check, a terminal that closes; the terminal's attributes
compared before and after. Piped: a line per command, the end of the input quitting, the closing
message when the last exercise turns green, Chinese words. In process, with a check that only
counts (``check`` is what tests/test_exercise_command.py tests): a save during a check, editors'
files, the input readers, the progress line. The tests on a terminal or a pipe run real checks (a
child pytest each, about 2–3 s): that is what they test; every wait is bounded by a deadline only
a failure reaches.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from ink_py.course import watch as watching
from ink_py.course.catalogue import EXERCISES, ExerciseError
from ink_py.course.keypress import one_key_at_a_time
from ink_py.course.saves import snapshot
from ink_py.course.state import load_state, save_state
from ink_py.course.working_copy import start

from .helpers import ROOT, ctrl_c_reaches_children
from .test_course_language import LOCALE_VARIABLES, sentences_of_the_other
from .test_course_progress import child_pytests, read_until
from .test_exercise_command import run
from .test_exercises import put_back

WAIT_SECONDS = 120.0  # an upper bound on any one wait (a check on two busy cores), never a speed check
KEYS_LINE = "watching my_ink: every save checks again"


def watch_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARIABLES}
    return {**env, "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", "TERM": "xterm", "COLUMNS": "100", **extra}


class Terminal:
    """``ink-py exercise watch`` in ``cwd`` with a new pty as its controlling terminal and its stdin,
    stdout and stderr. The test keeps the pty's other side open too, to read its attributes at the end."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.fd, self.pty = os.openpty()
        self.before = termios.tcgetattr(self.pty)
        argv = [sys.executable, "-m", "ink_py", "exercise", "watch"]
        with ctrl_c_reaches_children():  # the \x03 it is typed
            self.pid = os.fork()
            if self.pid == 0:  # the child: a session of its own, this pty its terminal, then the command
                try:
                    os.close(self.fd)
                    os.setsid()
                    fcntl.ioctl(self.pty, termios.TIOCSCTTY, 0)
                    for standard in (0, 1, 2):
                        os.dup2(self.pty, standard)
                    os.chdir(cwd)
                    os.execve(sys.executable, argv, env)
                finally:
                    os._exit(127)
        self.raw = b""
        self.code: int | None = None

    @property
    def seen(self) -> str:
        return self.raw.decode("utf-8", "replace").replace("\r\n", "\n")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait_for(self, pattern: str, after: int = 0) -> int:
        """Read until ``pattern`` (a regular expression) appears at or after ``after``; where it ends."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not (found := re.compile(pattern).search(self.seen, after)):
            ready = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))[0]
            try:
                data = os.read(self.fd, 65536) if ready else b""
            except OSError:  # the pty's other side is closed
                data = b""
            if not data:
                raise AssertionError(f"never saw {pattern!r}; the terminal showed:\n{self.seen[after:]}")
            self.raw += data
        return found.end()

    def exit_code(self) -> int:
        """Its exit code, once it has ended (what it still shows is read meanwhile)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not self.has_ended():
            assert time.monotonic() < deadline, f"watch did not end; the terminal showed:\n{self.seen}"
            if select.select([self.fd], [], [], 0.1)[0]:
                self.raw += os.read(self.fd, 65536)
        return self.code

    def until(self, condition, what: str) -> None:
        """Wait for ``condition()`` to hold (polled): the state a step needs, never a fixed pause."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not condition():
            assert time.monotonic() < deadline, f"never {what}"
            time.sleep(0.01)

    def has_ended(self) -> bool:
        if self.code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            self.code = os.waitstatus_to_exitcode(status) if pid else None
        return self.code is not None

    def is_stopped(self) -> bool:
        pid, status = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
        return pid != 0 and os.WIFSTOPPED(status)

    def close(self) -> None:
        if self.code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        for fd in (self.fd, self.pty):
            if fd >= 0:
                os.close(fd)


@pytest.fixture
def terminal(tmp_path):
    sessions: list[Terminal] = []

    def open_one(**env: str) -> Terminal:
        sessions.append(Terminal(tmp_path, watch_env(**env)))
        return sessions[-1]

    yield open_one
    for session in sessions:
        session.close()


def save_the_reference(copy: Path, number: int) -> None:
    """``put_back`` saved as many editors save: each new file written beside, then renamed over the old
    one — so no check can see it half-written, and the number of checks is exact."""
    scratch = copy.parent / f".{copy.name}-scratch"
    shutil.copytree(copy, scratch)
    put_back(scratch, number)
    for path in scratch.rglob("*.py"):
        target = copy / path.relative_to(scratch)
        if path.read_bytes() != target.read_bytes():
            os.replace(path, target)
    shutil.rmtree(scratch)


# ── on a terminal ─────────────────────────────────────────────────────────────────────


def test_each_key_without_enter_a_save_turns_red_into_green_and_n_moves_on(tmp_path, terminal):
    """Three real checks: exercise 1 red, green after the save, exercise 2 red. Ctrl-Z and fg first."""
    watch = terminal()
    mark = watch.wait_for(r"started exercise 1 · parse-frame")  # no copy yet: watch starts it, as start does
    assert "a new copy of ink_py" in watch.seen
    mark = watch.wait_for(r"exercise 1 · parse-frame — not written yet", mark)
    mark = watch.wait_for(r"progress \[>>>-{24}\] 0/9 · now exercise 1 · parse-frame\n" + KEYS_LINE, mark)

    watch.type("\x1a")  # Ctrl-Z: stopped, the terminal as it was for the shell
    watch.until(watch.is_stopped, "stopped")
    assert termios.tcgetattr(watch.pty) == watch.before
    os.kill(watch.pid, signal.SIGCONT)  # fg
    watch.until(lambda: not termios.tcgetattr(watch.pty)[3] & termios.ICANON, "in cbreak mode again")

    for key, answer in [
        ("x", KEYS_LINE),  # anything else: the keys
        ("\x1b[A", KEYS_LINE),  # an arrow is one key, and not a command either
        ("h", r"hint 1/4: "),
        ("l", r"1  parse-frame      §2\.1         started \(stub still present\)"),
        ("n", r"exercise 1 · parse-frame is not green yet: n moves on once its check passes"),
    ]:
        watch.type(key)  # one key, no Enter
        mark = watch.wait_for(answer, mark)
    modes = termios.tcgetattr(watch.pty)[3]
    assert not modes & (termios.ECHO | termios.ICANON) and modes & termios.ISIG  # keys unechoed; Ctrl-C works

    save_the_reference(tmp_path / "my_ink", 1)  # the student saves the right code
    mark = watch.wait_for(r"exercise 1 · parse-frame — all \d+ tests pass", mark)
    mark = watch.wait_for(r"progress \[###-{24}\] 1/9 · now exercise 1 · parse-frame", mark)
    watch.type("n")
    mark = watch.wait_for(r"started exercise 2 · parse-sse", mark)
    mark = watch.wait_for(r"exercise 2 · parse-sse — not written yet", mark)
    mark = watch.wait_for(r"progress \[###>>>-{21}\] 1/9 · now exercise 2 · parse-sse", mark)
    watch.type("q")
    watch.wait_for(r"stopped watching; your progress is kept in my_ink", mark)
    assert watch.exit_code() == 0
    assert termios.tcgetattr(watch.pty) == watch.before  # echo and line editing are back
    assert watch.seen.count("progress [") == 3 and "Traceback" not in watch.seen
    assert load_state(tmp_path / "my_ink")["checks"] == {"1": "green", "2": "red"}


def test_ctrl_c_during_a_check_exits_130_at_once_and_restores_the_terminal(tmp_path, terminal):
    watch = terminal()
    watch.wait_for(r"checking exercise 1 · parse-frame: \d+/\d+ tests")  # the child pytest is running
    watch.type("\x03")  # Ctrl-C, through the terminal driver
    interrupted = time.monotonic()
    assert watch.exit_code() == 130, watch.seen
    print(f"ended {time.monotonic() - interrupted:.2f} s after Ctrl-C")  # for the record (-s)
    assert termios.tcgetattr(watch.pty) == watch.before
    assert child_pytests(tmp_path / "my_ink") == [] and "Traceback" not in watch.seen


def test_a_terminal_that_closes_during_a_check_ends_the_watch_and_the_check(tmp_path, terminal):
    watch = terminal()
    watch.wait_for(r"checking exercise 1 · parse-frame: \d+/\d+ tests")
    os.close(watch.fd)  # the window is closed: SIGHUP
    watch.fd = -1
    watch.until(watch.has_ended, "ended")
    assert watch.code == 128 + signal.SIGHUP
    assert child_pytests(tmp_path / "my_ink") == []


# ── piped: a line per command ─────────────────────────────────────────────────────────


def spawn(cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ink_py", "exercise", "watch"],
        cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_piped_a_line_per_command_then_a_save_and_the_closing_message_in_chinese(tmp_path, monkeypatch, capsys):
    """Two real checks, exercise 1 red then green; exercises 2–9 written and green before. The
    commands come as lines on a pipe that stays open: the watch ends by itself. INK_COURSE_LANG=zh."""
    monkeypatch.chdir(tmp_path)
    for number in EXERCISES:
        run(capsys, "start", str(number))
    copy = tmp_path / "my_ink"
    for number in range(2, 10):
        put_back(copy, number)
    save_state(copy, {**load_state(copy), "checks": {str(n): "green" for n in range(2, 10)}})
    process = spawn(tmp_path, watch_env(INK_COURSE_LANG="zh"))
    try:
        process.stdin.write(b"x\nh\nl\nn\n")
        process.stdin.flush()
        seen = read_until(process.stdout.fileno(), re.compile("检查通过之后 n 才去下一个.*\n".encode()), WAIT_SECONDS)[
            0
        ]
        put_back(copy, 1)
        seen += read_until(process.stdout.fileno(), re.compile("做得好!\n".encode()), WAIT_SECONDS)[0]
        assert process.wait(timeout=WAIT_SECONDS) == 0, process.stderr.read()
        err = process.stderr.read().decode()
    finally:
        process.kill()
        process.stdin.close()
    out = seen.decode()
    assert err == "" and "\x1b" not in out  # no terminal: no progress line, no screen cleared
    for said in [
        "练习 1 · parse-frame —— 还没写",
        "进度 [>>>########################] 8/9 · 现在是练习 1 · parse-frame",
        "正在看着 my_ink:每次保存都重新检查 · 输入 h(提示)",  # and for x: the commands
        "提示 1/4:",
        "1  parse-frame      §2.1         开始了(桩还在)",
        "练习 1 · parse-frame 还没通过:检查通过之后 n 才去下一个",
        "进度 [###########################] 9/9\n9 个练习全部通过:文章里的这些代码,你都自己写了一遍。做得好!",
    ]:
        assert said in out
    assert re.search(r"练习 1 · parse-frame —— \d+ 个测试全部通过", out)
    assert out.count("正在看着 my_ink") == 2 and sentences_of_the_other(out, "zh") == []


# ── in process: the loop, with a check that only counts ───────────────────────────────


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A copy with exercise 1 started: copied for each test that uses it (a copy takes milliseconds)."""
    folder = tmp_path_factory.mktemp("prepared")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # where a student would start it (start reads hints kept here before the copy)
        start(1, folder / "my_ink")
    return folder / "my_ink"


@pytest.fixture
def copy(prepared, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(prepared, tmp_path / "my_ink")
    return tmp_path / "my_ink"


class Checks:
    """``check`` as the loop calls it: the verdicts given, in turn (the last one repeated), recorded in
    the progress file as ``check`` records them; ``during`` runs inside a check (a save meanwhile)."""

    def __init__(self, *verdicts: bool) -> None:
        self.verdicts, self.calls, self.during = list(verdicts), [], None

    def __call__(self, number, folder, progress=None):
        self.calls.append(number)
        if self.during:
            self.during()
            self.during = None
        green = self.verdicts[min(len(self.calls), len(self.verdicts)) - 1]
        if isinstance(green, Exception):
            raise green
        state = load_state(folder)
        state.setdefault("checks", {})[str(number)] = "green" if green else "red"
        save_state(folder, state)
        return green, f"exercise {number}: {'green' if green else 'red'}"


def script(*steps):
    """The input: each step a command, None (nothing this time), or a function to run (a save) first."""
    pending = list(steps)

    def next_input(timeout):
        if not pending:
            return watching.END
        step = pending.pop(0)
        if callable(step):
            step()
            return None
        return step

    return next_input


def save(path: Path, text: str = "# a note\n"):
    return lambda: path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def run_watch(copy, checks, monkeypatch, *steps, keys=True):
    monkeypatch.setattr(watching, "check", checks)
    shown: list[str] = []
    code = watching.watch(copy, script(*steps), shown.append, interval=0.001, keys=keys)
    return code, shown


def test_saves_during_a_check_make_one_more_check_after_it_not_a_queue(copy, monkeypatch):
    shared = copy / "provider" / "shared.py"
    checks = Checks(False)
    checks.during = lambda: [save(shared, f"# save {i}\n")() for i in range(3)]  # three saves meanwhile
    code, shown = run_watch(copy, checks, monkeypatch, None, None, None, save(shared), None, None, "q")
    assert code == 0 and checks.calls == [1, 1, 1]  # the first; one for the three saves; one for the last
    assert sum(line.startswith("exercise 1: red") for line in shown) == 3


def test_editors_files_and_the_courses_own_start_no_check(copy, monkeypatch):
    provider = copy / "provider"
    writes = [
        lambda: (provider / ".shared.py.swp").write_bytes(b"vim"),
        lambda: (provider / "shared.py.swx").write_bytes(b"vim"),
        lambda: (provider / "4913").write_bytes(b""),
        lambda: (provider / "shared.py~").write_bytes(b"backup"),
        lambda: (provider / ".#shared.py").write_bytes(b"emacs lock"),
        lambda: (provider / "#shared.py#").write_bytes(b"emacs autosave"),
        lambda: (provider / "shared.py___jb_tmp___").write_bytes(b"jetbrains"),
        lambda: (provider / "__pycache__").mkdir(exist_ok=True),
        lambda: (provider / "__pycache__" / "shared.cpython-311.pyc").write_bytes(b"pyc"),
        lambda: (copy / ".reset").mkdir(exist_ok=True),
        lambda: (copy / ".exercises.json.damaged-1").write_bytes(b"{}"),
        lambda: watching.hint(1, copy),  # h: the progress file counts the hints shown
    ]
    checks = Checks(False)
    code, _ = run_watch(copy, checks, monkeypatch, *writes, None, "q")
    assert code == 0 and checks.calls == [1]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: p.write_text(p.read_text() + "\n"), id="appended"),
        pytest.param(lambda p: p.write_text(p.read_text().replace("event", "EVENT", 1)), id="same-size"),
        pytest.param(
            lambda p: (p.with_name("x.tmp").write_text(p.read_text()), os.replace(p.with_name("x.tmp"), p)),
            id="replaced-by-a-rename",
        ),
        pytest.param(lambda p: os.utime(p, ns=(0, 0)), id="touched"),
        pytest.param(lambda p: p.unlink(), id="removed"),
        pytest.param(
            lambda p: (p.parent / "new" / "mine.py").parent.mkdir() or (p.parent / "new" / "mine.py").touch(),
            id="new-file-in-a-new-folder",
        ),
    ],
)
def test_every_kind_of_save_is_seen(copy, change):
    before = snapshot(copy)
    change(copy / "provider" / "shared.py")
    assert snapshot(copy)["files"] != before["files"]


def test_a_real_check_writes_nothing_that_starts_another(copy, monkeypatch):
    """One real check: the child pytest imports the copy and check writes the progress file — neither
    counts as a save (the checks write no bytecode under --impl; a .pyc left by an editor's run of
    the copy is left out too: test_editors_files_and_the_courses_own_start_no_check)."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # as on a student's machine
    before = snapshot(copy)
    green, _ = watching.check(1, copy)
    assert not green and snapshot(copy)["files"] == before["files"]


def test_a_walk_is_bounded_and_never_follows_a_link(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "loop").symlink_to(tmp_path)  # a link back up: followed, the walk would never end
    for i in range(30):
        (tmp_path / "a" / f"{i}.py").write_text("x")
    assert snapshot(tmp_path)["complete"] and len(snapshot(tmp_path)["files"]) == 30
    cut = snapshot(tmp_path, limit=10)
    assert not cut["complete"] and len(cut["files"]) <= 10
    assert snapshot(tmp_path / "gone") == {"files": {}, "complete": True}


def test_a_folder_too_big_to_walk_whole_is_said_once(copy, monkeypatch):
    saves = [0]
    monkeypatch.setattr(watching, "snapshot", lambda folder: {"files": {"a.py": (saves[0], 1, 1)}, "complete": False})
    checks = Checks(False)
    code, shown = run_watch(copy, checks, monkeypatch, lambda: saves.append(saves.pop() + 1), None, "q")
    assert code == 0 and checks.calls == [1, 1]
    said = "warning: my_ink holds more than 5000 files; saves are seen among the first 5000 only"
    assert shown.count(said) == 1 and shown.index(said) == 1


def test_n_is_refused_while_red_and_moves_to_the_next_not_green_once_green(copy, monkeypatch):
    state = load_state(copy)
    save_state(copy, {**state, "checks": {"2": "green"}})  # 2 is done already: n skips it
    checks = Checks(False, True, False)
    shared = copy / "provider" / "shared.py"
    code, shown = run_watch(copy, checks, monkeypatch, "n", save(shared), None, "n", "q")
    assert code == 0 and checks.calls == [1, 1, 3]
    assert "exercise 1 · parse-frame is not green yet: n moves on once its check passes" in shown[1]
    assert shown[2].startswith("exercise 1: green\n\nprogress [######------")
    assert shown[3].startswith("started exercise 3 · text-delta") and "\n\nexercise 3: red\n" in shown[3]
    assert "progress [######>>>---" in shown[3] and "2/9 · now exercise 3 · text-delta" in shown[3]
    assert load_state(copy)["started"] == [1, 3]


def test_a_check_that_cannot_run_is_one_error_line_and_the_watch_goes_on(copy, monkeypatch):
    checks = Checks(ExerciseError("the tests could not run: E   SyntaxError"), True)
    code, shown = run_watch(copy, checks, monkeypatch, "n", save(copy / "provider" / "shared.py"), None, "q")
    assert code == 0 and checks.calls == [1, 1]
    assert shown[0].startswith("error: the tests could not run: E   SyntaxError\n\nprogress [>>>---")
    assert "is not green yet" in shown[1] and shown[2].startswith("exercise 1: green")


def test_a_next_exercise_start_refuses_is_one_error_line_and_the_watch_stays(copy, monkeypatch):
    loop = copy / "core" / "loop.py"  # exercise 8's function, edited before it was started
    loop.write_text(loop.read_text().replace("none of them runs", "none of them runs (mine)"))
    save_state(copy, {**load_state(copy), "checks": {str(n): "green" for n in range(2, 8)}})
    code, shown = run_watch(copy, Checks(True), monkeypatch, "n", "q")
    assert code == 0 and "region differs from ink_py's" in shown[1] and shown[1].startswith("error: ")
    assert load_state(copy)["started"] == [1]


def test_all_green_at_launch_says_so_and_checks_nothing(copy, monkeypatch):
    save_state(copy, {**load_state(copy), "checks": {str(n): "green" for n in EXERCISES}})
    checks = Checks(True)
    code, shown = run_watch(copy, checks, monkeypatch)
    assert code == 0 and checks.calls == []
    assert shown[0].split("\n")[:2] == [
        "progress [###########################] 9/9",
        "all 9 exercises are green: you have written the article's pieces yourself. Well done!",
    ]


def test_an_exercise_not_available_here_is_said_once_and_skipped(copy, monkeypatch):
    monkeypatch.setattr(watching, "available", lambda number: number != 9)
    save_state(copy, {**load_state(copy), "checks": {str(n): "green" for n in range(2, 9)}})
    checks = Checks(True)
    code, shown = run_watch(copy, checks, monkeypatch, "q")
    assert shown[0] == "exercise 9 · chunk-concat is not available on this install (its source has no markers): skipped"
    assert code == 0 and checks.calls == [1]
    assert "progress [########################···] 8/8\nall 8 exercises are green" in shown[1]


def test_the_end_of_the_input_and_ctrl_d_quit(copy, monkeypatch):
    for steps in [(), ("\x04",), ("Q",)]:
        code, shown = run_watch(copy, Checks(False), monkeypatch, *steps)
        assert code == 0 and shown[-1].startswith("stopped watching; your progress is kept in my_ink")


@pytest.mark.parametrize(
    "checks, current, language, line",
    [
        ({}, 1, "en", "progress [>>>------------------------] 0/9 · now exercise 1 · parse-frame"),
        (
            {"1": "green", "3": "red"},
            3,
            "en",
            "progress [###--->>>------------------] 1/9 · now exercise 3 · text-delta",
        ),
        ({"1": "green", "9": "green"}, 2, "zh", "进度 [###>>>------------------###] 2/9 · 现在是练习 2 · parse-sse"),
        ({str(n): "green" for n in EXERCISES}, None, "en", "progress [###########################] 9/9"),
    ],
)
def test_the_progress_line(checks, current, language, line):
    assert watching.progress_line({"checks": checks}, current, language) == line


# ── the input ─────────────────────────────────────────────────────────────────────────


def test_lines_from_a_pipe_whole_bounded_and_then_the_end():
    reading, writing = os.pipe()
    try:
        next_line = watching.lines_of(reading)
        assert next_line(0) is None  # nothing yet
        os.write(writing, b" h \nl")
        assert next_line(0.01) == " h "
        assert next_line(0.01) is None  # "l" waits for its line's end
        os.write(writing, b"\n" + b"x" * 5000 + b"\nq\n")
        assert [next_line(0.01) for _ in range(3)] == ["l", "", "q"]  # a long line: no command, not kept
        os.write(writing, "读".encode())
        os.close(writing)
        writing = -1
        assert [next_line(0.01), next_line(0.01)] == ["读", watching.END]  # a last line without its newline
    finally:
        os.close(reading)
        if writing >= 0:
            os.close(writing)


def test_keys_from_a_terminal_one_at_a_time_and_the_terminal_restored_after_an_exception():
    ours, theirs = os.openpty()
    before = termios.tcgetattr(theirs)
    try:
        with pytest.raises(RuntimeError), open(theirs, closefd=False) as stream:
            with one_key_at_a_time(stream) as descriptor:
                next_key = watching.keys_of(descriptor)
                assert next_key(0) is None
                os.write(ours, "h读\x1b[Cq".encode())
                assert [next_key(1) for _ in range(4)] == ["h", "读", "\x1b[C", "q"]
                assert termios.tcgetattr(theirs) != before  # cbreak meanwhile
                raise RuntimeError("anything at all")
        assert termios.tcgetattr(theirs) == before
    finally:
        os.close(ours)
        os.close(theirs)
