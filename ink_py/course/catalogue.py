"""The course's catalogue: the nine exercises in article order, and the types the course passes around.

Sections: the types (``Exercise`` is one row of the table (its hints are ``hints.py``'s), ``Region``
where an exercise sits in a source file), ``ExerciseError`` (the one mistake every part of the
course reports as a single ``error:`` line), the ``EXERCISES`` table (titles and hints in English
and Chinese, the section that explains it, the words the tests compare) and ``exercise_number``,
which reads the name a student types; ``title``, ``reading`` and ``hints_in_order`` say them. Where
each exercise is in the code is not kept here: ``stubs.py`` finds it in the source.

    >>> EXERCISES[1]["slug"], EXERCISES[1]["section"], exercise_number("parse_frame")
    ('parse-frame', '§2.1', 1)
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from .hints import HINTS, Hint
from .language import in_language, say
from .places import project_page


class Part(TypedDict):
    """A part of a function the student writes: from the statement whose line starts ``first``
    through the one (at the same depth) that holds the line starting ``last``."""

    function: str  # "module path:qualified name"
    first: str
    last: str
    label: str  # the marker a copy gets around it: "# exercise N ▼ label"


class Exercise(TypedDict):
    functions: list[str]  # whole functions the student writes, "module path:qualified name"
    parts: list[Part]  # parts of functions, found by their first and last lines (stubs.part_regions)
    slug: str
    title: str  # what the student writes
    title_zh: str
    section: str  # in ``page``, which follows the article's numbering
    page: str  # the project's page that explains it (places.project_page): walkthrough.md, or docs/…
    hints: list[Hint]  # identifiers in English; the last nearly gives it away
    messages: list[str]  # the words the tests compare, verbatim: the stub lists them as TODOs


class Region(TypedDict):
    number: int  # the exercise
    start: int  # 0-based index of the line before the region (its opening marker, in a copy)
    end: int  # 0-based index of the line after it (its closing marker, in a copy)
    indent: str
    label: str  # a part found by its lines (not yet marked): the label its markers get; else ""


class ExerciseError(Exception):
    """A mistake in how the command was used, or a copy it cannot safely change: one ``error:`` line."""


# ── the exercises, in article order ─────────────────────────────────────────────────────

CORE_LOOP = "provider/openai_completions.py:assemble_stream"  # the article's §2, where exercises 3–5 are

EXERCISES: dict[int, Exercise] = {
    1: {
        "functions": ["provider/shared.py:parse_frame"],
        "parts": [],
        "slug": "parse-frame",
        "title": "parse_frame: event name, data lines, JSON, [DONE]",
        "title_zh": "parse_frame:事件名、data 行、JSON、[DONE]",
        "section": "§2.1",
        "page": "walkthrough.md",
        "hints": HINTS[1],
        "messages": [],
    },
    2: {
        "functions": ["provider/shared.py:parse_sse"],
        "parts": [],
        "slug": "parse-sse",
        "title": "parse_sse: the buffer, cutting frames at blank lines, UTF-8 split across reads",
        "title_zh": "parse_sse:buffer、在空行处切出 frame、跨两次读取的 UTF-8 字符",
        "section": "§2.1",
        "page": "walkthrough.md",
        "hints": HINTS[2],
        "messages": [],
    },
    3: {
        "functions": [],
        "parts": [
            {
                "function": CORE_LOOP,
                "first": 'content = delta.get("content")',
                "last": 'yield {"type": "text_delta", "text": content}',
                "label": "text accumulation",
            },
        ],
        "slug": "text-delta",
        "title": "text accumulation and text_delta",
        "title_zh": "文本累积与 text_delta",
        "section": "§2 ①",
        "page": "walkthrough.md",
        "hints": HINTS[3],
        "messages": [
            '{"type": "text_delta", "text": content}',
        ],
    },
    4: {
        "functions": [],
        "parts": [
            {
                "function": CORE_LOOP,
                "first": 'index = tc.get("index", position)',
                "last": 'yield {"type": "tool_call_delta"',
                "label": "tool-call fragments",
            },
        ],
        "slug": "tool-calls",
        "title": "tool-call fragments by index: tool_call_start, tool_call_delta, a late name",
        "title_zh": "按序号组装工具片段:tool_call_start、tool_call_delta、迟到的名字",
        "section": "§2.2",
        "page": "walkthrough.md",
        "hints": HINTS[4],
        "messages": [
            '{"type": "tool_call_start", "id": block["id"], "name": block["name"]}',
            '{"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}',
        ],
    },
    5: {
        "functions": ["provider/openai_completions.py:map_finish_reason"],
        "parts": [
            {
                "function": CORE_LOOP,
                "first": 'if choice.get("finish_reason") is not None:',
                "last": "stop_reason = map_finish_reason(",
                "label": "finish reason",
            },
            {
                "function": CORE_LOOP,
                "first": "if not saw_finish and not saw_done:",
                "last": "raise ProviderError(",
                "label": "no finish reason",
            },
        ],
        "slug": "finish-reason",
        "title": "the finish-reason check and map_finish_reason",
        "title_zh": "结束原因检查与 map_finish_reason",
        "section": "§4.1, §4.4",
        "page": "walkthrough.md",
        "hints": HINTS[5],
        "messages": [
            'ProviderError("OpenAI stream ended without finish_reason — response may be truncated")',
        ],
    },
    6: {
        "functions": ["provider/shared.py:abort_safe"],
        "parts": [],
        "slug": "abort-safe",
        "title": "abort_safe: an abort ends the stream quietly, other errors propagate",
        "title_zh": "abort_safe:中断安静地结束事件流,其他错误照常抛出",
        "section": "§4.2",
        "page": "walkthrough.md",
        "hints": HINTS[6],
        "messages": [],
    },
    7: {
        "functions": ["provider/shared.py:safe_parse_json"],
        "parts": [
            {
                "function": "core/loop.py:prepare_tool_call",
                "first": "# Beyond §4.3: Ink passes this record",
                "last": "problem = (",
                "label": "block unparseable arguments",
            },
        ],
        "slug": "safe-parse-json",
        "title": "safe_parse_json and blocking unparseable arguments",
        "title_zh": "safe_parse_json,以及拦下解析不了的参数",
        "section": "§4.3",
        "page": "walkthrough.md",
        "hints": HINTS[7],
        "messages": [
            '{"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}',
            '{"_parseError": f"tool arguments were nested more than {MAX_ARGUMENT_DEPTH} deep", "raw": raw[:500]}',
            "f\"the arguments for {call['name']} were not valid JSON, so the call was not run. "
            'They began: {began}. Send the call again with complete, valid JSON arguments."',
        ],
    },
    8: {
        "functions": ["core/loop.py:fail_tool_calls_from_truncated_message"],
        "parts": [],
        "slug": "truncated-calls",
        "title": "fail_tool_calls_from_truncated_message",
        "title_zh": "fail_tool_calls_from_truncated_message",
        "section": "§4.4",
        "page": "walkthrough.md",
        "hints": HINTS[8],
        "messages": [
            'f"Error: this reply hit the output token limit (finish_reason: length), so the arguments of '
            "{call['name']} may be truncated; the call was not run. Send the call again with complete arguments.\"",
        ],
    },
    9: {
        "functions": ["second_article/chunks.py:add_tool_piece", "second_article/chunks.py:concat"],
        "parts": [],
        "slug": "chunk-concat",
        "title": "add_tool_piece and concat: merge message chunks field by field (second article)",
        "title_zh": "add_tool_piece 与 concat:逐字段合并消息块(第二篇文章)",
        "section": "§6.1",
        "page": "docs/second-article.md",
        "hints": HINTS[9],
        "messages": [],
    },
}


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
    raise ExerciseError(say("no_exercise", name=repr(name), slugs=slugs))


def title(number: int, language: str | None = None) -> str:
    """What the student writes in exercise ``number``, in the student's language."""
    return in_language((EXERCISES[number]["title"], EXERCISES[number]["title_zh"]), language)


def reading(number: int, absolute: bool = False) -> str:
    """Where to read up on exercise ``number``: its page (shipped in the package, or the checkout's), as a
    path that opens from here (relative inside the current folder, unless ``absolute``: a stub's, read
    anywhere), and the section.

    >>> reading(9).endswith("docs/second-article.md §6.1")
    True
    """
    page = project_page(EXERCISES[number]["page"])
    try:
        where = str(page if absolute else page.relative_to(Path.cwd().resolve()))
    except ValueError:
        where = str(page)
    return f"{where} {EXERCISES[number]['section']}"


def hints_in_order(number: int, failed: str = "") -> list[int]:
    """The order exercise ``number``'s hints are given in: those that answer the failed test named
    ``failed`` (its ``when``) first, then the rest, each group in the table's order.

    >>> hints_in_order(1, "test_parse_frame[done-marker]"), hints_in_order(1)
    ([3, 0, 1, 2], [0, 1, 2, 3])
    """
    hints = EXERCISES[number]["hints"]
    answers = [any(piece in failed.lower() for piece in hint["when"]) if failed else False for hint in hints]
    return sorted(range(len(hints)), key=lambda i: not answers[i])
