"""``ink-py`` end to end, as a user runs it: a subprocess, real HTTP, real exit codes.

The README task and the article's scenarios on the built-in model, a real endpoint and its
failures as one ``error:`` line, usage mistakes, ``--help`` and ``--version``, ``--record`` and
``--display``. Ctrl-C is tests/test_ctrl_c.py's; what the terminal shows, tests/test_terminal.py's.
"""

import json
import os
import subprocess
import sys

import pytest

import ink_py as ink_py_package
from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.course.checks.helpers import fixture_bytes, sse, text_reply, tool_reply

from .helpers import cli_env

README = "# Demo project\n\nStart it with:\n\n```sh\npip install -e .\nmake run\n```\n"


def ink_py(*args, cwd, env_extra=None, timeout=60):
    """``python -m ink_py *args`` to its end; the built-in model (unless told otherwise) streams without pauses."""
    env = cli_env(**{"INK_SCRIPTED_DELAY": "0", **(env_extra or {})})
    return subprocess.run(
        [sys.executable, "-m", "ink_py", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


def test_the_readme_task_on_the_built_in_model(workspace):
    trace = workspace / "trace.jsonl"
    done = ink_py("--trace", str(trace), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    # stdout holds the answer, built from what the read tool really returned
    assert "我先读一下 README.md。" in done.stdout
    assert "Demo project" in done.stdout and "pip install -e ." in done.stdout and "make run" in done.stdout
    # stderr: the notice, one line per tool start and end, and Ink's summary line
    assert "built-in scripted model" in done.stderr
    assert '→ read {"path": "README.md"}' in done.stderr
    assert "← read ok · 67 B" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("— ink-scripted · 2 turns · in ")
    assert "\033[" not in done.stderr  # no colour when not on a terminal

    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds[0] == "text_delta" and kinds[-1] == "run_end"
    assert kinds.count("message_end") == 2 and kinds.count("tool_start") == 1 and kinds.count("tool_end") == 1
    assert "tool_call_delta" in kinds
    assert records[-1]["stopReason"] == "completed" and records[-1]["turns"] == 2
    assert records[-1]["model"] == "ink-scripted" and records[-1]["truncated"] is False


def test_a_prompt_naming_another_file_reads_that_one(workspace):
    (workspace / "setup.cfg").write_text("[metadata]\nname = demo\n", encoding="utf-8")
    done = ink_py("读取 setup.cfg,说说项目名", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert '→ read {"path": "setup.cfg"}' in done.stderr
    assert "setup.cfg" in done.stdout


@pytest.mark.parametrize(
    "scenario, code, stdout_words, stderr_words",
    [
        (
            "interleaved",
            0,
            ["README.md", "读取 package.json 失败"],
            ["← read error: Error: file not found: package.json"],
        ),
        ("missing-finish", 1, [], ["error: OpenAI stream ended without finish_reason — response may be truncated"]),
        (
            "invalid-json",
            0,
            ["刚才的调用没能执行", "Demo project"],
            ["← read error: Error: the arguments for read were not valid JSON"],
        ),
        ("length-tool", 0, ["Demo project"], ["output token limit"]),
        ("length-text", 2, ["项目这样启动"], ["the answer was cut at the output limit"]),
    ],
)
def test_the_article_scenarios_on_the_built_in_model(workspace, scenario, code, stdout_words, stderr_words):
    done = ink_py("--scenario", scenario, cwd=workspace)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    for words in stdout_words:
        assert words in done.stdout
    for words in stderr_words:
        assert words in done.stderr


def test_a_real_endpoint_with_a_key(workspace):
    with FakeModelServer(
        [Reply(parts=[tool_reply(("c1", "read", '{"path": "README.md"}'))]), Reply(parts=[text_reply("Run make run.")])]
    ) as server:
        done = ink_py("--base-url", server.base_url, "--model", "gpt-x", "--api-key", "sk-SECRET-1", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Run make run."
    assert server.requests[0].headers["Authorization"] == "Bearer sk-SECRET-1"
    assert server.requests[0].body["model"] == "gpt-x"
    assert server.requests[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": README.rstrip()}
    assert "sk-SECRET-1" not in done.stdout + done.stderr


def test_environment_fallbacks(workspace):
    with FakeModelServer([Reply(parts=[text_reply("hi")])]) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-env", "INK_MODEL": "env-model"}
        done = ink_py("hello", cwd=workspace, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert server.requests[0].headers["Authorization"] == "Bearer sk-env"
    assert server.requests[0].body["model"] == "env-model"
    assert server.requests[0].body["messages"][-1] == {"role": "user", "content": "hello"}


@pytest.mark.parametrize(
    "script, code, words",
    [
        (
            [
                Reply(
                    401, parts=[b'{"error": {"message": "Incorrect API key provided: sk-SECRET-1"}}'], framing="length"
                )
            ],
            1,
            "error: API error 401: Incorrect API key provided: *** — check the API key",
        ),
        (
            [
                Reply(
                    parts=[
                        sse({"choices": [{"delta": {"content": "partial"}}]}),
                        b'data: {"error": {"message": "overloaded"}}\n\n',
                    ]
                )
            ],
            1,
            "error: the server reported an error in the stream: overloaded",
        ),
        (
            [Reply(parts=[fixture_bytes("article/missing_finish")])],
            1,
            "error: OpenAI stream ended without finish_reason — response may be truncated",
        ),
        (
            [Reply(parts=fixture_bytes("article/readme").split(b"\n\n")[:2], cut=True)],
            1,
            "error: the connection broke while reading the reply",
        ),
    ],
    ids=["401", "mid-stream-error", "truncated-stream", "broken-connection"],
)
def test_server_failures_are_one_line_errors(workspace, script, code, words):
    with FakeModelServer(script) as server:
        done = ink_py("--base-url", server.base_url, "--model", "m", "--api-key", "sk-SECRET-1", cwd=workspace)
    assert done.returncode == code
    assert words in done.stderr
    assert "Traceback" not in done.stderr and "sk-SECRET-1" not in done.stderr
    assert len(server.requests) == 1  # a 401 is not retried; a broken stream is never retried


def test_429_with_retry_after_is_waited_out_then_succeeds(workspace):
    script = [
        Reply(429, {"Retry-After": "1"}, [b'{"error": {"message": "slow down"}}'], framing="length"),
        Reply(parts=[text_reply("ok")]),
    ]
    with FakeModelServer(script) as server:
        done = ink_py("--base-url", server.base_url, "--model", "m", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok" and len(server.requests) == 2


def test_max_turns_exit_code(workspace):
    replies = [Reply(parts=[tool_reply((f"c{i}", "read", '{"path": "README.md"}'))]) for i in range(2)]
    with FakeModelServer(replies) as server:
        done = ink_py("--base-url", server.base_url, "--model", "m", "--max-turns", "2", cwd=workspace)
    assert done.returncode == 3
    assert "(stopped: reached max turns (2))" in done.stderr


def test_the_read_tool_stays_inside_the_workspace(workspace, tmp_path_factory):
    secret = tmp_path_factory.mktemp("outside") / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    reply = tool_reply(("c1", "read", json.dumps({"path": str(secret)})))
    with FakeModelServer([Reply(parts=[reply]), Reply(parts=[text_reply("ok")])]) as server:
        done = ink_py("--base-url", server.base_url, "--model", "m", cwd=workspace)
    assert done.returncode == 0
    tool_message = server.requests[1].body["messages"][-1]
    assert "outside the workspace" in tool_message["content"] and "TOP SECRET" not in tool_message["content"]


def test_a_trace_to_stderr_is_appended_to_the_log_stderr_goes_to(workspace):
    """``--trace /dev/stderr 2>>run.log``: the log keeps what it had and gets the trace after it; /dev/stderr
    is a stream, never a file to write beside and rename over (that replaced the /dev/stderr link itself)."""
    log = workspace / "run.log"
    log.write_text("an earlier line\n", encoding="utf-8")
    with log.open("a", encoding="utf-8") as stderr:
        env = cli_env(INK_SCRIPTED_DELAY="0")
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", "--trace", "/dev/stderr"],
            cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=stderr, timeout=60,
        )  # fmt: skip
    written = log.read_text(encoding="utf-8")
    assert done.returncode == 0, written
    assert written.startswith("an earlier line\n")
    assert '"run_end"' in written and "— ink-scripted · 2 turns" in written
    assert os.path.islink("/dev/stderr")


def test_a_trace_through_a_link_replaces_the_file_it_names_and_keeps_the_link(workspace):
    (workspace / "traces").mkdir()
    kept = workspace / "traces" / "last.jsonl"
    kept.write_text("an old trace\n", encoding="utf-8")
    link = workspace / "trace.jsonl"
    link.symlink_to(kept)
    done = ink_py("--trace", str(link), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and link.resolve() == kept.resolve()
    assert '"run_end"' in kept.read_text(encoding="utf-8")
    assert sorted(p.name for p in (workspace / "traces").iterdir()) == ["last.jsonl"]  # no temporary left


@pytest.mark.parametrize(
    "args, words",
    [
        (["--max-turns", "0"], "error: argument --max-turns: must be at least 1, got 0"),
        (["--max-tokens", "lots"], "error: argument --max-tokens: 'lots' is not a whole number"),
        (["--workspace", "/no/such/dir"], "error: --workspace /no/such/dir: not a folder"),
        (["--scenario", "nope"], "error: argument --scenario: invalid choice: 'nope'"),
        (["--base-url", "http://127.0.0.1:9/v1"], "error: name the model to use: --model NAME (or set INK_MODEL)"),
        (
            ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--scenario", "readme"],
            "error: --scenario only applies",
        ),
        (["--trace", "/no/such/dir/t.jsonl"], "error: --trace /no/such/dir/t.jsonl: No such file or directory"),
    ],
)
def test_usage_mistakes_are_one_line_errors(workspace, args, words):
    done = ink_py(*args, cwd=workspace)
    assert done.returncode == 1
    assert words in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2


def test_a_server_that_is_not_running_is_named_in_plain_words(workspace):
    with FakeModelServer([]) as server:
        url = server.base_url  # closed: nothing listens there now
    done = ink_py("--base-url", url, "--model", "m", cwd=workspace)
    assert done.returncode == 1
    assert done.stderr == (
        f"error: could not connect to {url}/chat/completions — is the server running?"
        " (connection refused, 3 attempts)\n"
    )


@pytest.mark.parametrize("url", ["127.0.0.1:8080/v1", "localhost:11434/v1", "api.openai.com/v1"])
def test_a_base_url_without_a_scheme_is_refused_at_once(workspace, url):
    done = ink_py("--base-url", url, "--model", "m", cwd=workspace)
    assert done.returncode == 1
    assert done.stderr == f"error: --base-url {url}: give the whole URL, with http:// or https:// (e.g. http://{url})\n"


def test_a_404_shows_the_url_tried_and_suggests_v1(workspace):
    with FakeModelServer([Reply(404, parts=[b'{"detail": "Not Found"}'], framing="length")]) as server:
        root = server.base_url.removesuffix("/v1")  # the usual slip: /v1 left out
        done = ink_py("--base-url", root, "--model", "m", cwd=workspace)
    assert done.returncode == 1
    assert f"tried POST {root}/chat/completions — most servers want the base URL to end in /v1" in done.stderr
    assert len(server.requests) == 1  # a 404 is not retried


@pytest.mark.parametrize("prompt", ["", "   ", "\n"])
def test_an_empty_prompt_is_refused(workspace, prompt):
    done = ink_py(prompt, cwd=workspace)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "error: the prompt is empty: ask a question (or leave the prompt out for the README task)\n"


def test_a_bad_delay_setting_is_a_usage_error(workspace):
    done = ink_py(cwd=workspace, env_extra={"INK_SCRIPTED_DELAY": "fast"})
    assert done.returncode == 1 and done.stderr == "error: INK_SCRIPTED_DELAY=fast: not a number of seconds\n"


def test_no_prompt_runs_the_readme_task_even_on_a_terminal(workspace):
    """The decision: ``ink-py`` alone is always the README task (CI runs it with stdout captured);
    a conversation is ``ink-py chat``, which --help lists."""
    assert "ink-py chat" in ink_py("--help", cwd=workspace).stdout
    controller, terminal = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ink_py"],
            cwd=workspace,
            env=cli_env(INK_SCRIPTED_DELAY="0"),
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


def test_record_saves_the_bodies_byte_for_byte(workspace):
    body = fixture_bytes("servers/proxy_crlf")
    with FakeModelServer([Reply(parts=[body[:50], body[50:]])]) as server:
        done = ink_py(
            "--base-url", server.base_url, "--model", "m", "--api-key", "sk-SECRET-1", "--record", "rec", cwd=workspace
        )
    assert done.returncode == 0, done.stderr
    assert (workspace / "rec" / "001-response.sse").read_bytes() == body
    request = (workspace / "rec" / "001-request.json").read_text(encoding="utf-8")
    assert json.loads(request)["model"] == "m" and "sk-SECRET-1" not in request


def test_help_names_the_exit_codes_and_the_delay_setting(workspace):
    done = ink_py("--help", cwd=workspace)
    assert done.returncode == 0 and "exit codes" in done.stdout
    assert "INK_SCRIPTED_DELAY=S" in done.stdout and "0: none" in done.stdout


def test_version_names_the_program_and_its_version(workspace):
    done = ink_py("--version", cwd=workspace)
    assert done.returncode == 0 and done.stdout == f"ink-py {ink_py_package.__version__}\n"


@pytest.mark.parametrize(
    ("argv", "first_line"),
    [
        (["-V"], f"ink-py {ink_py_package.__version__}"),  # as python -V
        (["--", "-V"], f"ink-py {ink_py_package.__version__}"),  # what pdb passes on: python -m pdb -m ink_py -- -V
        (["--", "demo", "--list"], "readme"),
        (["chat", "--version"], f"ink-py {ink_py_package.__version__}"),
    ],
)
def test_a_first_double_dash_is_skipped_and_minus_v_is_the_version(capsys, argv, first_line):
    from ink_py.__main__ import main

    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's version action
        code = stop.code
    assert code == 0 and capsys.readouterr().out.splitlines()[0].startswith(first_line)


@pytest.mark.parametrize(
    "command", [[], ["chat"], ["demo"], ["exercise"], ["exercise", "start"], ["serve"], ["serve-model"]]
)
def test_every_command_has_help(workspace, command):
    done = ink_py(*command, "--help", cwd=workspace)
    assert done.returncode == 0 and done.stdout.startswith("usage: ink-py") and done.stderr == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-turns", "zero"],
        ["chat", "--resume"],
        ["chat", "a prompt"],  # chat takes its messages from its input, not from the command line
        ["demo", "--context", "x"],
        ["exercise", "list", "--verbose"],
        ["serve", "--port", "99999"],
        ["serve-model", "--port", "99999"],
        ["serve-model", "--scenario", "bogus"],
    ],
)
def test_a_bad_flag_is_one_error_line_and_exit_1_in_every_command(workspace, argv):
    done = ink_py(*argv, cwd=workspace)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr  # exit 2 means only "answer truncated"
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "policy, shown, hidden",
    [
        ("ink", '  ↳ read {"path":"README.md"}', "preparing a read call"),  # the fragments as they came (§2.1)
        ("filtered", "  … preparing a read call", "↳ read"),  # second article §五: no raw JSON while it accumulates
    ],
)
def test_display_policies(workspace, policy, shown, hidden):
    done = ink_py("--display", policy, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert shown in done.stderr and hidden not in done.stderr
    assert '→ read {"path": "README.md"}' in done.stderr  # the call itself is announced either way
    assert "Demo project" in done.stdout  # text streams the same
