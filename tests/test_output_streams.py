"""What every command does with its output streams and its start (issue 22, items 6, 7 and 8).

One mechanism, in ``ink_py/__main__.py``, for every command: output a stream cannot encode
(``PYTHONIOENCODING=latin-1``, a model's lone surrogate) is replaced, never fatal; a reader
that closes the pipe early ends the command quietly with a shell's status for it (141); and
``python -m ink_py`` run before the install says, in one line, how to install. Each test
runs the command as a user does: a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.course.checks.helpers import sse

from .helpers import ROOT, cli_env

README = "# 演示项目 — demo\n\n```sh\nmake run\n```\n"
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell shows for `yes | head -1`
PIPED = "读取 README.md\n"  # what `ink-py chat` reads from its pipe
COMMANDS = {  # a command → its input: each one prints non-ASCII text (Chinese, —, ·, §)
    "ink-py": ([], None),
    "chat": (["chat"], PIPED),
    "demo --list": (["demo", "--list"], None),
    "demo --no-pause": (["demo", "readme", "--no-pause"], None),
    "exercise list": (["exercise", "list"], None),
}


def run(args: list[str], cwd: Path, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ink_py", *args],
        cwd=cwd,
        env=cli_env(INK_SCRIPTED_DELAY="0", **env),
        input=(stdin or "").encode("utf-8"),
        capture_output=True,
        timeout=120,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
@pytest.mark.parametrize("name", COMMANDS)
def test_output_the_stream_cannot_encode_is_replaced_not_fatal(workspace, name, encoding):
    args, stdin = COMMANDS[name]
    done = run(args, workspace, stdin, PYTHONIOENCODING=encoding)
    err = done.stderr.decode(encoding)
    assert done.returncode == 0, err
    assert "Traceback" not in err and "internal error" not in err and "UnicodeEncodeError" not in err
    out = done.stdout.decode(encoding)  # what the terminal gets is text in its own encoding
    assert out.strip() and "?" in out  # the characters it cannot show, replaced


def test_the_c_locale_is_no_problem_either(workspace):
    done = run(["demo", "--list"], workspace, LC_ALL="C", LANG="C")
    assert done.returncode == 0 and b"Traceback" not in done.stderr and done.stdout


def test_a_lone_surrogate_from_the_model_is_shown_not_fatal(workspace):
    reply = b'data: {"choices": [{"index": 0, "delta": {"content": "a\\ud800b"}}]}\n\n'  # JSON's lone \ud800
    finish = sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    with FakeModelServer([Reply(parts=[reply + finish])]) as server:
        done = run(["--base-url", server.base_url, "--model", "m", "hi"], workspace)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")  # UTF-8, whatever stood for the surrogate
    assert out.startswith("a") and out.rstrip().endswith("b") and len(out.strip()) == 3


@pytest.mark.parametrize("name", ["ink-py", "chat", "demo --list", "serve-model"])
def test_a_pipe_closed_early_ends_the_command_quietly(workspace, name):
    """As ``ink-py … | head -1`` once head has gone: the read end of the pipe is closed before
    the command writes a byte, so every write fails, as it does for a real head."""
    args, stdin = COMMANDS.get(name, (["serve-model", "--port", "0"], None))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", *args],
            cwd=workspace,
            env=cli_env(INK_SCRIPTED_DELAY="0"),
            input=(stdin or "").encode(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write_end)
    err = done.stderr.decode("utf-8")
    assert done.returncode == EXIT_BROKEN_PIPE, err
    assert "Traceback" not in err and "Broken pipe" not in err and "error:" not in err


def test_head_reads_its_lines_and_nothing_else_is_said(workspace):
    done = subprocess.run(
        ["sh", "-c", f"'{sys.executable}' -m ink_py demo --list | head -1"],
        cwd=workspace,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith("readme") and done.stdout.count("\n") == 1
    assert done.stderr == ""


def test_before_the_install_a_missing_dependency_is_one_line_naming_the_install(tmp_path):
    """``python -m ink_py`` in a fresh checkout, on a Python without requests: ``-S`` leaves
    out site-packages, where the venv keeps requests; the checkout itself is the working folder."""
    done = subprocess.run(
        [sys.executable, "-S", "-m", "ink_py"],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "error: ink_py needs requests, which this Python does not have: install ink_py first, from the checkout — "
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e .\n"
    )
