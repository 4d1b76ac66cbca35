"""``ink-py chat`` as a user meets it: on a pseudo-terminal (Ctrl-C, Ctrl-D, readline) and on a pipe.

The terminal tests run the command in a child process whose controlling terminal is a
pty, so a typed ``\\x03`` is a real SIGINT from the terminal driver and ``\\x04`` a real
end of input, exactly as at a keyboard. Every wait is bounded; none measures speed.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ink_py.chat import history_lines, load_history, message_problem, save_history
from ink_py.core.loop import run_agent_loop
from ink_py.core.tools.read import create_read_tool
from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.scripted.server import start_model_server
from ink_py.terminal import cells

from .helpers import ROOT, ctrl_c_reaches_children

README = "# Demo project\n\nStart it with:\n\n```sh\npip install -e .\nmake run\n```\n"
WAIT_SECONDS = 30.0  # an upper bound on any one wait, never a speed check
SETTLE_SECONDS = 0.5  # see Terminal.ctrl_c_at_the_prompt


def chat_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "INK_MODEL")}
    env.update(PYTHONPATH=str(ROOT), INK_SCRIPTED_DELAY="0", NO_COLOR="1", LANG="C.UTF-8", TERM="dumb", **extra)
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


class Terminal:
    """``ink-py chat`` with a pty as its controlling terminal: type into it, read what it shows."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        with ctrl_c_reaches_children():  # the \x03 it is typed
            self.pid, self.fd = pty.fork()
            if self.pid == 0:  # the child: straight into the command (nothing else runs after a fork)
                os.chdir(cwd)
                os.execve(sys.executable, [sys.executable, "-m", "ink_py", "chat", *args], env)
        self.raw = b""  # everything shown so far (stdout and stderr share the terminal)
        self.code: int | None = None

    @property
    def seen(self) -> str:
        """What the terminal shows, decoded whole (a character may arrive split across two reads)."""
        return self.raw.decode("utf-8", "replace").replace("\r\n", "\n")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode("utf-8"))

    def ctrl_c_at_the_prompt(self) -> None:
        """Ctrl-C while readline waits for a key. The pause first is not a speed check: CPython's
        readline loop enters select() just after it echoes a key or draws the prompt, and a SIGINT
        landing in those microseconds waits for the next key. A person is never that quick."""
        time.sleep(SETTLE_SECONDS)
        self.type("\x03")

    def wait_for(self, text: str, after: int = 0) -> int:
        """Read until ``text`` appears at or after offset ``after``; return where it ends."""
        deadline = time.monotonic() + WAIT_SECONDS
        while text not in self.seen[after:]:
            if time.monotonic() > deadline or not self._read(deadline - time.monotonic()):
                raise AssertionError(f"never saw {text!r}; the terminal showed:\n{self.seen}")
        return self.seen.index(text, after) + len(text)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # the child has gone: the pty is closed
            return False
        self.raw += data
        return bool(data)

    def exit_code(self) -> int:
        deadline = time.monotonic() + WAIT_SECONDS
        while self._read(0.1) or time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
                return self.code
        raise AssertionError(f"the session did not end; the terminal showed:\n{self.seen}")

    def close(self) -> None:
        if self.code is None:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        os.close(self.fd)


@pytest.fixture
def terminal(workspace: Path):
    started: list[Terminal] = []

    def start(*args: str, **env: str) -> Terminal:
        session = Terminal(list(args), workspace, chat_env(**env))
        started.append(session)
        session.wait_for("› ")  # the first prompt
        return session

    yield start
    for session in started:
        session.close()


def test_ctrl_c_mid_reply_aborts_it_keeps_nothing_of_it_and_the_prompt_returns(terminal) -> None:
    chat = terminal("--scenario", "slow")
    chat.type("讲慢一点\n")
    mark = chat.wait_for("故意放慢")  # the reply is streaming
    chat.type("\x03")  # Ctrl-C, through the terminal driver
    mark = chat.wait_for("(aborted during turn 1: that reply was not kept)", mark)
    mark = chat.wait_for("› ", mark)  # back at the prompt, the session alive
    chat.type("/history\n")
    mark = chat.wait_for("  1 user       「讲慢一点」", mark)
    shown = chat.seen[mark : chat.wait_for("› ", mark)]
    assert "assistant" not in shown  # §4.2: the partial reply never entered the history
    chat.type("\x04")  # Ctrl-D at an empty prompt
    assert chat.exit_code() == 0
    assert "Traceback" not in chat.seen


def test_ctrl_c_clears_a_typed_line_and_ends_the_session_at_an_empty_prompt(terminal) -> None:
    chat = terminal()
    chat.type("half a question")
    chat.wait_for("half a question")
    chat.ctrl_c_at_the_prompt()  # text on the line: it is dropped, a fresh prompt
    mark = chat.wait_for("› ", chat.seen.index("half a question"))
    chat.type("/history\n")
    chat.wait_for("(the history is empty)", mark)  # nothing was sent
    chat.wait_for("› ", mark)
    chat.ctrl_c_at_the_prompt()  # an empty line: the session ends
    assert chat.exit_code() == 0
    assert "Traceback" not in chat.seen


def test_readline_edits_the_line_and_recalls_the_last_one(terminal) -> None:
    chat = terminal()
    chat.type("README.md\x01read \n")  # Ctrl-A: to the start of the line, then insert
    mark = chat.wait_for("— ink-scripted · 2 turns")
    mark = chat.wait_for("› ", mark)
    chat.type("\x1b[A\n")  # ↑ brings back "read README.md"; Enter sends it again
    mark = chat.wait_for("没有再读一次", mark)  # the same question, now answered from the history
    mark = chat.wait_for("› ", mark)
    chat.type("/history\n")
    mark = chat.wait_for("  5 user       「read README.md」", mark)
    assert "  1 user       「read README.md」" in chat.seen
    chat.wait_for("› ", mark)  # keys typed before readline holds the terminal may be taken differently
    chat.type("\x04")
    assert chat.exit_code() == 0


def run_piped(workspace: Path, lines: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ink_py", "chat", *args],
        cwd=workspace,
        env=chat_env(),
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_piped_lines_are_one_message_each_and_the_trace_covers_the_session(workspace: Path) -> None:
    done = run_piped(workspace, "读取 README.md\n\n它的标题是什么?\n", "--trace", "t.jsonl")
    assert done.returncode == 0, done.stderr
    assert "› 读取 README.md\n" in done.stderr and "› 它的标题是什么?\n" in done.stderr  # the transcript
    assert done.stderr.count("→ read") == 1  # the follow-up is answered from the history
    assert "它的标题是「Demo project」" in done.stdout
    records = [json.loads(line) for line in (workspace / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    ends = [r for r in records if r["type"] == "run_end"]
    assert [(r["turns"], r["stopReason"]) for r in ends] == [(2, "completed"), (1, "completed")]
    last_reply = [r for r in records if r["type"] == "message_end"][-1]["message"]
    assert ends[1]["usage"] == last_reply["usage"]  # each turn's own tokens, not the conversation's sum


def test_the_three_turn_session_cut_answer_continue_follow_up(workspace: Path) -> None:
    done = run_piped(workspace, "项目怎样启动?\n继续\n第一条命令是什么?\n", "--scenario", "length-text")
    assert done.returncode == 0, done.stderr
    cut, rest = done.stdout.split("接着上一条被截断的回答", 1)
    assert cut == "项目这样启动:先安装依赖,再运行\n"  # turn 1: the fixture, cut at the output limit
    assert "the answer was cut at the output limit" in done.stderr
    assert "停在「…启动:先安装依赖,再运行」" in rest  # turn 2 read the history to know where it stopped
    assert "pip install -e .\nmake run" in rest  # ... and finished with the file's commands
    assert done.stderr.count("→ read {") == 1  # turn 3 is answered without reading again
    assert rest.endswith("它给出的第一条命令是:\n\n```sh\npip install -e .\n```\n")


def test_a_piped_session_exits_with_its_last_turns_code(workspace: Path) -> None:
    done = run_piped(workspace, "项目怎样启动?\n", "--scenario", "length-text")
    assert done.returncode == 2  # as `ink-py`: the answer was cut


@pytest.mark.parametrize(
    "line, words",
    [
        ("/help", "/save FILE"),
        ("/nope", "unknown command /nope — /help lists the commands"),
        ("/save", "usage: /save FILE"),
        ("/save /no/such/dir/h.jsonl", "error: /save /no/such/dir/h.jsonl: No such file or directory"),
        ("/new", "(a new conversation: the history is empty)"),
    ],
)
def test_commands_answer_in_one_place(workspace: Path, line: str, words: str) -> None:
    done = run_piped(workspace, line + "\n")
    assert done.returncode == 0 and words in done.stderr and "Traceback" not in done.stderr
    assert "→ read" not in done.stderr  # a command is never sent to the model


def test_a_path_at_the_start_of_a_line_is_a_message_not_a_command(workspace: Path) -> None:
    done = run_piped(workspace, "/README.md 里写了什么\n")
    assert "unknown command" not in done.stderr and "→ read" in done.stderr


def test_save_then_resume_carries_the_conversation(workspace: Path) -> None:
    first = run_piped(workspace, "读取 README.md\n/save h.jsonl\n")
    assert "(saved 4 messages to h.jsonl" in first.stderr, first.stderr
    again = run_piped(workspace, "/history\n它的标题是什么?\n", "--resume", "h.jsonl")
    assert again.returncode == 0, again.stderr
    assert "  3 toolResult read ok · 67 B" in again.stderr
    assert "→ read" not in again.stderr and "它的标题是「Demo project」" in again.stdout


def test_a_saved_history_is_plain_dicts_the_python_api_takes(workspace: Path) -> None:
    with start_model_server(delay=0) as server:
        provider = OpenAICompletionsProvider(server.base_url)
        tools = [create_read_tool(workspace)]
        history: list = []
        common = {"provider": provider, "model": "m", "system": "s", "tools": tools}
        run_agent_loop(**common, history=history, user_message="读取 README.md")
        save_history(workspace / "h.jsonl", history)
        loaded = load_history(workspace / "h.jsonl")
        assert loaded == history and [m["role"] for m in loaded] == ["user", "assistant", "toolResult", "assistant"]
        result = run_agent_loop(**common, history=loaded, user_message="它的标题是什么?")
    assert result["turns"] == 1 and "Demo project" in loaded[-1]["blocks"][0]["text"]
    assert len(server.requests) == 3  # the follow-up needed no read


@pytest.mark.parametrize(
    "content, words",
    [
        ("not json\n", "line 1 is not JSON"),
        ('{"role": "system", "content": "x"}\n', "line 1: role must be user, assistant or toolResult"),
        ('{"role": "user", "content": "a"}\n{"role": "assistant", "blocks": "x"}\n', "line 2: a assistant"),
        ('{"role": "toolResult", "results": [{"toolCallId": 1}]}\n', "a tool result needs"),
        ("\udcff", "not UTF-8"),
    ],
)
def test_a_bad_resume_file_is_one_error_line(workspace: Path, content: str, words: str) -> None:
    (workspace / "bad.jsonl").write_bytes(content.encode("utf-8", "surrogateescape"))
    done = run_piped(workspace, "hi\n", "--resume", "bad.jsonl")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: --resume bad.jsonl: ") and words in done.stderr
    assert done.stderr.count("\n") == 1


def test_the_history_view_is_one_safe_line_per_message() -> None:
    history = [
        {"role": "user", "content": "读取 README.md\n\x1b[31mred"},
        {
            "role": "assistant",
            "blocks": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "README.md"}}],
            "usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0},
            "stopReason": "tool_use",
        },
        {
            "role": "toolResult",
            "results": [{"toolCallId": "c1", "toolName": "read", "content": "x" * 2048, "isError": False}],
        },
        {
            "role": "assistant",
            "blocks": [{"type": "text", "text": "项目这样启动"}],
            "usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0},
            "stopReason": "max_tokens",
        },
    ]
    assert all(message_problem(m) == "" for m in history)
    assert history_lines(history) == [
        "  1 user       「读取 README.md⏎ [31mred」",
        '  2 assistant  read {"path": "README.md"}',
        "  3 toolResult read ok · 2.0 KB",
        "  4 assistant  text 6 chars 「项目这样启动」 · (cut at the output limit)",
    ]


def test_a_failed_turn_is_one_error_line_and_the_session_goes_on(workspace: Path) -> None:
    with FakeModelServer([]) as server:
        url = server.base_url  # closed: nothing listens there now
    done = run_piped(workspace, "你好\n/history\n", "--base-url", url, "--model", "m")
    refused = f"error: could not connect to {url}/chat/completions — is the server running?"
    assert refused in done.stderr and "Traceback" not in done.stderr
    assert "  1 user       「你好」" in done.stderr  # the next line still ran: the session went on
    assert done.returncode == 1  # piped: the last turn's exit code (commands have none)


# ── issue 19.4 / 19.5 / 22.10: bytes that are not text, hostile --resume files, /history's width ──

SURROGATE_REPLY = (  # the model's text carries JSON's "\ud800": a lone surrogate, no character at all
    b'data: {"choices": [{"index": 0, "delta": {"content": "a\\ud800b"}}]}\n\n'
    b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
)
STOP = b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}\n\n'


def run_bytes(workspace: Path, lines: bytes, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    """``ink-py chat`` fed raw bytes (not necessarily UTF-8), its output as bytes."""
    return subprocess.run(
        [sys.executable, "-m", "ink_py", "chat", *args],
        cwd=workspace,
        env=chat_env(**env),
        input=lines,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_bytes_that_are_not_utf8_become_text_a_request_can_carry(workspace: Path, locale: str) -> None:
    with FakeModelServer([Reply(parts=[STOP]), Reply(parts=[STOP])]) as server:
        done = run_bytes(
            workspace,
            b"caf\xe9 \xff\n/save h.jsonl\n",
            "--base-url",
            server.base_url,
            "--model",
            "m",
            "--system",
            "syst\xe8me".encode("latin-1").decode("utf-8", "surrogateescape"),
            LC_ALL=locale,
        )
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0 and "Traceback" not in err and "internal error" not in err, err
    sent = server.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "syst\ufffdme"}  # argv's byte 0xE8, replaced at the edge
    assert sent[-1] == {"role": "user", "content": "caf\ufffd \ufffd"}  # the pipe's bytes too
    saved = (workspace / "h.jsonl").read_text(encoding="utf-8")  # the file is UTF-8 --resume takes back
    assert [json.loads(line)["role"] for line in saved.splitlines()] == ["user", "assistant"]


def test_a_prompt_argument_that_is_not_utf8_is_sent_as_replacement_characters(workspace: Path) -> None:
    with FakeModelServer([Reply(parts=[STOP])]) as server:
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", b"caf\xe9".decode("utf-8", "surrogateescape")]
            + ["--base-url", server.base_url, "--model", "m"],
            cwd=workspace,
            env=chat_env(),
            capture_output=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert server.requests[0].body["messages"][-1] == {"role": "user", "content": "caf\ufffd"}


def test_a_lone_surrogate_from_the_model_never_loses_the_conversation(workspace: Path) -> None:
    (workspace / "h.jsonl").write_text('{"role": "user", "content": "an older session"}\n', encoding="utf-8")
    script = [Reply(parts=[SURROGATE_REPLY]), Reply(parts=[STOP]), Reply(parts=[STOP])]
    with FakeModelServer(script) as server:
        done = run_bytes(
            workspace, "你好\n再说一次\n/save h.jsonl\n".encode(), "--base-url", server.base_url, "--model", "m"
        )
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "(saved " in err, err  # the session went on to /save
    saved = [json.loads(line) for line in (workspace / "h.jsonl").read_text(encoding="utf-8").splitlines()]
    assert saved[0] == {"role": "user", "content": "你好"}
    assert saved[1]["blocks"][0]["text"] in ("a\ufffdb", "a\ufffd\ufffdb")  # shown, and saved, as U+FFFD
    assert load_history(workspace / "h.jsonl") == saved  # and --resume takes it back


def test_under_the_c_locale_save_never_truncates_an_existing_file(workspace: Path) -> None:
    before = '{"role": "user", "content": "keep me"}\n'
    (workspace / "h.jsonl").write_text(before, encoding="utf-8")
    done = run_bytes(workspace, b"\xff\n/save h.jsonl\n/save h.jsonl\n", LC_ALL="C")
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0 and "Traceback" not in err, err
    text = (workspace / "h.jsonl").read_text(encoding="utf-8")
    assert text and text != before and json.loads(text.splitlines()[0]) == {"role": "user", "content": "\ufffd"}
    assert [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")] == []  # no temporary file left


ASSISTANT = {"role": "assistant", "usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0}}
CALL = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "README.md"}}


def deep(levels: int) -> object:
    value: object = {}
    for _ in range(levels):
        value = {"a": value}
    return value


USAGE_AS_TEXT = {"inputTokens": "1", "outputTokens": 1, "cacheReadTokens": 0}
RESULT = {"toolCallId": "c1", "toolName": "read", "content": "x", "isError": "no"}
HOSTILE_RECORDS = {  # id → (the record on line 2, words of the error)
    "no-arguments": ({**ASSISTANT, "blocks": [{k: v for k, v in CALL.items() if k != "arguments"}]}, "needs arguments"),
    "surrogate": ({"role": "user", "content": "\ud800"}, "lone surrogate"),
    "usage-missing": ({**ASSISTANT, "blocks": [CALL], "usage": {"inputTokens": 1}}, "needs usage with"),
    "usage-type": ({**ASSISTANT, "blocks": [CALL], "usage": USAGE_AS_TEXT}, "(whole numbers)"),
    "stop-reason": ({**ASSISTANT, "blocks": [CALL], "stopReason": "whenever"}, "stopReason"),
    "thinking": ({**ASSISTANT, "blocks": [{"type": "thinking"}]}, "a thinking block needs thinking"),
    "text": ({**ASSISTANT, "blocks": [{"type": "text", "text": 3}]}, "a text block needs text"),
    "deep": ({**ASSISTANT, "blocks": [{**CALL, "arguments": deep(150)}]}, "nested deeper than 100"),
    "model": ({**ASSISTANT, "blocks": [CALL], "model": 7}, "model must be a string"),
    "is-error": ({"role": "toolResult", "results": [RESULT]}, "isError"),
}


@pytest.mark.parametrize("record, words", HOSTILE_RECORDS.values(), ids=HOSTILE_RECORDS.keys())
def test_a_hostile_resume_record_is_one_line_naming_the_file_and_line(workspace, record, words) -> None:
    good = json.dumps({"role": "user", "content": "hi"})
    (workspace / "bad.jsonl").write_text(good + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    done = run_piped(workspace, "继续\n", "--resume", "bad.jsonl")
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: --resume bad.jsonl: line 2: ") and words in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
BLOCK = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "toolCall", "image", 1])},
    optional={"text": JSON_VALUES, "thinking": JSON_VALUES, "id": JSON_VALUES, "name": JSON_VALUES,
              "arguments": JSON_VALUES, "signature": JSON_VALUES},
)  # fmt: skip
USAGE = st.fixed_dictionaries(
    {}, optional={key: st.integers(-1, 5) | JSON_VALUES for key in ("inputTokens", "outputTokens", "cacheReadTokens")}
)
RESULT_VALUES = st.fixed_dictionaries(
    {}, optional={key: JSON_VALUES | st.booleans() for key in ("toolCallId", "toolName", "content", "isError")}
)
RECORD = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "toolResult", "system"])},
    optional={
        "content": JSON_VALUES,
        "blocks": st.lists(BLOCK, max_size=3) | JSON_VALUES,
        "usage": USAGE | JSON_VALUES,
        "stopReason": st.sampled_from(["tool_use", "end_turn", "max_tokens", None, "x"]),
        "results": st.lists(RESULT_VALUES, max_size=2) | JSON_VALUES,
    },
)  # fmt: skip


GOOD_RECORDS = [
    {"role": "user", "content": "读取 README.md"},
    {**ASSISTANT, "blocks": [{"type": "thinking", "thinking": "hm", "signature": "s"}, CALL], "stopReason": "tool_use"},
    {"role": "toolResult", "results": [{**RESULT, "isError": False}]},
    {**ASSISTANT, "blocks": [{"type": "text", "text": "ok"}], "stopReason": "end_turn", "model": "m"},
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(GOOD_RECORDS) | RECORD, min_size=1, max_size=5))
def test_whatever_a_resume_file_holds_it_is_refused_in_one_line_or_works_to_the_end(tmp_path_factory, records) -> None:
    """Loaded, a history can be sent in every dialect, shown by /history and counted: nothing fails later."""
    from ink_py.arguments import UsageError
    from ink_py.provider import anthropic_messages, openai_completions, openai_responses
    from ink_py.runner import replies_without_usage, summed_usage

    path = tmp_path_factory.mktemp("resume") / "h.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    try:
        history = load_history(path)
    except UsageError as refused:
        assert str(refused).startswith(f"--resume {path}: line ") and "\n" not in str(refused)
        return
    request = {"model": "m", "system": "s", "messages": history, "tools": [], "maxTokens": 5}
    for dialect in (openai_completions, anthropic_messages, openai_responses):
        json.dumps(dialect.build_request_body(request), ensure_ascii=False).encode("utf-8")  # type: ignore[arg-type]
    history_lines(history, 40)
    replies_without_usage(history)
    summed_usage(history)


def test_history_lines_fit_the_terminal_width(workspace: Path) -> None:
    long_question = "读取 README.md,然后告诉我项目怎样启动、怎样测试、怎样发布,每一步都要说清楚"
    done = subprocess.run(
        [sys.executable, "-m", "ink_py", "chat"],
        cwd=workspace,
        env=chat_env(COLUMNS="40"),
        input=f"{long_question}\n/history\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    shown = done.stderr.split("› /history\n", 1)[1].splitlines()
    numbered = [line for line in shown if line[:3].strip().isdigit()]
    assert len(numbered) == 4  # user, assistant (the call), toolResult, assistant (the answer)
    assert all(sum(cells(c) for c in line) <= 40 for line in numbered), numbered
    assert numbered[0].startswith("  1 user       「读取 README.md") and numbered[0].endswith("…")
