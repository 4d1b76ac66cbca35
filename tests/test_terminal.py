"""What reaches the terminal (ink_py/terminal.py and the runner's Display), as a user sees it.

Someone else's text — the model's answer, its reasoning, a tool's name, a server's error, a
recording the demo steps through — is shown with its control characters (the bidirectional
ones too) as visible escapes, never obeyed; ink_py's own colours are kept (red for the error
line, on a terminal only); an error after partial output starts its own line; interleaved
calls' fragments are told apart. Subprocesses on pipes or a pseudo-terminal, real HTTP on 127.0.0.1; no timing asserted.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ink_py.course.checks.helpers import sse, text_reply

from .helpers import cli_env
from .raw_servers import SSE_HEAD, RawServer, ink_py_against, one_error_line
from .test_cli import README, ink_py

# A window title, a clipboard write (OSC 52), clear-screen, a C1 CSI and a C1 NEL.
HOSTILE = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x9b31m\x85"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


# ── someone else's text: shown, never obeyed ────────────────────────────────────────────


def test_escape_sequences_reach_the_terminal_only_as_visible_text(workspace: Path, tmp_path: Path) -> None:
    replies = [
        sse({"choices": [{"delta": {"reasoning_content": "think" + HOSTILE}}]})
        + sse({"choices": [{"delta": {"content": "text" + HOSTILE}}]})
        + sse(
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "id": "t1", "function": {"name": "bad" + HOSTILE, "arguments": "{}"}},
                                {"index": 1, "id": "t2", "function": {"name": "read", "arguments": '{"path":"'}},
                            ]
                        }
                    }
                ]
            }
        )
        + sse({"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"arguments": 'x\\u001b[2J"}'}}]}}]})
        + sse({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        b"event: error\ndata: " + json.dumps({"error": {"message": "boom" + HOSTILE}}).encode() + b"\n\n",
    ]

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + replies[min(len(server.requests), 2) - 1])

    trace = tmp_path / "trace.jsonl"
    with RawServer(serve) as server:
        result = ink_py_against(server, workspace, "--trace", str(trace), timeout=30)
    assert result.code == 1 and "boom" in one_error_line(result.err)
    for stream in (result.out, result.err):
        assert not any(c in stream for c in "\x1b\x07\x9b\x85"), repr(stream)
    assert "\\x1b]52;c;" in result.out and "\\x9b31m" in result.err  # shown, not obeyed
    assert result.err.count("\\x1b]0;pwned\\x07") >= 3  # reasoning, tool name, tool error line
    raw = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {"type": "text_delta", "text": "text" + HOSTILE} in raw  # the trace keeps the raw text


def demo_of(folder: Path, body: bytes) -> subprocess.CompletedProcess[str]:
    """``ink-py demo --file`` stepping through ``body`` saved as a recording in ``folder``."""
    recording = folder / "001-response.sse"
    recording.write_bytes(body)
    argv = [sys.executable, "-m", "ink_py", "demo", "--file", str(recording), "--no-pause"]
    return subprocess.run(argv, env=cli_env(), capture_output=True, text=True, timeout=60)


def test_a_recording_the_demo_steps_through_cannot_move_the_cursor_or_colour_it(tmp_path: Path) -> None:
    done = demo_of(tmp_path, text_reply("红\x1b[2J\x1b[31m\r走开\x07" + HOSTILE))
    assert done.returncode == 0 and "红" in done.stdout
    assert not any(char in done.stdout + done.stderr for char in "\x1b\r\x07\x9b\x85")
    assert "\\x1b[2J" in done.stdout and "\\x1b]52;c;" in done.stdout


# The bidirectional controls: embeddings and overrides, isolates, the marks (Trojan Source).
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.mark.parametrize("char", list(BIDI), ids=lambda c: f"U+{ord(c):04X}")
def test_terminal_safe_shows_each_bidirectional_control_as_an_escape(ink: Any, char: str) -> None:
    from ink_py.terminal import terminal_safe

    assert terminal_safe(f"a{char}b") == f"a\\u{ord(char):04x}b"


def test_bidirectional_controls_never_reach_the_terminal_raw(workspace: Path) -> None:
    """A text that reads `cat README.md` could run backwards after U+202E; shown as escapes instead."""
    hostile = "cat \u202edm.EMDAER\u2066x\u2069\u200f"
    replies = [
        sse({"choices": [{"delta": {"reasoning_content": "think " + hostile}}]})
        + sse({"choices": [{"delta": {"content": "text " + hostile}}]})
        + sse({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "t1", "function": {"name": "x" + hostile}}]}}]})
        + sse({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        b"event: error\ndata: " + json.dumps({"error": {"message": "boom" + hostile}}).encode() + b"\n\n",
    ]

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + replies[min(len(server.requests), 2) - 1])

    with RawServer(serve) as server:
        result = ink_py_against(server, workspace, timeout=30)
    assert result.code == 1 and "boom" in one_error_line(result.err)
    for stream in (result.out, result.err):
        assert not any(c in stream for c in BIDI), repr(stream)
    assert "cat \\u202edm.EMDAER" in result.out and result.err.count("\\u202e") >= 3  # reasoning, name, error


def test_the_demo_escapes_bidirectional_controls_in_a_recording(tmp_path: Path) -> None:
    done = demo_of(tmp_path, text_reply("ok \u202egnp.exe " + BIDI))
    assert done.returncode == 0 and "\\u202egnp.exe" in done.stdout
    assert not any(char in done.stdout + done.stderr for char in BIDI)


# ── ink_py's own marks ──────────────────────────────────────────────────────────────────


def test_the_programs_own_colours_are_kept(ink: Any) -> None:
    from ink_py.runner import Display

    class Terminal:
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return True

    out, err = Terminal(), Terminal()
    display = Display(out, err)  # type: ignore[arg-type]
    display.show({"type": "thinking_delta", "text": "a\x1b[2Jb\tc\nd"})
    assert err.text == "\x1b[2;3ma\\x1b[2Jb\tc\nd\x1b[0m"  # ink_py's own dim italics, the model's ESC shown


def test_an_error_after_partial_output_starts_its_own_line(workspace: Path) -> None:
    done = ink_py("--scenario", "missing-finish", cwd=workspace)
    assert done.returncode == 1
    assert '  ↳ read {"path":"README.md"}\nerror: OpenAI stream ended without finish_reason' in done.stderr


def test_on_a_terminal_the_error_line_is_red(workspace: Path) -> None:
    controller, terminal = os.openpty()  # stderr is a terminal; stdout is a pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", "--scenario", "missing-finish"],
            cwd=workspace,
            env=cli_env(INK_SCRIPTED_DELAY="0"),
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
    assert b"\r\n\x1b[31merror: OpenAI stream ended without finish_reason" in shown


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
