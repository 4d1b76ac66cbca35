"""The ``ink-py`` process itself: Ctrl-C at any moment, and a key kept out of the process list.

Issue 12's problems 11 (a SIGINT during the first ~0.1 s printed a KeyboardInterrupt
traceback) and 13 (``--api-key`` is visible to other local users), plus the rule that
makes Ctrl-C reliable with helper threads: SIGINT is blocked in every thread ink_py starts,
so it always lands on the main thread.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from pathlib import Path

import pytest

from ink_py.core.abort import AbortController
from ink_py.provider.transport import post_json_with_retry
from ink_py.scripted.server import start_model_server

from .helpers import text_reply
from .hostile import INK_PY, ROOT, SSE_HEAD, HostileServer, run_measured, sse_server

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


# ── 11. Ctrl-C from the first instruction to the last ──────────────────────────────────


@linux_only
@pytest.mark.parametrize("library", ["_ssl", "_json", "_hashlib"])
def test_ctrl_c_during_the_imports_exits_130_without_a_traceback(workspace: Path, library: str) -> None:
    # requests pulls in ssl, json and hashlib while ink_py's modules are imported: the SIGINT
    # lands in the middle of those imports, where the old entry point had no handler yet.
    result = run_measured(
        [*INK_PY, "--workspace", str(workspace)], cwd=workspace, sigint_when=lambda pid: loaded(pid, library)
    )
    assert result.signalled, "the library never loaded: the test did not test anything"
    assert result.code == 130 and "Traceback" not in result.err and "KeyboardInterrupt" not in result.err, result


@pytest.mark.parametrize("after", [0.3, 0.6, 1.0, 1.5])
def test_ctrl_c_at_any_later_moment_exits_130_without_a_traceback(workspace: Path, after: float) -> None:
    result = run_measured(
        [*INK_PY, "--workspace", str(workspace)],
        cwd=workspace,
        env={"INK_SCRIPTED_DELAY": "0.05"},
        sigint_after=after,
    )
    if not result.signalled:  # the run ended first: then it must have succeeded
        assert result.code == 0, result
        return
    assert result.code in (0, 130) and "Traceback" not in result.err, result  # 0: the signal came as it exited
    assert result.seconds < 10


@linux_only
def test_every_helper_thread_blocks_sigint_so_ctrl_c_reaches_the_main_thread(workspace: Path) -> None:
    def blocks_sigint(native_id: int) -> bool:
        status = Path(f"/proc/self/task/{native_id}/status").read_text()
        mask = int(status.split("SigBlk:")[1].split()[0], 16)
        return bool(mask & (1 << (signal.SIGINT - 1)))

    seen: dict[str, bool] = {}

    def serve(conn: socket.socket, server: HostileServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + text_reply("ok"))

    original = threading.Thread.run

    def recording_run(self: threading.Thread) -> None:
        if self.name.startswith("ink-"):
            seen[self.name.split("-")[0] + "-" + self.name.split("-")[1]] = blocks_sigint(threading.get_native_id())
        original(self)

    threading.Thread.run = recording_run  # type: ignore[method-assign]
    try:
        with start_model_server(delay=0) as model, HostileServer(serve) as hostile:
            import requests

            requests.get(f"{model.base_url}/models", timeout=10)
            response = post_json_with_retry(f"{hostile.base_url}/chat/completions", {}, signal=AbortController().signal)
            assert response is not None
            response.close()
    finally:
        threading.Thread.run = original  # type: ignore[method-assign]
    assert seen.get("ink-scripted") and seen.get("ink-post"), seen
    assert not blocks_sigint(threading.get_native_id())  # the main thread still takes Ctrl-C


# ── 13. the key stays out of the process list ───────────────────────────────────────────

KEY = "sk-from-a-file-0123456789"


def test_api_key_file_sends_the_key_and_keeps_it_out_of_argv(workspace: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    with sse_server(text_reply("hi")) as server:
        argv = [*INK_PY, "--base-url", server.base_url, "--model", "m", "--api-key-file", str(key_file)]
        result = run_measured(argv, cwd=workspace, env={"OPENAI_API_KEY": ""})
    assert result.code == 0 and result.out == "hi\n", result
    assert b"Authorization: Bearer " + KEY.encode() in server.requests[0]
    assert KEY not in " ".join(argv) and KEY not in result.out + result.err


@pytest.mark.parametrize(("content", "words"), [(None, "No such file"), ("", "the file is empty"), ("\n", "empty")])
def test_a_missing_or_empty_key_file_is_one_usage_error(
    workspace: Path, tmp_path: Path, content: str | None, words: str
) -> None:
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_text(content)
    argv = [*INK_PY, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-file", str(key_file)]
    result = run_measured(argv, cwd=workspace)
    errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert result.code == 1 and len(errors) == 1 and "--api-key-file" in errors[0] and words in errors[0]


def test_help_and_readme_recommend_the_environment_variable() -> None:
    result = run_measured([*INK_PY, "--help"])
    help_text = " ".join(result.out.split())
    assert "process list" in help_text and "prefer the environment variable OPENAI_API_KEY" in help_text
    assert "--api-key-file" in help_text
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "--api-key-file" in readme and "process list" in readme
    serve_help = " ".join(run_measured([*INK_PY, "serve", "--help"]).out.split())
    assert "--api-key-file" in serve_help


def test_python_dash_m_and_the_console_script_share_the_early_handler() -> None:
    import importlib

    main_module = importlib.import_module("ink_py.__main__")
    assert sys.modules["ink_py.__main__"] is main_module
    source = Path(main_module.__file__).read_text(encoding="utf-8")
    first_code = source.index("def main(")
    assert source.index("signal.signal(signal.SIGINT, _quit_at_once)") > first_code
    assert "from . import cli" not in source[:first_code]  # nothing heavy before the handler


def test_the_demo_shows_a_recorded_hostile_stream_without_obeying_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ink_py.course import demo

    hostile = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x9b31m"
    recorded = tmp_path / "001-response.sse"
    recorded.write_bytes(text_reply("hi" + hostile))
    code = demo.main(["--file", str(recorded), "--no-pause"])
    out, err = capsys.readouterr()
    assert code == 0 and "\\x1b]52;c;" in out
    assert not any(c in out + err for c in "\x07\x9b") and "\x1b]" not in out and "\x1b[2J" not in out
