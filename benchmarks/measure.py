"""The measurements: correctness first, then time, memory, and when each event is delivered.

``check`` runs every contender on a stream and compares its answer with the stream's known
text and tool arguments (parsers: every payload). ``time_shape`` times every contender on
one input shape at growing sizes:

- runs are interleaved — each round runs every contender once, in a rotated order — and
  the figure kept is the median over rounds: a slow moment of a noisy machine hits one
  run of everybody, not every run of one contender;
- each contender's ratio to the lower bound is taken within a round, then the median;
- growth per doubling is ``2 ** (log2(t2 / t1) / log2(n2 / n1))`` between two sizes:
  about 2.0 for a linear algorithm, 4.0 for a quadratic one;
- before a size, each contender's time there is predicted from its last two sizes; if one
  run would take longer than the budget, that size and all larger ones are skipped.

``read_lags`` checks that an event is yielded during the read that completes its frame:
for every event, how many reads later than that it came out (0 is the target).
"""

from __future__ import annotations

import bisect
import gc
import json
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import streams
from contenders import Contender, drain


class WrongAnswer(AssertionError):
    """A contender produced a different text, different tool arguments, or different events."""


# ── correctness ─────────────────────────────────────────────────────────────────────────


def expected_reply(stream: streams.Stream) -> tuple[str, list[Any]]:
    return stream["text"], [json.loads(raw) for _, _, raw in stream["tools"]]


def normalized(reply: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    """Raw argument strings parsed, so ``'{"a": 1}'`` from a peer equals ink_py's ``{"a": 1}``."""
    text, arguments = reply
    return text, [json.loads(a) if isinstance(a, str) else a for a in arguments]


def check(contender: Contender, stream: streams.Stream) -> None:
    """Raise WrongAnswer unless ``contender`` gets ``stream`` exactly right."""
    reads = streams.reads(stream)
    if contender["kind"] == "parser":
        got, want = contender["payloads"](reads), streams.payloads(stream)
        if got != want:
            first = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want))
            )
            raise WrongAnswer(
                f"{contender['label']}: {len(got)} events instead of {len(want)}, first difference at #{first}"
            )
    else:
        check_reply(contender, stream, contender["assemble"](reads))


def check_reply(contender: Contender, stream: streams.Stream, reply: tuple[str, list[Any]]) -> None:
    text, arguments = normalized(reply)
    want_text, want_arguments = expected_reply(stream)
    if text != want_text:
        raise WrongAnswer(f"{contender['label']}: text differs ({len(text)} characters instead of {len(want_text)})")
    if arguments != want_arguments:
        raise WrongAnswer(f"{contender['label']}: tool arguments differ on the {stream['shape']} stream")


# ── time ────────────────────────────────────────────────────────────────────────────────


def run_once(contender: Contender, reads: list[bytes]) -> tuple[float, Any]:
    """Seconds for one full run (garbage collected first; the collector stays on), and its answer."""
    gc.collect()
    if contender["kind"] == "parser":
        start = time.perf_counter()
        drain(contender["events"](reads))
        return time.perf_counter() - start, None
    start = time.perf_counter()
    reply = contender["assemble"](reads)
    return time.perf_counter() - start, reply


def growth(t1: float, t2: float, n1: int, n2: int) -> float:
    """Time ratio for a doubling of the input, from two sizes that are about a doubling apart.

    >>> growth(1.0, 4.0, 100, 200), round(growth(1.0, 2.0, 100, 200), 6)
    (4.0, 2.0)
    """
    return 2 ** (math.log2(t2 / t1) / math.log2(n2 / n1))


def predict(points: list[tuple[int, float]], size: int) -> float:
    """Expected seconds at ``size``, from (bytes, seconds) measured so far: never better than linear."""
    n1, t1 = points[-1]
    rate = growth(points[-2][1], t1, points[-2][0], n1) if len(points) > 1 else 2.0
    return t1 * max(rate, 2.0) ** math.log2(size / n1)


def time_shape(
    contenders: list[Contender],
    shape: str,
    sizes: list[int],
    repeats: int,
    budget: float,
    say: Callable[[str], None] = print,
    advance: Callable[[str], None] = lambda note: None,
) -> list[dict[str, Any]]:
    """One row per (contender, size): median seconds, ratio to the lower bound, growth; or skipped.

    ``say`` gets a line per size; ``advance`` is called after each run, with the size."""
    rows: list[dict[str, Any]] = []
    points: dict[str, list[tuple[int, float]]] = {c["key"]: [] for c in contenders}  # (bytes, median s)
    skipped: dict[str, str] = {}
    lower = contenders[0]["key"]  # the lower bound comes first
    for size in sizes:
        stream = streams.make_stream(shape, size)
        reads = streams.reads(stream)
        n_bytes, n_events = len(stream["body"]), len(stream["frame_ends"])
        where = {"shape": shape, "size": size, "bytes": n_bytes, "events": n_events}
        active = []
        for c in contenders:
            key = c["key"]
            if key != lower and key not in skipped and points[key] and predict(points[key], n_bytes) > budget:
                skipped[key] = f"skipped: >{budget:g}s predicted"
                say(f"  {c['label']}: {streams.size_label(size)} and larger {skipped[key]}")
            if key in skipped:
                rows.append({**where, "key": key, "label": c["label"], "status": skipped[key]})
            else:
                active.append(c)

        times: dict[str, list[float]] = {c["key"]: [] for c in active}  # times[key][i]: round i
        for round_ in range(repeats):
            shift = round_ % len(active)
            for c in active[shift:] + active[:shift]:  # a rotated order each round
                if sum(times[c["key"]]) > 3 * budget:
                    continue  # the prediction was wrong: the runs so far will do
                seconds, reply = run_once(c, reads)
                if reply is not None:
                    check_reply(c, stream, reply)  # every timed answer is checked too
                times[c["key"]].append(seconds)
                advance(streams.size_label(size))

        for c in active:
            ts = times[c["key"]]
            median = statistics.median(ts)
            previous = points[c["key"]][-1] if points[c["key"]] else None
            points[c["key"]].append((n_bytes, median))
            rows.append(
                {
                    **where,
                    "key": c["key"],
                    "label": c["label"],
                    "status": "ok",
                    "repeats": len(ts),
                    "median_s": median,
                    "min_s": min(ts),
                    "mib_per_s": n_bytes / streams.MiB / median,
                    "us_per_event": median / n_events * 1e6,
                    "ratio": statistics.median(  # within each round; a contender stopped early has fewer
                        t / lower_t for t, lower_t in zip(ts, times[lower], strict=False)
                    ),
                    "growth": growth(previous[1], median, previous[0], n_bytes) if previous else None,
                }
            )
        summary = ", ".join(f"{key} {statistics.median(ts) * 1e3:.0f} ms" for key, ts in times.items())
        say(f"  {streams.size_label(size):>8}: {summary}")
    return rows


# ── memory ──────────────────────────────────────────────────────────────────────────────


def peak_memory(contender: Contender, stream: streams.Stream) -> int:
    """Bytes: the most Python had allocated at once while ``contender`` read ``stream``.

    ``tracemalloc`` starts after the reads exist, so the input is not counted; one
    warm-up run on a small stream first, so that imports and caches are not counted either.
    """
    small = streams.make_stream(stream["shape"], 4096)
    run_once(contender, streams.reads(small))
    reads = streams.reads(stream)
    gc.collect()
    tracemalloc.start()
    try:
        if contender["kind"] == "parser":
            drain(contender["events"](reads))
        else:
            contender["assemble"](reads)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def largest_frame(stream: streams.Stream) -> int:
    starts = [0, *stream["frame_ends"][:-1]]
    return max(end - start for start, end in zip(starts, stream["frame_ends"], strict=True))


# ── is each event delivered in the read that completes it? ──────────────────────────────


def read_lags(
    run: Callable[[Iterable[bytes]], Iterator[Any]], stream: streams.Stream, per_frame: list[int]
) -> list[int]:
    """For each event ``run`` yields: reads consumed beyond the one that completed its frame.

    ``per_frame[k]`` is how many events frame ``k`` produces. 0 everywhere means every event
    came out before the next read was even asked for.

    >>> from ink_py.provider.shared import parse_sse
    >>> s = streams.make_stream("chunks", 3000)
    >>> set(read_lags(parse_sse, s, [1] * len(s["frame_ends"])))
    {0}
    """
    consumed = 0

    def counted() -> Iterator[bytes]:
        nonlocal consumed
        for read in streams.reads(stream):
            consumed += 1
            yield read

    completing = []  # for each expected event: the index of the read holding its frame's last byte
    for end, n in zip(stream["frame_ends"], per_frame, strict=True):
        completing += [bisect.bisect_left(stream["read_ends"], end)] * n
    lags: list[int] = []
    for count, _ in enumerate(run(counted()), 1):
        if count > len(completing):
            raise WrongAnswer(f"more events than the {len(completing)} expected")
        lags.append(consumed - 1 - completing[count - 1])
    if len(lags) != len(completing):
        raise WrongAnswer(f"{len(lags)} events instead of {len(completing)}")
    return lags
