"""Turning measurements into what people read: tables (stdout and markdown), CSV files, the plot.

Tables are markdown with padded columns, so the same text reads well in a terminal and
renders on GitHub. The plot needs matplotlib (the ``bench`` extra); it is imported only
here, only when a plot is drawn, and its absence costs the plot alone.

    >>> print("\\n".join(table(["name", "n"], [["a", "1"], ["bb", "22"]])))
    | name | n  |
    |------|----|
    | a    | 1  |
    | bb   | 22 |
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import streams

# How each contender is drawn: the lower bound stands out (black, thick, dashed).
STYLES: dict[str, dict[str, Any]] = {
    "lower-bound": {"color": "black", "linestyle": "--", "linewidth": 3.0, "marker": ""},
    "ink-parse": {"color": "#1f77b4", "marker": "o"},
    "ink-assemble": {"color": "#0b3d91", "marker": "s", "linewidth": 2.5},
    "article-parse": {"color": "#ff7f0e", "marker": "^"},
    "article-assemble": {"color": "#d62728", "marker": "v"},
    "openai-parse": {"color": "#2ca02c", "marker": "D"},
    "openai-assemble": {"color": "#17becf", "marker": "P"},
    "httpx-sse-parse": {"color": "#9467bd", "marker": "X"},
    "langchain-fold": {"color": "#8c564b", "marker": "<"},
    "langchain-sum": {"color": "#e377c2", "marker": ">"},
}


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table, columns padded to their widest cell."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
    return [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]


def number(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}f}" if abs(value) < 1000 else f"{value:,.0f}"


# ── throughput ──────────────────────────────────────────────────────────────────────────


def full_table(rows: list[dict[str, Any]]) -> list[str]:
    """Every (shape, size, contender): median ms, MiB/s, µs per event, × lower bound, growth."""
    out = []
    for row in rows:
        size = streams.size_label(row["size"])
        if row["status"] != "ok":
            out.append([row["shape"], size, row["label"], row["status"], "", "", "", ""])
            continue
        out.append(
            [
                row["shape"],
                size,
                row["label"],
                number(row["median_s"] * 1e3, 1),
                number(row["mib_per_s"], 1),
                number(row["us_per_event"], 2),
                number(row["ratio"]),
                number(row["growth"]),
            ]
        )
    headers = ["shape", "size", "contender", "median ms", "MiB/s", "µs/event", "× lower bound", "growth/doubling"]
    return table(headers, out)


def worst_growth(rows: list[dict[str, Any]], key: str, shape: str) -> tuple[float | None, int | None]:
    """The largest growth per doubling of ``key`` on ``shape``, and the largest size it was timed at."""
    mine = [r for r in rows if r["key"] == key and r["shape"] == shape and r["status"] == "ok"]
    growths = [r["growth"] for r in mine if r["growth"] is not None]
    return (max(growths) if growths else None), (max(r["size"] for r in mine) if mine else None)


def summary_table(rows: list[dict[str, Any]], reference: int) -> list[str]:
    """One line per contender: the ``reference``-size chunks stream, the other shapes' largest, growth."""
    largest = {shape: max(r["size"] for r in rows if r["shape"] == shape) for shape in streams.SHAPES}
    out = []
    for key in dict.fromkeys(r["key"] for r in rows):
        mine = [r for r in rows if r["key"] == key]
        at_ref = next((r for r in mine if r["shape"] == "chunks" and r["size"] == reference), None)
        if at_ref is None or at_ref["status"] != "ok":  # show where it got to instead
            _, reach = worst_growth(rows, key, "chunks")
            last = next((r for r in mine if r["shape"] == "chunks" and r["size"] == reach), None)
            where = f"{number(last['ratio'])} (at {streams.size_label(reach or 0)})" if last else "—"
            cells = [at_ref["status"] if at_ref else "not run", "", "", where]
        else:
            cells = [
                number(at_ref["median_s"] * 1e3, 1),
                number(at_ref["mib_per_s"], 1),
                number(at_ref["us_per_event"], 2),
                number(at_ref["ratio"]),
            ]
        for shape in streams.SHAPES[1:]:  # the ratio at the largest size this contender was timed at
            _, reach = worst_growth(rows, key, shape)
            last = next((r for r in mine if r["shape"] == shape and r["size"] == reach), None)
            note = "" if reach == largest[shape] else f" (at {streams.size_label(reach or 0)})"
            cells.append(number(last["ratio"]) + note if last else "—")
        for shape in streams.SHAPES:
            worst, reach = worst_growth(rows, key, shape)
            note = "" if reach == largest[shape] or worst is None else f" (to {streams.size_label(reach or 0)})"
            cells.append(number(worst) + note)
        out.append([mine[0]["label"], *cells])
    headers = [
        "contender",
        f"ms ({streams.size_label(reference)})",
        "MiB/s",
        "µs/event",
        "× lower bound",
        *(f"{shape} {streams.size_label(largest[shape])}: × lower bound" for shape in streams.SHAPES[1:]),
        *(f"growth: {shape}" for shape in streams.SHAPES),
    ]
    return table(headers, out)


def latency_table(rows: list[dict[str, Any]]) -> list[str]:
    cells = [
        [r["client"], r["body"], f"{r['median_ms']:.2f}", f"{r['worst_ms']:.2f}", f"{r['late']}/{r['frames']}"]
        for r in rows
    ]
    return table(["client", "body", "median ms", "worst ms", "late"], cells)


def memory_table(rows: list[dict[str, Any]]) -> list[str]:
    cells = [
        [
            r["shape"],
            streams.size_label(r["size"]),
            r["label"],
            f"{r['peak'] / streams.MiB:.2f}",
            f"{r['peak'] / r['largest_frame']:,.1f}",
        ]
        for r in rows
    ]
    return table(["shape", "stream", "contender", "peak MiB", "× largest frame"], cells)


def csv_text(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV, a column per field any row has (written by run.py with the other files)."""
    fields = list(dict.fromkeys(field for row in rows for field in row))
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fields)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
    return out.getvalue()


# ── the plot ────────────────────────────────────────────────────────────────────────────


def plot(rows: list[dict[str, Any]], subtitle: str) -> tuple[bytes | None, str | None]:
    """Time vs size, log-log, a panel per shape, as PNG bytes; or None and why not (no matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError:
        return None, "matplotlib is not installed (pip install matplotlib, or pip install -e '.[bench]')"

    figure, axes = plt.subplots(1, len(streams.SHAPES), figsize=(19, 5.6))
    handles: dict[str, Any] = {}
    for ax, shape in zip(axes, streams.SHAPES, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        mine = [r for r in rows if r["shape"] == shape and r["status"] == "ok"]
        for key in dict.fromkeys(r["key"] for r in mine):
            points = [(r["size"] / streams.MiB, r["median_s"]) for r in mine if r["key"] == key]
            label = next(r["label"] for r in mine if r["key"] == key)
            style = {"linewidth": 1.6, "markersize": 5, **STYLES.get(key, {})}
            (line,) = ax.plot(*zip(*points, strict=True), label=label, **style)
            handles.setdefault(label, line)
        lower = [(r["size"] / streams.MiB, r["median_s"]) for r in mine if r["key"] == "lower-bound"]
        if len(lower) > 1:  # a guide: how a quadratic algorithm would grow from the lower bound's start
            (x0, y0), x1 = lower[0], lower[-1][0]
            xs = [x0 * 2 ** (i / 4) for i in range(int(4 * math.log2(x1 / x0)) + 1)]
            (guide,) = ax.plot(xs, [y0 * (x / x0) ** 2 for x in xs], color="0.55", linewidth=1, linestyle=":")
            handles.setdefault("quadratic growth (time × 4 per doubling), for reference", guide)
        sizes = sorted({r["size"] for r in mine})
        ax.set_xticks([size / streams.MiB for size in sizes], [streams.size_label(size) for size in sizes])
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y * 1e3:g} ms" if y < 1 else f"{y:g} s"))
        ax.set_title(streams.SHAPE_TITLES[shape], fontsize=10)
        ax.set_xlabel("stream size (log scale)")
        ax.grid(True, which="major", linewidth=0.4, alpha=0.6)
    axes[0].set_ylabel("time per run (log scale; lower is better)")
    figure.suptitle(f"Parsing and assembling a streamed Chat Completions reply — time vs size\n{subtitle}", fontsize=11)
    figure.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=8.5, frameon=False)
    figure.tight_layout(rect=(0.01, 0.12, 0.99, 1))
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=90)
    plt.close(figure)
    try:
        from PIL import Image  # a dependency of matplotlib
    except ImportError:
        return buffer.getvalue(), None
    buffer.seek(0)
    smaller = io.BytesIO()
    with Image.open(buffer) as image:  # a 128-colour palette: the same picture, a third of the bytes
        image.convert("RGB").quantize(colors=128).save(smaller, format="PNG", optimize=True)
    return smaller.getvalue(), None
