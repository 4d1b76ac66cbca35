"""The read tool (Ink's src/core/tools/read.ts): pages of a file, the caps and their notes, errors, cancelling.

What it refuses to open (outside the workspace, symlinks, FIFOs, devices) is
tests/test_read_workspace.py's; files far larger than memory, tests/test_read_big_files.py's.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

SECRET = "TOP-SECRET-CONTENT"  # must never appear in a refusal
CJK_LINE = "汉字" * 50  # 100 characters of 3 bytes: 300 bytes, so a cut by bytes would split one


def write(folder, files):
    """Create ``{relative name: str or bytes}`` under ``folder``."""
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        path.write_bytes(content)


def numbered(count, start=1):
    return "".join(f"line {i}\n" for i in range(start, start + count))


def run(ink, workspace, args, signal=None):
    return ink.read_tool.create_read_tool(workspace)["execute"](args, signal)


def test_the_tool_dict_and_its_schema(ink, tmp_path):
    tool = ink.read_tool.create_read_tool(tmp_path)
    assert tool["name"] == "read"
    assert tool["concurrencySafe"] is True
    assert callable(tool["execute"]) and tool["description"]
    schema = tool["parameters"]
    assert schema["type"] == "object" and schema["required"] == ["path"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["path"]["type"] == "string"
    assert schema["properties"]["offset"] == {
        "type": "integer",
        "minimum": 1,
        "description": "1-based line number to start reading from",
    }
    assert {k: v for k, v in schema["properties"]["limit"].items() if k != "description"} == {
        "type": "integer",
        "minimum": 1,
    }
    assert (ink.read_tool.MAX_LINES, ink.read_tool.MAX_BYTES) == (2000, 51200)


# (files, args, expected output) — each read succeeds.
READS = [
    pytest.param({"a.txt": "one\ntwo\nthree\n"}, {"path": "a.txt"}, "one\ntwo\nthree", id="whole-small-file"),
    pytest.param({"a.txt": "one\ntwo"}, {"path": "a.txt"}, "one\ntwo", id="no-final-newline"),
    pytest.param({"a.txt": "a\n\n\nb\n"}, {"path": "a.txt"}, "a\n\n\nb", id="blank-lines-kept"),
    pytest.param({"a.txt": "  x = 1\t\n"}, {"path": "a.txt"}, "  x = 1\t", id="whitespace-kept"),
    pytest.param({"a.txt": "one\ntwo\nthree\n"}, {"path": "a.txt", "offset": 2}, "two\nthree", id="offset"),
    pytest.param({"a.txt": "one\ntwo\nthree\n"}, {"path": "a.txt", "offset": 3}, "three", id="offset-last-line"),
    pytest.param(
        {"a.txt": numbered(10)},
        {"path": "a.txt", "offset": 3, "limit": 2},
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]",
        id="limit-with-more-left",
    ),
    pytest.param(
        {"a.txt": numbered(10)},
        {"path": "a.txt", "limit": 9},
        numbered(9).rstrip("\n") + "\n\n[1 more lines in file. Use offset=10 to continue.]",
        id="limit-one-line-short",
    ),
    pytest.param({"a.txt": numbered(3)}, {"path": "a.txt", "limit": 3}, "line 1\nline 2\nline 3", id="limit-to-end"),
    pytest.param({"a.txt": numbered(3)}, {"path": "a.txt", "limit": 50}, "line 1\nline 2\nline 3", id="limit-past-end"),
    pytest.param({"a.txt": numbered(3)}, {"path": "a.txt", "offset": 2.0}, "line 2\nline 3", id="offset-as-json-float"),
    pytest.param({"a.txt": "one\r\ntwo\r\n"}, {"path": "a.txt"}, "one\ntwo", id="crlf-shown-as-lf"),
    pytest.param(
        {"a.txt": "a\r\nb\r\nc\r\n"},
        {"path": "a.txt", "limit": 1},
        "a\n\n[2 more lines in file. Use offset=2 to continue.]",
        id="crlf-counted-once",
    ),
    pytest.param({"a.txt": "a\rb\n"}, {"path": "a.txt"}, "a\rb", id="lone-cr-kept"),
    pytest.param({"a.txt": ""}, {"path": "a.txt"}, "[File is empty.]", id="empty-file"),
    pytest.param({"a.txt": "\n"}, {"path": "a.txt"}, "", id="one-empty-line"),
    pytest.param({"a.txt": "读取 ✓\n"}, {"path": "a.txt"}, "读取 ✓", id="utf8"),
    pytest.param({"a.txt": b"caf\xe9\n"}, {"path": "a.txt"}, "caf\ufffd", id="invalid-utf8-replaced"),
    pytest.param({"src/pkg/m.py": "x = 1\n"}, {"path": "src/pkg/m.py"}, "x = 1", id="subdirectory"),
    pytest.param({"a.txt": "hi\n", "src/b": ""}, {"path": "src/../a.txt"}, "hi", id="dotdot-staying-inside"),
    pytest.param({"a.txt": "hi\n"}, {"path": "./a.txt"}, "hi", id="dot-slash"),
    pytest.param({"a.txt": "x" * 9000 + "\0\n"}, {"path": "a.txt"}, "x" * 9000 + "\0", id="nul-after-8kb-is-text"),
]


@pytest.mark.parametrize("files, args, expected", READS)
def test_reads(ink, tmp_path, files, args, expected):
    write(tmp_path, files)
    assert run(ink, tmp_path, args) == {"output": expected, "isError": False}


# (files, args, expected error output) — each is a result with isError, never an exception.
ERRORS = [
    pytest.param({}, {"path": "nope.txt"}, "Error: file not found: nope.txt", id="missing-file"),
    pytest.param({"a.txt": "x"}, {"path": "a.txt/b"}, "Error: file not found: a.txt/b", id="file-used-as-folder"),
    pytest.param({"src/a.txt": "x"}, {"path": "src"}, "Error: src is a directory, not a file.", id="directory"),
    pytest.param({}, {"path": "."}, "Error: . is a directory, not a file.", id="workspace-root"),
    pytest.param(
        {"blob.bin": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"},
        {"path": "blob.bin"},
        "Error: blob.bin is a binary file; only text files can be read.",
        id="binary",
    ),
    pytest.param(
        {"late.bin": "x" * 8000 + "\0"},
        {"path": "late.bin"},
        "Error: late.bin is a binary file; only text files can be read.",
        id="nul-within-first-8kb",
    ),
    pytest.param({}, {"path": ""}, "Error: path must not be empty.", id="empty-path"),
    pytest.param({}, {"path": "   "}, "Error: path must not be empty.", id="blank-path"),
    pytest.param({}, {}, "Error: path must not be empty.", id="missing-path"),
    pytest.param({}, {"path": None}, "Error: path must not be empty.", id="null-path"),
    pytest.param({}, {"path": 42}, "Error: path must be a string, not int.", id="int-path"),
    pytest.param({}, {"path": ["a.txt"]}, "Error: path must be a string, not list.", id="list-path"),
    pytest.param(
        {"a.txt": numbered(120)},
        {"path": "a.txt", "offset": 900},
        "Error: Offset 900 is beyond end of file (120 lines total).",
        id="offset-beyond-end",
    ),
    pytest.param(
        {"a.txt": numbered(120)},
        {"path": "a.txt", "offset": 121},
        "Error: Offset 121 is beyond end of file (120 lines total).",
        id="offset-one-past-end",
    ),
    pytest.param(
        {"a.txt": ""},
        {"path": "a.txt", "offset": 2},
        "Error: Offset 2 is beyond end of file (0 lines total).",
        id="offset-2-of-empty-file",
    ),
    pytest.param(
        {"a.txt": "x\n"},
        {"path": "a.txt", "offset": 0},
        "Error: offset must be a whole number of at least 1, not 0.",
        id="offset-zero",
    ),
    pytest.param(
        {"a.txt": "x\n"},
        {"path": "a.txt", "offset": "2"},
        "Error: offset must be a whole number of at least 1, not '2'.",
        id="offset-string",
    ),
    pytest.param(
        {"a.txt": "x\n"},
        {"path": "a.txt", "limit": -1},
        "Error: limit must be a whole number of at least 1, not -1.",
        id="limit-negative",
    ),
    pytest.param(
        {"a.txt": "x\n"},
        {"path": "a.txt", "limit": True},
        "Error: limit must be a whole number of at least 1, not True.",
        id="limit-bool",
    ),
]


@pytest.mark.parametrize("files, args, expected", ERRORS)
def test_errors(ink, tmp_path, files, args, expected):
    write(tmp_path, files)
    assert run(ink, tmp_path, args) == {"output": expected, "isError": True}


def test_a_nul_character_in_the_path_is_an_error_result(ink, tmp_path):
    result = run(ink, tmp_path, {"path": "a\0b.txt"})
    assert result["isError"] is True and result["output"].startswith("Error: ")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX permissions")
def test_permission_denied(ink, tmp_path):
    """Run as an unprivileged user (root reads anything): a forked child drops to nobody."""
    workspace = Path(tempfile.mkdtemp(dir="/tmp"))  # /tmp is traversable by every user
    try:
        workspace.chmod(0o755)
        write(workspace, {"locked.txt": SECRET})
        (workspace / "locked.txt").chmod(0)
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:  # the child: give up root, read, report, exit without running pytest's cleanup
            try:
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                result = run(ink, workspace, {"path": "locked.txt"})
                os.write(writer, json.dumps(result).encode())
            finally:
                os._exit(0)
        os.close(writer)
        with os.fdopen(reader, "rb") as pipe:
            reported = pipe.read()
        os.waitpid(child, 0)
    finally:
        shutil.rmtree(workspace)
    assert json.loads(reported) == {"output": "Error: permission denied: locked.txt", "isError": True}


# ── the caps: MAX_LINES and MAX_BYTES ──────────────────────────────────────────────────────


def test_line_cap_shows_2000_lines_and_where_to_go_on(ink, tmp_path):
    write(tmp_path, {"big.txt": numbered(2500)})
    first = run(ink, tmp_path, {"path": "big.txt"})
    expected = numbered(2000).rstrip("\n") + "\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"
    assert first == {"output": expected, "isError": False}
    rest = run(ink, tmp_path, {"path": "big.txt", "offset": 2001})  # following the note reads the rest, no note
    assert rest == {"output": numbered(500, start=2001).rstrip("\n"), "isError": False}


@pytest.mark.parametrize(
    "lines, args, note",
    [
        pytest.param(2000, {}, "", id="exactly-2000-no-note"),
        pytest.param(2001, {}, "\n\n[Showing lines 1-2000 of 2001. Use offset=2001 to continue.]", id="2001"),
        pytest.param(
            2500, {"limit": 2400}, "\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]", id="limit-above"
        ),
        pytest.param(
            2500, {"limit": 2000}, "\n\n[500 more lines in file. Use offset=2001 to continue.]", id="limit-2000"
        ),
        pytest.param(
            5000,
            {"offset": 101},
            "\n\n[Showing lines 101-2100 of 5000. Use offset=2101 to continue.]",
            id="from-an-offset",
        ),
    ],
)
def test_line_cap_notes(ink, tmp_path, lines, args, note):
    write(tmp_path, {"big.txt": numbered(lines)})
    output = run(ink, tmp_path, {"path": "big.txt", **args})["output"]
    start = args.get("offset", 1)
    assert output == numbered(2000 if lines > 2000 else lines, start=start).rstrip("\n") + note


def test_byte_cap_shows_whole_lines_only_and_no_broken_character(ink, tmp_path):
    write(tmp_path, {"cjk.txt": (CJK_LINE + "\n") * 500})
    output = run(ink, tmp_path, {"path": "cjk.txt"})["output"]
    # 300 bytes for the first line, 301 (with its "\n") for each next: 300 + 169 * 301 = 51169 <= 51200 < 51470.
    body, note = output.split("\n\n")
    assert note == "[Showing lines 1-170 of 500 (50KB limit). Use offset=171 to continue.]"
    assert body.split("\n") == [CJK_LINE] * 170  # every shown line whole
    assert len(body.encode()) <= 50 * 1024 and "\ufffd" not in output
    following = run(ink, tmp_path, {"path": "cjk.txt", "offset": 171})["output"]
    assert following.endswith("\n\n[Showing lines 171-340 of 500 (50KB limit). Use offset=341 to continue.]")


def test_byte_cap_comes_before_a_larger_user_limit(ink, tmp_path):
    write(tmp_path, {"cjk.txt": (CJK_LINE + "\n") * 500})
    output = run(ink, tmp_path, {"path": "cjk.txt", "offset": 11, "limit": 300})["output"]
    assert output == "\n".join([CJK_LINE] * 170) + (
        "\n\n[Showing lines 11-180 of 500 (50KB limit). Use offset=181 to continue.]"
    )


def test_output_of_exactly_50kb_needs_no_note(ink, tmp_path):
    write(tmp_path, {"a.txt": "x" * 51200 + "\n"})
    assert run(ink, tmp_path, {"path": "a.txt"}) == {"output": "x" * 51200, "isError": False}


@pytest.mark.parametrize(
    "files, args, expected",
    [
        pytest.param(
            {"a.txt": "x" * 51201 + "\n"},
            {"path": "a.txt"},
            "[Line 1 is 51201 bytes, over the 50KB limit, and cannot be shown by this tool.]",
            id="only-line-one-byte-over",
        ),
        pytest.param(
            {"a.txt": "short\n" + "x" * 60000 + "\nafter\n"},
            {"path": "a.txt", "offset": 2},
            "[Line 2 is 60000 bytes, over the 50KB limit, and cannot be shown by this tool. Use offset=3 to continue.]",
            id="middle-line",
        ),
        pytest.param(
            {"a.txt": "short\n" + "x" * 60000 + "\nafter\n"},
            {"path": "a.txt"},
            "short\n\n[Showing lines 1-1 of 3 (50KB limit). Use offset=2 to continue.]",
            id="stops-before-it",
        ),
        pytest.param(
            {"a.txt": "汉" * 20000},
            {"path": "a.txt", "limit": 1},
            "[Line 1 is 60000 bytes, over the 50KB limit, and cannot be shown by this tool.]",
            id="cjk-line-no-partial-character",
        ),
    ],
)
def test_a_single_line_over_50kb(ink, tmp_path, files, args, expected):
    write(tmp_path, files)
    assert run(ink, tmp_path, args) == {"output": expected, "isError": False}


# ── cancelling ─────────────────────────────────────────────────────────────────────────────


def test_an_aborted_signal_cancels_the_read(ink, tmp_path):
    write(tmp_path, {"a.txt": SECRET})
    controller = ink.abort.AbortController()
    assert run(ink, tmp_path, {"path": "a.txt"}, controller.signal) == {"output": SECRET, "isError": False}
    controller.abort()
    result = run(ink, tmp_path, {"path": "a.txt"}, controller.signal)
    assert result == {"output": "Error: the read was cancelled before it started.", "isError": True}
