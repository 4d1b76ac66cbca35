"""What the read tool refuses to open: anything outside its workspace, and anything that would block.

Paths that lead outside (``..``, absolute paths, symlinks to files or folders, chains of
them, a sibling folder sharing the prefix) are refused without a byte of content; paths that
stay inside are read, even through a symlinked workspace. A folder swapped for a symlink, or
a file for a FIFO, while reads run never leaks nor blocks; symlink loops, /proc, devices and
named pipes are refused at once.
"""

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .test_read_tool import SECRET, run, write

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32", reason="needs POSIX files")


# ── the workspace: nothing outside it can be read ─────────────────────────────────────────


@pytest.fixture
def layout(tmp_path):
    """tmp/ws is the workspace; tmp/secret.txt and tmp/outside/ are beyond it."""
    write(tmp_path, {"secret.txt": SECRET + "\n", "outside/secret.txt": SECRET + "\n", "ws/real.txt": "inside\n"})
    return tmp_path, tmp_path / "ws"


def refusal(path, workspace):
    root = os.path.realpath(workspace)
    return f"Error: {path} is outside the workspace ({root}); only files inside it can be read."


@pytest.mark.parametrize(
    "links, path",
    [
        pytest.param({}, "../secret.txt", id="dotdot"),
        pytest.param({}, "real.txt/../../secret.txt", id="dotdot-after-a-name"),
        pytest.param({}, "ABS/secret.txt", id="absolute-outside"),
        pytest.param({}, "ABS/missing.txt", id="absolute-outside-missing-says-outside-too"),
        pytest.param({}, "..", id="parent-folder"),
        pytest.param({"link.txt": "secret.txt"}, "link.txt", id="symlink-file-outside"),
        pytest.param({"out": "outside"}, "out/secret.txt", id="symlink-folder-outside"),
        pytest.param({"out": "outside"}, "out/../secret.txt", id="dotdot-after-symlink-folder"),
        pytest.param({"hop.txt": "ws/chain.txt", "chain.txt": "secret.txt"}, "hop.txt", id="symlink-chain"),
    ],
)
def test_paths_that_lead_outside_are_refused_without_content(ink, layout, links, path):
    top, workspace = layout
    for name, target in links.items():  # each link lives in the workspace and points at top/target
        (workspace / name).symlink_to(top / target)
    path = path.replace("ABS", str(top))
    result = run(ink, workspace, {"path": path})
    assert result == {"output": refusal(path, workspace), "isError": True}
    assert SECRET not in result["output"]


@pytest.mark.parametrize(
    "links, path",
    [
        pytest.param({}, "ABS/real.txt", id="absolute-inside"),
        pytest.param({"alias.txt": "real.txt"}, "alias.txt", id="symlink-file-inside"),
        pytest.param({"docs": "."}, "docs/real.txt", id="symlink-folder-inside"),
        pytest.param({"up": ".."}, "up/ws/real.txt", id="symlink-out-and-back-in"),
    ],
)
def test_paths_that_stay_inside_are_read(ink, layout, links, path):
    _, workspace = layout
    for name, target in links.items():
        (workspace / name).symlink_to(target)  # relative to the link's folder
    path = path.replace("ABS", str(workspace))
    assert run(ink, workspace, {"path": path}) == {"output": "inside", "isError": False}


def test_a_workspace_reached_through_a_symlink(ink, layout):
    top, workspace = layout
    (top / "ws-link").symlink_to(workspace)  # like /tmp → /private/tmp on macOS
    via_link = top / "ws-link"
    assert run(ink, via_link, {"path": "real.txt"}) == {"output": "inside", "isError": False}
    assert run(ink, via_link, {"path": str(via_link / "real.txt")}) == {"output": "inside", "isError": False}
    outside = run(ink, via_link, {"path": "../secret.txt"})
    assert outside == {"output": refusal("../secret.txt", workspace), "isError": True}
    assert str(workspace.resolve()) in outside["output"]  # the message names the real folder


def test_a_sibling_folder_sharing_the_prefix_is_outside(ink, layout):
    top, workspace = layout
    write(top, {"ws-other/secret.txt": SECRET})  # "/…/ws-other" starts with "/…/ws" as a string
    result = run(ink, workspace, {"path": "../ws-other/secret.txt"})
    assert result == {"output": refusal("../ws-other/secret.txt", workspace), "isError": True}


# ── swapped while reads run: a folder for a symlink, a file for a FIFO ─────────────────


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
    assert outcomes["leaked"] == 0, outcomes  # a check-then-open would leak a few percent of them
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


# ── loops, /proc, devices and FIFOs ───────────────────────────────────────────────────


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
    ],
    ids=["self-loop", "two-link-loop", "proc-environ", "link-to-environ", "link-to-dev-zero", "dev-zero"],
)
def test_loops_proc_and_devices_are_refused_at_once(ink: Any, tmp_path: Path, make, path: str, words: str) -> None:
    if path.startswith("/proc") and not Path("/proc/self/environ").exists():
        pytest.skip("no /proc here")
    make(tmp_path)
    start = time.monotonic()
    result = ink.read_tool.create_read_tool(tmp_path)["execute"]({"path": path}, None)
    assert result["isError"] and words in result["output"], result
    assert "PATH=" not in result["output"] and time.monotonic() - start < 5


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_refused_instead_of_blocking(ink, tmp_path):
    os.mkfifo(tmp_path / "pipe")
    assert run(ink, tmp_path, {"path": "pipe"}) == {"output": "Error: pipe is not a regular file.", "isError": True}
