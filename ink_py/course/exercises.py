"""Course exercises: re-implement one piece of the article at a time — ``ink-py exercise``.

    ink-py exercise list                 the exercises, and how far you are
    ink-py exercise start 1              copy ink_py to ./my_ink, with parse_frame cut out
    ink-py exercise check 1              run exercise 1's tests on ./my_ink; the first failure in plain words
    ink-py exercise hint 1               one more hint each time (Chinese, like the article)
    ink-py exercise check --all          every started exercise, as a table
    ink-py exercise diff 1 / reset 1     once green: yours beside the reference / back to the stub
    ink-py exercise report               JSON and JUnit XML for a teacher or an autograder
    pytest --impl my_ink -m ex1 --pdb    the same tests, straight, with a debugger (impl_option.py)

The working copy is the whole package copied to ``my_ink/`` — importable as package
``my_ink``, and it imports only itself, because ink_py uses relative imports throughout.
``start`` replaces each region of the exercise with a stub; starting more exercises
stubs more regions in the same copy and leaves every other line alone. The checks are
the project's own tests: ``pytest --impl my_ink -m ex3`` runs exactly the tests that
check the reference, through the ``ink`` fixture of ``tests/conftest.py``.

Where an exercise is — stubs are cut from the reference source, never kept by hand:

- a whole function is named in the exercise's ``functions`` (``"provider/shared.py:parse_frame"``)
  and found by name with ``ast``: its body after the docstring is the region, so the
  reference carries no scaffolding at all;
- part of a function (the ①②③ steps of ``assemble_stream``, the ``_parseError`` branch) is
  marked in the source: ``# exercise N ▼ title`` opens a region, ``# exercise N ▲`` at the
  same indentation closes it. Regions do not nest; their code sits at the markers'
  indentation, never less (anything a single ``raise`` can replace).

A stub puts, at the region's indentation, the region's comments as ``# TODO:`` lines and
one ``raise NotImplementedError("exercise N not written yet: … — see walkthrough.md §…")``.
So it compiles wherever the region was, the signature and docstring stay, and the copy
can be checked and stubbed again. Worked example::

    >>> source = '''def map_finish_reason(reason):
    ...     \"\"\"The server's finish_reason → Ink's stopReason.\"\"\"
    ...     return {"stop": "end_turn"}.get(reason)  # an unknown reason → None
    ... '''
    >>> print(stub_source(source, 5))  # doctest: +ELLIPSIS
    def map_finish_reason(reason):
        \"\"\"The server's finish_reason → Ink's stopReason.\"\"\"
        # TODO: an unknown reason → None
        raise NotImplementedError("exercise 5 not written yet: ... — see walkthrough.md §4.1, §4.4")
    <BLANKLINE>

``check`` runs ``python -m pytest --impl DIR -m exN -x`` from the source checkout with
``ink_py/course/check_plugin.py`` loaded as a pytest plugin: its hooks write the first
failure — what the test fed in, what it expected, what came back — to a JSON file, which
``check`` turns into a few plain lines. A progress file, ``DIR/.exercises.json``, marks the
folder as a copy made here and remembers started exercises, check results and hints shown.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tokenize
import unicodedata
from pathlib import Path
from typing import Any, TypedDict

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the reference the stubs are cut from
SOURCE_ROOT = PACKAGE_DIR.parent  # a source checkout: tests/ lives here
DEFAULT_DIR = "my_ink"
STATE_FILE = ".exercises.json"
MADE_BY = "ink-py exercise start"
REPORT_JSON, REPORT_XML = "exercise-report.json", "exercise-report.xml"  # what `report` writes by default
REPORT_ENV = "INK_EXERCISE_REPORT"  # where the plugin writes its report (the plugin is idle without it)


class Exercise(TypedDict):
    functions: list[str]  # whole functions the student writes, "module path:qualified name"
    slug: str
    title: str  # what the student writes
    section: str  # in walkthrough.md, which follows the article's numbering
    hints: list[str]  # Chinese like the article, identifiers in English; the last nearly gives it away
    messages: list[str]  # the words the tests compare, verbatim: the stub lists them as TODOs


class Region(TypedDict):
    number: int  # the exercise
    start: int  # 0-based line index of the opening marker
    end: int  # 0-based line index of the closing marker
    indent: str


# ── the exercises, in article order ─────────────────────────────────────────────────────

EXERCISES: dict[int, Exercise] = {
    1: {
        "functions": ["provider/shared.py:parse_frame"],
        "slug": "parse-frame",
        "title": "parse_frame: event name, data lines, JSON, [DONE]",
        "section": "§2.1",
        "hints": [
            '先按 "\\n" 把 frame 拆成行;空行和以 ":" 开头的注释行跳过,其余每行用 `line.partition(":")` '
            "分成字段名和值(没有冒号的行,值就是空串)。",
            "值开头恰好去掉一个空格(WHATWG 的规则;Ink 用 trimStart 去掉全部)。`event` 字段改事件名"
            '(空值仍算 "message"),`data` 行收进 `data_lines`,`error` 行(老版 llama.cpp)收进 '
            "`error_lines`,id、retry 和不认识的字段都忽略。",
            '收尾的顺序:有 error 行 → `{"event": "error", "data": _json_or_text(...)}`;没有 data 行,'
            '或 `"\\n".join(data_lines)` 是空串 → None(keep-alive);`data.strip() == DONE` → '
            '`{"event": event, "data": DONE}`;其余交给 `json.loads`。',
            "几乎是答案:`json.loads` 失败时不要像 Ink 那样悄悄返回 None(§4.1 承认它会丢事件),而是 "
            '`raise ProviderError(f"the server sent an event whose data is not JSON: {frame[:200]!r}") '
            'from None` —— 测试要在消息里看到 "not JSON" 和 frame 的开头。',
        ],
        "messages": [
            'ProviderError(f"the server sent an event whose data is not JSON: {frame[:200]!r}")',
        ],
    },
    2: {
        "functions": ["provider/shared.py:parse_sse"],
        "slug": "parse-sse",
        "title": "parse_sse: the buffer, cutting frames, UTF-8 split across reads",
        "section": "§2.1",
        "hints": [
            '`codecs.getincrementaldecoder("utf-8")("replace")` 就是文章里的 `TextDecoder` 加 '
            "`stream: true`:一个汉字的字节被拆在两次读取之间时,`decoder.decode(chunk)` 先留住前半截,"
            "下一次再交出整个字。",
            "每次读取先统一换行:`\\r\\n` 和 `\\r` 都变成 `\\n`。小心 `\\r` 恰好是上一次读取的最后一个字节:"
            "下一次开头的 `\\n` 和它是同一个 CRLF,要丢掉(用 `after_cr` 记住)。整个流最开头的 BOM "
            '`"\\ufeff"` 去掉,只去这一次。',
            "buffer 保留还没凑成完整事件的文本;每找到一个 `\\n\\n` 就切下一个 frame 交给 `parse_frame`,"
            '结果不是 None 就 yield —— 在完成它的那次读取里就交出去。空行可能跨两次读取("…\\n" | "\\n…");'
            "只在新到的文本里找分隔符,不要每次从 buffer 开头重扫。",
            '几乎是答案:循环结束后 `rest = "".join(buffer) + decoder.decode(b"", final=True)`;'
            '`rest.strip("\\n")` 非空就照样 `parse_frame(rest)`(代理常以没有空行的 `data: [DONE]` 收尾);'
            "这时 parse_frame 抛 ProviderError,就改抛 "
            '`ProviderError(f"stream ended in the middle of an event — response may be truncated: {rest[:200]!r}")`。',
        ],
        "messages": [
            'ProviderError(f"stream ended in the middle of an event — response may be truncated: {rest[:200]!r}")',
        ],
    },
    3: {
        "functions": [],
        "slug": "text-delta",
        "title": "text accumulation and text_delta",
        "section": "§2 ①",
        "hints": [
            '文字在 `delta.get("content")`;只有非空字符串才处理 —— None、"" 和数字都跳过,什么也不产出。',
            '第一次收到文字时才创建 `text_block = {"type": "text", "text": ""}` 并 `blocks.append(text_block)`;'
            "之后的文字都进这同一个块,哪怕中间夹着工具调用。",
            '不要每次 `text_block["text"] += content`(Python 每次都复制整个字符串):'
            '`text_parts.append(content)`,第 ④ 步会一次 `"".join(text_parts)`。',
            '几乎是答案:`if isinstance(content, str) and content != "":` 里,先按需创建块,再 '
            '`text_parts.append(content)`,然后 `yield {"type": "text_delta", "text": content}` —— 先通知显示层,'
            "完整消息留到最后。",
        ],
        "messages": [
            '{"type": "text_delta", "text": content}',
        ],
    },
    4: {
        "functions": [],
        "slug": "tool-calls",
        "title": "tool-call fragments by index: tool_call_start, tool_call_delta, a late name",
        "section": "§2.2",
        "hints": [
            '片段按 `tc["index"]` 归属,不按工具名(两个调用可能都叫 read)。`tool_by_index` 存块,'
            '`tool_raw_by_index` 存这个调用的参数片段列表。Gemini 不给 index:用 `tc.get("index", position)`。',
            "第一次见到某个 index:创建 "
            '`{"type": "toolCall", "id": str(tc_id or f"call_{index}"), "name": str(name or ""), "arguments": {}}`,'
            "放进 `blocks` 和 `tool_by_index`,`tool_raw_by_index[index] = []`,yield `tool_call_start`;没有 id "
            '时把 index 记进 `invented_ids`。再次见到、而块的 name 还是 "" 时,补上迟到的名字。',
            '参数片段 `function.get("arguments") or ""` 非空才追加到这个 index 的列表,并 yield '
            '`{"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}`。参数留到第 ④ 步再解析。',
            "几乎是答案:已占用的 index 来了一个不同的非空 id,而且这个 index 的 id 不是我们编的(不在 "
            "`invented_ids` 里)—— Ollama 把并行调用都放在 index 0 —— 先 "
            "`finish_tool_arguments(block, tool_raw_by_index[index])` 给旧调用收尾,再把它当新调用创建块。"
            'DashScope 续传时发 `"id": ""`,那不算新 id。',
        ],
        "messages": [
            '{"type": "tool_call_start", "id": block["id"], "name": block["name"]}',
            '{"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}',
        ],
    },
    5: {
        "functions": ["provider/openai_completions.py:map_finish_reason"],
        "slug": "finish-reason",
        "title": "the finish-reason check and map_finish_reason",
        "section": "§4.1, §4.4",
        "hints": [
            "`map_finish_reason` 就是 §4.4 的表:tool_calls → tool_use,stop → end_turn,length → max_tokens;"
            "表里没有的(content_filter、eos……)返回 None。",
            '循环里的 ③:`choice.get("finish_reason")` 不是 None,就记下 `saw_finish = True` 和 '
            "`stop_reason = map_finish_reason(...)`。不要 break —— 用量常在后面的块里。",
            "循环结束后(已经判断过中断):既没见过 finish_reason、也没见过 `[DONE]`(`saw_done`),"
            "就抛 ProviderError,不产出 message_end。参数恰好能解析也不能跳过这个检查。",
            "几乎是答案:`if not saw_finish and not saw_done: "
            'raise ProviderError("stream ended without finish_reason — response may be truncated")` '
            "—— 测试逐字比较这条消息。",
        ],
        "messages": [
            'ProviderError("stream ended without finish_reason — response may be truncated")',
        ],
    },
    6: {
        "functions": ["provider/shared.py:abort_safe"],
        "slug": "abort-safe",
        "title": "abort_safe: an abort ends the stream quietly, other errors propagate",
        "section": "§4.2",
        "hints": [
            "abort_safe 是一个生成器:把 source 的每一项原样交出去(`yield from source`)。",
            "把这次转交包在 try 里。读取出错时先问一句:用户已经中断了吗?signal 可能是 None。",
            "中断了:这个错误就是取消本身(中断会关掉连接,正在等待的读取随之失败),`return` 安静结束;"
            "没有中断:`raise` 原样抛出,让调用方处理。",
            "几乎是答案:`try: yield from source` / `except Exception: if signal is not None and "
            "signal.aborted: return` / `raise`。",
        ],
        "messages": [],
    },
    7: {
        "functions": ["provider/shared.py:safe_parse_json"],
        "slug": "safe-parse-json",
        "title": "safe_parse_json and blocking unparseable arguments",
        "section": "§4.3",
        "hints": [
            "`safe_parse_json` 永不抛异常:`json.loads` 成功就返回结果 —— 可能是对象,也可能是数组。",
            '失败(ValueError)时返回 `{"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}`,'
            "只留前 500 个字符。",
            "`prepare_tool_call` 的 `_parseError` 分支:不让这个调用执行,把 `problem` 设成一句给模型看的话:"
            '参数不是合法 JSON、调用没有执行、参数开头是什么(`args["raw"]` 的前 200 个字符,用 `json.dumps` '
            "加上引号),并请它重新发送完整的调用。",
            '几乎是答案:`began = json.dumps(str(args.get("raw", ""))[:200], ensure_ascii=False)`;'
            "`problem = f\"the arguments for {call['name']} were not valid JSON, so the call was not run. "
            'They began: {began}. Send the call again with complete, valid JSON arguments."`',
        ],
        "messages": [
            '{"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}',
            "f\"the arguments for {call['name']} were not valid JSON, so the call was not run. "
            'They began: {began}. Send the call again with complete, valid JSON arguments."',
        ],
    },
    8: {
        "functions": ["core/loop.py:fail_tool_calls_from_truncated_message"],
        "slug": "truncated-calls",
        "title": "fail_tool_calls_from_truncated_message",
        "section": "§4.4",
        "hints": [
            '回复因输出上限而停止(stopReason 是 "max_tokens"):其中的调用一个都不执行 —— 参数能解析也可能只生成了一半。',
            '每个调用往 `results` 追加一条 `{"toolCallId", "toolName", "content", "isError": True}`;content '
            "要说清:达到了 output token limit、参数 may be truncated、the call was not run,并请模型重发"
            "(Send the call again)。",
            '也要让界面知道:每个调用依次 `on_event` 一个 `{"type": "tool_start", "toolCallId", "name", "args"}` '
            '和一个 `{"type": "tool_end", "result": result}`;on_event 可能是 None。',
            '几乎是答案:content 写成 f"Error: this reply hit the output token limit (finish_reason: length), '
            "so the arguments of {call['name']} may be truncated; the call was not run. Send the call again with "
            'complete arguments."',
        ],
        "messages": [
            'f"Error: this reply hit the output token limit (finish_reason: length), so the arguments of '
            "{call['name']} may be truncated; the call was not run. Send the call again with complete arguments.\"",
        ],
    },
    # Skipped until ink_py/second_article/chunks.py has "# exercise 9 ▼" markers (or "functions"
    # here): everything finds its regions in the source, so exercise 9 turns on by itself then.
    9: {
        "functions": [],
        "slug": "chunk-concat",
        "title": "chunk concat: merge message chunks field by field (second article)",
        "section": "§6.1",
        "hints": [
            "concat(a, b) 不改动 a 和 b:先用 `as_message_chunk` 把两边都变成完整的 message chunk,"
            '再新建一个 dict;content 和 reasoning 是 Pieces,直接 `a["content"] + b["content"]`;'
            "finish_reason 取 b 的(b 没有就留 a 的)。",
            "usage 会重复上报(Groq、OpenRouter):用 `larger_usage` 取每项的较大值,绝不相加。"
            '`order` 记录块出现的先后:b 的 order 里每个 "tool" 对应 b 的下一个 tool_call_chunks 条目,'
            '交给 `add_tool_piece`,它说是新调用才追加 "tool";text/thinking 只在第一次出现时追加。',
            "add_tool_piece:从后往前找同一 index 的最后一个调用。没有 → 追加这一片,返回 True。"
            "有,但这一片带着不同的非空 id → 是新调用(Ollama 把并行调用都放在 index 0),追加并返回 True。",
            "几乎是答案:否则用一个新 dict 替换 `calls[latest]`:index 和 id 不变,"
            '`"name": call["name"] or piece["name"]`(只取一次,Fireworks 每块都重复 name),'
            '`"args": call["args"] + piece["args"]`,返回 False。'
            "不要原地修改 call——它可能属于调用者传进来的那个 chunk。",
        ],
        "messages": [],
    },
}


class ExerciseError(Exception):
    """A mistake in how the command was used, or a copy it cannot safely change: one ``error:`` line."""


# ── the marker grammar ──────────────────────────────────────────────────────────────────


class MarkerError(ExerciseError):
    """Markers that break the grammar (in the reference, or in a copy the student edited)."""


OPEN = re.compile(r"^(?P<indent>[ \t]*)# exercise (?P<number>\d+) ▼(?: .*)?$")
CLOSE = re.compile(r"^(?P<indent>[ \t]*)# exercise (?P<number>\d+) ▲\s*$")
STUB_MESSAGE = re.compile(r"exercise (\d+) not written yet")
PRAGMA = re.compile(r"^(type:|noqa|fmt:|pragma)")  # tool directives, not prose


def find_regions(text: str, where: str = "<source>") -> list[Region]:
    """Every exercise region of ``text`` — whole functions and marked parts — in order.

    MarkerError if the markers break the grammar. The table's function names are unique
    in the package, so a function is found by its qualified name in whichever file it is.

    >>> regions = find_regions("x = 1\\n# exercise 2 ▼\\ny = 2\\n# exercise 2 ▲\\n")
    >>> [(r["number"], r["start"], r["end"]) for r in regions]
    [(2, 1, 3)]
    """
    regions: list[Region] = []
    lines = text.split("\n")
    open_region: Region | None = None
    for index, line in enumerate(lines):
        opening, closing = OPEN.match(line), CLOSE.match(line)
        at = f"{where}:{index + 1}"
        if opening:
            if open_region is not None:
                raise MarkerError(f"{at}: a region opens inside exercise {open_region['number']}'s")
            open_region = {"number": int(opening["number"]), "start": index, "end": -1, "indent": opening["indent"]}
        elif closing:
            if open_region is None or int(closing["number"]) != open_region["number"]:
                raise MarkerError(f"{at}: '# exercise {closing['number']} ▲' closes no open region")
            if closing["indent"] != open_region["indent"]:
                raise MarkerError(f"{at}: the closing marker's indentation differs from the opening's")
            open_region["end"] = index
            body = [line for line in lines[open_region["start"] + 1 : index] if line.strip()]
            if all(line.strip().startswith("#") for line in body):
                raise MarkerError(f"{at}: exercise {open_region['number']}'s region has no code")
            if any(not line.startswith(open_region["indent"]) for line in body):
                raise MarkerError(
                    f"{at}: a line of exercise {open_region['number']}'s region is indented less than its markers"
                )
            regions.append(open_region)
            open_region = None
    if open_region is not None:
        raise MarkerError(
            f"{where}:{open_region['start'] + 1}: exercise {open_region['number']}'s region is never closed"
        )
    return sorted(regions + function_regions(text), key=lambda region: region["start"])


def function_regions(text: str) -> list[Region]:
    """The regions of the table's whole-function exercises defined in ``text``: each body after its docstring.

    >>> [(r["number"], r["start"], r["end"]) for r in function_regions("def abort_safe(s, x):\\n    yield from s\\n")]
    [(6, 0, 2)]
    """
    wanted = {entry.partition(":")[2]: number for number, ex in EXERCISES.items() for entry in ex["functions"]}
    if not any(f"def {name.rpartition('.')[2]}(" in text for name in wanted):
        return []  # most modules hold none: skip the parse
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []  # a student's file that does not parse yet: its markers still count
    found: list[Region] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                if name in wanted and not isinstance(child, ast.ClassDef):
                    body = child.body
                    has_doc = isinstance(body[0], ast.Expr) and isinstance(
                        getattr(body[0], "value", None), ast.Constant
                    )
                    after = body[0].end_lineno if has_doc and len(body) > 1 else body[0].lineno - 1
                    first = body[1] if has_doc and len(body) > 1 else body[0]
                    found.append(
                        {"number": wanted[name], "start": (after or 1) - 1, "end": child.end_lineno or 0,
                         "indent": " " * first.col_offset}
                    )  # fmt: skip
                visit(child, name + ".")

    visit(tree, "")
    return found


def region_comments(text: str, region: Region) -> list[str]:
    """The comments inside a region — whole-line and trailing — in order, without the ``#``."""
    rows = range(region["start"] + 2, region["end"] + 1)  # tokenize counts lines from 1
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        found = [tok.string for tok in tokens if tok.type == tokenize.COMMENT and tok.start[0] in rows]
    except (tokenize.TokenError, SyntaxError):  # unreadable source: whole-line comments only
        lines = text.split("\n")
        found = [lines[row - 1].strip() for row in rows if lines[row - 1].strip().startswith("#")]
    comments = [comment.lstrip("#").strip() for comment in found]
    return [comment for comment in comments if comment and not PRAGMA.match(comment)]


def stub_message(number: int) -> str:
    """The NotImplementedError text of exercise ``number``'s stub."""
    exercise = EXERCISES[number]
    return f"exercise {number} not written yet: {exercise['title']} — see walkthrough.md {exercise['section']}"


def stub_body(text: str, region: Region) -> list[str]:
    """The lines that replace a region: its comments as TODOs, then one raise."""
    indent = region["indent"]
    todos = [f"{indent}# TODO: {comment}" for comment in region_comments(text, region)]
    words = region_messages(text, region)
    if words:
        todos.append(f"{indent}# TODO: the tests compare these words exactly; use them as they are:")
        todos += [f"{indent}# TODO:     {message}" for message in words]
    message = json.dumps(stub_message(region["number"]), ensure_ascii=False)  # also a valid Python literal
    return [*todos, f"{indent}raise NotImplementedError({message})"]


def region_messages(text: str, region: Region) -> list[str]:
    """The table's ``messages`` of the region's exercise that belong in this region.

    A message belongs where the reference says it (a literal piece of it is in the region's
    body); one found in none of the exercise's regions goes to the first.
    """
    number = region["number"]
    body = "\n".join(body_of(text, region))
    first = next((r for r in find_regions(text) if r["number"] == number), None)
    return [
        message
        for message in EXERCISES[number].get("messages", [])
        if said_in(message, body) or (message not in placed_messages(number) and region == first)
    ]


def said_in(message: str, code: str) -> bool:
    """Is a literal piece of ``message`` (8 characters or more, between its ``{…}``) in ``code``?"""
    pieces = re.split(r"\{[^{}\"]*\}|\bf\"|\"|\(|\)", message)
    return any(piece in code for piece in pieces if len(piece.strip()) >= 8)


@functools.cache
def placed_messages(number: int) -> frozenset[str]:
    """The exercise's messages that the reference says in one of its regions."""
    bodies = [
        "\n".join(body_of((PACKAGE_DIR / relative).read_text(encoding="utf-8"), region))
        for relative, region in package_regions().get(number, [])
    ]
    return frozenset(m for m in EXERCISES[number].get("messages", []) if any(said_in(m, b) for b in bodies))


def replace_body(text: str, region: Region, body: list[str]) -> str:
    """``text`` with the lines between the region's markers replaced by ``body``."""
    lines = text.split("\n")
    return "\n".join([*lines[: region["start"] + 1], *body, *lines[region["end"] :]])


def stub_source(text: str, number: int, where: str = "<source>") -> str:
    """``text`` with every region of exercise ``number`` replaced by its stub."""
    for region in reversed([r for r in find_regions(text, where) if r["number"] == number]):
        text = replace_body(text, region, stub_body(text, region))
    return text


def is_stub(text: str, region: Region) -> bool:
    """Does the region still hold the stub's raise?"""
    stub = f'raise NotImplementedError("exercise {region["number"]} not written yet'
    return any(line.strip().startswith(stub) for line in body_of(text, region))


def body_of(text: str, region: Region) -> list[str]:
    return text.split("\n")[region["start"] + 1 : region["end"]]


@functools.cache
def package_regions(package: Path = PACKAGE_DIR) -> dict[int, list[tuple[str, Region]]]:
    """Exercise number → its regions as (module path inside the package, region), in source order."""
    found: dict[int, list[tuple[str, Region]]] = {}
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts or path.name == "exercises.py":  # this file only quotes them
            continue
        relative = path.relative_to(package).as_posix()
        for region in find_regions(path.read_text(encoding="utf-8"), relative):
            found.setdefault(region["number"], []).append((relative, region))
    for number, exercise in EXERCISES.items():
        for entry in exercise["functions"]:
            relative, _, name = entry.partition(":")
            if not any(where == relative for where, _ in found.get(number, [])):
                raise MarkerError(f"{relative}: exercise {number}'s function {name} is not defined there")
    return found


def available(number: int) -> bool:
    """Has the reference got markers for this exercise? (Exercise 9 waits for chunks.py's.)"""
    return number in package_regions()


# ── the working copy ────────────────────────────────────────────────────────────────────

RESERVED_NAMES = {"ink_py", "tests", "pytest", "_pytest", "hypothesis", "requests", "urllib3"}


def load_state(folder: Path) -> dict[str, Any]:
    try:
        state = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def save_state(folder: Path, state: dict[str, Any]) -> None:
    write_file(folder / STATE_FILE, json.dumps(state, ensure_ascii=False, indent=2) + "\n")


def write_file(path: Path, text: str) -> None:
    """Write through a temporary file, so a crash never leaves half a file behind."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def is_working_copy(folder: Path) -> bool:
    return load_state(folder).get("made_by") == MADE_BY


def check_copy_name(folder: Path) -> None:
    name = folder.name
    if not name.isidentifier() or name in RESERVED_NAMES or name in sys.stdlib_module_names:
        raise ExerciseError(f"{folder} cannot be a package: its name must be a new Python identifier such as my_ink")


def make_copy(folder: Path) -> None:
    """Copy the reference package to ``folder`` (which must not exist, or be empty) in one step."""
    check_copy_name(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))  # same disk: a rename
    try:
        building = scratch / folder.name
        shutil.copytree(PACKAGE_DIR, building, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", STATE_FILE))
        hints = load_state(Path.cwd()).get("hints", {})  # hints read before the copy existed
        save_state(building, {"made_by": MADE_BY, "started": [], "checks": {}, "hints": hints})
        if folder.exists():
            folder.rmdir()  # empty: checked by the caller
        os.replace(building, folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def start(number: int, folder: Path) -> str:
    """Stub exercise ``number`` in the copy at ``folder`` (made if missing); what was done, in words."""
    if PACKAGE_DIR == folder.resolve() or is_working_copy(PACKAGE_DIR):
        raise ExerciseError("run ink-py exercise from the reference ink_py, not from a working copy")
    if folder.exists() and not folder.is_dir():
        raise ExerciseError(f"{folder} is a file, not a folder for the working copy")
    made = False
    if not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
        make_copy(folder)
        made = True
    elif not is_working_copy(folder):
        raise ExerciseError(
            f"{folder} already exists and is not a working copy made by ink-py exercise start "
            f"(no {STATE_FILE}); pick another folder"
        )
    state = load_state(folder)
    exercise = EXERCISES[number]
    if number in state.get("started", []):
        return f"exercise {number} · {exercise['slug']} is already started in {shown(folder)} — nothing changed."

    # Work out every file first; write only when all of them are right.
    new_texts: dict[Path, str] = {}
    stubs: list[str] = []
    for relative, regions in group_by_file(package_regions()[number]).items():
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        target = folder / relative
        if not target.exists():  # a module added to ink_py after the copy was made
            target.parent.mkdir(parents=True, exist_ok=True)
            text = reference
        else:
            text = target.read_text(encoding="utf-8")
        mine = copy_regions(text, folder, relative, number, len(regions))
        for region, ours in reversed(list(zip(regions, mine, strict=True))):
            if is_stub(text, ours):
                continue
            if body_of(text, ours) != body_of(reference, region):
                raise ExerciseError(
                    f"{shown(folder)}/{relative}:{ours['start'] + 1}: exercise {number}'s region differs from "
                    "ink_py's — did you edit it? Nothing was changed"
                )
            text = replace_body(text, ours, stub_body(reference, region))
        compile(text, str(target), "exec")  # a stub always compiles; make sure before writing
        new_texts[target] = text
        for ours in [r for r in find_regions(text) if r["number"] == number]:
            stubs.append(f"{shown(folder)}/{relative}:{ours['start'] + 1}")
    for target, text in new_texts.items():
        write_file(target, text)
    state["started"] = sorted({*state.get("started", []), number})
    save_state(folder, state)
    made_note = f" (a new copy of ink_py, importable as package {folder.name})" if made else ""
    return "\n".join(
        [
            f"started exercise {number} · {exercise['slug']} — {exercise['title']}",
            f"in {shown(folder)}{made_note}. Write your code in place of the stub:",
            *[f"  {stub}" for stub in stubs],
            f"read first:  walkthrough.md {exercise['section']}",
            f"then check:  ink-py exercise check {number}{dir_argument(folder)}",
            f"stuck?       ink-py exercise hint {number}{dir_argument(folder)}",
            f"watch it:    {demo_command(folder)}   (the §3 demo, over your own code)",
        ]
    )


def demo_command(folder: Path) -> str:
    """``python -m my_ink demo``: the copy runs its own demo — from the folder it lies in."""
    parent = folder.resolve().parent
    where = "" if parent == Path.cwd().resolve() else f"cd {shlex.quote(shown(parent))} && "
    return f"{where}python -m {folder.name} demo"


def copy_regions(text: str, folder: Path, relative: str, number: int, expected: int) -> list[Region]:
    """Exercise ``number``'s regions in the copy's ``relative`` file; ExerciseError unless all are there."""
    mine = [r for r in find_regions(text, f"{shown(folder)}/{relative}") if r["number"] == number]
    if len(mine) != expected:
        raise ExerciseError(
            f"{shown(folder)}/{relative}: exercise {number}'s code cannot be found (markers changed or removed, "
            "or the file does not parse); nothing was changed — put it back as in ink_py, or start afresh "
            "in a new folder"
        )
    return mine


def group_by_file(regions: list[tuple[str, Region]]) -> dict[str, list[Region]]:
    grouped: dict[str, list[Region]] = {}
    for relative, region in regions:
        grouped.setdefault(relative, []).append(region)
    return grouped


def shown(folder: Path) -> str:
    """A folder as the user would type it: relative to the current directory when inside it."""
    try:
        return str(folder.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(folder)


def dir_argument(folder: Path) -> str:
    return "" if folder.resolve() == Path(DEFAULT_DIR).resolve() else f" {shlex.quote(shown(folder))}"


def status(number: int, folder: Path, state: dict[str, Any]) -> str:
    """not started / started (stub still present) / started (…) / passed (last check green)."""
    if not available(number):
        return "skipped until chunks.py has exercise markers" if number == 9 else "not available yet"
    if number not in state.get("started", []):
        return "not started"
    if state.get("checks", {}).get(str(number)) == "green":
        return "passed (last check green)"
    for relative in group_by_file(package_regions()[number]):
        try:
            text = (folder / relative).read_text(encoding="utf-8")
            if any(r["number"] == number and is_stub(text, r) for r in find_regions(text)):
                return "started (stub still present)"
        except (OSError, MarkerError):
            pass
    if state.get("checks", {}).get(str(number)) == "red":
        return "started (last check red)"
    return "started (not checked yet)"


def list_exercises(folder: Path) -> str:
    copy = is_working_copy(folder)
    state = load_state(folder) if copy else {}
    if copy:
        where = f"working copy: {shown(folder)}"
    elif folder.exists():
        where = f"{shown(folder)} is not a working copy"
    else:
        where = f"no working copy at {shown(folder)} yet"
    rows = [
        f"  {number}  {exercise['slug']:<16} {pad(exercise['section'], 12)} {status(number, folder, state)}"
        for number, exercise in EXERCISES.items()
    ]
    follow = next_step(state, folder)
    return "\n".join([f"Course exercises ({where})", "", *rows, "", follow])


def pad(text: str, width: int) -> str:
    """Left-justify for a terminal, where a Chinese character takes two columns."""
    columns = sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
    return text + " " * max(0, width - columns)


def next_step(state: dict[str, Any], folder: Path, after: int = 0) -> str:
    """What to do next: the first exercise, in article order, that is not green yet."""
    checks = state.get("checks", {})
    for number, exercise in EXERCISES.items():
        if number <= after or not available(number) or checks.get(str(number)) == "green":
            continue
        verb = "check" if number in state.get("started", []) else "start"
        return f"next: exercise {number} · {exercise['slug']} — ink-py exercise {verb} {number}{dir_argument(folder)}"
    return "every available exercise is green — well done."


# ── check: run the exercise's tests on the copy, tell the first failure in plain words ──


def check(number: int, folder: Path) -> tuple[bool, str]:
    """Run ``pytest --impl folder -m exN -x``; (green?, what to tell the student)."""
    if not is_working_copy(folder):
        raise ExerciseError(f"no working copy at {shown(folder)} — start with: ink-py exercise start {number}")
    state = load_state(folder)
    if number not in state.get("started", []):
        raise ExerciseError(
            f"exercise {number} is not started in {shown(folder)} (its code there is still the reference's) — "
            f"run: ink-py exercise start {number}{dir_argument(folder)}"
        )
    if not (SOURCE_ROOT / "tests" / "conftest.py").is_file():
        raise ExerciseError(
            "the checks need a source checkout of ink_py (tests/ next to the package): "
            "clone the repository and pip install -e '.[test]'"
        )
    report = run_tests(folder, number)
    exercise = EXERCISES[number]
    green = report["exitstatus"] == 0
    key = str(number)
    state.setdefault("checks", {})[key] = "green" if green else "red"
    attempts = state.setdefault("attempts", {})
    attempts[key] = int(attempts.get(key, 0)) + 1
    state.setdefault("tests", {})[key] = {"passed": report["passed"], "selected": len(report["selected"])}
    if green:
        state.setdefault("first_green", {}).setdefault(key, now())
    save_state(folder, state)
    if green:
        passed = report["passed"]
        return True, "\n".join(
            [
                f"exercise {number} · {exercise['slug']} — all {passed} tests pass. Well done!",
                f"see your code at work: {demo_command(folder)} · beside the reference: "
                f"ink-py exercise diff {number}{dir_argument(folder)}",
                next_step(state, folder, after=number),
            ]
        )
    return False, describe_failure(number, report, folder)


def now() -> str:
    """The time, as the progress file and the report keep it: UTC, to the second."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_all(folder: Path) -> tuple[bool, str]:
    """``check --all``: every started exercise checked, then a table; green when all of them are."""
    if not is_working_copy(folder):
        raise ExerciseError(f"no working copy at {shown(folder)} — start with: ink-py exercise start 1")
    started = load_state(folder).get("started", [])
    if not started:
        raise ExerciseError(f"no exercise is started in {shown(folder)} — run: ink-py exercise start 1")
    for number in started:
        if available(number):
            check(number, folder)
    state = load_state(folder)
    rows = [
        ("exercise", "state", "tests passed", "hints used"),
        *[
            (
                f"{number} {exercise['slug']}",
                exercise_state(number, state),
                tests_passed(number, state),
                f"{state.get('hints', {}).get(str(number), 0)}/{len(exercise['hints'])}",
            )
            for number, exercise in EXERCISES.items()
        ],
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    table = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    green = all(state.get("checks", {}).get(str(n)) == "green" for n in started if available(n))
    return green, "\n".join([f"Course exercises in {shown(folder)}", "", *table, "", next_step(state, folder)])


def write_report(folder: Path, json_path: Path, xml_path: Path) -> str:
    """``report``: every started exercise checked afresh (attempts are not counted), written as JSON and JUnit."""
    from .exercise_report import Row, junit_xml, report_json

    if not is_working_copy(folder):
        raise ExerciseError(f"no working copy at {shown(folder)} — nothing to report")
    state = load_state(folder)
    rows: list[Row] = []
    for number, exercise in EXERCISES.items():
        key = str(number)
        row: Row = {
            "number": number, "slug": exercise["slug"], "title": exercise["title"], "section": exercise["section"],
            "state": exercise_state(number, state), "tests_passed": 0, "tests_selected": 0,
            "attempts": int(state.get("attempts", {}).get(key, 0)),
            "hints_used": int(state.get("hints", {}).get(key, 0)), "hints_total": len(exercise["hints"]),
            "first_green": state.get("first_green", {}).get(key), "summary": "",
        }  # fmt: skip
        if number in state.get("started", []) and available(number):
            report = run_tests(folder, number)
            green = report["exitstatus"] == 0
            row.update(state="green" if green else "red", tests_passed=report["passed"])
            row["tests_selected"] = len(report["selected"])
            if not green:
                row["summary"] = describe_failure(number, report, folder).split("\n")[0]
        rows.append(row)
    write_file(json_path, report_json(folder.name, now(), rows) + "\n")
    write_file(xml_path, junit_xml(folder.name, rows) + "\n")
    green = sum(row["state"] == "green" for row in rows)
    return f"{green} of {len(rows)} exercises green · wrote {json_path} and {xml_path} (JUnit)"


def exercise_state(number: int, state: dict[str, Any]) -> str:
    """green / red / not started / not available — as the table and the report say it."""
    if not available(number):
        return "not available"
    if number not in state.get("started", []):
        return "not started"
    return state.get("checks", {}).get(str(number), "not checked")


def tests_passed(number: int, state: dict[str, Any]) -> str:
    tests = state.get("tests", {}).get(str(number))
    return f"{tests['passed']}/{tests['selected']}" if tests else "-"


def marked_test_files(number: int) -> list[str]:
    """The test modules that mark tests ``pytest.mark.exN`` — collecting only those is faster.

    (tests/test_exercises.py checks that they hold every test the whole suite marks exN.)
    """
    tests = SOURCE_ROOT / "tests"
    marked = re.compile(rf"\bmark\.ex{number}\b")
    found = [
        path.relative_to(SOURCE_ROOT).as_posix()
        for path in sorted(tests.glob("test_*.py"))
        if marked.search(path.read_text(encoding="utf-8"))
    ]
    return found or ["tests"]


def check_arguments(folder: Path, number: int) -> list[str]:
    """What ``check`` runs after ``python -m pytest``: exercise N's tests on the copy, up to the first failure."""
    return [
        "--impl", str(folder.resolve()), "-m", f"ex{number}", "-x", "-q", "--tb=no", "--no-header",
        "-p", "no:cacheprovider", "-p", f"{__package__}.check_plugin", *marked_test_files(number),
    ]  # fmt: skip


def run_tests(folder: Path, number: int) -> dict[str, Any]:
    """Run exercise ``number``'s tests on the copy (cwd: the source checkout); the plugin's report."""
    try:
        import pytest  # noqa: F401  # only to say clearly that it is missing
    except ImportError:
        raise ExerciseError("the checks need pytest: pip install -e '.[test]'") from None
    with tempfile.TemporaryDirectory() as scratch:
        report_path = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pytest", *check_arguments(folder, number)]
        env = {**os.environ, REPORT_ENV: str(report_path)}
        done = subprocess.run(command, cwd=SOURCE_ROOT, env=env, capture_output=True, text=True)
        output_tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        if not report_path.exists():
            raise ExerciseError(f"the tests could not run: {output_tail}")
        report = json.loads(report_path.read_text(encoding="utf-8"))
    if report["exitstatus"] == 5:  # nothing selected: a test suite without this exercise's marks
        raise ExerciseError(f"no test is marked ex{number}; the exercise cannot be checked")
    if report["exitstatus"] not in (0, 1):
        raise ExerciseError(f"the tests could not run (pytest exit {report['exitstatus']}): {output_tail}")
    return report


def stubs_left(number: int, folder: Path) -> list[str]:
    """Where exercise ``number``'s stubs are still in the copy (``my_ink/provider/shared.py:120``)."""
    places = []
    for relative in group_by_file(package_regions()[number]):
        try:
            text = (folder / relative).read_text(encoding="utf-8")
            places += [
                f"{shown(folder)}/{relative}:{r['start'] + 1}"
                for r in find_regions(text)
                if r["number"] == number and is_stub(text, r)
            ]
        except (OSError, MarkerError):
            continue
    return places


def describe_failure(number: int, report: dict[str, Any], folder: Path) -> str:
    """The first failure in a few plain lines, blamed on the exercise whose code it happened in."""
    exercise = EXERCISES[number]
    failure = report.get("failure")
    reread = f"re-read walkthrough.md {exercise['section']}"
    if failure is None:
        return f"exercise {number} · {exercise['slug']} — the tests failed without a report; {reread}"
    where = failure.get("in_copy") or ""
    mine = stubs_left(number, folder)
    if failure["kind"] == "stub" and (failure["exercise"] == number or mine):
        lines = [
            f"exercise {number} · {exercise['slug']} — not written yet: the stub still raises NotImplementedError"
            f" ({mine[0] if mine else where}).",
            "Write your code in its place (the TODO lines say what it does, and the messages the tests expect).",
        ]
        other = failure["exercise"]
        if other != number:  # the test stopped at another stub before it reached this one
            about = EXERCISES.get(other, {"slug": "?", "title": "?"})
            lines.append(
                f"Its test {failure['name']} also runs exercise {other} · {about['slug']}, whose stub is still in "
                f"place{f' at {where}' if where else ''}: write that one too (ink-py exercise check {other}"
                f"{dir_argument(folder)})."
            )
        lines.append(f"{reread} · stuck? ink-py exercise hint {number}{dir_argument(folder)}")
        return "\n".join(lines)
    if failure["kind"] == "stub":  # this exercise is written; another one's stub is in the way
        other = failure["exercise"]
        about = EXERCISES.get(other, {"slug": "?", "title": "?"})
        return "\n".join(
            [
                f"exercise {number} · {exercise['slug']} — {failure['name']} also runs exercise {other} "
                f"({about['title']}), whose stub is still in place{f' at {where}' if where else ''}.",
                f"finish exercise {other} first: ink-py exercise check {other}{dir_argument(folder)}",
            ]
        )

    # Where did it break? In another exercise's region that the student wrote: that exercise is to blame.
    blamed = failure.get("region")
    started = load_state(folder).get("started", [])
    elsewhere = blamed is not None and blamed != number and blamed in EXERCISES and blamed in started
    fed, expected, got = plain_words(failure)
    debug = (
        f"python -m pytest --impl {shlex.quote(str(folder.resolve()))} "
        f"{shlex.quote(str(SOURCE_ROOT / failure['nodeid']))} --pdb"
    )
    headline = f"exercise {number} · {exercise['slug']} — not yet: {progress(report['passed'])}"
    if elsewhere:
        other = EXERCISES[blamed]
        headline = (
            f"exercise {number} · {exercise['slug']} — not yet: {progress(report['passed'])[:-1]}, "
            f"in exercise {blamed} · {other['slug']}'s code (yours), not exercise {number}'s."
        )
    lines = [headline, "", f"  test      {failure['name']}   ({failure['file']}:{failure['line']})"]
    if failure.get("doc"):
        lines.append(f"  about     {failure['doc']}")
    lines += labelled("fed", fed) + labelled("expected", expected) + labelled("got", got)
    if where and failure["kind"] in ("error", "did_not_raise"):
        lines.append(f"  where     {where}")
    if elsewhere:
        other = EXERCISES[blamed]
        lines += [
            "",
            f"fix exercise {blamed} first: re-read walkthrough.md {other['section']}, then "
            f"ink-py exercise check {blamed}{dir_argument(folder)}",
        ]
    else:
        lines += ["", f"{reread}, then run the check again."]
    lines.append(f"debug it:  {debug}")
    return "\n".join(lines)


def progress(passed: int) -> str:
    if passed == 0:
        return "the first test failed."
    return f"{passed} test{'s' if passed > 1 else ''} passed, then this one failed."


def labelled(label: str, text: str) -> list[str]:
    if not text:
        return []
    first, *rest = text.split("\n")
    return [f"  {label:<9} {first}", *[f"            {line}" for line in rest]]


def plain_words(failure: dict[str, Any]) -> tuple[str, str, str]:
    """(what was fed, what was expected, what came back) for a failure the plugin recorded."""
    compare = failure.get("compare")
    params = dict(failure.get("params") or {})
    # A parameter that is the expected value is not "fed": it shows on the "expected" line.
    expected_value = compare["right"] if compare and compare["op"] in ("==", "is") else None
    params = {name: value for name, value in params.items() if value != expected_value and "expect" not in name}
    fed = "\n".join(f"{name} = {value}" for name, value in params.items())
    if failure.get("fixtures"):
        fed = "\n".join(filter(None, [fed, *failure["fixtures"]]))
    if failure.get("notes"):
        fed = "\n".join(filter(None, [fed, *failure["notes"]]))
    if not fed:
        fed = f"what the test builds — see {failure['file']}:{failure['line']}"

    kind, raises = failure["kind"], failure.get("raises")
    if kind == "explained":  # the test said it in words: "expected: …" and "got: …"
        text = failure["message"]
        said = re.search(r"^expected: (.*?)\n(?:.*\n)*?got: (.*)$", text, re.MULTILINE | re.DOTALL)
        if said:
            return fed, said[1].strip(), said[2].strip().split("\nassert ")[0]
    if kind == "assert" and compare:
        op, left, right = compare["op"], value_words(compare["left"]), value_words(compare["right"])
        if op in ("in", "not in"):
            return fed, f"{left} {'' if op == 'in' else 'not '}to be in it", right
        if op == "!=":
            return fed, f"anything but {right}", left
        return fed, (right if op in ("==", "is") else f"{op} {right}"), left
    if kind == "assert":  # a bare `assert condition`: the condition, and pytest's account of it
        first, *where = failure["message"].split("\n")
        got = "\n".join([first.removeprefix("assert "), *[w.strip() for w in where if " at 0x" not in w][:3]])
        return fed, failure.get("test_line", "").removeprefix("assert "), got
    if kind == "did_not_raise":
        raised = raises or failure["message"].removeprefix("DID NOT RAISE").strip()
        line = failure.get("test_line") or ""
        call = f" from  {line}" if line and not line.startswith("with ") else ""  # not `with pytest.raises(…)`
        return fed, f"{raised} to propagate{call}", "no error: it never reached the caller (swallowed, or never raised)"
    if raises:  # another error than the one the test waits for
        return (
            fed,
            f"{raises} to propagate from  {failure.get('test_line', '')}".rstrip(),
            f"a different error — {failure['message']}",
        )
    expected = f"no error from  {failure['test_line']}" if failure.get("test_line") else "no error"
    return fed, expected, f"an error — {failure['message']}"


def value_words(value: str) -> str:
    """A reported value as the student should read it: a bare ``None`` says what it means."""
    return "None (nothing: no value came back)" if value == "None" else value


# ── reset and diff ──────────────────────────────────────────────────────────────────


def reset(number: int, folder: Path, yes: bool = False) -> str:
    """Put exercise ``number``'s stub back in the copy, after confirmation; every other line stays."""
    if not is_working_copy(folder):
        raise ExerciseError(f"no working copy at {shown(folder)}")
    state = load_state(folder)
    exercise = EXERCISES[number]
    if number not in state.get("started", []):
        raise ExerciseError(f"exercise {number} is not started in {shown(folder)}: nothing to reset")
    new_texts: dict[Path, str] = {}
    kept: list[str] = []  # the student's code, saved before it is replaced
    for relative, regions in group_by_file(package_regions()[number]).items():
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        target = folder / relative
        text = target.read_text(encoding="utf-8")
        mine = copy_regions(text, folder, relative, number, len(regions))
        for region, ours in reversed(list(zip(regions, mine, strict=True))):
            kept.append(f"# {relative}:{ours['start'] + 1}\n" + "\n".join(body_of(text, ours)))
            text = replace_body(text, ours, stub_body(reference, region))
        compile(text, str(target), "exec")
        new_texts[target] = text
    if not yes:
        if sys.stdin is None or not sys.stdin.isatty():
            raise ExerciseError("reset asks before it throws your code away: run it in a terminal, or add --yes")
        print(
            f"reset exercise {number} · {exercise['slug']} in {shown(folder)} to its stub? Your code in its "
            f"{len(kept)} region(s) is replaced (a copy is kept in {shown(folder)}/.reset/). [y/N] ",
            end="",
            flush=True,
        )
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            return "nothing changed."
    backup = folder / ".reset" / f"exercise-{number}-{now().replace(':', '')}.py"
    backup.parent.mkdir(exist_ok=True)
    write_file(backup, "\n\n".join(reversed(kept)) + "\n")
    for target, text in new_texts.items():
        write_file(target, text)
    state.get("checks", {}).pop(str(number), None)
    save_state(folder, state)
    return "\n".join(
        [
            f"exercise {number} · {exercise['slug']} is back to its stub in {shown(folder)}; "
            "every other exercise's code is as you left it.",
            f"your code was: {shown(backup)}",
            f"then check:  ink-py exercise check {number}{dir_argument(folder)}",
        ]
    )


def diff(number: int, folder: Path, width: int | None = None) -> str:
    """Once exercise ``number`` is green: the student's code beside the reference's, region by region."""
    import difflib

    if not is_working_copy(folder):
        raise ExerciseError(f"no working copy at {shown(folder)}")
    state = load_state(folder)
    if state.get("checks", {}).get(str(number)) != "green":
        raise ExerciseError(
            f"exercise {number} is not green yet: the reference is shown once your own code passes — "
            f"ink-py exercise check {number}{dir_argument(folder)}"
        )
    width = width or shutil.get_terminal_size((120, 24)).columns
    half = max(30, (width - 3) // 2)
    out = [f"exercise {number} · {EXERCISES[number]['slug']}: yours (left) · the reference (right)"]
    for relative, regions in group_by_file(package_regions()[number]).items():
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        text = (folder / relative).read_text(encoding="utf-8")
        mine = [r for r in find_regions(text) if r["number"] == number]
        for region, ours in zip(regions, mine, strict=False):
            left, right = body_of(text, ours), body_of(reference, region)
            out += ["", f"{shown(folder)}/{relative}:{ours['start'] + 2}  ·  ink_py/{relative}:{region['start'] + 2}"]
            if left == right:
                out.append("  (the same as the reference, line for line)")
                continue
            for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
                mark = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}[tag]
                for i in range(max(a2 - a1, b2 - b1)):
                    mine_line = left[a1 + i] if a1 + i < a2 else ""
                    their_line = right[b1 + i] if b1 + i < b2 else ""
                    out.append(f"{fit(mine_line, half)} {mark} {fit(their_line, half)}".rstrip())
    return "\n".join(out)


def fit(line: str, width: int) -> str:
    """``line`` padded or cut to ``width`` terminal columns."""
    line = line.replace("\t", "    ")
    while columns(line) > width:
        line = line[: -2 if columns(line) - width > 1 else -1]
        if columns(line) <= width - 1:
            line += "…"
            break
    return line + " " * (width - columns(line))


def columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


# ── hints ───────────────────────────────────────────────────────────────────────────────


def hint(number: int, folder: Path) -> str:
    """One more hint than last time (all shown so far, the newest last); counted in the copy, or here."""
    hints = EXERCISES[number]["hints"]
    if not hints:
        raise ExerciseError(f"exercise {number} has no hints yet")
    place = folder if is_working_copy(folder) else Path.cwd()
    state = load_state(place)
    shown_before = int(state.get("hints", {}).get(str(number), 0))
    count = min(shown_before + 1, len(hints))
    state.setdefault("hints", {})[str(number)] = count
    save_state(place, state)
    exercise = EXERCISES[number]
    lines = [f"exercise {number} · {exercise['slug']} — walkthrough.md {exercise['section']}"]
    lines += [f"提示 {i}/{len(hints)}:{hints[i - 1]}" for i in range(1, count + 1)]
    if shown_before >= len(hints):
        lines.append("(that was the last hint — the reference is in ink_py, if you want to compare)")
    return "\n".join(lines)


# ── the command ─────────────────────────────────────────────────────────────────────────

USAGE = """usage: ink-py exercise <command> [NAME] [DIR]

  list  [DIR]            the exercises and how far you are
  start NAME [DIR]       copy ink_py to DIR (default ./my_ink) with exercise NAME cut out
  check NAME [DIR]       run exercise NAME's tests on DIR and explain the first failure
  check --all [DIR]      check every started exercise; a table of where each stands
  hint  NAME [DIR]       one more hint
  reset NAME [DIR]       put exercise NAME's stub back (asks first; --yes for scripts)
  diff  NAME [DIR]       once NAME is green: your code beside the reference
  report [DIR]           what a teacher collects: exercise-report.json and exercise-report.xml
                         (JUnit) in the current folder, or --json PATH / --junit PATH

NAME is a number or a slug (1 or parse-frame). DIR can also be given as --dir DIR.
The same tests, straight:      python -m pytest --impl my_ink -m ex1
The §3 demo over your copy:    python -m my_ink demo"""

COMMANDS = ("list", "start", "check", "hint", "reset", "diff", "report")
FLAGS = {"--yes": "reset", "--all": "check"}  # flag → the command it belongs to
VALUED = {"--dir": None, "--json": "report", "--junit": "report"}  # options with a value


def exercise_number(name: str) -> int:
    """``3``, ``ex3``, ``text-delta`` or ``text_delta`` → 3.

    >>> [exercise_number(n) for n in ("1", "ex2", "Text_Delta")]
    [1, 2, 3]
    """
    key = name.strip().lower().replace("_", "-").removeprefix("ex")
    if key.isdigit() and int(key) in EXERCISES:
        return int(key)
    for number, exercise in EXERCISES.items():
        if exercise["slug"] == key or exercise["slug"] == name.strip().lower().replace("_", "-"):
            return number
    slugs = ", ".join(f"{n} {e['slug']}" for n, e in EXERCISES.items())
    raise ExerciseError(f"no exercise {name!r}; the exercises are: {slugs}")


def parse_arguments(argv: list[str]) -> tuple[str, list[str], Path, dict[str, Any]]:
    """(command, its positional words, the folder, its options) — ``--dir DIR`` or a trailing DIR."""
    words: list[str] = []
    options: dict[str, Any] = {}
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        name = word.partition("=")[0]
        if name in VALUED:
            if name in options:
                raise ExerciseError("give the folder once" if name == "--dir" else f"give {name} once")
            options[name] = word.partition("=")[2] if "=" in word else (rest.pop(0) if rest else "")
            if not options[name]:
                raise ExerciseError(f"{name} needs a {'folder' if name == '--dir' else 'file'}")
        elif word in FLAGS:
            options[word] = True
        elif word.startswith("-") and word != "-":
            raise ExerciseError(f"unknown option {word}")
        else:
            words.append(word)
    if not words:
        raise ExerciseError(f"which command? {', '.join(COMMANDS)}")
    command, *positional = words
    for option in options:
        belongs = {**FLAGS, **VALUED}[option]
        if belongs is not None and belongs != command:
            raise ExerciseError(f"{option} goes with {belongs}, not {command}")
    takes_name = command in ("start", "check", "hint", "reset", "diff") and not options.get("--all")
    if takes_name and not positional:
        raise ExerciseError(f"which exercise? e.g. ink-py exercise {command} 1")
    limit = 2 if takes_name else 1
    if len(positional) > limit:
        raise ExerciseError(f"too many arguments for {command}: {' '.join(positional[limit:])}")
    folder = options.pop("--dir", None)
    if len(positional) == limit:
        if folder is not None:
            raise ExerciseError("give the folder once")
        folder = positional.pop()
    return command, positional, Path(folder or DEFAULT_DIR), options


def main(argv: list[str] | None = None) -> int:
    """``ink-py exercise …``: 0 done (or green), 1 a usage mistake (or red)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if not argv or argv[0] == "help" or "-h" in argv or "--help" in argv:  # --help after any command too
            print(USAGE)
            return 0
        command, positional, folder, options = parse_arguments(argv)
        if command not in COMMANDS:
            raise ExerciseError(f"unknown command {command!r}; use {', '.join(COMMANDS)}")
        if command == "list":
            print(list_exercises(folder))
            return 0
        if command == "report":
            json_path, xml_path = Path(options.get("--json", REPORT_JSON)), Path(options.get("--junit", REPORT_XML))
            print(write_report(folder, json_path, xml_path))
            return 0
        if command == "check" and options.get("--all"):
            green, words = check_all(folder)
            print(words)
            return 0 if green else 1
        number = exercise_number(positional[0])
        if command in ("start", "check", "reset", "diff") and not available(number):
            raise ExerciseError(f"exercise {number} is not available yet: the source has no markers for it")
        if command == "start":
            print(start(number, folder))
            return 0
        if command == "hint":
            print(hint(number, folder))
            return 0
        if command == "reset":
            print(reset(number, folder, yes=bool(options.get("--yes"))))
            return 0
        if command == "diff":
            print(diff(number, folder))
            return 0
        green, words = check(number, folder)
        print(words)
        return 0 if green else 1
    except ExerciseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `ink-py exercise diff 1 | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
