"""Helpers the tests share: fixture bytes, byte splits, streamed replies, a scripted provider, Ctrl-C for children."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from ink_py.course.language import course_language

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


# What points ink-py at an endpoint: without them the built-in scripted model answers.
ENDPOINT_SETTINGS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "INK_MODEL", "INK_API")


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a child ``python -m ink_py``: no endpoint setting, no NO_COLOR, this checkout
    on PYTHONPATH, then ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (*ENDPOINT_SETTINGS, "NO_COLOR") and not k.startswith("ANTHROPIC_")
    }
    return {**env, "PYTHONPATH": str(ROOT), **extra}


@contextmanager
def ctrl_c_reaches_children() -> Iterator[None]:
    """Children started meanwhile take SIGINT at its default disposition, as a terminal's foreground job.

    For every test that sends a child Ctrl-C. pytest started from a script's background job runs with
    SIGINT ignored, and so would each child: a program started with SIGINT ignored keeps it so (POSIX's
    convention; Python, the shell's traps and ink-py follow it), and the test's Ctrl-C would do nothing.
    Meanwhile this process handles SIGINT by doing nothing — still deaf to Ctrl-C — and exec resets a
    handled signal to its default, where an ignored one stays ignored. Main thread only (signal.signal).
    """
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield  # pytest's KeyboardInterrupt handler, or the default: a child starts at the default already
        return
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def fixture_bytes(name: str) -> bytes:
    """Raw bytes of ``fixtures/<name>.sse``, e.g. ``fixture_bytes("article/readme")``."""
    return (FIXTURES / f"{name}.sse").read_bytes()


# Which dialect's assemble_stream reads the fixtures of each folder.
DIALECT_OF_FOLDER = {
    "article": "openai_completions",
    "servers": "openai_completions",
    "anthropic": "anthropic_messages",
    "responses": "openai_responses",
}


# Where each dialect's copy of the article's scenarios lives (fixtures/<folder>/readme.sse, …).
ARTICLE_FOLDER = {"openai_completions": "article", "anthropic_messages": "anthropic", "openai_responses": "responses"}
# The event that ends a reply in each dialect: a stream without it "may be truncated".
END_EVENT = {
    "openai_completions": "finish_reason",
    "anthropic_messages": "message_stop",
    "openai_responses": "response.completed",
}
# What each dialect raises then: Chat Completions in Ink's words (the article's §4.1), the others after it.
NO_END_MESSAGE = {
    "openai_completions": "OpenAI stream ended without finish_reason — response may be truncated",
    "anthropic_messages": "stream ended without message_stop — response may be truncated",
    "openai_responses": "stream ended without response.completed — response may be truncated",
}


def in_each_dialect(exercise: Any = None) -> list[Any]:
    """The three dialects as pytest params; an exercise's mark (``pytest.mark.exN``) only on Chat
    Completions, the article's own, so that ``pytest -m exN`` selects what the exercise wrote."""
    marks = [exercise] if exercise is not None else []
    return [pytest.param(dialect, marks=marks if dialect == "openai_completions" else []) for dialect in ARTICLE_FOLDER]


# Each dialect's provider class, in its module (``ink.<dialect>.<class>``).
PROVIDER_CLASSES = {
    "openai_completions": "OpenAICompletionsProvider",
    "anthropic_messages": "AnthropicMessagesProvider",
    "openai_responses": "OpenAIResponsesProvider",
}


def provider_in(ink: Any, dialect: str, base_url: str, api_key: str | None = None) -> Any:
    """``dialect``'s HttpProvider (of the implementation under test) for ``base_url``."""
    return getattr(getattr(ink, dialect), PROVIDER_CLASSES[dialect])(base_url, api_key)


def dialect_of(name: str) -> str:
    """The module (``ink.<dialect>``) that assembles fixture ``name``, e.g. ``"anthropic/readme"``."""
    return DIALECT_OF_FOLDER[name.split("/")[0]]


def all_fixture_names() -> list[str]:
    return sorted(str(p.relative_to(FIXTURES).with_suffix("")) for p in FIXTURES.glob("*/*.sse"))


def run_assembly(
    ink: Any, reads: list[bytes], signal: Any = None, dialect: str = "openai_completions"
) -> tuple[list[dict], str | None]:
    """All events ``dialect``'s assemble_stream yields for ``reads``, and the error it ended with (or None)."""
    events: list[dict] = []
    try:
        for event in getattr(ink, dialect).assemble_stream(iter(reads), signal):
            events.append(event)
    except ink.shared.ProviderError as err:
        return events, str(err)
    return events, None


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


def sse(chunk: dict) -> bytes:
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


class ScriptedProvider:
    """A provider that answers each turn with the next prepared body, assembled by the real
    ``assemble_stream`` — the loop under test sees exactly what a server would produce."""

    def __init__(self, ink: Any, *bodies: bytes | list[bytes] | Callable[[dict], Iterator[bytes]]) -> None:
        self.ink = ink
        self.bodies = list(bodies)
        self.requests: list[dict] = []

    def stream(self, request: dict) -> Iterator[dict]:
        self.requests.append({**request, "messages": list(request["messages"])})
        if not self.bodies:
            raise AssertionError("the model was asked for more turns than the test scripted")
        body = self.bodies.pop(0)
        reads = body(request) if callable(body) else [body] if isinstance(body, bytes) else body
        yield from self.ink.openai_completions.assemble_stream(reads, request.get("signal"))


# ── linear time, checked as a ratio against the reference in the same run ─────────────

RATIO_LIMIT = 8.0  # the student's time on the large input may be this many times the reference's …
GROWTH_LIMIT = 3.0  # … or grow this many times more than the input from small to large (linear: ×1)


def best_time(run: Callable[[Any], object], data: Any, repeats: int) -> float:
    import time

    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run(data)
        best = min(best, time.perf_counter() - started)
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


# The expected messages of the (fixture, expected) tables, in the article's shapes.


def usage(inp=0, out=0, cached=0):
    return {"inputTokens": inp, "outputTokens": out, "cacheReadTokens": cached}


def text(t):
    return {"type": "text", "text": t}


def read_call(id, path):
    return {"type": "toolCall", "id": id, "name": "read", "arguments": {"path": path}}


def message(blocks, stop, use=None):
    return {"role": "assistant", "blocks": blocks, "usage": use or usage(), "stopReason": stop}


def parse_error(raw):
    return {"_parseError": "tool arguments were not valid JSON", "raw": raw}
