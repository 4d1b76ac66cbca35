"""What ``ink-py demo --api`` changes, read off each dialect's own ``assemble_stream``.

A step shows what the assembler holds and the lines of the functions it ran. Neither is
listed here by name: both come from the assembler's source (``ast``), so a state variable
renamed or added, or a helper moved to another module, shows up as the code has it.

- ``DIALECTS``: per ``--api``, the provider module whose assembler runs, its fixtures, and a line
  where the dialect tells a scenario differently (``interleaved``: one call after the other);
- ``assembler_locals``: the locals set up before the main ``for`` loop (parameters aside),
  and the name that loop gives each event;
- ``traced_functions``: the assembler and the provider functions it calls, and theirs (``LEFT_OUT``:
  what the article's widget leaves out, shown only with ``--all-lines``).

    >>> def assemble(body, signal=None):
    ...     signal = signal or "never"
    ...     parts: list[str] = []
    ...     done = False
    ...     for sse in body:
    ...         parts.append(sse)
    >>> assembler_locals(assemble)
    AssemblerLocals(state=('parts', 'done'), event='sse')
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple, TypedDict

from ..provider import anthropic_messages, openai_completions, openai_responses


class Dialect(TypedDict):
    """What ``--api`` changes: whose assemble_stream runs, where its copy of the scenarios lies."""

    module: Any  # the provider module: its assemble_stream runs
    folder: str  # fixtures/<folder>/ holds its copy of the article's scenarios
    notes: dict[str, str]  # scenario → one line on how this dialect tells it differently


ONE_AFTER_ANOTHER = "{what}流完才开始下一个:两次调用先后到达,交错只在 Chat Completions 出现(§2.2)"
DIALECTS: dict[str, Dialect] = {
    "openai-completions": {"module": openai_completions, "folder": "article", "notes": {}},
    "anthropic-messages": {
        "module": anthropic_messages,
        "folder": "anthropic",
        "notes": {"interleaved": ONE_AFTER_ANOTHER.format(what="Messages 的服务端一个内容块")},
    },
    "openai-responses": {
        "module": openai_responses,
        "folder": "responses",
        "notes": {"interleaved": ONE_AFTER_ANOTHER.format(what="Responses 的服务端一个输出项")},
    },
}

# What the article's §3 widget leaves out, so a step leaves it out too unless ``--all-lines``: the
# widget starts "from the SSE events already cut" (the 本次收到 panel shows what parsing made), it
# leaves out usage and the fallbacks of message_end, and it has none of ink_py's guards (beyond §:
# checks of the wire and their messages). Any other provider function the assembler reaches is
# shown; tests/test_demo.py checks each name here against the source, so a rename cannot go stale.
LEFT_OUT = frozenset(
    {
        *("parse_sse", "parse_frame", "not_json"),  # §2.1's parsing: its result is the 本次收到 panel
        *("merge_usage", "token_count", "finished_message", "has_content"),  # usage, fallbacks (§2 omits them)
        *("guarded", "ended", "check_chunk", "check_event", "check_fields", "name_malformed_field"),  # guards
        *("raise_server_error", "server_message", "field", "malformed", "json_type", "quote", "nesting_depth"),
    }
)


class AssemblerLocals(NamedTuple):
    state: tuple[str, ...]  # what the access layer holds: set up before the main loop, in that order
    event: str | None  # the main loop's variable: the SSE event being handled


def assembler(api: str) -> Callable[..., Any]:
    """The ``assemble_stream`` that ``--api api`` runs."""
    return DIALECTS[api]["module"].assemble_stream  # type: ignore[no-any-return]


@cache
def assembler_locals(function: Callable[..., Any]) -> AssemblerLocals:
    """The names ``function`` assigns before its first top-level ``for`` (its parameters aside), and
    that loop's variable. Without its source: every local but the parameters, and no event name."""
    parameters = set(inspect.signature(function).parameters)
    tree = function_tree(function)
    if tree is None:
        return AssemblerLocals(tuple(n for n in function.__code__.co_varnames if n not in parameters), None)
    names: list[str] = []
    event = None
    for statement in tree.body:
        if isinstance(statement, ast.For):  # the main loop: what it assigns is per event, not state
            event = statement.target.id if isinstance(statement.target, ast.Name) else None
            break
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AugAssign | ast.AnnAssign) and statement.value is not None:
            targets = [statement.target]
        else:
            continue
        stored = (n for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))  # a, b = …: both
        names += [n.id for n in stored if isinstance(n.ctx, ast.Store) and n.id not in parameters]
    return AssemblerLocals(tuple(dict.fromkeys(names)), event)


@cache
def traced_functions(function: Callable[..., Any], every: bool = False) -> tuple[Callable[..., Any], ...]:
    """``function`` and the functions of its package (``ink_py.provider``) it calls, and those they
    call, in the order first called in the source; ``LEFT_OUT`` ones, and what only they call, left out
    unless ``every`` — and, in a student's working copy, never the functions of the exercises started
    there (``parse_sse`` and ``parse_frame`` once exercises 1 and 2 are): what the student wrote is shown."""
    package = function.__module__.rpartition(".")[0]  # ink_py.provider (my_ink.provider in a copy)
    unshown = frozenset() if every else LEFT_OUT - students_functions(function.__module__.partition(".")[0])
    found = [function]
    for caller in found:  # grows while it is read: each callee's own callees follow
        for callee in callees(caller):
            inside = callee.__module__ == package or callee.__module__.startswith(package + ".")
            if inside and callee.__name__ not in unshown and callee not in found:
                found.append(callee)
    return tuple(found)


@cache
def loop_head(function: Callable[..., Any]) -> frozenset[int]:
    """The lines of ``function``'s main ``for`` that every event passes: the ``for`` itself, the simple
    statements of its body and the headers of its compound ones (an ``if``/``elif`` chain's every test)."""
    tree = function_tree(function)
    loop = next((s for s in tree.body if isinstance(s, ast.For)), None) if tree is not None else None
    if loop is None:
        return frozenset()
    offset = inspect.getsourcelines(function)[1] - 1
    lines = {loop.lineno}
    pending: list[ast.stmt] = list(loop.body)
    while pending:
        statement = pending.pop()
        body = getattr(statement, "body", None)
        last = body[0].lineno - 1 if isinstance(body, list) and body else statement.end_lineno or statement.lineno
        lines.update(range(statement.lineno, last + 1))  # a compound statement: its header only
        orelse = getattr(statement, "orelse", [])
        if isinstance(statement, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If):
            pending.append(orelse[0])  # elif: tested too whenever the ifs before it fail
    return frozenset(number + offset for number in lines)


def students_functions(package: str) -> frozenset[str]:
    """The names of the functions the student writes in the started exercises, if ``package`` is a
    working copy (``my_ink``); nothing for the reference."""
    import sys
    from pathlib import Path

    from .catalogue import EXERCISES
    from .state import MADE_BY, load_state

    module = sys.modules.get(package)
    where = getattr(module, "__file__", None)
    if where is None:
        return frozenset()
    state = load_state(Path(where).parent)
    if state.get("made_by") != MADE_BY:
        return frozenset()
    started = [EXERCISES[n] for n in state.get("started", []) if n in EXERCISES]
    return frozenset(entry.rpartition(":")[2].rpartition(".")[2] for ex in started for entry in ex["functions"])


def callees(function: Callable[..., Any]) -> list[Callable[..., Any]]:
    """The functions ``function`` calls through a global name, ``f(…)`` or ``module.f(…)``, in source order."""
    tree = function_tree(function)
    if tree is None:
        return []
    own = set(function.__code__.co_varnames)  # a local of the same name is not the global function
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    found: list[Callable[..., Any]] = []
    for call in calls:
        target = named(call.func, function.__globals__, own)
        if inspect.isfunction(target) and target not in found:
            found.append(target)
    return found


def named(node: ast.expr, names: dict[str, Any], own: set[str]) -> Any:
    """What a dotted name in the source stands for (``shared.abort_safe`` → the function), else None."""
    if isinstance(node, ast.Name):
        return None if node.id in own else names.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = named(node.value, names, own)
        return getattr(owner, node.attr, None) if inspect.ismodule(owner) else None
    return None


def function_tree(function: Callable[..., Any]) -> ast.FunctionDef | None:
    """``function``'s definition as an ``ast`` tree, from the source it was loaded from (None without one)."""
    try:
        [tree] = ast.parse(textwrap.dedent(inspect.getsource(function))).body
    except (OSError, TypeError, SyntaxError, ValueError):  # no source file, or not one def
        return None
    return tree if isinstance(tree, ast.FunctionDef) else None
