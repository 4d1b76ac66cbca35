"""A new user's first ten minutes (issue 15): every surprise they met, each with its test.

The default run's pauses, the abort scenario that must say what it waits for, errors that
start their own line, interleaved calls told apart, "1 turn", a server that is not running,
a base URL without a scheme, a 404, an empty prompt, ``--version`` and the command
``serve-model`` suggests. Subprocesses and real HTTP on 127.0.0.1; no timing is asserted.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from ink_py.scripted import server as model_server
from ink_py.scripted.chat_wire import build_reply
from ink_py.scripted.server import DEFAULT_DELAY, REPLY_SECONDS, pace, start_model_server

from .fake_server import FakeModelServer, Reply
from .helpers import ROOT
from .test_cli import ink_py

README = "# Demo project\n\nStart it with:\n\n```sh\npip install -e .\nmake run\n```\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


def env_without_endpoint(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "INK_MODEL")}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


# ── the default run: streamed, yet done in a few seconds ────────────────────────────────


def test_the_default_runs_pauses_add_up_to_a_few_seconds_however_long_the_readme() -> None:
    """The README task's two replies, planned from the real README.md: the pauses the server will make."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    question = {"role": "user", "content": "读取 README.md,告诉我项目怎样启动"}
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "README.md"}'}}
    turn_1 = {"stream": True, "messages": [question]}
    turn_2 = {
        "stream": True,
        "messages": [question, {"role": "assistant", "content": "", "tool_calls": [call]}]
        + [{"role": "tool", "tool_call_id": "c1", "content": readme * 3}],  # even a README three times as long
    }
    total = 0.0
    for body in (turn_1, turn_2):
        reply = build_reply(body, "readme", created=0)
        pause = pace(reply, DEFAULT_DELAY, REPLY_SECONDS)
        assert pause > 0  # it still streams: every write is its own moment on the screen
        total += pause * (len(reply["writes"]) - 1)
    assert len(build_reply(turn_2, "readme", 0)["writes"]) > 300  # many writes, so the cap is what keeps it short
    assert total <= 2 * REPLY_SECONDS


def test_help_names_the_delay_setting(workspace: Path) -> None:
    done = ink_py("--help", cwd=workspace)
    assert "INK_SCRIPTED_DELAY=S" in done.stdout and "0: no pauses" in done.stdout


def test_a_set_delay_is_kept_exactly(workspace: Path) -> None:
    reply = {"status": 200, "content_type": "text/event-stream", "writes": [b"x"] * 5000, "pause": None, "hold": False}
    assert pace(reply, 0.05, None) == 0.05  # INK_SCRIPTED_DELAY given: no cap


def test_a_bad_delay_setting_is_a_usage_error(workspace: Path) -> None:
    done = ink_py(cwd=workspace, env_extra={"INK_SCRIPTED_DELAY": "fast"})
    assert done.returncode == 1 and done.stderr == "error: INK_SCRIPTED_DELAY=fast: not a number of seconds\n"


# ── the abort scenario: says what it waits for, waits, and never misdiagnoses ───────────


def test_the_abort_scenario_says_at_once_to_press_ctrl_c_and_then_aborts_cleanly(workspace: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ink_py", "--scenario", "abort"],
        cwd=workspace,
        env=env_without_endpoint(INK_SCRIPTED_DELAY="0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(60, process.kill)  # a bound on every blocking read below
    watchdog.start()
    try:
        notice = process.stderr.readline() + process.stderr.readline()  # before anything else happens
        assert "press Ctrl-C" in notice and "waiting for you" in notice
        shown = ""
        while '{"path":"REA' not in shown:  # the call began streaming, then the model went silent
            piece = process.stderr.read(1)
            assert piece, f"the run ended before the call streamed: {shown!r}"
            shown += piece
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=20)
    finally:
        watchdog.cancel()
        process.kill()
    assert process.returncode == 130
    assert "(aborted during turn 1: that reply was not kept)" in rest
    assert "finish_reason" not in rest and "error" not in rest  # never mistaken for a broken stream


def test_the_held_reply_never_ends_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_server, "HOLD_COMMENT_SECONDS", 0.05)
    with start_model_server(scenario="abort", delay=0) as server:
        body = {"stream": True, "messages": [{"role": "user", "content": "读取 README.md"}]}
        with requests.post(f"{server.base_url}/chat/completions", json=body, stream=True, timeout=5) as response:
            received, deadline = b"", time.monotonic() + 1.0
            while time.monotonic() < deadline:
                piece = response.raw.read1(65536)
                assert piece, "the held body ended: the client would call it a broken stream"
                received += piece
    assert b": the abort scenario waits for the client to abort" in received  # comments keep read timeouts away


# ── what the terminal shows ─────────────────────────────────────────────────────────────


def test_an_error_after_partial_output_starts_its_own_line(workspace: Path) -> None:
    done = ink_py("--scenario", "missing-finish", cwd=workspace)
    assert done.returncode == 1
    assert '  ↳ read {"path":"README.md"}\nerror: stream ended without finish_reason' in done.stderr


def test_on_a_terminal_the_error_line_is_red(workspace: Path) -> None:
    controller, terminal = os.openpty()  # stderr is a terminal; stdout is a pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", "--scenario", "missing-finish"],
            cwd=workspace,
            env={k: v for k, v in env_without_endpoint(INK_SCRIPTED_DELAY="0").items() if k != "NO_COLOR"},
            stdout=subprocess.PIPE,
            stderr=terminal,
            timeout=60,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                piece = os.read(controller, 65536)
            except OSError:
                break
            if not piece:
                break
            shown += piece
    finally:
        os.close(controller)
    assert done.returncode == 1
    assert b"\r\n\x1b[31merror: stream ended without finish_reason" in shown


def test_interleaved_calls_arguments_are_told_apart(workspace: Path) -> None:
    done = ink_py("--scenario", "interleaved", cwd=workspace)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("  ↳")]
    assert lines == [
        '  ↳ read {"path":"REA',
        '  ↳ read #2 {"path":"pack',
        '  ↳ read #1 …DME.md"}',
        '  ↳ read #2 …age.json"}',
    ]


def test_one_turn_is_one_turn(workspace: Path) -> None:
    done = ink_py("--scenario", "length-text", cwd=workspace)
    assert "— ink-scripted · 1 turn · usage not reported by the server" in done.stderr
    assert "ink-py chat" in done.stderr.splitlines()[-1]  # the advice to continue names where to do it


# ── endpoints: refused, no scheme, 404 ──────────────────────────────────────────────────


@pytest.mark.parametrize("url", ["127.0.0.1:8080/v1", "localhost:11434/v1", "api.openai.com/v1"])
def test_a_base_url_without_a_scheme_is_refused_at_once(workspace: Path, url: str) -> None:
    done = ink_py("--base-url", url, "--model", "m", cwd=workspace)
    assert done.returncode == 1
    assert done.stderr == f"error: --base-url {url}: give the whole URL, with http:// or https:// (e.g. http://{url})\n"


def test_a_404_shows_the_url_tried_and_suggests_v1(workspace: Path) -> None:
    with FakeModelServer([Reply(404, parts=[b'{"detail": "Not Found"}'], framing="length")]) as server:
        root = server.base_url.removesuffix("/v1")  # the usual slip: /v1 left out
        done = ink_py("--base-url", root, "--model", "m", cwd=workspace)
    assert done.returncode == 1
    assert f"tried POST {root}/chat/completions — most servers want the base URL to end in /v1" in done.stderr
    assert len(server.requests) == 1  # a 404 is not retried


# ── the command line itself ─────────────────────────────────────────────────────────────


@pytest.mark.parametrize("prompt", ["", "   ", "\n"])
def test_an_empty_prompt_is_refused(workspace: Path, prompt: str) -> None:
    done = ink_py(prompt, cwd=workspace)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "error: the prompt is empty: ask a question (or leave the prompt out for the README task)\n"


def test_version(workspace: Path) -> None:
    done = ink_py("--version", cwd=workspace)
    assert done.returncode == 0 and done.stdout.startswith("ink-py ") and done.stdout.strip() != "ink-py"


def test_serve_model_suggests_a_command_that_works(workspace: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ink_py", "serve-model", "--port", "0", "--delay", "0"],
        cwd=workspace,
        env=env_without_endpoint(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        process.stdout.readline()  # the URL
        suggestion = process.stdout.readline()
        assert suggestion.startswith("try: ink-py ")
        argv = shlex.split(suggestion.removeprefix("try: ink-py "))
        done = ink_py(*argv, cwd=workspace)
        assert done.returncode == 0, done.stderr
        assert "Demo project" in done.stdout
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)


def test_no_prompt_runs_the_readme_task_even_on_a_terminal(workspace: Path) -> None:
    """The decision: ``ink-py`` alone is always the README task (CI runs it with stdout captured);
    a conversation is ``ink-py chat``, which --help lists."""
    assert "ink-py chat" in ink_py("--help", cwd=workspace).stdout
    controller, terminal = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ink_py"],
            cwd=workspace,
            env=env_without_endpoint(INK_SCRIPTED_DELAY="0"),
            stdin=terminal,  # a terminal on stdin: someone at a keyboard
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0 and "Demo project" in done.stdout
    assert "›" not in done.stdout + done.stderr  # no chat prompt
