"""Ctrl-C reaching ``ink-py``: exit 130 and no traceback, from the first import to the last read.

A SIGINT during the imports, at any later moment, while connecting, while waiting for the
response headers, in a long pause mid-reply, and in the built-in model's abort scenario;
and the rule that makes it reliable with helper threads: SIGINT is blocked in every thread
ink_py starts, so it always lands on the main thread. Started with SIGINT ignored (a script's
``ink-py … &``), ink-py leaves it ignored; a test that sends a child Ctrl-C starts it at the
default (``ctrl_c_reaches_children``) even when pytest itself runs so. Each run is a child
process under a time limit; servers are raw sockets on 127.0.0.1 (tests/raw_servers.py).
"""

from __future__ import annotations

import importlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from ink_py.core.abort import AbortController
from ink_py.course.checks.fake_server import FakeModelServer, Pause, Reply
from ink_py.course.checks.helpers import fixture_bytes, text_reply
from ink_py.provider.transport import post_json_with_retry
from ink_py.scripted.server import start_model_server

from .helpers import cli_env, ctrl_c_reaches_children
from .raw_servers import INK_PY, SSE_HEAD, RawServer, ink_py_against, run_measured, silent_server

linux_only = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps and status")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# demo\n\nrun `make`\n")
    return tmp_path


def loaded(pid: int, library: str) -> bool:
    """True once the child has mapped ``library`` (an extension module its imports load)."""
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def running_for(seconds: float) -> Callable[[int], bool]:
    """True once ink-py's own code has run ``seconds``, from its imports (``_json`` mapped: its Ctrl-C
    handler is in place). Sooner, a Ctrl-C is the interpreter's start-up's: a fatal error, exit 1."""
    began: list[float] = []

    def ready(pid: int) -> bool:
        if not began and loaded(pid, "_json"):
            began.append(time.monotonic())
        return bool(began) and time.monotonic() - began[0] >= seconds

    return ready


def connecting(pid: int, port: int) -> bool:
    """True while the child waits for a SYN-ACK from 127.0.0.1:``port`` (a socket of its in SYN_SENT)."""
    try:
        rows = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    waiting = {row.split()[9] for row in rows if row.split()[3] == "02" and row.split()[2].endswith(f":{port:04X}")}
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") in {f"socket:[{inode}]" for inode in waiting}:
                return True
        except OSError:  # closed meanwhile
            pass
    return False


# ── from the first instruction on ───────────────────────────────────────────────────────


@linux_only
@pytest.mark.parametrize("library", ["_ssl", "_json", "_hashlib"])
def test_ctrl_c_during_the_imports_exits_130_without_a_traceback(workspace: Path, library: str) -> None:
    # requests pulls in ssl, json and hashlib while ink_py's modules are imported: the SIGINT
    # lands in the middle of those imports, before any handler a module could install.
    result = run_measured(
        [*INK_PY, "--workspace", str(workspace)], cwd=workspace, sigint_when=lambda pid: loaded(pid, library)
    )
    assert result.signalled, "the library never loaded: the test did not test anything"
    assert result.code == 130 and "Traceback" not in result.err and "KeyboardInterrupt" not in result.err, result


@linux_only
@pytest.mark.parametrize("after", [0.3, 0.6, 1.0, 1.5])
def test_ctrl_c_at_any_later_moment_exits_130_without_a_traceback(workspace: Path, after: float) -> None:
    result = run_measured(
        [*INK_PY, "--workspace", str(workspace)],
        cwd=workspace,
        env={"INK_SCRIPTED_DELAY": "0.05"},
        sigint_when=running_for(after),
    )
    if not result.signalled:  # the run ended first: then it must have succeeded
        assert result.code == 0, result
        return
    # 0: the signal came as it exited; -SIGINT: in the interpreter's last instant, its handlers gone (a shell says 130)
    assert result.code in (0, 130, -signal.SIGINT) and "Traceback" not in result.err, result
    assert result.seconds < 10


def test_python_dash_m_and_the_console_script_share_the_early_handler() -> None:
    main_module = importlib.import_module("ink_py.__main__")
    assert sys.modules["ink_py.__main__"] is main_module
    source = Path(main_module.__file__).read_text(encoding="utf-8")
    first_code = source.index("def main(")
    assert source.index("signal.signal(signal.SIGINT, _quit_at_once)") > first_code
    assert "from . import cli" not in source[:first_code]  # nothing heavy before the handler


@linux_only
def test_every_helper_thread_blocks_sigint_so_ctrl_c_reaches_the_main_thread(workspace: Path) -> None:
    def blocks_sigint(native_id: int) -> bool:
        status = Path(f"/proc/self/task/{native_id}/status").read_text()
        mask = int(status.split("SigBlk:")[1].split()[0], 16)
        return bool(mask & (1 << (signal.SIGINT - 1)))

    seen: dict[str, bool] = {}

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + text_reply("ok"))

    original = threading.Thread.run

    def recording_run(self: threading.Thread) -> None:
        if self.name.startswith("ink-"):
            seen[self.name.split("-")[0] + "-" + self.name.split("-")[1]] = blocks_sigint(threading.get_native_id())
        original(self)

    threading.Thread.run = recording_run  # type: ignore[method-assign]
    try:
        with start_model_server(delay=0) as model, RawServer(serve) as raw:
            import requests

            requests.get(f"{model.base_url}/models", timeout=10)
            response = post_json_with_retry(f"{raw.base_url}/chat/completions", {}, signal=AbortController().signal)
            assert response is not None
            response.close()
    finally:
        threading.Thread.run = original  # type: ignore[method-assign]
    assert seen.get("ink-scripted") and seen.get("ink-post"), seen
    assert not blocks_sigint(threading.get_native_id())  # the main thread still takes Ctrl-C


# ── before the reply: connecting, waiting for the headers ───────────────────────────────


@linux_only
def test_ctrl_c_while_connecting_exits_130_at_once(workspace: Path) -> None:
    # A listener that never accepts, its queue already full: the next connect waits for a SYN-ACK.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        fillers = []
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(listener.getsockname())
            fillers.append(filler)
        assert select.select([], fillers, [], 30)[1], "no connection reached the queue"  # one in it: it is full
        port = listener.getsockname()[1]
        argv = [*INK_PY, "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "--workspace", str(workspace)]
        result = run_measured(argv, timeout=30, sigint_when=lambda pid: connecting(pid, port))
        for filler in fillers:
            filler.close()
    assert not result.killed and result.code == 130, result
    assert result.seconds < 5 and "Traceback" not in result.err


def test_ctrl_c_while_waiting_for_headers_exits_130_at_once(workspace: Path) -> None:
    with silent_server() as server:
        result = ink_py_against(server, workspace, timeout=30, sigint_when=lambda pid: server.got_request.is_set())
        assert server.closed_by_client.wait(5)  # the process is gone, and its connection with it
    assert not result.killed and result.code == 130, result
    assert result.seconds < 5, f"{result.seconds:.1f} s from Ctrl-C to exit"  # not: until killed
    assert "Traceback" not in result.err


# ── during the reply ────────────────────────────────────────────────────────────────────


def test_ctrl_c_during_a_long_pause_aborts_the_turn_and_names_it(workspace: Path) -> None:
    pause = Pause(limit=30)
    first = fixture_bytes("article/readme").split(b"\n\n")[0] + b"\n\n"
    with FakeModelServer(
        [Reply(parts=[first, pause, b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'])]
    ) as server:
        with ctrl_c_reaches_children():
            process = subprocess.Popen(
                [sys.executable, "-m", "ink_py", "--base-url", server.base_url, "--model", "m"],
                cwd=workspace,
                env=cli_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        first_text = process.stdout.read(len("我先读一下 README。"))  # the first event reached the user
        process.send_signal(signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=10)
        finally:
            process.kill()
            pause.event.set()
    assert first_text == "我先读一下 README。"
    assert process.returncode == 130
    assert "Traceback" not in stderr
    # no message_end: the turn never completed, yet it is counted and named
    assert "— m · 1 turn · in 0 / out 0 tokens (aborted during turn 1: that reply was not kept)" in stderr


Started = Callable[[], AbstractContextManager[None]]  # how a child starts: Ctrl-C reaching it, or SIGINT ignored


@contextmanager
def the_abort_scenario(workspace: Path, sigint: Started) -> Iterator[subprocess.Popen[str]]:
    """``ink-py --scenario abort``, started under ``sigint``: the model goes silent mid-call, waiting for a Ctrl-C."""
    with sigint():
        process = subprocess.Popen(
            [sys.executable, "-m", "ink_py", "--scenario", "abort"],
            cwd=workspace,
            env=cli_env(INK_SCRIPTED_DELAY="0"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    watchdog = threading.Timer(60, process.kill)  # a bound on every blocking read
    watchdog.start()
    try:
        yield process
    finally:
        watchdog.cancel()
        process.kill()
        process.communicate()


def until_the_call_streamed(process: subprocess.Popen[str]) -> str:
    """What the abort scenario shows on stderr until its call began streaming and the model went silent."""
    assert process.stderr is not None
    shown = ""
    while '{"path":"REA' not in shown:
        piece = process.stderr.read(1)
        assert piece, f"the run ended before the call streamed: {shown!r}"
        shown += piece
    return shown


def test_the_abort_scenario_says_at_once_to_press_ctrl_c_and_then_aborts_cleanly(workspace: Path) -> None:
    with the_abort_scenario(workspace, ctrl_c_reaches_children) as process:
        notice = process.stderr.readline() + process.stderr.readline()  # before anything else happens
        assert "press Ctrl-C" in notice and "waiting for you" in notice
        until_the_call_streamed(process)
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=20)
    assert process.returncode == 130
    assert "(aborted during turn 1: that reply was not kept)" in rest
    assert "finish_reason" not in rest and "error" not in rest  # never mistaken for a broken stream


# ── started with Ctrl-C ignored: a script's background job ─────────────────────────────


@contextmanager
def sigint_ignored_in_children() -> Iterator[None]:
    """Children started meanwhile inherit SIGINT ignored, as a script's ``command &`` does."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def sigint_disposition(status: str) -> tuple[bool, bool]:
    """(ignored, caught) for SIGINT, from a /proc/<pid>/status text."""
    bit = 1 << (signal.SIGINT - 1)
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return bool(int(fields["SigIgn"], 16) & bit), bool(int(fields["SigCgt"], 16) & bit)


SHOWS_ITS_SIGINT = [  # Python started with SIGINT at the default installs its KeyboardInterrupt handler
    sys.executable, "-c",
    "import signal; h = signal.getsignal(signal.SIGINT); print('ignored' if h is signal.SIG_IGN else h.__name__)",
]  # fmt: skip


def test_the_helpers_that_send_a_child_ctrl_c_start_it_at_the_default_when_pytest_ignores_sigint() -> None:
    with sigint_ignored_in_children():  # pytest as a script's background job: every child would ignore it
        inherited = subprocess.run(SHOWS_ITS_SIGINT, capture_output=True, text=True, timeout=30).stdout
        with ctrl_c_reaches_children():
            helped = subprocess.run(SHOWS_ITS_SIGINT, capture_output=True, text=True, timeout=30).stdout
            assert signal.getsignal(signal.SIGINT) not in (signal.SIG_DFL, signal.default_int_handler)  # still deaf
        measured = run_measured(SHOWS_ITS_SIGINT).out
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # as this process had it
    assert inherited == "ignored\n"  # what the helpers are for
    assert helped == measured == "default_int_handler\n"


@linux_only
def test_started_with_sigint_ignored_ink_py_leaves_it_ignored(workspace: Path) -> None:
    # POSIX: a program started with SIGINT ignored (a script's `ink-py … &`) keeps it so, and a
    # Ctrl-C at the terminal stays the foreground's. Checked mid-run, under the runner's ctrl_c_aborts.
    with the_abort_scenario(workspace, sigint_ignored_in_children) as process:
        until_the_call_streamed(process)
        ignored, caught = sigint_disposition(Path(f"/proc/{process.pid}/status").read_text())
    assert (ignored, caught) == (True, False)


# ── the servers: ink-py serve, ink-py demo --web ────────────────────────────────────────

# The server's first request is handed over with its SIGINT block held open until a Ctrl-C is
# pending and the handler's thread has answered and gone: the moment where, before the fix, the
# Ctrl-C was raised on the main thread, the slot released twice, and the Ctrl-C lost (served on).
HELD_OPEN = """
import signal, socketserver, sys, threading, time
start = socketserver.ThreadingMixIn.process_request
def held_open(self, request, client_address):
    before = set(threading.enumerate())
    start(self, request, client_address)
    handlers = [t for t in set(threading.enumerate()) - before if t.name != "ink-head-watchdog"]
    deadline = time.monotonic() + 20
    while signal.SIGINT not in signal.sigpending() and time.monotonic() < deadline:
        time.sleep(0.01)
    for thread in handlers:
        thread.join(20)
    socketserver.ThreadingMixIn.process_request = start
socketserver.ThreadingMixIn.process_request = held_open
from ink_py.__main__ import main
sys.exit(main())
"""


@pytest.mark.skipif(not hasattr(signal, "sigpending"), reason="needs POSIX signal masks")
@pytest.mark.parametrize(("command", "path"), [(["demo", "--web"], "scenarios.json"), (["serve"], "")])
def test_a_ctrl_c_while_a_server_starts_a_handler_thread_stops_it(
    tmp_path: Path, command: list[str], path: str
) -> None:
    import urllib.request

    argv = [sys.executable, "-c", HELD_OPEN, *command, "--port", "0"]
    with ctrl_c_reaches_children():
        process = subprocess.Popen(
            argv, cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    watchdog = threading.Timer(60, process.kill)  # a bound on the blocking reads below
    watchdog.start()
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        with urllib.request.urlopen(url + path, timeout=30) as response:
            assert response.status == 200
        process.send_signal(signal.SIGINT)  # the server's main thread still blocks SIGINT: it is pending
        _, stderr = process.communicate(timeout=30)
    finally:
        watchdog.cancel()
        process.kill()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
