"""walkthrough.md stays true: what it names exists, its excerpts match the source, and every
identifier of the article's code has a row in its table.

The sections cut out of it to keep it at a reader's length (the three dialects side by side, the
second article, hardening, real servers) live in ``docs/``; what they name and the excerpts they
carry are checked there the same way (``MOVED``)."""

import ast
import bdb
import re
import sys
from functools import cache
from pathlib import Path

import pytest

from .helpers import ROOT

WALKTHROUGH = (ROOT / "walkthrough.md").read_text(encoding="utf-8")
MOVED = ["docs/dialects.md", "docs/second-article.md", "docs/hardening.md", "docs/real-servers.md"]
DOCSTRINGS_CUT = ["docs/modules.md"]  # what the module docstrings no longer say (linked from docs/usage.md)
PAGES = {"walkthrough.md": WALKTHROUGH} | {
    page: (ROOT / page).read_text(encoding="utf-8") for page in MOVED + DOCSTRINGS_CUT
}

# Every identifier in the article's code listings (its §2, §2.1, §2.2, §2.3, §4.1–§4.4), which
# the table must map to Python. Kept here because the article itself is not in the repository.
ARTICLE_IDENTIFIERS = """
parseSse parseFrame abortSafe safeParseJson _parseError mapFinishReason provider.stream response.body reader
decoder buffer sep frame event dataLines sse chunk choice content blocks textBlock toolByIndex toolRawByIndex
tc fragment stopReason sawFinish ours raw usage text_delta tool_call_start tool_call_delta message_end LLMEvent
request request.signal signal streamAssistant onEvent runAgentLoop assistant toolCalls ToolResult results
executeToolBatch toolMap onToolCall clock failToolCallsFromTruncatedMessage AgentMessage toolResults history
onMessage truncated printRunStats
""".split()


def table_rows() -> list[list[str]]:
    section = WALKTHROUGH.split("## 对照表", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]  # skip the header


@cache
def definitions(path: str) -> dict[str, tuple[int, int]]:
    """Top-level names (functions, classes, assignments) and Class.method → (first, last) line."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    found: dict[str, tuple[int, int]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (node.lineno, node.end_lineno or node.lineno)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found[f"{node.name}.{item.name}"] = (item.lineno, item.end_lineno or item.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = (node.lineno, node.end_lineno or node.lineno)
    return found


def test_every_identifier_of_the_articles_code_has_a_row():
    named = {re.sub(r"`", "", row[0]) for row in table_rows()}
    assert set(ARTICLE_IDENTIFIERS) - named == set()


@pytest.mark.parametrize("row", table_rows(), ids=lambda row: row[0].strip("`"))
def test_each_row_names_a_real_file_function_and_test(row):
    identifier, python, where, test = row
    path, function = re.fullmatch(r"`([^`]+)` · `([^`]+)`", where).groups()
    assert function in definitions(path), f"{path} has no {function}"
    test_file, test_name = re.fullmatch(r"`([^`]+)::([^`\[]+)`", test).groups()
    assert test_name in definitions(test_file), f"{test_file} has no {test_name}"


def test_the_moved_sections_are_linked_from_the_walkthrough():
    assert all(f"]({page})" in WALKTHROUGH for page in MOVED)


@pytest.mark.parametrize("page", PAGES)
def test_every_path_named_exists(page):
    paths = set(re.findall(r"(?<![\w/])((?:ink_py|tests|fixtures|benchmarks)/[\w./-]*\w)", PAGES[page]))
    assert paths, f"{page} names no files?"
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert missing == []


@pytest.mark.parametrize("page", PAGES)
def test_every_test_id_named_exists(page):
    ids = set(re.findall(r"((?:tests|ink_py/course/checks)/[\w/]+\.py)::(\w+)", PAGES[page]))
    if page == "walkthrough.md":
        assert len(ids) > 30
    missing = sorted(f"{f}::{name}" for f, name in ids if name not in definitions(f))
    assert missing == []


@pytest.mark.parametrize("page", PAGES)
def test_every_function_named_with_its_file_exists(page):
    pairs = set(re.findall(r"`((?:ink_py)/[\w/]+\.py)` · `([\w.]+)`", PAGES[page]))
    missing = sorted(f"{f} · {name}" for f, name in pairs if name not in definitions(f))
    assert missing == []


def excerpts() -> list[tuple[str, str, list[str]]]:
    """Code blocks that open with `# <file> · <function>`, in the walkthrough and the pages cut out of
    it: (file, function, the lines after it)."""
    found = []
    for text in PAGES.values():
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            first, *lines = block.rstrip("\n").split("\n")
            match = re.fullmatch(r"# (ink_py/[\w/]+\.py) · (\w+)", first)
            assert match, f"an excerpt must name its source on its first line: {first!r}"
            found.append((match[1], match[2], lines))
    return found


@pytest.mark.parametrize("path, function, lines", excerpts(), ids=lambda v: v if isinstance(v, str) else None)
def test_each_excerpt_is_copied_exactly_from_that_function(path, function, lines):
    first, last = definitions(path)[function]
    source = (ROOT / path).read_text(encoding="utf-8").splitlines()[first - 1 : last]
    windows = [source[i : i + len(lines)] for i in range(len(source) - len(lines) + 1)]
    assert lines in windows, f"this excerpt no longer matches {path} · {function}:\n" + "\n".join(lines)


PDB_SECTION = WALKTHROUGH.split("## 用调试器单步走一遍 README 任务", 1)[1].split("\n## ", 1)[0]
# The lines the debugger section breaks on, per file, by how each begins: the anchors a reader searches for.
PDB_ANCHORS = {
    "ink_py/provider/shared.py": ["buffer = buffer[start:]", "frame = buffer[start:sep]"],
    "ink_py/provider/openai_completions.py": [
        "text_parts.append(content)",
        "tool_raw_by_index[index].append(fragment)",
        'yield {"type": "message_end"',
    ],
    "ink_py/core/tools/read.py": ["real = os.path.realpath(os.path.join(root, path))"],
}


def pdb_breakpoints(text: str = PDB_SECTION) -> list[tuple[str, int, str | None]]:
    """Every ``b FILE:LINE[, CONDITION]`` (or ``break …``) the section shows: (file, line, condition)."""
    found = re.findall(r"\b(?:b|break) (ink_py/[\w/]+\.py):(\d+)(?:, ([^`\n]+))?", text)
    return [(path, int(number), condition.strip() or None) for path, number, condition in found]


def anchor_lines(path: str) -> dict[int, str]:
    """line number → anchor, for the anchors of ``path``; each must begin exactly one line."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    found = {}
    for anchor in PDB_ANCHORS[path]:
        now = [i + 1 for i, line in enumerate(lines) if line.strip().startswith(anchor)]
        assert len(now) == 1, f"{path}: {anchor!r} is on lines {now}, not one line"
        found[now[0]] = anchor
    return found


def test_the_pdb_breakpoints_point_at_the_lines_the_recipe_names():
    """An edit above a breakpoint moves its line: this says which numbers the recipe needs now."""
    breakpoints = pdb_breakpoints()
    assert len(breakpoints) >= 5 and "python -m pdb -m ink_py" in PDB_SECTION
    for path, number, _ in breakpoints:
        assert path in PDB_ANCHORS, f"walkthrough.md breaks in {path}: add its line to PDB_ANCHORS"
        now = anchor_lines(path)
        assert number in now, f"walkthrough.md: `b {path}:{number}` no longer names one of its lines; now: {now}"
    assert {(path, anchor) for path, anchors in PDB_ANCHORS.items() for anchor in anchors} == {
        (path, anchor_lines(path)[number]) for path, number, _ in breakpoints
    }  # every anchor is used


def test_it_follows_the_articles_numbering():
    headings = re.findall(r"^##+ (\d(?:\.\d)?)\.? ", WALKTHROUGH, re.M)
    assert headings[:11] == ["1", "2", "2.1", "2.2", "2.3", "3", "4.1", "4.2", "4.3", "4.4", "5"]


def test_it_links_every_module_docstring_it_lists():
    links = re.findall(r"\]\((ink_py/[\w/]+\.py)\)", WALKTHROUGH)
    modules = {str(p.relative_to(ROOT)) for p in Path(ROOT / "ink_py").rglob("*.py") if p.name != "__init__.py"}
    assert set(links) <= modules
    assert {"ink_py/provider/shared.py", "ink_py/provider/openai_completions.py", "ink_py/core/loop.py"} <= set(links)


class CountBreaks(bdb.Bdb):
    """pdb's engine: counts the stops at each breakpoint (its condition evaluated), never stops for real."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: dict[tuple[str, int], int] = {}

    def user_line(self, frame) -> None:
        if self.break_here(frame):
            where = (Path(frame.f_code.co_filename).resolve().relative_to(ROOT).as_posix(), frame.f_lineno)
            self.hits[where] = self.hits.get(where, 0) + 1
        self.set_continue()


def test_the_recipe_says_truly_which_breakpoints_fire_in_the_readme_task(monkeypatch, capsys):
    """Every breakpoint the section shows stops in the README task, the recipe's conditional ones as
    often as its table says; the one for §2.1's test stops there once."""
    from ink_py import cli
    from ink_py.provider import shared

    monkeypatch.chdir(ROOT)  # the README task reads this README
    monkeypatch.setenv("INK_SCRIPTED_DELAY", "0")
    in_task = {}
    for path, number, condition in pdb_breakpoints():
        debugger = CountBreaks()  # one at a time: two breakpoints on one line would count as one stop
        debugger.set_break(str(ROOT / path), number, cond=condition)
        previous = sys.gettrace()
        try:
            assert debugger.runcall(cli.main, []) == 0
        finally:
            sys.settrace(previous)
            debugger.clear_all_breaks()  # bdb keeps every breakpoint in one list per process (bdb.Breakpoint.bplist)
        in_task[(path, number, condition)] = debugger.hits.get((path, number), 0)
    capsys.readouterr()
    assert all(in_task.values()), in_task
    recipe = pdb_breakpoints(PDB_SECTION.split("```sh", 1)[1].split("```", 1)[0])
    stops = [in_task[b] for b in recipe]
    assert stops == [1, 2, 2, 1, 2], dict(zip(recipe, stops, strict=True))  # the table's eight stops, in five lines

    [(path, number)] = re.findall(r"\(Pdb\) break (ink_py/[\w/]+\.py):(\d+)`", PDB_SECTION)
    number = int(number)
    debugger = CountBreaks()
    debugger.set_break(str(ROOT / path), number)
    previous = sys.gettrace()
    try:
        debugger.runcall(lambda: list(shared.parse_sse([b'data: {"a": 1}\n\n'])))  # as in tests/test_parse_sse.py
    finally:
        sys.settrace(previous)
        debugger.clear_all_breaks()
    assert debugger.hits == {(path, number): 1}  # the §2.1 test: one frame cut
    assert "pytest --trace ink_py/course/checks/test_parse_sse.py" in PDB_SECTION
