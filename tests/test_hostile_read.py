"""The read tool against a hostile workspace and a model that gets arguments wrong.

Issue 12's problems 2 (reading a huge file whole), 6 (a check-then-open race; a FIFO swapped
in) and 7 (arguments that used to crash the run), and the "already safe" list: symlink
loops, /proc/self/environ, devices and FIFOs. Huge files are sparse (``truncate``); their
reads run in a child process under an address-space limit, measured from outside.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers import ScriptedProvider, text_reply, tool_reply
from .hostile import ROOT, run_measured

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


# ── 2. a huge file: the page only, in bounded memory, and Ctrl-C honoured ──────────────


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
    assert measured.peak_mib < 200  # before: MemoryError under the 512 MiB limit (4.4 GB unlimited)


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
    assert measured.peak_mib < 100  # before: 2 GB read to look at 8 KB


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


# ── 6. swapping a folder for a symlink, or a file for a FIFO, while reads run ───────────


@posix_only
def test_a_folder_swapped_for_a_symlink_never_leads_outside(ink: Any, tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "real").mkdir(parents=True)
    outside.mkdir()
    (workspace / "real" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text("SECRET\n")
    (workspace / "evil").symlink_to(outside)
    stop = threading.Event()

    def swap() -> None:  # "real" is a folder, then for a moment a symlink to outside, then a folder again
        while not stop.is_set():
            os.rename(workspace / "real", workspace / "saved")
            os.rename(workspace / "evil", workspace / "real")
            os.rename(workspace / "real", workspace / "evil")
            os.rename(workspace / "saved", workspace / "real")

    read = ink.read_tool.create_read_tool(workspace)["execute"]
    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    outcomes = {"inside": 0, "leaked": 0, "refused": 0}
    deadline = time.monotonic() + 3
    try:
        while time.monotonic() < deadline:
            output = read({"path": "real/f.txt"}, None)["output"]
            key = "leaked" if "SECRET" in output else "inside" if output == "inside" else "refused"
            outcomes[key] += 1
    finally:
        stop.set()
        swapper.join()
    assert outcomes["leaked"] == 0, outcomes  # before: a few percent of the reads
    assert outcomes["inside"] > 0, outcomes


@posix_only
def test_a_fifo_swapped_in_after_the_check_never_blocks(ink: Any, tmp_path: Path) -> None:
    (tmp_path / "plain-saved").write_text("text\n")
    os.link(tmp_path / "plain-saved", tmp_path / "f.txt")
    os.mkfifo(tmp_path / "pipe")
    stop = threading.Event()

    def swap() -> None:  # f.txt is a regular file, then a FIFO, over and over
        while not stop.is_set():
            os.replace(tmp_path / "pipe", tmp_path / "f.txt")
            os.mkfifo(tmp_path / "pipe")
            os.link(tmp_path / "plain-saved", tmp_path / "plain")
            os.replace(tmp_path / "plain", tmp_path / "f.txt")

    read = ink.read_tool.create_read_tool(tmp_path)["execute"]
    outputs: list[str] = []

    def reads() -> None:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            outputs.append(read({"path": "f.txt"}, None)["output"])

    swapper = threading.Thread(target=swap, daemon=True)
    reader = threading.Thread(target=reads, daemon=True)
    swapper.start()
    reader.start()
    reader.join(10)
    stop.set()
    swapper.join()
    blocked = reader.is_alive()
    if blocked:  # free the thread stuck in open(): open the FIFO for writing once
        fd = os.open(tmp_path / "f.txt", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    assert not blocked, "a read blocked on a FIFO"
    assert outputs and set(outputs) <= {
        "text",
        "Error: f.txt is not a regular file.",
        "Error: f.txt changed while it was being opened; it was not read.",
        "Error: file not found: f.txt",
    }, set(outputs)


# ── already safe: loops, /proc, devices ─────────────────────────────────────────────────


@posix_only
@pytest.mark.parametrize(
    ("make", "path", "words"),
    [
        (lambda ws: (ws / "loop").symlink_to(ws / "loop"), "loop", "symbolic links"),
        (lambda ws: ((ws / "a").symlink_to(ws / "b"), (ws / "b").symlink_to(ws / "a")), "a", "symbolic links"),
        (lambda ws: None, "/proc/self/environ", "outside the workspace"),
        (lambda ws: (ws / "env").symlink_to("/proc/self/environ"), "env", "outside the workspace"),
        (lambda ws: (ws / "zero").symlink_to("/dev/zero"), "zero", "outside the workspace"),
        (lambda ws: None, "/dev/zero", "outside the workspace"),
        (lambda ws: os.mkfifo(ws / "fifo"), "fifo", "not a regular file"),
    ],
    ids=["self-loop", "two-link-loop", "proc-environ", "link-to-environ", "link-to-dev-zero", "dev-zero", "fifo"],
)
def test_loops_proc_and_devices_are_refused_at_once(ink: Any, tmp_path: Path, make, path: str, words: str) -> None:
    if path.startswith("/proc") and not Path("/proc/self/environ").exists():
        pytest.skip("no /proc here")
    make(tmp_path)
    start = time.monotonic()
    result = ink.read_tool.create_read_tool(tmp_path)["execute"]({"path": path}, None)
    assert result["isError"] and words in result["output"], result
    assert "PATH=" not in result["output"] and time.monotonic() - start < 5


# ── 7. arguments that used to end the run ───────────────────────────────────────────────

CRASHERS = {
    "offset-400-digits": '{"path": "README.md", "offset": ' + "9" * 400 + "}",
    "limit-400-digits": '{"path": "README.md", "limit": ' + "9" * 400 + "}",
    "nested-100000-deep": "[" * 100_000 + "]" * 100_000,
    "nested-900-deep": '{"a": ' * 900 + "1" + "}" * 900,
    "a-number": "5",
    "an-array": "[1, 2]",
    "a-string": '"README.md"',
    "null": "null",
}


@pytest.mark.parametrize("name", sorted(CRASHERS))
@pytest.mark.parametrize("display", ["ink", "filtered"])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_model_mistakes_go_back_as_tool_errors(ink: Any, tmp_path: Path, name: str, display: str, parallel: bool):
    import io

    from ink_py.runner import Display
    from ink_py.second_article.stream import sse_fields

    (tmp_path / "README.md").write_text("# hi\n")
    calls = [("t1", "read", CRASHERS[name]), ("t2", "read", '{"path": "README.md"}')]
    provider = ScriptedProvider(ink, tool_reply(*calls), text_reply("ok"))
    shown = Display(io.StringIO(), io.StringIO(), display)
    history: list = []
    result = ink.loop.run_agent_loop(
        provider=provider,
        model="m",
        system="s",
        tools=[ink.read_tool.create_read_tool(tmp_path)],
        history=history,
        user_message="u",
        on_event=lambda event: (shown.show(event), sse_fields(event)),
        max_concurrent=5 if parallel else 1,
    )
    assert result["stopReason"] == "completed"
    first, second = history[2]["results"]
    if name == "limit-400-digits":  # a limit past the end of the file simply means "to the end"
        assert first["content"] == "# hi"
    else:
        assert first["isError"] and first["content"].startswith("Error: ") and len(first["content"]) < 1000
    assert second == {"toolCallId": "t2", "toolName": "read", "content": "# hi", "isError": False}
    json.dumps(provider.requests[1]["messages"])  # the follow-up request can still be sent


def test_a_400_digit_integer_passes_the_schema_check_without_overflow(ink: Any) -> None:
    from ink_py.core.tools.schema import check_arguments

    assert check_arguments({"type": "integer", "minimum": 1}, 10**400) == []
    assert check_arguments({"type": "integer"}, 2.5) == ["(root): must be an integer, got 2.5"]
