"""What the checks (and the project's other tests) share: fixture bytes, byte splits, streamed replies.

Sections: the fixtures (``fixture_bytes`` reads ``fixtures/<name>.sse`` through the one function that
knows where they are, ``ink_py.scripted.scenarios.fixture_path``); the dialects (which one reads a
folder, what each raises when its stream ends early); streamed replies and a scripted provider that
hands them to the real ``assemble_stream``; the linear-time verdict (a ratio against the reference in
the same run, said in the student's language); the expected messages of the tables.

    >>> split_at(b"abcdef", [2, 4]), sse({"a": 1})
    ([b'ab', b'cd', b'ef'], b'data: {"a": 1}\\n\\n')
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

import pytest

from ...scripted.scenarios import fixture_names, fixture_path
from ..language import course_language

# ── the fixtures ──────────────────────────────────────────────────────────────────────


def fixture_bytes(name: str) -> bytes:
    """Raw bytes of ``fixtures/<name>.sse``, e.g. ``fixture_bytes("article/readme")``."""
    return fixture_path(f"{name}.sse").read_bytes()


def all_fixture_names() -> list[str]:
    """Every fixture, as ``fixture_bytes`` takes it: ``"article/readme"``, ``"servers/…"``, …"""
    return [name.removesuffix(".sse") for name in fixture_names()]


# ── the dialects ──────────────────────────────────────────────────────────────────────

# Which dialect's assemble_stream reads the fixtures of each folder.
DIALECT_OF_FOLDER = {
    "article": "openai_completions",
    "servers": "openai_completions",
    "anthropic": "anthropic_messages",
    "responses": "openai_responses",
}

# Where each dialect's copy of the article's scenarios lives (fixtures/<folder>/readme.sse, …).
ARTICLE_FOLDER = {"openai_completions": "article", "anthropic_messages": "anthropic", "openai_responses": "responses"}
# What each dialect raises when a stream ends without its end event: Chat Completions in Ink's words
# (the article's §4.1), the others after it.
NO_END_MESSAGE = {
    "openai_completions": "OpenAI stream ended without finish_reason — response may be truncated",
    "anthropic_messages": "stream ended without message_stop — response may be truncated",
    "openai_responses": "stream ended without response.completed — response may be truncated",
}

# Each dialect's provider class, in its module (``ink.<dialect>.<class>``).
PROVIDER_CLASSES = {
    "openai_completions": "OpenAICompletionsProvider",
    "anthropic_messages": "AnthropicMessagesProvider",
    "openai_responses": "OpenAIResponsesProvider",
}


def in_each_dialect(exercise: Any = None) -> list[Any]:
    """The three dialects as pytest params; an exercise's mark (``pytest.mark.exN``) only on Chat
    Completions, the article's own, so that ``pytest -m exN`` selects what the exercise wrote."""
    marks = [exercise] if exercise is not None else []
    return [pytest.param(dialect, marks=marks if dialect == "openai_completions" else []) for dialect in ARTICLE_FOLDER]


def provider_in(ink: Any, dialect: str, base_url: str, api_key: str | None = None) -> Any:
    """``dialect``'s HttpProvider (of the implementation under test) for ``base_url``."""
    return getattr(getattr(ink, dialect), PROVIDER_CLASSES[dialect])(base_url, api_key)


def dialect_of(name: str) -> str:
    """The module (``ink.<dialect>``) that assembles fixture ``name``, e.g. ``"anthropic/readme"``."""
    return DIALECT_OF_FOLDER[name.split("/")[0]]


def run_assembly(
    ink: Any, reads: list[bytes], signal: Any = None, dialect: str = "openai_completions"
) -> tuple[list[dict[str, Any]], str | None]:
    """All events ``dialect``'s assemble_stream yields for ``reads``, and the error it ended with (or None)."""
    events: list[dict[str, Any]] = []
    try:
        for event in getattr(ink, dialect).assemble_stream(iter(reads), signal):
            events.append(event)
    except ink.shared.ProviderError as err:
        return events, str(err)
    return events, None


# ── streamed replies ──────────────────────────────────────────────────────────────────


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given byte offsets: the reads a network might deliver."""
    points = [0, *sorted(set(c for c in cuts if 0 < c < len(data))), len(data)]
    return [data[a:b] for a, b in pairwise(points)]


def arrivals(reads: list[bytes], parse: Callable[[Iterator[bytes]], Iterator[Any]]) -> list[int]:
    """For each item ``parse`` yields from ``reads``: how many reads it had taken by then."""
    taken = 0

    def network() -> Iterator[bytes]:
        nonlocal taken
        for read in reads:
            taken += 1
            yield read

    return [taken for _ in parse(network())]


def sse(chunk: dict[str, Any]) -> bytes:
    """One ``data:`` frame carrying ``chunk`` as JSON."""
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"


def text_reply(text: str, finish: str = "stop") -> bytes:
    """A whole streamed reply that is just ``text``."""
    return sse({"choices": [{"index": 0, "delta": {"content": text}}]}) + sse(
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    )


def tool_reply(*calls: tuple[str, str, str], text: str = "", finish: str = "tool_calls") -> bytes:
    """A streamed reply making tool calls, each ``(id, name, raw JSON arguments)``."""
    body = sse({"choices": [{"index": 0, "delta": {"content": text}}]}) if text else b""
    for index, (call_id, name, arguments) in enumerate(calls):
        tc = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        body += sse({"choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]})
    usage = {"prompt_tokens": 100, "completion_tokens": 10}
    return body + sse({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage})


Body = bytes | list[bytes] | Callable[[dict[str, Any]], Iterator[bytes]]


class ScriptedProvider:
    """A provider that answers each turn with the next prepared body, assembled by the real
    ``assemble_stream`` — the loop under test sees exactly what a server would produce."""

    def __init__(self, ink: Any, *bodies: Body) -> None:
        self.ink = ink
        self.bodies = list(bodies)
        self.requests: list[dict[str, Any]] = []

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        self.requests.append({**request, "messages": list(request["messages"])})
        if not self.bodies:
            raise AssertionError("the model was asked for more turns than the test scripted")
        body = self.bodies.pop(0)
        reads = body(request) if callable(body) else [body] if isinstance(body, bytes) else body
        yield from self.ink.openai_completions.assemble_stream(reads, request.get("signal"))


# ── linear time, checked as a ratio against the reference in the same run ─────────────

RATIO_LIMIT = 8.0  # the student's time on the large input may be this many times the reference's …
GROWTH_LIMIT = 3.0  # … or grow this many times more than the input from small to large (linear: ×1)


# This thread's CPU time: waiting for a core on a busy machine is not counted (the wall clock's ratio
# failed at load 55). Windows counts a thread's time in 15.6 ms ticks, too coarse here: the wall clock.
CLOCK = time.perf_counter if sys.platform == "win32" else time.thread_time


def best_time(run: Callable[[Any], object], data: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = CLOCK()
        run(data)
        best = min(best, CLOCK() - started)
    return best


def growth_verdict(
    student: Callable[[Any], object],
    reference: Callable[[Any], object],
    small: Any,
    large: Any,
    factor: int,
    sizes: tuple[str, str],
    fed: tuple[str, str],
) -> str | None:
    """None if ``student`` takes linear time like ``reference``, from ``small`` to ``large`` (``factor`` × larger,
    ``sizes`` says them: "64 KiB", "512 KiB"); else "fed: / expected: / got:" in the student's language,
    ``fed`` the input in words (English, Chinese).

    Quadratic code fails both measures by far (its time grows ×60 where the input grows ×8;
    ×100 or more the reference's time at the large size), so a linear solution that is a few
    times slower, or one timing disturbed by a busy machine, never fails: a verdict needs
    both measures over their limit, confirmed by the best of three interleaved runs (and a green
    one the best of two: a busy machine slowing the small run once must not hide quadratic code). The
    growth is measured against the input's, not the reference's: a busy machine (another
    process filling the memory bus) can stretch the reference's large run ×5 but not the
    size of the input. What "linear" means is said in those terms — the reference's own
    growth is reported as measured, never claimed to be ×factor.
    """
    ref_small = ref_large = mine_small = mine_large = float("inf")
    ratio = growth = 0.0
    for attempt in range(3):  # interleaved, so that a busy machine slows both alike
        ref_small = min(ref_small, best_time(reference, small, 3))
        mine_small = min(mine_small, best_time(student, small, 1))
        ref_large = min(ref_large, best_time(reference, large, 3))
        mine_large = min(mine_large, best_time(student, large, 1))
        ratio = mine_large / max(ref_large, 1e-6)
        growth = mine_large / max(mine_small, 1e-6) / factor
        if (ratio <= RATIO_LIMIT or growth <= GROWTH_LIMIT) and attempt >= 1:
            return None  # within a limit on the best of two runs (one run's noise may hide quadratic code)
        if attempt == 0 and ratio > 4 * RATIO_LIMIT and growth > GROWTH_LIMIT:
            break  # far beyond both limits: no need to confirm
    (low, high), limit = sizes, GROWTH_LIMIT * factor
    theirs = f"×{ref_large / ref_small:.0f} ({ref_small * 1000:.1f} ms → {ref_large * 1000:.1f} ms)"
    mine = f"×{mine_large / mine_small:.0f} ({mine_small * 1000:.1f} ms → {mine_large * 1000:.0f} ms)"
    if course_language() == "zh":  # check's words are the student's (ink_py/course/language.py)
        return (
            f"fed: {fed[1]}\n"
            f"expected: 线性时间 —— 这个检查这样量:输入从 {low} 到 {high}(×{factor}),耗时最多增长 ×{limit:.0f}"
            f"({GROWTH_LIMIT:g} × {factor}),或者不超过参考实现的 {RATIO_LIMIT:g} 倍;参考实现这次增长了 {theirs}\n"
            f"got: 你的代码增长了 {mine},在 {high} 上是参考实现的 {ratio:.0f} 倍 —— 比输入增长得快得多:多半是每来一段,"
            f"就把已经收到的全部内容重新处理一遍(平方时间:输入 ×{factor},耗时约 ×{factor * factor})"
        )
    return (
        f"fed: {fed[0]}\n"
        f"expected: linear time — as this check measures it: from {low} to {high} (×{factor} the input) the time "
        f"grows at most ×{limit:.0f} ({GROWTH_LIMIT:g} × {factor}), or stays within {RATIO_LIMIT:g} times the "
        f"reference's; the reference's grew {theirs} in this run\n"
        f"got: your code's grew {mine}, {ratio:.0f} times the reference's at {high} — far faster than the input: "
        f"it probably redoes work on everything received so far each time a piece arrives (quadratic time: "
        f"×{factor} the input, about ×{factor * factor} the time)"
    )


# ── the expected messages of the (fixture, expected) tables, in the article's shapes ──


def usage(inp: int = 0, out: int = 0, cached: int = 0) -> dict[str, int]:
    return {"inputTokens": inp, "outputTokens": out, "cacheReadTokens": cached}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def read_call(id: str, path: str) -> dict[str, Any]:
    return {"type": "toolCall", "id": id, "name": "read", "arguments": {"path": path}}


def message(blocks: list[dict[str, Any]], stop: str | None, use: dict[str, int] | None = None) -> dict[str, Any]:
    return {"role": "assistant", "blocks": blocks, "usage": use or usage(), "stopReason": stop}


def parse_error(raw: str) -> dict[str, Any]:
    return {"_parseError": "tool arguments were not valid JSON", "raw": raw}
