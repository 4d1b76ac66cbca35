"""What the built-in model answers (ink_py/scripted/script.py): its plan for each request, read off the history.

The prompt names the file to read; the file's title and shell commands make the answer (a
failed read is quoted, a file without commands shown by its first lines); no read tool, no
call; later turns are answered from the history as a real model would — a follow-up about
the file already read, another file, "继续" after an answer cut short. No server here: the
wire and the HTTP are tests/test_model_server.py's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ink_py.scripted import script

from .test_model_server import wire_body

# ── the file and its summary ────────────────────────────────────────────────────────────


def test_a_failed_read_is_reported_with_its_first_line() -> None:
    answer = script.summarise_file("NOPE.md", "Error: ENOENT: no such file: NOPE.md\nmore detail")
    assert answer == "读取 NOPE.md 失败,工具返回:「Error: ENOENT: no such file: NOPE.md」。"


def test_a_file_without_commands_is_quoted() -> None:
    answer = script.summarise_file("notes.txt", "\n   1→Notes\n   2→\n   3→one\n   4→two\n   5→three\n")
    assert answer == "notes.txt 的标题是「Notes」。文件里没有给出命令,开头几行是:\n\n> Notes\n> one\n> two"


def test_commands_come_only_from_shell_blocks() -> None:
    lines = ["# Title", "```python", "# not a title", "print(1)", "```", "~~~bash", "# a comment", "$ make", "~~~"]
    assert script.file_title(lines) == "Title"
    assert script.file_commands(lines) == ["make"]
    assert script.file_commands(["```", *[f"step {n}" for n in range(12)], "```"])[-1] == "step 7"


def test_tools_without_read_get_a_plain_text_answer() -> None:
    other = {"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}
    answer = script.plan_answer(wire_body("读取 README.md", tools=[other]))
    assert answer["tool_call"] is None and "read" in answer["text"]
    for odd in ({}, {"messages": "hi"}, {"messages": [{"role": "assistant", "content": "?"}]}):
        assert script.plan_answer(odd)["tool_call"] is None


# ── a conversation: the script reads the history, as a real model would ────────────────

CALL = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "README.md"}'}}
DEMO_README = "# Demo\n\n```sh\npip install -e .\nmake run\n```\n"
READ_README = [
    {"role": "user", "content": "读取 README.md"},
    {"role": "assistant", "content": "我先读一下 README.md。", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": DEMO_README},
    {"role": "assistant", "content": "README.md 的标题是「Demo」。"},
]
CUT = [{"role": "user", "content": "项目怎样启动?"}, {"role": "assistant", "content": "项目这样启动:先安装依赖,再运行"}]


@pytest.mark.parametrize(
    "scenario, messages, reads, words",
    [
        ("readme", [*READ_README, {"role": "user", "content": "第一条命令是什么?"}], None, "pip install -e ."),
        ("readme", [*READ_README, {"role": "user", "content": "README.md 的标题?"}], None, "它的标题是「Demo」"),
        ("readme", [*READ_README, {"role": "user", "content": "说说它"}], None, "没有再读一次"),
        ("readme", [*READ_README, {"role": "user", "content": "读取 setup.cfg"}], "setup.cfg", ""),
        ("length-text", [*CUT, {"role": "user", "content": "继续"}], "README.md", "停在「…启动:先安装依赖,再运行」"),
        ("length-text", [*CUT, {"role": "user", "content": "继续"}, *READ_README[1:3]], None, "(接上文「…"),
        ("abort", [*READ_README, {"role": "user", "content": "标题?"}], None, "Demo"),  # a scenario: first reply only
        ("slow", [*READ_README, {"role": "user", "content": "标题?"}], None, "Demo"),
    ],
)
def test_later_turns_are_answered_from_the_history(
    scenario: str, messages: list[dict[str, Any]], reads: str | None, words: str
) -> None:
    answer = script.plan_answer({"messages": messages}, scenario)
    assert answer["fixture"] is None and not answer["slow"]
    call = answer["tool_call"]
    assert (json.loads(call["arguments"])["path"] if call else None) == reads
    assert words in answer["text"]


def test_continue_resumes_exactly_where_a_known_answer_stopped() -> None:
    whole = script.summarise_file("README.md", DEMO_README)
    cut_at = len(whole) // 2
    messages = [*READ_README[:3], {"role": "assistant", "content": whole[:cut_at]}, {"role": "user", "content": "继续"}]
    answer = script.plan_answer({"messages": messages})
    assert answer["tool_call"] is None and whole[:cut_at] + answer["text"] == whole
