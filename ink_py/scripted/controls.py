"""What a request asks of the scripted model beside its messages: ``tool_choice`` and ``max_tokens``.

A real server honours both, so the built-in model does too: every documented effect of
``--tool-choice`` and ``--max-tokens`` can be tried without a key. ``script.plan_answer``
decides what to say; ``request_problem`` refuses, with a 400, what a real server refuses;
``obey`` then bends the answer to the request, in Chat Completions' words (``dialects``
translates the other two first). What each value does: docs/modules.md.

    >>> from ink_py.scripted.script import plan_answer
    >>> answer = plan_answer({"messages": [{"role": "user", "content": "读取 setup.cfg"}]})
    >>> obey(answer, {"tool_choice": "none"})["tool_call"], obey(answer, {"max_tokens": 7})["tool_call"]["arguments"]
    (None, '{"path":')
"""

from __future__ import annotations

from typing import Any

from .script import Answer, PlannedCall, has_read_tool, new_call_id, read_call, requested_file, text_answer

CHARS_PER_TOKEN = 4  # as wire.estimate_usage counts
LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
NONE_TEXT = "这次请求不允许调用工具(tool_choice: none),所以我没有读取 {path},无法根据它的内容回答。"
FORCED_TEXT = "这次请求要求调用工具(tool_choice: {choice}),我读取 {path}。"


def tool_choice(body: dict[str, Any]) -> str | None:
    """``"auto"`` (also when absent), ``"none"``, ``"required"`` or the tool's name; None for a value no server takes.

    >>> tool_choice({}), tool_choice({"tool_choice": {"type": "function", "function": {"name": "read"}}})
    ('auto', 'read')
    """
    choice = body.get("tool_choice", "auto")
    if choice in ("auto", "none", "required"):
        return str(choice)
    function = choice.get("function") if isinstance(choice, dict) and choice.get("type") == "function" else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) and name else None


def output_limit(body: dict[str, Any]) -> int | None:
    """The request's output limit in tokens, or None (no limit, or not a whole number ≥ 1)."""
    for field in LIMIT_FIELDS:
        value = body.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return None


def request_problem(body: dict[str, Any]) -> str:
    """Why a real server would refuse these fields with a 400 ("" when they are fine)."""
    choice = tool_choice(body)
    if choice is None:
        return "Invalid value for 'tool_choice': expected auto, none, required or a function to call."
    if choice not in ("auto", "none") and not has_read_tool(body):
        return f"tool_choice {choice!r}: the request's tools do not offer it (the scripted model calls only read)."
    if choice not in ("auto", "none", "required", "read"):
        return f"tool_choice names {choice!r}: the scripted model calls only read."
    for field in LIMIT_FIELDS:
        if field in body and output_limit({field: body[field]}) is None:
            return f"Invalid value for '{field}': expected a whole number of at least 1."
    return ""


def obey(answer: Answer, body: dict[str, Any]) -> Answer:
    """``answer`` as the request's ``tool_choice`` and output limit allow (``request_problem`` checked first)."""
    if answer["fixture"] is not None:
        return answer  # a scenario says what its fixture says
    messages = body.get("messages")
    messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    choice = tool_choice(body) or "auto"
    if choice == "none" and answer["tool_call"] is not None:
        answer = text_answer(NONE_TEXT.format(path=requested_file(messages)))
    elif choice not in ("auto", "none") and answer["tool_call"] is None:
        path = requested_file(messages)
        answer = read_call(FORCED_TEXT.format(choice=choice, path=path), path, new_call_id(messages))
    limit = output_limit(body)
    return answer if limit is None else cut_to_limit(answer, limit)


def cut_to_limit(answer: Answer, limit: int) -> Answer:
    """What fits in ``limit`` tokens: the text, then the call's name and as much of its arguments as fit.

    >>> call = {"id": "c", "name": "read", "arguments": '{"path": "a.md"}'}
    >>> cut = cut_to_limit({**text_answer("读一下"), "tool_call": call}, 3)
    >>> cut["text"], cut["tool_call"]["arguments"], cut["cut"]
    ('读一下', '{"pat', True)
    """
    budget = limit * CHARS_PER_TOKEN
    text = answer["text"][:budget]
    call = answer["tool_call"]
    room = budget - len(text)
    kept: PlannedCall | None = None
    if call is not None and room > len(call["name"]):
        kept = {**call, "arguments": call["arguments"][: room - len(call["name"])]}
    cut = text != answer["text"] or kept != call
    return {**answer, "text": text, "tool_call": kept, "cut": cut}
