"""How long the article's left fold ``full = concat(full, chunk)`` takes as the chunks double.

The second article (§四) presents concat as magic that removes all risk. It has a cost: a
fold that builds each ``full`` by copying what it has so far copies 1 + 2 + … + N pieces
for N chunks — quadratic. This script times the fold for N = 1k, 2k, 4k … chunks of two
streams and prints, per doubling, the growth ratio t(N) / t(N/2): about 2 is linear, about
4 is quadratic.

    text        N chunks of content ("tok0 ", "tok1 ", …)
    tool args   one tool call whose argument string arrives in N fragments of 8 characters

Folds timed (each ends by reading the result once: the text, or the parsed call):

    ink_py concat        ink_py.second_article.chunks.concat — Pieces, linear (see its docstring)
    naive dict fold      {"content": a["content"] + b["content"], …} — copies the strings
    langchain a + b      AIMessageChunk: ``acc = acc + chunk``, the article's loop
    langchain sum once   ``chunks[0] + chunks[1:]`` — LangChain's own many-at-once merge

LangChain (langchain-core) is optional: without it its folds are skipped, with a line
saying so. Times are CPU seconds, the best of a few runs. A fold stops when its next run
(2–4× the last) could take longer than --budget seconds.

    python benchmarks/concat_growth.py                  # 1k … 32k chunks, about 20 s
    python benchmarks/concat_growth.py --max-chunks 8192 --budget 1
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # time this checkout's ink_py

from ink_py.second_article import chunks as ink_chunks  # noqa: E402

FRAGMENT = "abcdefgh"  # one tool-argument fragment: 8 characters


# ── the two streams, as wire chunks (what a server sends) ───────────────────────────────


def text_stream(n: int) -> list[dict[str, Any]]:
    return [{"choices": [{"delta": {"content": f"tok{i} "}}]} for i in range(n)]


def tool_stream(n: int) -> list[dict[str, Any]]:
    opening = {"index": 0, "id": "call_1", "function": {"name": "write", "arguments": '{"content": "'}}
    wire = [{"choices": [{"delta": {"tool_calls": [opening]}}]}]
    for _ in range(n - 2):
        wire.append({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": FRAGMENT}}]}}]})
    wire.append({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}}]})
    return wire


def wire_fields(wire: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(content, tool pieces in the article's shape) of one wire chunk."""
    delta = wire["choices"][0]["delta"]
    pieces = [
        {
            "index": tc["index"],
            "id": tc.get("id"),
            "name": tc["function"].get("name"),
            "args": tc["function"]["arguments"],
        }
        for tc in delta.get("tool_calls", [])
    ]
    return delta.get("content") or "", pieces


# ── the folds ───────────────────────────────────────────────────────────────────────────


def ink_prepare(wire: list[dict[str, Any]]) -> list[Any]:
    return [ink_chunks.message_chunk(w) for w in wire]


def ink_fold(chunks: list[Any]) -> tuple[str, list[Any]]:
    full = None
    for chunk in chunks:
        full = chunk if full is None else ink_chunks.concat(full, chunk)
    return str(full["content"]), [c["args"] for c in ink_chunks.tool_calls(full)]


def naive_prepare(wire: list[dict[str, Any]]) -> list[Any]:
    return [dict(zip(("content", "tool_call_chunks"), wire_fields(w), strict=True)) for w in wire]


def naive_concat(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The obvious pure concat on plain strings: every merge copies the strings so far."""
    calls = list(a["tool_call_chunks"])
    for piece in b["tool_call_chunks"]:
        for i, call in enumerate(calls):
            if call["index"] == piece["index"]:
                calls[i] = {**call, "args": call["args"] + piece["args"]}  # copies the whole argument
                break
        else:
            calls.append(piece)
    return {"content": a["content"] + b["content"], "tool_call_chunks": calls}  # copies the whole text


def naive_fold(chunks: list[Any]) -> tuple[str, list[Any]]:
    full = None
    for chunk in chunks:
        full = chunk if full is None else naive_concat(full, chunk)
    return full["content"], [json.loads(c["args"]) for c in full["tool_call_chunks"]]


def langchain_prepare(wire: list[dict[str, Any]]) -> list[Any]:
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    result = []
    for w in wire:
        content, pieces = wire_fields(w)
        result.append(AIMessageChunk(content=content, tool_call_chunks=[tool_call_chunk(**p) for p in pieces]))
    return result


def langchain_fold(chunks: list[Any]) -> tuple[str, list[Any]]:
    full = None
    for chunk in chunks:
        full = chunk if full is None else full + chunk  # fullAIMessage.concat(chunk)
    return full.content, [c["args"] for c in full.tool_calls]


def langchain_sum_once(chunks: list[Any]) -> tuple[str, list[Any]]:
    full = chunks[0] + chunks[1:]
    return full.content, [c["args"] for c in full.tool_calls]


Fold = tuple[str, Callable[[list[Any]], list[Any]], Callable[[list[Any]], tuple[str, list[Any]]]]


def available_folds() -> tuple[list[Fold], list[str]]:
    folds: list[Fold] = [
        ("ink_py concat", ink_prepare, ink_fold),
        ("naive dict fold", naive_prepare, naive_fold),
    ]
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        return folds, ["langchain a + b", "langchain sum once"]
    folds += [
        ("langchain a + b", langchain_prepare, langchain_fold),
        ("langchain sum once", langchain_prepare, langchain_sum_once),
    ]
    return folds, []


# ── timing ──────────────────────────────────────────────────────────────────────────────


def best_time(run: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of a few runs (one if it is slow), in CPU seconds, and what the first returned.

    CPU time, not wall time: other programs on the machine then barely move the numbers.
    As ``timeit``, the garbage collector is paused while a run is timed: its full
    collections walk every live object and would blur the growth ratios.
    """
    times, result = [], None
    gc.collect()
    gc.disable()
    try:
        while len(times) < 5 and sum(times) < 0.5:
            start = time.process_time()
            outcome = run()
            times.append(time.process_time() - start)
            if result is None:
                result = outcome
    finally:
        gc.enable()
    return min(times), result


def measure(stream: Callable[[int], list[dict[str, Any]]], sizes: list[int], budget: float) -> None:
    folds, missing = available_folds()
    header = f"{'chunks':>7}" + "".join(f"  {name:>18} {'×':>4}" for name, _, _ in folds)
    print(header)
    previous: dict[str, float] = {}
    stopped: set[str] = set()
    for n in sizes:
        wire = stream(n)
        expected = naive_fold(naive_prepare(wire))  # every fold must give this
        row = f"{n:>7}"
        prepared: dict[Callable[[list[Any]], list[Any]], list[Any]] = {}  # the two LangChain folds share theirs
        for name, prepare, fold in folds:
            if name in stopped:
                row += f"  {'(over budget)':>18} {'':>4}"
                continue
            if prepare not in prepared:
                prepared[prepare] = prepare(wire)
            chunks = prepared[prepare]
            seconds, result = best_time(lambda chunks=chunks, fold=fold: fold(chunks))
            if result != expected:
                raise SystemExit(f"error: {name} assembled a different result for {n} chunks")
            ratio = f"{seconds / previous[name]:4.1f}" if name in previous else f"{'—':>4}"
            row += f"  {seconds * 1000:>15.1f} ms {ratio}"
            previous[name] = seconds
            if seconds * 4 > budget:
                stopped.add(name)  # the next run, up to 4× longer, could take more than the budget
        print(row, flush=True)
    for name in missing:
        print(f"{name}: skipped — langchain-core is not installed (pip install langchain-core)")


def positive(text: str) -> int:
    value = int(text)
    if value < 2:
        raise ValueError(text)
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.error = lambda message: sys.exit(f"error: {message}")  # type: ignore[method-assign]
    parser.add_argument("--min-chunks", type=positive, default=1024, help="smallest N (default 1024)")
    parser.add_argument("--max-chunks", type=positive, default=32768, help="largest N (default 32768)")
    parser.add_argument("--budget", type=float, default=2.0, help="longest run allowed, in seconds (default 2)")
    args = parser.parse_args(argv)
    if args.min_chunks > args.max_chunks:
        parser.error(f"--min-chunks {args.min_chunks} is larger than --max-chunks {args.max_chunks}")
    if not args.budget > 0:
        parser.error("--budget must be a positive number of seconds")
    sizes = []
    n = args.min_chunks
    while n <= args.max_chunks:
        sizes.append(n)
        n *= 2
    print("Left fold of N chunks; × is the growth per doubling of N: about 2 is linear, about 4 quadratic.\n")
    streams = [("text: N chunks of content", text_stream), ("tool args: one argument in N fragments", tool_stream)]
    for title, stream in streams:
        print(title)
        measure(stream, sizes, args.budget)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
