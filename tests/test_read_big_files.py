"""The read tool on files far larger than memory: a page at a time, in bounded memory, and cancellable.

Huge files are sparse (``truncate``: no disk used); their reads run in a child process under
an address-space limit, its peak memory measured from outside (tests/raw_servers.py's
``run_measured``). A property then holds the streamed page to what reading the whole file and
slicing it says, with caps small enough that every one of them is met.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers import ROOT
from .raw_servers import run_measured

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32", reason="needs POSIX files")

LIMIT_MIB = 512  # the child's whole address space: far less than the files it reads


def run_limited(script: str, workspace: Path) -> Any:
    """Run ``script`` in a child whose address space is LIMIT_MIB; its last stdout line is JSON."""
    prelude = textwrap.dedent(
        f"""
        import json, resource, sys, threading, time
        resource.setrlimit(resource.RLIMIT_AS, ({LIMIT_MIB} << 20, {LIMIT_MIB} << 20))
        sys.path.insert(0, {str(ROOT)!r})
        from ink_py.core.abort import AbortController
        from ink_py.core.tools.read import create_read_tool
        read = create_read_tool({str(workspace)!r})["execute"]
        """
    )
    result = run_measured([sys.executable, "-c", prelude + textwrap.dedent(script)], timeout=60)
    assert result.code == 0 and not result.killed, result.err[-2000:]
    return json.loads(result.out.strip().splitlines()[-1]), result


def sparse_log(path: Path, size: int, lines: int = 1000) -> None:
    """``lines`` lines of text (past the 8 KB binary sniff), then a hole of NUL bytes up to
    ``size`` (no disk used): one last, huge line."""
    with open(path, "wb") as file:
        file.write(b"".join(b"log line %d\n" % i for i in range(1, lines + 1)))
        file.truncate(size)


# ── a huge file: the page only, in bounded memory, and an abort honoured ──────────────


@posix_only
def test_a_2_gib_file_is_read_a_page_at_a_time_in_bounded_memory(tmp_path: Path) -> None:
    sparse_log(tmp_path / "big.log", 2 << 30)
    outputs, measured = run_limited(
        """
        print(json.dumps([read({"path": "big.log", "limit": 3}, None)["output"],
                          read({"path": "big.log", "offset": 999}, None)["output"][:89]]))
        """,
        tmp_path,
    )
    assert outputs[0] == "log line 1\nlog line 2\nlog line 3\n\n[998 more lines in file. Use offset=4 to continue.]"
    assert outputs[1] == "log line 999\nlog line 1000\n\n[Showing lines 999-1000 of 1001 (50KB limit). Use offset=1001"
    assert measured.peak_mib < 200  # reading it whole: MemoryError under the limit (4.4 GB without one)


@posix_only
def test_five_parallel_reads_of_a_2_gib_file_fit_in_512_mib(tmp_path: Path) -> None:
    sparse_log(tmp_path / "big.log", 2 << 30)
    outputs, measured = run_limited(
        """
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(5) as pool:
            done = list(pool.map(lambda n: read({"path": "big.log", "offset": n, "limit": 1}, None), range(1, 6)))
        print(json.dumps([d["output"].split("\\n")[0] for d in done]))
        """,
        tmp_path,
    )
    assert outputs == [f"log line {n}" for n in range(1, 6)]
    assert measured.peak_mib < 250


@posix_only
def test_a_sparse_binary_file_is_refused_from_its_first_bytes(tmp_path: Path) -> None:
    with open(tmp_path / "disk.img", "wb") as file:
        file.truncate(2 << 30)
    outputs, measured = run_limited(
        """
        start = time.monotonic()
        out = read({"path": "disk.img"}, None)
        print(json.dumps([out, time.monotonic() - start]))
        """,
        tmp_path,
    )
    assert outputs[0] == {"output": "Error: disk.img is a binary file; only text files can be read.", "isError": True}
    assert measured.peak_mib < 100  # not 2 GB read to look at 8 KB


@posix_only
def test_an_abort_stops_a_read_that_is_under_way(tmp_path: Path) -> None:
    sparse_log(tmp_path / "big.log", 64 << 30)  # 64 GiB of hole after the text: minutes to count
    outputs, _ = run_limited(
        """
        controller = AbortController()
        box = {}
        worker = threading.Thread(target=lambda: box.update(out=read({"path": "big.log"}, controller.signal)))
        worker.start()
        time.sleep(0.3)
        aborted_at = time.monotonic()
        controller.abort()
        worker.join(20)
        print(json.dumps([box.get("out"), time.monotonic() - aborted_at]))
        """,
        tmp_path,
    )
    assert outputs[0] == {"output": "Error: the read was cancelled.", "isError": True}
    assert outputs[1] < 5  # it stopped at the next piece, not at the end of 64 GiB


# The streaming page must say exactly what reading the whole file and slicing it says.


def reference_read(data: bytes, offset: int, limit: int | None, ink: Any) -> str:
    """The page computed the simple way — the whole file split into lines (the old code)."""
    read = ink.read_tool
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if not lines and offset == 1:
        return read.EMPTY_FILE_NOTE
    if offset > len(lines):
        return f"Error: Offset {offset} is beyond end of file ({len(lines)} lines total)."
    return read._page(lines[offset - 1 :], offset, limit, len(lines))


@given(
    lines=st.lists(st.sampled_from(["", "a", "bb", "é", "字字", "x" * 30, "\r", "y\r"]), max_size=25),
    ending=st.sampled_from(["\n", "\r\n"]),
    final_newline=st.booleans(),
    offset=st.integers(1, 30),
    limit=st.none() | st.integers(1, 30),
    chunk=st.integers(1, 16),
)
@settings(max_examples=300, deadline=None)
def test_the_streamed_page_matches_reading_the_whole_file(
    ink: Any, tmp_path_factory: pytest.TempPathFactory, lines, ending, final_newline, offset, limit, chunk
) -> None:
    read = ink.read_tool
    root = tmp_path_factory.getbasetemp() / "stream-vs-whole"
    root.mkdir(exist_ok=True)
    data = ending.join(lines).encode() + (ending.encode() if final_newline and lines else b"")
    (root / "f.txt").write_bytes(data)
    saved = read.READ_CHUNK_BYTES, read.MAX_LINES, read.MAX_BYTES
    read.READ_CHUNK_BYTES, read.MAX_LINES, read.MAX_BYTES = chunk, 7, 40  # small, so every cap is met
    try:
        got = read.create_read_tool(root)["execute"]({"path": "f.txt", "offset": offset, "limit": limit}, None)
        assert got["output"] == reference_read(data, offset, limit, ink)
    finally:
        read.READ_CHUNK_BYTES, read.MAX_LINES, read.MAX_BYTES = saved
