"""What a run tells its user about a real server: the summary line, empty replies, usage nobody
reported, the trace of a failed run (an existing trace file is replaced only when the run ends),
one-line errors and ``--tool-choice`` (a subprocess, real HTTP)."""

import json
import re

import pytest

from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.course.checks.helpers import fixture_bytes, sse, text_reply, tool_reply

from .test_cli import README, ink_py

READ_CALL = ("c1", "read", '{"path": "README.md"}')


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


def run(server, workspace, *args):
    trace = workspace / "trace.jsonl"
    done = ink_py("--base-url", server.base_url, "--model", "m", "--trace", str(trace), *args, cwd=workspace)
    assert "Traceback" not in done.stderr
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    return done, records


def with_usage(body, prompt, completion):
    return body + sse({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})


def test_a_one_turn_run_says_1_turn_and_where_to_continue(workspace):
    done = ink_py("--scenario", "length-text", cwd=workspace)
    assert re.search(r"— ink-scripted · 1 turn · in \d+ / out \d+ tokens", done.stderr)  # the scenario's usage too
    assert "ink-py chat" in done.stderr.splitlines()[-1]  # the advice to continue names where to do it


def test_an_empty_successful_reply_is_announced(workspace):
    """A gateway whose upstream failed may answer 200 with nothing in it."""
    with FakeModelServer([Reply(parts=[fixture_bytes("servers/empty_reply")])]) as server:
        done, _ = run(server, workspace)
    assert done.returncode == 0 and done.stdout == ""
    assert "notice: the model sent an empty reply (no text, no tool calls)" in done.stderr.splitlines()


def test_a_reply_with_content_gets_no_empty_notice(workspace):
    with FakeModelServer([Reply(parts=[tool_reply(READ_CALL)]), Reply(parts=[text_reply("ok")])]) as server:
        done, _ = run(server, workspace)
    assert done.returncode == 0 and "empty reply" not in done.stderr


@pytest.mark.parametrize(
    "bodies, summary, usage, without",
    [
        (
            [tool_reply(READ_CALL), with_usage(text_reply("ok"), 120, 7)],
            "· 2 turns · in 220 / out 17 tokens",
            {"inputTokens": 220, "outputTokens": 17, "cacheReadTokens": 0},
            None,
        ),
        ([text_reply("ok")], "· 1 turn · usage not reported by the server", None, None),
        (
            [tool_reply(READ_CALL), text_reply("ok")],  # tool_reply reports usage, text_reply does not
            "· 2 turns · in 100 / out 10 tokens (usage not reported for 1 of 2 replies)",
            {"inputTokens": 100, "outputTokens": 10, "cacheReadTokens": 0},
            1,
        ),
    ],
    ids=["reported", "not-reported", "partly-reported"],
)
def test_usage_a_server_did_not_report_is_never_zero(workspace, bodies, summary, usage, without):
    with FakeModelServer([Reply(parts=[body]) for body in bodies]) as server:
        done, records = run(server, workspace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"— m {summary}"
    end = records[-1]
    assert end["type"] == "run_end" and end["usage"] == usage and end.get("repliesWithoutUsage") == without


@pytest.mark.parametrize(
    "script, error",
    [
        (
            [
                Reply(
                    400,
                    parts=[b'{"error": {"message": "2 validation errors:\\nmessages.2\\n  bad"}}'],
                    framing="length",
                )
            ],
            "API error 400: 2 validation errors: messages.2 bad",
        ),
        (
            [Reply(parts=[tool_reply(READ_CALL)]), Reply(parts=[fixture_bytes("article/missing_finish")])],
            "OpenAI stream ended without finish_reason — response may be truncated",
        ),
    ],
    ids=["multi-line-400-on-turn-1", "truncated-turn-2"],
)
def test_a_failed_run_is_one_error_line_and_its_trace_ends_with_run_end(workspace, script, error):
    with FakeModelServer(script) as server:
        done, records = run(server, workspace)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == f"error: {error}"  # one line, however many the server sent
    end = records[-1]
    assert end["type"] == "run_end" and end["stopReason"] == "error" and end["error"] == error
    assert end["turns"] == len(script) - 1 and end["model"] == "m"


@pytest.mark.parametrize(
    "choice, wire",
    [
        ("read", [{"type": "function", "function": {"name": "read"}}, "auto"]),  # forced once, then auto
        ("required", [{"type": "function", "function": {"name": "read"}}] * 2),  # one tool: the form all servers take
        ("none", ["none", "none"]),
        ("auto", ["auto", "auto"]),
    ],
)
def test_tool_choice_in_each_turns_request(workspace, choice, wire):
    with FakeModelServer([Reply(parts=[tool_reply(READ_CALL)]), Reply(parts=[text_reply("ok")])]) as server:
        done, _ = run(server, workspace, "--tool-choice", choice)
    assert done.returncode == 0, done.stderr
    assert [request.body["tool_choice"] for request in server.requests] == wire
    assert server.requests[1].body["messages"][2]["content"] == ""  # the tool-only reply, sent back as ""


def test_an_unknown_tool_choice_is_a_usage_error(workspace):
    done = ink_py("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--tool-choice", "write", cwd=workspace)
    assert done.returncode == 1
    assert done.stderr.strip() == "error: --tool-choice write: not auto, required, none or a tool's name (read)"


# ── --trace FILE never destroys what FILE held ──────────────────────────────────────────


def test_an_existing_trace_survives_a_run_that_is_killed(workspace):
    """It was opened with "w": truncated at once, so a run killed (or crashing) mid-way left it empty."""
    from .raw_servers import INK_PY, run_measured, silent_server

    trace = workspace / "trace.jsonl"
    trace.write_text('{"type": "run_end", "kept": true}\n')
    with silent_server() as server:
        argv = [*INK_PY, "--base-url", server.base_url, "--model", "m", "--trace", str(trace)]
        result = run_measured(argv, cwd=workspace, timeout=3)  # SIGKILL while it waits for the headers
    assert result.killed
    assert trace.read_text() == '{"type": "run_end", "kept": true}\n'


def test_an_existing_trace_is_replaced_whole_when_the_run_ends(workspace):
    trace = workspace / "trace.jsonl"
    trace.write_text("old\n")
    trace.chmod(0o600)
    done = ink_py("--trace", str(trace), cwd=workspace)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert records[-1]["type"] == "run_end" and trace.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in workspace.iterdir()) == ["README.md", "trace.jsonl"]  # nothing left beside it
