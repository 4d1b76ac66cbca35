"""The ``read`` tool: a text file's lines, one page at a time — mirrors Ink's ``src/core/tools/read.ts``.

As in Ink (which follows the pi coding agent), the model names a file and may add ``offset``
(the 1-based first line) and ``limit`` (how many lines). It gets the raw lines back, no line
numbers, at most MAX_LINES lines or MAX_BYTES bytes, and a note saying where to go on::

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     _ = pathlib.Path(root, "notes.txt").write_text("one\\ntwo\\nthree\\n")
    ...     read = create_read_tool(root)["execute"]
    ...     print(read({"path": "notes.txt", "limit": 2}, None)["output"])
    ...     print(read({"path": "../notes.txt"}, None)["isError"])
    one
    two
    <BLANKLINE>
    [1 more lines in file. Use offset=3 to continue.]
    True

Beyond Ink (which reads any path it is given): the tool is confined to its workspace root; ``..``,
absolute paths and symlinks that lead outside it are refused, and the refusal shows no content.

Details the TypeScript does not spell out, decided here: CRLF endings are shown as LF; a final
"\\n" ends the last line rather than starting an empty one; a NUL byte in the first 8 KB means
"binary, refused"; an empty file reads as ``[File is empty.]``; a line over MAX_BYTES on its own
gets a note instead of a cut-off piece.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from ..abort import NEVER_ABORTED, AbortSignal
from .types import Tool, ToolOutput

MAX_LINES = 2000  # most lines one call shows
MAX_BYTES = 50 * 1024  # most bytes (UTF-8) of lines one call shows, newlines between them included
BINARY_SNIFF_BYTES = 8192  # a NUL byte this close to the start means the file is not text
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
        if (signal or NEVER_ABORTED).aborted:
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
            return _read(root, path, numbers["offset"] or 1, numbers["limit"])
        except (OSError, ValueError) as e:  # anything unforeseen (ValueError: a NUL in the path)
            return _error(f"could not read {path}: {getattr(e, 'strerror', None) or e}")

    return {
        "name": "read",
        "description": DESCRIPTION,
        "parameters": PARAMETERS,
        "execute": execute,
        "concurrencySafe": True,  # it only reads, so the loop may run it beside other reads
    }


def _read(root: str, path: str, offset: int, limit: int | None) -> ToolOutput:
    # realpath follows every symlink and ".." on the way, so what is checked is where the open lands.
    # (A symlink swapped in between this check and the open is not guarded against.)
    real = os.path.realpath(os.path.join(root, path))  # an absolute path replaces root here
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        return _error(f"{path} is outside the workspace ({root}); only files inside it can be read.")
    try:
        mode = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return _error(f"file not found: {path}")
    except PermissionError:
        return _error(f"permission denied: {path}")
    if stat.S_ISDIR(mode):
        return _error(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        return _error(f"{path} is not a regular file.")  # a FIFO or device would block or never end
    try:
        with open(real, "rb") as file:
            data = file.read()
    except PermissionError:
        return _error(f"permission denied: {path}")
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return _error(f"{path} is a binary file; only text files can be read.")

    lines = data.replace(b"\r\n", b"\n").split(b"\n")  # "\n" is never inside a UTF-8 character
    if lines[-1] == b"":
        lines.pop()  # a final "\n" ends the last line; it does not start a new one
    if not lines and offset == 1:
        return {"output": EMPTY_FILE_NOTE, "isError": False}
    if offset > len(lines):
        return _error(f"Offset {offset} is beyond end of file ({len(lines)} lines total).")
    return {"output": _page(lines, offset, limit), "isError": False}


def _page(lines: list[bytes], offset: int, limit: int | None) -> str:
    """Lines ``offset``… as text, within the user's ``limit`` and the two caps, plus the note."""
    total = len(lines)
    end = total if limit is None else min(total, offset - 1 + limit)  # 0-based end of the user's window
    shown: list[str] = []
    used = 0  # bytes of output so far
    capped_by = ""
    for raw in lines[offset - 1 : end]:
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
        size = len(lines[offset - 1].decode("utf-8", "replace").encode())
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
