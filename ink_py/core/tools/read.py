"""The ``read`` tool: a text file's lines, one page at a time — mirrors Ink's ``src/core/tools/read.ts``.

As in Ink, the model names a file and may add ``offset`` (the 1-based first line) and ``limit``;
it gets the raw lines, at most MAX_LINES or MAX_BYTES, and a note saying where to go on.
Sections: ``create_read_tool``, then opening inside the workspace and reading one page. Beyond
Ink: confined to the workspace root; what the TypeScript leaves open is in docs/modules.md.

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     _ = pathlib.Path(root, "notes.txt").write_text("one\\ntwo\\nthree\\n")
    ...     create_read_tool(root)["execute"]({"path": "notes.txt", "limit": 2}, None)["output"]
    'one\\ntwo\\n\\n[1 more lines in file. Use offset=3 to continue.]'
"""

from __future__ import annotations

import os
import stat
from typing import Any, BinaryIO

from ..abort import NEVER_ABORTED, AbortSignal
from .types import Tool, ToolOutput

MAX_LINES = 2000  # most lines one call shows
MAX_BYTES = 50 * 1024  # most bytes (UTF-8) of lines one call shows, newlines between them included
BINARY_SNIFF_BYTES = 8192  # a NUL byte this close to the start means the file is not text
READ_CHUNK_BYTES = 1024 * 1024  # beyond Ink: the file is read in pieces this size, never whole
EMPTY_FILE_NOTE = "[File is empty.]"
_KB = f"{MAX_BYTES // 1024}KB"

DESCRIPTION = (
    f"Read a text file in the workspace. Shows at most {MAX_LINES} lines or {_KB}, whichever comes first; "
    "a note at the end says which offset to use to read on. Use offset and limit to read part of a large file. "
    "Relative paths start at the workspace root; files outside the workspace cannot be read."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path of the file, relative to the workspace root (or absolute)"},
        "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start reading from"},
        "limit": {"type": "integer", "minimum": 1, "description": "Most lines to read (default: to the end)"},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def create_read_tool(workspace: str | os.PathLike[str]) -> Tool:
    """The ``read`` tool for files under ``workspace``."""
    root = os.path.realpath(workspace)  # the workspace may itself sit behind a symlink (/tmp on macOS)

    def execute(args: dict[str, Any], signal: AbortSignal | None) -> ToolOutput:
        signal = signal or NEVER_ABORTED
        if signal.aborted:
            return _error("the read was cancelled before it started.")
        path = args.get("path")
        if path is not None and not isinstance(path, str):
            return _error(f"path must be a string, not {type(path).__name__}.")
        if not path or not path.strip():
            return _error("path must not be empty.")
        numbers: dict[str, int | None] = {}
        for name in ("offset", "limit"):  # the loop checks the schema, but execute may be called directly
            value = args.get(name)
            if isinstance(value, float) and value.is_integer():
                value = int(value)  # a JSON number may arrive as 5.0
            if value is not None and (type(value) is not int or value < 1):
                return _error(f"{name} must be a whole number of at least 1, not {value!r}.")
            numbers[name] = value
        try:
            return _read(root, path, numbers["offset"] or 1, numbers["limit"], signal)
        except (OSError, ValueError) as e:  # anything unforeseen (ValueError: a NUL in the path)
            return _error(f"could not read {_quote(path)}: {getattr(e, 'strerror', None) or e}")

    return {
        "name": "read",
        "description": DESCRIPTION,
        "parameters": PARAMETERS,
        "execute": execute,
        "concurrencySafe": True,  # it only reads, so the loop may run it beside other reads
    }


def _read(root: str, path: str, offset: int, limit: int | None, signal: AbortSignal = NEVER_ABORTED) -> ToolOutput:
    # realpath follows every symlink and ".." on the way, so what is checked is where the open lands.
    real = os.path.realpath(os.path.join(root, path))  # an absolute path replaces root here
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        return _error(f"{_quote(path)} is outside the workspace ({root}); only files inside it can be read.")
    try:
        mode = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return _error(f"file not found: {_quote(path)}")
    except PermissionError:
        return _error(f"permission denied: {_quote(path)}")
    if stat.S_ISDIR(mode):
        return _error(f"{_quote(path)} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        return _error(f"{_quote(path)} is not a regular file.")  # a FIFO or device would block or never end
    try:
        fd = open_inside(root, os.path.relpath(real, root))
    except PermissionError:
        return _error(f"permission denied: {_quote(path)}")
    except OSError:  # ELOOP, ENOTDIR, ENOENT: a folder or file was swapped after the check above
        return _error(f"{_quote(path)} changed while it was being opened; it was not read.")
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # what was opened, not what was checked
            return _error(f"{_quote(path)} is not a regular file.")
        if b"\0" in file.read(BINARY_SNIFF_BYTES):  # beyond Ink: decided before reading on
            return _error(f"{_quote(path)} is a binary file; only text files can be read.")
        file.seek(0)
        return _read_page(file, offset, limit, signal)


def open_inside(root: str, relative: str) -> int:
    """Open ``root/relative`` read-only without following any symlink, one component at a
    time (``openat``), so a folder swapped for a symlink after the realpath check cannot lead
    outside; ``O_NONBLOCK`` so a FIFO swapped in never blocks the open. Beyond Ink."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if os.open not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
        return os.open(os.path.join(root, relative), flags)  # no openat here (Windows): the check must do
    parts = [part for part in relative.split(os.sep) if part not in ("", ".")]
    current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=current)
            os.close(current)
            current = inner
        return os.open(parts[-1], flags, dir_fd=current)
    finally:
        os.close(current)


def _read_page(file: BinaryIO, offset: int, limit: int | None, signal: AbortSignal) -> ToolOutput:
    """The page at ``offset``: skip to it, take its lines, count the rest — in bounded reads.

    Memory stays near READ_CHUNK_BYTES + MAX_BYTES whatever the file's size; the abort signal
    is checked between reads (beyond Ink, which reads the whole file first).
    """
    skipped = _skip_lines(file, offset - 1, signal)  # beyond Ink: streamed, never held whole
    if skipped is None:
        return _error("the read was cancelled.")
    if skipped < offset - 1:
        return _error(f"Offset {offset} is beyond end of file ({skipped} lines total).")
    window = MAX_LINES + 1 if limit is None else min(limit, MAX_LINES + 1)
    lines: list[bytes] = []  # the page's lines (at most MAX_LINES + 1, each at most MAX_BYTES + 1 bytes)
    first_size = 0  # bytes of the first line, if it alone is over the cap
    used = 0
    while len(lines) < window:
        raw = file.readline(MAX_BYTES + 2)
        if raw == b"":
            break
        whole = raw.endswith(b"\n")
        line = raw[:-1] if whole else raw
        if whole and line.endswith(b"\r"):
            line = line[:-1]  # CRLF is shown as LF
        if not whole and len(raw) == MAX_BYTES + 2:  # a line longer than the cap: measured, never kept
            size = len(raw) + _skip_to_line_end(file, signal)
            first_size = size if not lines else 0
            lines.append(raw)  # over the cap: _page stops before it
            break
        used += len(line) + (1 if lines else 0)
        lines.append(line)
        if used > MAX_BYTES + 1:
            break  # one line past the cap: enough for _page to see the cap was reached
        if signal.aborted:
            return _error("the read was cancelled.")
    rest = _skip_lines(file, None, signal)
    if rest is None:
        return _error("the read was cancelled.")
    total = offset - 1 + len(lines) + rest
    if not lines:
        if offset == 1:
            return {"output": EMPTY_FILE_NOTE, "isError": False}
        return _error(f"Offset {offset} is beyond end of file ({total} lines total).")
    if first_size:
        more = f" Use offset={offset + 1} to continue." if offset < total else ""
        note = f"[Line {offset} is {first_size} bytes, over the {_KB} limit, and cannot be shown by this tool.{more}]"
        return {"output": note, "isError": False}
    return {"output": _page(lines, offset, limit, total), "isError": False}


def _skip_lines(file: BinaryIO, count: int | None, signal: AbortSignal) -> int | None:
    """Read past ``count`` lines (all of them if None) in READ_CHUNK_BYTES reads, leaving the file
    at the start of the next line; how many were passed, or None if the signal aborted."""
    passed, partial = 0, False  # partial: bytes after the last "\n" seen
    while count is None or passed < count:
        if signal.aborted:
            return None
        chunk = file.read(READ_CHUNK_BYTES)
        if not chunk:
            return passed + (1 if partial else 0)  # a last line without its "\n" is a line
        newlines = chunk.count(b"\n")
        if count is not None and passed + newlines >= count:
            at = -1
            for _ in range(count - passed):
                at = chunk.index(b"\n", at + 1)
            file.seek(at + 1 - len(chunk), os.SEEK_CUR)  # back to just after the count-th line
            return count
        passed += newlines
        partial = not chunk.endswith(b"\n")
    return passed


def _skip_to_line_end(file: BinaryIO, signal: AbortSignal) -> int:
    """Read to the end of the current line; how many bytes it had (its "\n" and "\r" not counted)."""
    size = 0
    while not signal.aborted:
        chunk = file.read(READ_CHUNK_BYTES)
        at = chunk.find(b"\n")
        if at != -1:
            file.seek(at + 1 - len(chunk), os.SEEK_CUR)
            return size + at - (1 if chunk[:at].endswith(b"\r") else 0)
        size += len(chunk)
        if len(chunk) < READ_CHUNK_BYTES:
            return size
    return size


def _quote(path: str) -> str:
    """A path as an error message shows it: at most 200 characters (beyond Ink)."""
    return path if len(path) <= 200 else f"{path[:200]}… ({len(path)} characters)"


def _page(lines: list[bytes], offset: int, limit: int | None, total: int) -> str:
    """``lines`` (the file's lines from ``offset`` on, as far as the page can reach) as text,
    within the user's ``limit`` and the two caps, plus the note."""
    end = total if limit is None else min(total, offset - 1 + limit)  # 0-based end of the user's window
    shown: list[str] = []
    used = 0  # bytes of output so far
    capped_by = ""
    for raw in lines[: end - offset + 1]:
        if len(shown) == MAX_LINES:
            capped_by = "lines"
            break
        text = raw.decode("utf-8", "replace")
        size = len(text.encode()) + (1 if shown else 0)  # the "\n" joining it to the previous line
        if used + size > MAX_BYTES:
            capped_by = "bytes"  # whole lines only, so no character is ever cut in half
            break
        shown.append(text)
        used += size

    if not shown:  # the first line alone is over the cap
        size = len(lines[0].decode("utf-8", "replace").encode())
        more = f" Use offset={offset + 1} to continue." if offset < total else ""
        return f"[Line {offset} is {size} bytes, over the {_KB} limit, and cannot be shown by this tool.{more}]"
    body, last = "\n".join(shown), offset + len(shown) - 1
    if capped_by == "lines":
        return f"{body}\n\n[Showing lines {offset}-{last} of {total}. Use offset={last + 1} to continue.]"
    if capped_by == "bytes":
        return f"{body}\n\n[Showing lines {offset}-{last} of {total} ({_KB} limit). Use offset={last + 1} to continue.]"
    if end < total:  # the user's limit stopped early
        return f"{body}\n\n[{total - end} more lines in file. Use offset={end + 1} to continue.]"
    return body


def _error(message: str) -> ToolOutput:
    return {"output": f"Error: {message}", "isError": True}
