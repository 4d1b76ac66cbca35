"""Benchmarks: what the article's algorithm costs, what ink_py's costs, where the peers stand.

    pip install -e '.[bench]'          # openai, langchain-core, httpx-sse, matplotlib (all optional)
    python benchmarks/run.py           # a few minutes; writes benchmarks/results/
    python benchmarks/run.py --quick   # seconds; writes to a temporary folder unless --out is given

Everything reads the same generated streams (``streams.py``) in the same reads:

    chunks     OpenAI chat.completion.chunk frames, 1–16 MiB, in 1 KiB reads
    per-event  the same frames one SSE event per read, as a real server flushes them
    huge-args  one frame whose tool arguments are megabytes, ¼ of those sizes, in 64-byte reads
    bytewise   the chunks stream at 1/64 of those sizes, one byte per read

Contenders (``contenders.py``): the lower bound (the fastest pure-Python framing + json.loads
we could write), ink_py's ``parse_sse`` and ``assemble_stream``, the article's TypeScript
transcribed literally (``article_transcription.py``), and — when installed — openai-python,
httpx-sse and LangChain. Each must give the right answer before it is timed. Then the same
reply in each wire dialect (``dialects.py``): each ``assemble_stream`` against its body's lower bound.

It prints, and writes to ``--out``:

    results.md          every table below, with the machine and the date
    throughput.csv      one row per (shape, size, contender)
    latency.csv         delivery latency over real HTTP (``latency.py``)
    memory.csv          peak memory on the largest streams
    time_vs_size.png    time vs size, log-log, one line per contender (needs matplotlib)

Where it is goes to stderr (``progress.py``: in place on a terminal, plain lines in a log);
Ctrl-C stops it with exit 130, and the results folder keeps its last complete set: every
file is written whole at the end (a temporary file renamed), all of them or none.

Machines are noisy: runs are interleaved, medians kept, and each contender is shown as a
ratio to the lower bound measured in the same rounds. Read ratios and growth, not absolutes.
Quadratic contenders are stopped before they take forever: a size whose predicted time for
one run exceeds ``--budget`` seconds is "skipped: >Ns predicted", and so are larger ones.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # ink_py from this checkout, installed or not

import contenders as contenders_module  # noqa: E402
import dialects  # noqa: E402
import latency  # noqa: E402
import measure  # noqa: E402
import report  # noqa: E402
import streams  # noqa: E402
from contenders import Contender  # noqa: E402
from progress import Progress  # noqa: E402

from ink_py.atomic import write_bytes_atomically, write_text_atomically  # noqa: E402
from ink_py.core.abort import sigint_blocked  # noqa: E402
from ink_py.provider.openai_completions import assemble_stream  # noqa: E402
from ink_py.provider.shared import parse_sse  # noqa: E402

DEFAULT_SIZES = [1, 2, 4, 8, 16]  # MiB, for the chunks stream
QUICK_SIZES = [0.25, 0.5, 1]
REFERENCE_MIB = 8  # the size the targets talk about
TARGET_RATIO = 1.3  # assemble_stream ≤ 1.3 × the lower bound at the reference size (issue 18)
TARGET_DIALECT_RATIO = 1.5  # the Messages and Responses readers ≤ 1.5 × their body's lower bound
TARGET_GROWTH = 2.1  # per doubling, on every shape


class Parser(argparse.ArgumentParser):
    """argparse whose mistakes are one ``error:`` line and exit code 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"error: {message}\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(description="Benchmark ink_py's SSE parsing and assembly against the article and the peers.")
    parser.add_argument("--quick", action="store_true", help="a small run (seconds), for CI or a first look")
    parser.add_argument("--out", type=Path, help="results folder (default benchmarks/results; --quick: a temp folder)")
    parser.add_argument("--sizes", help="chunks-stream sizes in MiB, comma-separated (default 1,2,4,8,16)")
    parser.add_argument("--repeats", type=int, help="interleaved rounds per size (default 5; --quick 3)")
    parser.add_argument("--budget", type=float, help="most seconds one run may be predicted to take (default 2)")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    else:
        try:
            args.sizes = sorted({float(size) for size in args.sizes.split(",")})
        except ValueError:
            parser.error(f"--sizes takes MiB values separated by commas, like 1,2,4 (got {args.sizes!r})")
        if not all(0 < size <= 1024 for size in args.sizes):  # also refuses nan and inf
            parser.error("--sizes must be between 0 and 1024 MiB")
    if args.repeats is None:
        args.repeats = 3 if args.quick else 5
    if args.budget is None:
        args.budget = 0.25 if args.quick else 2.0
    if args.repeats < 1 or not args.budget > 0:
        parser.error("--repeats and --budget must be positive")
    if args.out is None:
        args.out = Path(tempfile.gettempdir()) / "ink_py-bench-quick" if args.quick else HERE / "results"
    return args


def machine() -> dict[str, str]:
    """What the numbers were measured on: CPU, Python, the peers' versions, the date."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = []
    for module in ("openai", "httpx_sse", "langchain_core", "requests"):
        try:
            versions.append(f"{module} {__import__(module).__version__}")
        except (ImportError, AttributeError):
            pass
    return {
        "cpu": f"{cpu}, {os.cpu_count()} CPUs (nproc)",
        "python": f"Python {platform.python_version()} ({platform.python_implementation()}) on {platform.system()}",
        "peers": ", ".join(versions),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def sizes_for(shape: str, mib_sizes: list[float]) -> list[int]:
    """The byte sizes of ``shape`` for the chunks sizes given in MiB (at least 1 KiB, no repeats)."""
    return sorted({max(1024, int(mib * streams.SIZE_SCALE[shape] * streams.MiB)) for mib in mib_sizes})


# ── the steps ───────────────────────────────────────────────────────────────────────────


def check_everyone(everyone: list[Contender], mib_sizes: list[float], advance: Callable[[str], None]) -> None:
    """Correctness first: every contender on every shape (smallest size); raises WrongAnswer."""
    for shape in streams.SHAPES:
        stream = streams.make_stream(shape, sizes_for(shape, mib_sizes)[0])
        for contender in everyone:
            measure.check(contender, stream)
        advance(shape)


def delivery(mib_sizes: list[float], advance: Callable[[str], None]) -> list[list[str]]:
    """For ink_py on each shape: events, how many came out in the read completing them, worst lag."""
    rows = []
    for shape in streams.SHAPES:
        stream = streams.make_stream(shape, sizes_for(shape, mib_sizes)[0])
        for name, run, per_frame in (
            ("ink_py parse_sse", parse_sse, [1] * len(stream["frame_ends"])),  # one SSE event per frame
            ("ink_py assemble_stream", assemble_stream, stream["events_per_frame"]),
        ):
            lags = measure.read_lags(run, stream, per_frame)
            rows.append([name, shape, str(len(lags)), str(lags.count(0)), str(max(lags))])
            advance(shape)
    return rows


def peak_memories(
    everyone: list[Contender], rows: list[dict[str, Any]], budget: float, advance: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Peak memory on the largest stream each contender read in under budget/4 (tracemalloc slows it)."""
    found = []
    for shape in ("chunks", "huge-args"):
        for contender in everyone:
            timed = [r for r in rows if r["key"] == contender["key"] and r["shape"] == shape and r["status"] == "ok"]
            size = max([r["size"] for r in timed if r["median_s"] <= budget / 4] or [timed[0]["size"]])
            stream = streams.make_stream(shape, size)
            found.append(
                {
                    "shape": shape,
                    "size": size,
                    "bytes": len(stream["body"]),
                    "key": contender["key"],
                    "label": contender["label"],
                    "largest_frame": measure.largest_frame(stream),
                    "peak": measure.peak_memory(contender, stream),
                }
            )
            advance(shape)
    return found


def targets(rows: list[dict[str, Any]], reference: int, on_time: bool, dialect_rows: list[list[str]]) -> list[str]:
    """The targets ink_py is held to, each met or MISSED, with the measured figure."""
    verdict = lambda ok: "met" if ok else "MISSED"
    ink = [r for r in rows if r["key"] == "ink-assemble"]
    [at_reference] = [r for r in ink if r["shape"] == "chunks" and r["size"] == reference]
    if at_reference["status"] == "ok":
        ratio = at_reference["ratio"]
        first = f"{ratio:.2f} × — {verdict(ratio <= TARGET_RATIO)}"
    else:
        first = f"not measured ({at_reference['status']}; raise --budget)"
    growths = {
        (key, shape): report.worst_growth(rows, key, shape)[0] or 0.0
        for key in ("ink-parse", "ink-assemble")
        for shape in streams.SHAPES
    }
    key, shape = max(growths, key=growths.__getitem__)
    return [
        f"- assemble_stream ≤ {TARGET_RATIO} × lower bound, {streams.size_label(reference)} chunks stream: {first}",
        f"- growth per doubling ≤ {TARGET_GROWTH} on every shape (parse_sse and assemble_stream): worst "
        f"{growths[key, shape]:.2f} ({key}, {shape}) — {verdict(growths[key, shape] <= TARGET_GROWTH)}",
        f"- every event delivered in the read that completes it: {verdict(on_time)}",
        *[
            f"- {row[0]} ≤ {TARGET_DIALECT_RATIO} × its lower bound, {row[1]} reply: {row[6]} × — "
            f"{verdict(float(row[6]) <= TARGET_DIALECT_RATIO)}"
            for row in dialect_rows
            if row[0] != "openai-completions" and row is dialect_rows_at_largest(dialect_rows, row[0])
        ],
    ]


def dialect_rows_at_largest(rows: list[list[str]], dialect: str) -> list[str]:
    """The dialect's row at the largest reply measured (the rows come smallest first)."""
    return [row for row in rows if row[0] == dialect][-1]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"error: cannot create {args.out}: {err.strerror or err}", file=sys.stderr)
        return 1
    host = machine()
    command = " ".join(["python benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    md: list[str] = []  # results.md, built as the sections are printed
    progress = Progress(stages=len(streams.SHAPES) + 6)  # check, the shapes, dialects, delivery, latency, memory, write
    say = progress.print

    def section(title: str, *lines: str) -> None:
        say("", f"## {title}", "", *lines)
        md.extend(["", f"## {title}", "", *lines])

    say(f"# {command}", f"{host['cpu']}; {host['python']}; {host['date']}", f"peers: {host['peers'] or 'none'}")
    for line in contenders_module.missing():
        say(line)
    if not contenders_module.installed("matplotlib"):
        say("no plot: matplotlib is not installed (pip install matplotlib, or pip install -e '.[bench]')")
    everyone = contenders_module.all_contenders()

    progress.stage("checking every contender's answers", total=len(streams.SHAPES), unit="shapes")
    check_everyone(everyone, args.sizes, progress.advance)  # a benchmark of wrong answers is worthless
    say("", "all contenders give ink_py's text and tool arguments on every shape")
    # What is loaded by now is set aside from the garbage collector: a collection then costs
    # the same whoever triggers it, instead of walking every object of every imported module.
    gc.collect()
    gc.freeze()

    rows: list[dict[str, Any]] = []
    for shape in streams.SHAPES:
        sizes = sizes_for(shape, args.sizes)
        progress.stage(f"timing {shape}", total=len(sizes) * args.repeats * len(everyone))
        say("", f"timing {shape} ({streams.SHAPE_TITLES[shape]}), {args.repeats} interleaved rounds per size …")
        rows += measure.time_shape(everyone, shape, sizes, args.repeats, args.budget, say, progress.advance)
    reference = int(min(args.sizes, key=lambda mib: abs(mib - REFERENCE_MIB)) * streams.MiB)
    section(
        "Summary",
        f"The chunks stream at {streams.size_label(reference)} (median time, throughput, time per SSE event, "
        "ratio to the lower bound), the ratio on the largest stream of the other shapes, and the worst "
        "growth per doubling of the size on each shape (linear ≈ 2.0, quadratic ≈ 4.0).",
        "",
        *report.summary_table(rows, reference),
    )
    section("Every measurement", *report.full_table(rows))

    reference_mib = reference / streams.MiB
    progress.stage("timing the wire dialects", total=2 * len(dialects.DIALECTS), unit="replies")
    say("", "timing each wire dialect's assemble_stream on the same reply …")
    dialect_rows = dialects.time_dialects([reference_mib / 2, reference_mib], args.repeats, say, progress.advance)
    section(
        "Three wire dialects",
        f"The chunks stream's reply at {streams.size_label(reference // 2)} and {streams.size_label(reference)} "
        "rewritten event for event as Anthropic Messages and OpenAI Responses frames (benchmarks/dialects.py), "
        "1 KiB reads; each dialect's assemble_stream against the lower bound for its own body, in the same rounds.",
        "",
        *report.table(
            ["dialect", "reply", "body", "events", "median ms", "MiB/s", "× lower bound", "growth"], dialect_rows
        ),
    )

    progress.stage("delivery: events in the read that completes them", total=2 * len(streams.SHAPES), unit="checks")
    lag_rows = delivery(args.sizes, progress.advance)
    section(
        "Delivery: events yielded in the read that completes them",
        *report.table(["function", "shape", "events", "in the completing read", "worst lag (reads)"], lag_rows),
    )

    frames, pause = (30, 0.002) if args.quick else (200, 0.005)
    progress.stage("latency over HTTP", total=len(latency.CLIENTS) * len(latency.MODES), unit="streams")
    latency_rows = latency.measure(frames, pause, progress.advance)
    section(
        "Latency over HTTP",
        f"{frames} frames, {pause * 1e3:g} ms apart, from a local server process: the time from a frame's last "
        "byte leaving the server to its event reaching the caller. Late: arrived after the next frame was sent.",
        "",
        *report.latency_table(latency_rows),
    )

    progress.stage("peak memory", total=2 * len(everyone), unit="contenders")
    memory_rows = peak_memories(everyone, rows, args.budget, progress.advance)
    section(
        "Peak memory",
        "The most memory Python held at once while reading (tracemalloc; the input itself not counted), "
        "on the largest stream each contender reads in under a quarter of the time budget.",
        "",
        *report.memory_table(memory_rows),
    )

    quick_note = ["(A --quick run: small sizes, few rounds — judge the targets on a full run.)", ""]
    on_time = all(row[2] == row[3] for row in lag_rows)
    section("Targets", *(quick_note if args.quick else []), *targets(rows, reference, on_time, dialect_rows))

    progress.stage(f"writing {args.out}")
    python = host["python"].split(" (")[0]
    subtitle = f"{host['cpu']} · {python} · {host['date'][:10]} · median of {args.repeats} interleaved runs"
    png, why_not = report.plot(rows, subtitle)
    header = [
        "# Benchmark results",
        "",
        f"`{command}` — {host['date']}",
        "",
        f"- machine: {host['cpu']}",
        f"- {host['python']}; {host['peers']}",
        f"- chunks sizes {', '.join(f'{s:g}' for s in args.sizes)} MiB; {args.repeats} interleaved rounds; "
        f"budget {args.budget:g} s per run",
        "",
        "![time vs size](time_vs_size.png)" if why_not is None else f"(no plot: {why_not})",
    ]
    files = {
        "results.md": "\n".join(header + md) + "\n",
        "throughput.csv": report.csv_text(rows),
        "latency.csv": report.csv_text(latency_rows),
        "memory.csv": report.csv_text(memory_rows),
    }
    with sigint_blocked():  # beyond a half-written file, no half-written set: a Ctrl-C waits for the renames
        for name, text in files.items():
            write_text_atomically(args.out / name, text)
        if png is not None:
            write_bytes_atomically(args.out / "time_vs_size.png", png)
    progress.finish()
    written = ", ".join(files) + (", time_vs_size.png" if png is not None else f" (no plot: {why_not})")
    say("", f"wrote {args.out}/: {written}", f"done in {time.perf_counter() - started:.0f} s")
    return 0


def interrupted() -> int:
    """Ctrl-C: one line and exit 130; every file in the results folder is whole (see the end of main)."""
    print("\ninterrupted (the results folder holds its last complete set)", file=sys.stderr, flush=True)
    return 130


if __name__ == "__main__":
    try:
        sys.exit(main())
    except measure.WrongAnswer as err:
        print(f"\nerror: wrong answer, nothing timed: {err}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(interrupted())
