"""Where an exercise is in the source, and the stub that replaces it: cut from the reference, never kept by hand.

A whole function named in an exercise's ``functions`` (``"provider/shared.py:parse_frame"``) is found
by name with ``ast``: its body after the docstring is the region. A part of a function (the ①②③ steps
of ``assemble_stream``, the ``_parseError`` branch) is named in ``parts`` by its first and last lines,
so the reference carries no scaffolding; a copy's stub is marked — ``# exercise N ▼ label`` opens it,
``# exercise N ▲`` closes it — so the student's own code there is found again. Sections: where
regions are (``find_regions``), the stub (the region's comments as ``# TODO:`` lines, the words its
tests compare, one ``raise NotImplementedError``: it compiles wherever the region was), and
``package_regions``, every region of the reference::

    >>> source = '''def map_finish_reason(reason):
    ...     \"\"\"The server's finish_reason → Ink's stopReason.\"\"\"
    ...     return {"stop": "end_turn"}.get(reason)  # an unknown reason → None
    ... '''
    >>> print(stub_source(source, 5))  # doctest: +ELLIPSIS
    def map_finish_reason(reason):
        \"\"\"The server's finish_reason → Ink's stopReason.\"\"\"
        # TODO: an unknown reason → None
        raise NotImplementedError("exercise 5 not written yet: ... — see .../walkthrough.md §4.1, §4.4")
    <BLANKLINE>
"""

from __future__ import annotations

import ast
import functools
import io
import json
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from .catalogue import EXERCISES, ExerciseError, Region, reading, title
from .language import columns, say, todo_words
from .places import PACKAGE_DIR  # the reference the stubs are cut from

QUOTING = ("course/exercises.py", "course/stubs.py")  # they describe the markers, they hold none

# ── the marker grammar ────────────────────────────────────────────────────────────────


class MarkerError(ExerciseError):
    """Markers that break the grammar (in the reference, or in a copy the student edited)."""


OPEN = re.compile(r"^(?P<indent>[ \t]*)# exercise (?P<number>\d+) ▼(?: .*)?$")
CLOSE = re.compile(r"^(?P<indent>[ \t]*)# exercise (?P<number>\d+) ▲\s*$")
STUB_MESSAGE = re.compile(r"(?:exercise (\d+) not written yet|练习 (\d+) 还没写)")  # the stub's raise, either language
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
                raise MarkerError(say("marker_nested", at=at, n=open_region["number"]))
            open_region = {
                "number": int(opening["number"]), "start": index, "end": -1, "indent": opening["indent"], "label": "",
            }  # fmt: skip
        elif closing:
            if open_region is None or int(closing["number"]) != open_region["number"]:
                raise MarkerError(say("marker_stray", at=at, n=closing["number"]))
            if closing["indent"] != open_region["indent"]:
                raise MarkerError(say("marker_indent", at=at))
            open_region["end"] = index
            body = [line for line in lines[open_region["start"] + 1 : index] if line.strip()]
            if all(line.strip().startswith("#") for line in body):
                raise MarkerError(say("marker_no_code", at=at, n=open_region["number"]))
            if any(not line.startswith(open_region["indent"]) for line in body):
                raise MarkerError(say("marker_dedented", at=at, n=open_region["number"]))
            regions.append(open_region)
            open_region = None
    if open_region is not None:
        raise MarkerError(say("marker_unclosed", at=f"{where}:{open_region['start'] + 1}", n=open_region["number"]))
    regions += part_regions(text, regions)
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
                         "indent": " " * first.col_offset, "label": ""}
                    )  # fmt: skip
                visit(child, name + ".")

    visit(tree, "")
    return found


def part_regions(text: str, marked: list[Region]) -> list[Region]:
    """The table's ``parts`` whose first and last lines are in ``text``, outside the ``marked`` regions.

    A part runs from its first line (a comment or a statement) through the statement, at the
    depth of the first statement after that line, that holds its last line.

    >>> source = "def prepare_tool_call(call, tool_map):\\n    # Beyond §4.3: Ink passes this record\\n"
    >>> source += "    problem = (\\n        'x'\\n    )\\n    return problem\\n"
    >>> [(r["number"], r["start"], r["end"], r["label"]) for r in part_regions(source, [])]
    [(7, 0, 5, 'block unparseable arguments')]
    """
    wanted = [(number, part) for number, ex in EXERCISES.items() for part in ex["parts"]]
    wanted = [(n, p) for n, p in wanted if f"def {p['function'].rpartition(':')[2].rpartition('.')[2]}(" in text]
    if not wanted:
        return []
    try:
        functions = dict(defined_functions(ast.parse(text)))
    except SyntaxError:
        return []  # a student's file that does not parse yet: its markers still count
    lines = text.split("\n")
    found: list[Region] = []
    for number, part in wanted:
        node = functions.get(part["function"].partition(":")[2])
        if node is None:
            continue
        span = range(node.lineno, node.end_lineno or node.lineno)
        first = next((i for i in span if lines[i].strip().startswith(part["first"])), None)
        last = next((i for i in span if lines[i].strip().startswith(part["last"]) and i >= (first or 0)), None)
        if first is None or last is None or any(r["start"] <= first <= r["end"] for r in marked):
            continue  # not here, or the copy marks it already
        statements = [(s.lineno, s.col_offset, block, i) for block in blocks(node) for i, s in enumerate(block)]
        _, _, block, i = min((entry for entry in statements if entry[0] > first), key=lambda e: e[:2])
        ends = [s for s in block[i:] if s.lineno - 1 <= last < (s.end_lineno or 0)]
        if ends:
            found.append(
                {"number": number, "start": first - 1, "end": ends[0].end_lineno or 0,
                 "indent": " " * block[i].col_offset, "label": part["label"]}
            )  # fmt: skip
    return found


def defined_functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function in ``tree`` with its qualified name (``Class.method``)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if not isinstance(child, ast.ClassDef):
                yield prefix + child.name, child
            yield from defined_functions(child, prefix + child.name + ".")


def blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every list of statements under ``node``: bodies, else and finally branches, handlers."""
    for child in ast.walk(node):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(child, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def region_comments(text: str, region: Region) -> list[str]:
    """The comments inside a region — whole-line and trailing — in order, without the ``#``; a
    comment of several whole lines in a row is one, its lines joined (a sentence is never cut).

    >>> region = {"number": 4, "start": -1, "end": 4, "indent": "", "label": ""}
    >>> region_comments("x = 1  # one\\n# a new id is\\n# a new call\\ny = 2\\n", region)
    ['one', 'a new id is a new call']
    """
    rows = range(region["start"] + 2, region["end"] + 1)  # tokenize counts lines from 1
    lines = text.split("\n")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        found = [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.COMMENT and tok.start[0] in rows]
    except (tokenize.TokenError, SyntaxError):  # unreadable source: whole-line comments only
        found = [(row, lines[row - 1].strip()) for row in rows if lines[row - 1].strip().startswith("#")]
    comments: list[str] = []
    previous_whole = -1  # the row of the last whole-line comment
    for row, comment in found:
        words = comment.lstrip("#").strip()
        if not words or PRAGMA.match(words):
            continue
        whole = lines[row - 1].strip().startswith("#")
        if whole and previous_whole == row - 1 and comments:
            comments[-1] += " " + words  # the same comment, on its next line
        else:
            comments.append(words)
        previous_whole = row if whole else -1
    return comments


# ── the stub ──────────────────────────────────────────────────────────────────────────


def stub_message(number: int, language: str | None = None) -> str:
    """The NotImplementedError text of exercise ``number``'s stub, in ``language``."""
    return say("stub_message", language, n=number, title=title(number, language), reading=reading(number, True))


def stub_number(message: str) -> int | None:
    """The exercise whose stub raised ``message`` (English or Chinese), else None.

    >>> stub_number("练习 5 还没写:……"), stub_number("exercise 2 not written yet: …"), stub_number("x")
    (5, 2, None)
    """
    found = STUB_MESSAGE.match(message)
    return int(found[1] or found[2]) if found else None


def stub_body(text: str, region: Region, language: str = "en") -> list[str]:
    """The lines that replace a region: its comments as TODOs (in ``language``), then one raise —
    between markers if the region is a part found by its lines (the copy must find the student's
    code again)."""
    indent = region["indent"]
    comments = [todo_words(comment, language) for comment in region_comments(text, region)]
    todos = [line for comment in comments for line in todo_lines(indent, comment)]
    words = region_messages(text, region)
    if words:
        todos.append(f"{indent}# TODO: {say('exact_words', language)}")
        todos += [f"{indent}# TODO:     {message}" for message in words]
    message = json.dumps(stub_message(region["number"], language), ensure_ascii=False)  # a valid Python literal too
    stub = [*todos, f"{indent}raise NotImplementedError({message})"]
    if region["label"]:
        number = region["number"]
        return [f"{indent}# exercise {number} ▼ {region['label']}", *stub, f"{indent}# exercise {number} ▲"]
    return stub


BREAK_AFTER = " ,;:,;:。、)"  # where a TODO line may be wrapped


def todo_lines(indent: str, comment: str, width: int = 110) -> list[str]:
    """One TODO, wrapped at ``width`` terminal columns: ``# TODO: …`` then ``#       …`` lines
    (a Chinese character takes two columns; a line breaks after a space or a punctuation mark).

    >>> todo_lines("", "alpha beta gamma delta epsilon zeta", width=30)
    ['# TODO: alpha beta gamma delta', '#       epsilon zeta']
    """
    room = max(20, width - len(indent) - 8)
    lines: list[str] = []
    line = ""
    for char in comment:
        line += char
        if columns(line.rstrip()) > room:
            breaks = [i + 1 for i, c in enumerate(line[:-1]) if c in BREAK_AFTER]
            cut = breaks[-1] if breaks else len(line) - 1  # no place to break: mid-word, once
            lines.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
    lines.append(line.rstrip())
    return [f"{indent}{'# TODO: ' if i == 0 else '#       '}{text}" for i, text in enumerate(lines)]


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


def region_name(text: str, region: Region) -> str:
    """What the student writes there: the function that holds the region, and the part's label.

    >>> region = {"number": 9, "start": 0, "end": 2, "indent": "", "label": ""}
    >>> region_name("def concat(a, b):\\n    return a\\n", region)
    'concat'
    """
    try:
        functions = list(defined_functions(ast.parse(text)))
    except SyntaxError:
        return region["label"]
    holding = [
        name for name, node in functions if node.lineno <= region["start"] + 2 <= (node.end_lineno or node.lineno)
    ]
    name = max(holding, key=len, default="")  # the innermost: Class.method is longer than Class
    label = region["label"] or marker_label(text, region)
    return f"{name}: {label}" if name and label else name or label


def marker_label(text: str, region: Region) -> str:
    """The label of a marked region's opening line (``# exercise 3 ▼ text accumulation``), else ""."""
    opening = OPEN.match(text.split("\n")[region["start"]]) if region["start"] >= 0 else None
    return opening.group(0).partition("▼")[2].strip() if opening else ""


def is_stub(text: str, region: Region) -> bool:
    """Does the region still hold the stub's raise (written in either language)?"""
    raising = 'raise NotImplementedError("'
    return any(
        line.strip().startswith(raising) and stub_number(line.strip()[len(raising) :]) == region["number"]
        for line in body_of(text, region)
    )


def body_of(text: str, region: Region) -> list[str]:
    return text.split("\n")[region["start"] + 1 : region["end"]]


# ── every region of the reference ─────────────────────────────────────────────────────


@functools.cache
def package_regions(package: Path = PACKAGE_DIR) -> dict[int, list[tuple[str, Region]]]:
    """Exercise number → its regions as (module path inside the package, region), in source order."""
    found: dict[int, list[tuple[str, Region]]] = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if "__pycache__" in path.parts or relative in QUOTING:
            continue
        for region in find_regions(path.read_text(encoding="utf-8"), relative):
            found.setdefault(region["number"], []).append((relative, region))
    for number, exercise in EXERCISES.items():
        for entry in exercise["functions"]:
            relative, _, name = entry.partition(":")
            if not any(where == relative for where, _ in found.get(number, [])):
                raise MarkerError(say("marker_missing", where=relative, n=number, name=name))
    return found


def available(number: int) -> bool:
    """Has the reference got markers for this exercise? (Exercise 9 waits for chunks.py's.)"""
    return number in package_regions()


def group_by_file(regions: list[tuple[str, Region]]) -> dict[str, list[Region]]:
    grouped: dict[str, list[Region]] = {}
    for relative, region in regions:
        grouped.setdefault(relative, []).append(region)
    return grouped
