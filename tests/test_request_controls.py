"""The built-in model honours what a request asks beside its messages, in all three dialects (issue 22, item 4).

``tool_choice`` (auto, none, required, a tool's name) and the output limit (``max_tokens``,
``max_output_tokens``), as a real server does, so that the README's ``--tool-choice`` table
and ``--max-tokens`` can be tried without a key: end to end through ``ink-py`` (and ``ink-py
serve``, which now takes the flags the README gives it), and reply by reply in each dialect's
own words (``ink_py/scripted/controls.py``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.scripted import chat_wire, dialects
from ink_py.scripted.wire import MESSAGES, RESPONSES

from .helpers import cli_env
from .test_cli import ink_py

README = "# Demo project\n\nStart it with:\n\n```sh\npip install -e .\nmake run\n```\n"
DIALECTS = ["openai-completions", "anthropic-messages", "openai-responses"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


def summary(stderr: str) -> str:
    return next(line for line in reversed(stderr.splitlines()) if line.startswith("— "))


@pytest.mark.parametrize("api", DIALECTS)
@pytest.mark.parametrize(
    "args, code, reads, ending",
    [
        (["--tool-choice", "none"], 0, 0, "1 turn"),
        (["--tool-choice", "required", "--max-turns", "3"], 3, 2, "(stopped: reached max turns (3))"),
        (["--tool-choice", "read"], 0, 1, "2 turns"),  # forced on the first turn, then auto: it answers
        (["--tool-choice", "auto"], 0, 1, "2 turns"),
    ],
    ids=["none", "required", "named", "auto"],
)
def test_the_readme_tool_choice_table_holds_on_the_built_in_model(workspace, api, args, code, reads, ending):
    done = ink_py("--api", api, *args, cwd=workspace)
    assert done.returncode == code, done.stderr
    assert done.stderr.count('→ read {"path": "README.md"}') == reads
    assert ending in summary(done.stderr)
    if reads == 0:
        assert "tool_choice: none" in done.stdout  # it says why it did not read


@pytest.mark.parametrize("api", DIALECTS)
def test_an_output_limit_cuts_the_answer_and_ends_it_as_a_real_server_does(workspace, api):
    done = ink_py("--api", api, "--max-tokens", "5", cwd=workspace)
    assert done.returncode == 2, done.stderr  # completed, but cut at the output limit (as Ink)
    assert "the answer was cut at the output limit" in done.stderr and "→ read" not in done.stderr
    out_tokens = int(re.search(r"out (\d+) tokens", summary(done.stderr)).group(1))  # type: ignore[union-attr]
    assert 0 < out_tokens <= 5


@pytest.mark.parametrize("api", DIALECTS)
def test_a_limit_inside_the_tool_call_blocks_the_call_as_section_4_4_says(workspace, api):
    done = ink_py("--api", api, "--max-tokens", "6", cwd=workspace)
    assert "← read error: Error: this reply hit the output token limit" in done.stderr  # no call ran
    assert '→ read {"path"' not in done.stderr


# ── reply by reply, in each dialect's words ─────────────────────────────────────────────

QUESTION = "读取 README.md"


def reply_for(dialect: str, stream: bool, **fields: Any) -> tuple[int, Any]:
    """(status, the reply's JSON, or its SSE events' data) for one request with ``fields``."""
    if dialect == "openai-completions":
        body = {"messages": [{"role": "user", "content": QUESTION}], "stream": stream, **fields}
        reply = chat_wire.build_reply(body, "readme", created=0)
    else:
        key = "messages" if dialect == MESSAGES else "input"
        body = {key: [{"role": "user", "content": QUESTION}], "stream": stream, **fields}
        reply = dialects.build_dialect_reply(body, dialect, "readme", created=0)
    raw = b"".join(reply["writes"]).decode("utf-8")
    if not stream or reply["status"] != 200:
        return reply["status"], json.loads(raw)
    data = [line[6:] for line in raw.replace("\r\n", "\n").splitlines() if line.startswith("data: ")]
    return reply["status"], [json.loads(d) for d in data if d != "[DONE]"]


LIMIT = {"openai-completions": "max_tokens", MESSAGES: "max_tokens", RESPONSES: "max_output_tokens"}
NONE = {"openai-completions": "none", MESSAGES: {"type": "none"}, RESPONSES: "none"}


def how_it_ended(dialect: str, stream: bool, reply: Any) -> str:
    if dialect == "openai-completions":
        choices = [c for chunk in reply for c in chunk["choices"]] if stream else reply["choices"]
        return next(c["finish_reason"] for c in reversed(choices) if c.get("finish_reason"))
    if dialect == MESSAGES:
        return (
            next(e["delta"]["stop_reason"] for e in reply if e["type"] == "message_delta")
            if stream
            else reply["stop_reason"]
        )
    final = reply[-1]["response"] if stream else reply
    return final["status"] + ":" + str((final["incomplete_details"] or {}).get("reason"))


ENDINGS = {  # dialect → (cut at the limit, a tool call, plain text)
    "openai-completions": ("length", "tool_calls", "stop"),
    MESSAGES: ("max_tokens", "tool_use", "end_turn"),
    RESPONSES: ("incomplete:max_output_tokens", "completed:None", "completed:None"),
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_ends_a_reply_in_its_own_words(dialect, stream):
    cut, call, plain = ENDINGS[dialect]
    status, reply = reply_for(dialect, stream, **{LIMIT[dialect]: 3})
    assert status == 200 and how_it_ended(dialect, stream, reply) == cut
    assert how_it_ended(dialect, stream, reply_for(dialect, stream)[1]) == call
    assert how_it_ended(dialect, stream, reply_for(dialect, stream, tool_choice=NONE[dialect])[1]) == plain


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "fields",
    [{"tool_choice": "sometimes"}, {"tool_choice": {"type": "function", "function": {"name": "grep"}}}],
    ids=["not-a-choice", "unknown-tool"],
)
def test_a_choice_no_server_takes_is_a_400(dialect, fields):
    if dialect != "openai-completions" and isinstance(fields["tool_choice"], dict):
        fields = {"tool_choice": {"type": "tool" if dialect == MESSAGES else "function", "name": "grep"}}
    status, reply = reply_for(dialect, True, **fields)
    assert status == 400 and "tool_choice" in json.dumps(reply)


def test_a_bad_output_limit_is_a_400():
    status, reply = reply_for("openai-completions", True, max_tokens=0)
    assert status == 400 and "max_tokens" in reply["error"]["message"]


# ── ink-py serve takes the flags the README gives it ────────────────────────────────────


def test_serve_takes_tool_choice_and_serial_tools(workspace):
    process = subprocess.Popen(
        [sys.executable, "-m", "ink_py", "serve", "--port", "0", "--tool-choice", "none", "--serial-tools"],
        cwd=workspace,
        env=cli_env(INK_SCRIPTED_DELAY="0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), process.stderr.read() if process.stderr else ""
        with requests.get(f"{url}chat/stream", params={"query": QUESTION}, stream=True, timeout=30) as stream:
            body = stream.text
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "event: done" in body and "event: tool_start" not in body  # none: the model was told not to call
    texts = [json.loads(line[6:])["text"] for line in body.splitlines() if line.startswith('data: {"text"')]
    assert "tool_choice: none" in "".join(texts)


def test_serve_refuses_a_tool_choice_it_cannot_send_in_one_line(workspace):
    done = ink_py("serve", "--port", "0", "--tool-choice", "grep", cwd=workspace)
    assert done.returncode == 1 and done.stderr.startswith("error: --tool-choice grep: not auto, required, none")
    assert done.stderr.count("\n") == 1
