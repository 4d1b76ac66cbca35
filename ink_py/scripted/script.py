"""The built-in scripted model's script: what it answers, decided from the request alone — no wire format here.

The model asks to ``read`` the file named in the prompt (default README.md), then summarises
what the tool returned. The server keeps no conversation state: each answer is read off the
request's Chat Completions ``messages`` (``dialects`` translates the other two first). An
``Answer`` — text, a ``PlannedCall`` or a scenario's fixture — is written as bytes by ``turn``
and the encoders (``chat_wire``, ``messages_wire``, ``responses_wire``). Sections: what to
answer (turn 1, a retry, a follow-up); turn 2, summarising what the tools returned; the ids.

    >>> answer = plan_answer({"model": "ink-scripted", "messages": [{"role": "user", "content": "读取 setup.cfg"}]})
    >>> answer["text"], answer["tool_call"]["name"], answer["tool_call"]["arguments"]
    ('我先读一下 setup.cfg。', 'read', '{"path":"setup.cfg"}')
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any, TypedDict

from .scenarios import SCENARIOS

MODEL_ID = "ink-scripted"
DEFAULT_SCENARIO = "readme"
SLOW_SCENARIO = "slow"  # not an article scenario: a long, slow answer to press Ctrl-C on
DEFAULT_FILE = "README.md"
RETRY_PHRASES = (  # a tool result saying the call's arguments were refused, in the words of:
    "Send the call again",  # ink_py's loop,
    "Invalid input for tool",  # the Vercel AI SDK's tool error,
    '"type":"json_invalid"',  # pydantic-ai's validation error
)
MAX_COMMANDS = 8
SHELL_INFOS = {"", "sh", "bash", "shell", "console"}  # fenced blocks whose lines are commands

SLOW_TEXT = (
    "这是一段故意放慢的回答,用来练习中断。模型每隔一小会儿才送来两个字,像一台忙碌的服务器。"
    "现在按下 Ctrl-C:Ink 调用 controller.abort(),关闭正在读取的连接;阻塞在读取上的线程随即醒来,"
    "abort_safe 把这次失败认作用户的取消而不是故障,于是事件流悄悄结束,不产生 message_end,"
    "已经收到的半段文字也不会被当成一条完整的回答交给循环。"
    "如果一直不按,这段话大约二十秒后会自己说完,以 finish_reason stop 结束。"
    "下次可以在任意一个字的中间按下 Ctrl-C,看看屏幕停在哪里,再看看循环怎样收场。"
)

# A path with an extension: README.md, setup.cfg, docs/intro.md (ASCII, so 读取README.md works too).
_FILE_NAME = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]*(?![\w/-])", re.ASCII)
_HEADING = re.compile(r" {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})\s*([^\s`]*)")
_CONTINUE = re.compile(r"(?:请)?(?:继续|接着说|接着|go on|continue)[。.!！]?", re.IGNORECASE)
_NUMBERED = re.compile(r"\s*\d+(?:→|\t|\|)")  # "  12→text", "12\ttext": a read tool's line numbers


class PlannedCall(TypedDict):
    """A tool call the script decides to make, whole: the encoders cut its arguments into fragments."""

    id: str
    name: str
    arguments: str  # the JSON text, as a model writes it


class Answer(TypedDict):
    """What to say. ``fixture`` set: say what that fixture says instead of text and tool_call."""

    text: str
    tool_call: PlannedCall | None
    fixture: str | None
    hold: bool  # after the reply, keep the connection open and silent (the abort scenario)
    slow: bool
    cut: bool  # cut at the request's output limit (controls.obey): the reply ends as a real one does there


def scenario_names() -> list[str]:
    """Every name ``--scenario`` accepts.

    >>> scenario_names()[0], scenario_names()[-1]
    ('readme', 'slow')
    """
    return [*SCENARIOS, SLOW_SCENARIO]


# ── what to answer ──────────────────────────────────────────────────────────────────────


def plan_answer(body: dict[str, Any], scenario: str = DEFAULT_SCENARIO) -> Answer:
    """Decide the reply from the request's messages alone (turn 1, a retry, or a summary)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        return text_answer(help_text("请求里没有可读的 messages 列表。"))
    path = requested_file(messages)
    results = latest_tool_results(messages)
    call_id = new_call_id(messages)

    if results:  # a later turn: the loop ran our tool calls
        if any(phrase in message_text(r.get("content")) for r in results for phrase in RETRY_PHRASES):
            if not has_read_tool(body):
                return text_answer(help_text("请求声明了工具,但其中没有 read。"))
            return read_call(f"刚才的调用没能执行,我重新读取 {path}。", path, call_id)
        cut = cut_answer(messages)
        prefix = f"(接上文「…{cut[-12:]}」)\n\n" if cut else ""  # this read finishes a cut answer
        return text_answer(prefix + summarise_results(messages, results))
    if messages[-1].get("role") != "user":
        return text_answer(help_text("最后一条消息既不是用户的提问,也不是工具结果。"))
    if any(m.get("role") == "assistant" for m in messages):  # a conversation: answer from its history
        follow_up = answer_follow_up(messages)
        if follow_up is not None:
            return text_answer(follow_up)
        cut = cut_answer(messages)
        if cut and has_read_tool(body):
            return read_call(
                f"接着上一条被截断的回答(它停在「…{cut[-12:]}」)。先读一下 {path},把命令说准。", path, call_id
            )
    elif scenario in SCENARIOS and scenario != DEFAULT_SCENARIO:  # a scenario is the first reply only
        fixture = SCENARIOS[scenario]["fixture"]
        return {**text_answer(""), "fixture": fixture, "hold": scenario == "abort"}
    elif scenario == SLOW_SCENARIO:
        return {**text_answer(SLOW_TEXT), "slow": True}
    if not has_read_tool(body):
        return text_answer(help_text("请求声明了工具,但其中没有 read。"))
    return read_call(f"我先读一下 {path}。", path, call_id)


def text_answer(text: str) -> Answer:
    """An answer that is only ``text``."""
    return {"text": text, "tool_call": None, "fixture": None, "hold": False, "slow": False, "cut": False}


def read_call(text: str, path: str, call_id: str) -> Answer:
    """``text``, then a ``read`` call for ``path``."""
    arguments = json.dumps({"path": path}, ensure_ascii=False, separators=(",", ":"))  # as §2.1: `{"path":"REA`
    return {**text_answer(text), "tool_call": {"id": call_id, "name": "read", "arguments": arguments}}


def help_text(reason: str) -> str:
    """The plain-text answer for requests the script does not cover."""
    return (
        f"{reason}我是 ink_py 的脚本模型({MODEL_ID}),只会一件事:在最新的用户消息里找一个文件名"
        f"(默认 {DEFAULT_FILE}),用 read 工具读取它,再根据工具返回的内容说出它的标题和命令。"
    )


def has_read_tool(body: dict[str, Any]) -> bool:
    """True when ``tools`` offers ``read`` — or is absent, so a bare ``curl`` still sees a tool call."""
    tools = body.get("tools")
    if not tools:
        return True
    if not isinstance(tools, list):
        return False
    return any(
        isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("name") == "read"
        for t in tools
    )


def message_text(content: Any) -> str:
    """A message's text, whether ``content`` is a string or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def requested_file(messages: list[dict[str, Any]]) -> str:
    """The first path with an extension in the latest user message, else README.md.

    >>> requested_file([{"role": "user", "content": "看看 docs/intro.md,再说说 README.md"}])
    'docs/intro.md'
    >>> requested_file([{"role": "user", "content": "项目怎样启动?"}])
    'README.md'
    """
    for message in reversed(messages):
        if message.get("role") == "user":
            match = _FILE_NAME.search(message_text(message.get("content")))
            return match.group(0) if match else DEFAULT_FILE
    return DEFAULT_FILE


def named_file(text: str) -> str | None:
    """The first path with an extension in ``text``, or None."""
    match = _FILE_NAME.search(text)
    return match.group(0) if match else None


def latest_user_text(messages: list[dict[str, Any]]) -> str:
    return next((message_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")


def is_continue_request(text: str) -> bool:
    """ "继续", "接着说", "continue" …: the user asks for the rest of a cut answer.

    >>> is_continue_request("继续"), is_continue_request("Continue."), is_continue_request("继续读取 setup.cfg")
    (True, True, False)
    """
    return bool(_CONTINUE.fullmatch(text.strip()))


def cut_answer(messages: list[dict[str, Any]]) -> str:
    """The answer a "继续" asks to finish: the text of the last assistant reply before it, if any.

    (The wire carries no finish_reason back, so like a real model the script reads the history:
    the user asked to continue, and this is where the conversation stopped.)
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if last_user < 0 or not is_continue_request(message_text(messages[last_user].get("content"))):
        return ""
    for message in reversed(messages[:last_user]):
        if message.get("role") == "assistant" and message_text(message.get("content")).strip():
            return message_text(message.get("content")).strip()
    return ""


def files_read(messages: list[dict[str, Any]]) -> dict[str, str]:
    """path → content of every successful read in the conversation, the latest last."""
    paths: dict[str, str] = {}  # tool_call_id → path
    found: dict[str, str] = {}
    for message in messages:
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            try:
                paths[str(call["id"])] = str(json.loads(call["function"]["arguments"])["path"])
            except (KeyError, TypeError, ValueError):
                pass
        if message.get("role") == "tool" and str(message.get("tool_call_id")) in paths:
            content = message_text(message.get("content"))
            if not content.startswith("Error"):
                path = paths[str(message.get("tool_call_id"))]
                found.pop(path, None)  # re-inserted: the latest read comes last
                found[path] = content
    return found


def answer_follow_up(messages: list[dict[str, Any]]) -> str | None:
    """A later question about a file already in the history: answered from it, not read again.

    "继续" after a cut answer gets the rest of it when the history holds the file it came from.
    """
    question = latest_user_text(messages)
    known = files_read(messages)
    cut = cut_answer(messages)
    if cut:
        for path, content in known.items():
            whole = summarise_file(path, content)
            if whole.startswith(cut) and len(whole) > len(cut):
                return whole[len(cut) :]  # exactly where it stopped
        return None
    wanted = named_file(question) or (next(reversed(known)) if known else None)
    if wanted is None or wanted not in known:
        return None  # a new file (or none read yet): read it
    lines = strip_line_numbers(known[wanted].splitlines())
    note = f"{wanted} 刚才已经读过,这个回答来自对话里那次读取的结果,没有再读一次。"
    commands = file_commands(lines)
    if re.search(r"第一|first", question, re.IGNORECASE) and commands:
        return f"{note}它给出的第一条命令是:\n\n```sh\n{commands[0]}\n```"
    if re.search(r"标题|title", question, re.IGNORECASE):
        return f"{note}它的标题是「{file_title(lines)}」。"
    if re.search(r"几条|多少|how many", question, re.IGNORECASE):
        return f"{note}它给出了 {len(commands)} 条命令(最多数到 {MAX_COMMANDS} 条)。"
    return f"{note}\n\n{summarise_file(wanted, known[wanted])}"


def latest_tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``role: "tool"`` messages at the end of the conversation (this turn's results)."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, message)
    return results


# ── turn 2: summarise what the tools returned ───────────────────────────────────────────


def summarise_results(messages: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """One paragraph per tool result, naming the file each call asked for."""
    paths: dict[str, str] = {}  # tool_call_id → the path its arguments named
    for message in messages:
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            try:
                arguments = json.loads(call["function"]["arguments"])
                paths[str(call["id"])] = str(arguments["path"])
            except (KeyError, TypeError, ValueError):
                pass  # not a read call we can name: fall back to the prompt's file
    fallback = requested_file(messages)
    return "\n\n".join(
        summarise_file(paths.get(str(r.get("tool_call_id")), fallback), message_text(r.get("content"))) for r in results
    )


def summarise_file(path: str, content: str) -> str:
    """The turn-2 answer for one tool result: the error, or the file's title and commands.

    >>> print(summarise_file("README.md", "# ink_py\\n\\n```sh\\n$ pip install -e .\\nink-py\\n```\\n"))
    README.md 的标题是「ink_py」。它给出的命令:
    <BLANKLINE>
    ```sh
    pip install -e .
    ink-py
    ```
    <BLANKLINE>
    以上命令按它们在文件里出现的顺序列出。
    """
    if content.startswith("Error"):
        first_line = content.splitlines()[0].strip()
        return f"读取 {path} 失败,工具返回:「{first_line}」。"
    lines = strip_line_numbers(content.splitlines())
    shown = [line.strip() for line in lines if line.strip()]
    if not shown or content.strip() in ("(no tool output)", "[File is empty.]"):  # the loop's and read's notes
        return f"{path} 是空的,没有可以概括的内容。"
    commands = file_commands(lines)
    head = f"{path} 的标题是「{file_title(lines)}」。"
    if commands:
        block = "\n".join(commands)
        return f"{head}它给出的命令:\n\n```sh\n{block}\n```\n\n以上命令按它们在文件里出现的顺序列出。"
    quoted = "\n".join(f"> {line}" for line in shown[:3])
    return f"{head}文件里没有给出命令,开头几行是:\n\n{quoted}"


def strip_line_numbers(lines: list[str]) -> list[str]:
    """Drop ``  12→`` / ``12<TAB>`` prefixes when every non-blank line has one."""
    filled = [line for line in lines if line.strip()]
    if not filled or not all(_NUMBERED.match(line) for line in filled):
        return lines
    return [_NUMBERED.sub("", line, count=1) for line in lines]


def file_title(lines: list[str]) -> str:
    """The first Markdown heading outside code blocks, else the first non-blank line."""
    for line, block in _blocks(lines):
        heading = _HEADING.match(line) if block is None else None
        if heading and heading.group(1):
            return heading.group(1)
    return next((line.strip() for line in lines if line.strip()), "")


def file_commands(lines: list[str]) -> list[str]:
    """Lines of sh/bash/shell/console/unlabelled fenced blocks, ``$ `` removed, at most 8.

    >>> file_commands(["```console", "$ make test", "ok", "```", "```python", "print(1)", "```"])
    ['make test']
    """
    commands: list[str] = []
    for line, block in _blocks(lines):
        text = line.strip()
        if block not in SHELL_INFOS or not text or text.startswith("#"):
            continue  # outside a shell block, a blank line or a comment
        if block == "console" and not text.startswith("$"):
            continue  # a console block's other lines are output
        commands.append(text.removeprefix("$").strip())
        if len(commands) == MAX_COMMANDS:
            break
    return commands


def _blocks(lines: list[str]) -> Iterator[tuple[str, str | None]]:
    """Each line with the info string of the fenced block it is in (None outside); fences skipped."""
    fence, info = "", ""  # the open fence's backticks or tildes; "" outside a block
    for line in lines:
        if not fence:
            opening = _FENCE.match(line)
            if opening:
                fence, info = opening.group(1), opening.group(2).lower()
            else:
                yield line, None
        elif line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
            fence = ""  # the closing fence: at least as long, nothing after it
        else:
            yield line, info


# ── ids: stateless, yet new for every new conversation state ────────────────────────────


def new_call_id(messages: list[dict[str, Any]]) -> str:
    """A tool call's id: stateless, yet new for every new conversation state."""
    return "call_" + digest(messages)[24:48]


def digest(value: Any) -> str:
    """64 hex digits that depend only on ``value``: ids stay deterministic without server state.

    >>> digest([{"role": "user", "content": "hi"}]) == digest([{"content": "hi", "role": "user"}])
    True
    """
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()
