"""Where ``assemble_stream``'s cost goes, counted in instructions: each part found by running without it.

    python benchmarks/instructions.py                    # one event per read and 1 KiB reads, 1 MiB
    python benchmarks/instructions.py --shapes bytewise --kib 64

Each variant runs in a process of its own under valgrind's callgrind (which counts instructions:
the same figure on a busy machine as on an idle one), and the process that only builds the stream
is subtracted. The parts: the lower bound, ``parse_sse`` alone, with ``guarded``, the whole
``assemble_stream``, and ``assemble_stream`` without ``check_chunk``, the usage fold, ``abort_safe``.
Needs valgrind; a few minutes (callgrind runs Python some fifty times slower).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VARIANTS = ("none", "lower", "parse", "parse-guarded", "assemble", "no-check", "no-usage", "no-abort-safe")


def run_variant(shape: str, kib: int, variant: str) -> None:
    """In this process: build the stream, then run ``variant`` once (what callgrind counts)."""
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import streams
    from contenders import lower_bound

    import ink_py.provider.openai_completions as completions
    from ink_py.provider.shared import guarded, parse_sse

    reads = streams.reads(streams.make_stream(shape, kib * 1024))
    if variant == "no-check":
        completions.check_chunk = lambda sse: None  # type: ignore[assignment]
    elif variant == "no-usage":
        completions.merge_usage = lambda usage, chunk, choice: None  # type: ignore[assignment]
    elif variant == "no-abort-safe":
        completions.abort_safe = lambda source, signal: iter(source)  # type: ignore[assignment]
    runs: dict[str, Any] = {
        "lower": lambda: lower_bound(reads),
        "parse": lambda: parse_sse(reads),
        "parse-guarded": lambda: parse_sse(guarded(reads)),
    }
    if variant != "none":
        deque(runs.get(variant, lambda: completions.assemble_stream(reads))(), maxlen=0)


def instructions(shape: str, kib: int, variant: str) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
         "--run", shape, str(kib), variant],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(re.search(r"Collected : (\d+)", done.stderr)[1])  # type: ignore[index]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="per-event,chunks", help="comma-separated (default per-event,chunks)")
    parser.add_argument("--kib", type=int, default=1024, help="stream size in KiB (default 1024)")
    parser.add_argument("--run", nargs=3, help=argparse.SUPPRESS)  # inside callgrind: SHAPE KIB VARIANT
    args = parser.parse_args()
    if args.run:
        run_variant(args.run[0], int(args.run[1]), args.run[2])
        return 0
    for shape in args.shapes.split(","):
        print(*report(shape, args.kib, {v: instructions(shape, args.kib, v) for v in VARIANTS}), sep="\n")
    return 0


def report(shape: str, kib: int, n: dict[str, int]) -> list[str]:
    """Each part as a share of the lower bound's instructions on the same reads."""
    lower = n["lower"] - n["none"]
    parts = {
        "parse_sse beyond the lower bound": ("parse", "lower"),
        "guarded": ("parse-guarded", "parse"),
        "check_chunk": ("assemble", "no-check"),
        "merge_usage": ("assemble", "no-usage"),
        "abort_safe": ("assemble", "no-abort-safe"),
    }
    return [
        f"{shape}, {kib} KiB: the lower bound {lower / 1e6:.1f} M instructions",
        *(f"  {name:<33} {(n[a] - n[b]) / lower:+.3f}" for name, (a, b) in parts.items()),
        f"  assemble_stream in all            {(n['assemble'] - n['none']) / lower:.3f} × the lower bound",
    ]


if __name__ == "__main__":
    sys.exit(main())
