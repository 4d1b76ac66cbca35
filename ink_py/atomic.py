"""Files written for a user: to a temporary file beside the target, then renamed — beyond Ink.

Whatever ink_py writes for someone (a saved chat session, a recording, a report, the course's
progress file) goes through here, so a failure half-way (a full disk, an unencodable
character, Ctrl-C) leaves the file that was there untouched: the new content appears whole,
or not at all. ``os.replace`` is atomic on POSIX and on Windows for a file in the same folder.
A file written as a run goes (``--trace``) is ``ReplacedWhenClosed``: beside, renamed at the end.
Through a link, the file it names is replaced and the link stays.

    >>> import tempfile, pathlib; folder = tempfile.TemporaryDirectory()
    >>> target = pathlib.Path(folder.name) / "notes.txt"
    >>> write_text_atomically(target, "读取 README\\n"); target.read_text(encoding="utf-8")
    '读取 README\\n'
    >>> folder.cleanup()

``write_new_bytes_atomically`` (and ``…_text_…``) is the same for a name that must be new (a backup, a numbered
file): the name is claimed with a hard link, which fails if it exists — two writers never
share a name, and neither can overwrite what the other wrote.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` whole, or leave ``path`` as it was (and no temporary file behind)."""
    target = Path(path).resolve()  # through a link: the file it names is replaced, the link stays
    temporary = written_beside(target, data)
    try:
        os.replace(temporary, target)
    except BaseException:
        discard(temporary)
        raise


def write_new_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path``, which must not exist: FileExistsError if it does (or appears
    meanwhile), and then nothing is changed. The content appears whole, under a name no one else got.

    >>> import tempfile, pathlib; folder = tempfile.TemporaryDirectory()
    >>> target = pathlib.Path(folder.name) / "backup-1.py"
    >>> write_new_bytes_atomically(target, b"mine\\n")
    >>> write_new_bytes_atomically(target, b"theirs\\n")
    Traceback (most recent call last):
    FileExistsError: ...
    >>> target.read_bytes()
    b'mine\\n'
    >>> folder.cleanup()
    """
    target = Path(path)
    temporary = written_beside(target, data)
    try:
        os.link(temporary, target)  # atomic, and refuses an existing name
    finally:
        discard(temporary)


def write_new_text_atomically(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """``write_new_bytes_atomically`` of ``text``, encoded first."""
    write_new_bytes_atomically(path, text.encode(encoding))


def written_beside(target: Path, data: bytes) -> str:
    """A temporary file in ``target``'s folder holding ``data``, flushed to disk, with the
    permissions ``target`` has (or a new file would get)."""
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as sink:
            sink.write(data)
            sink.flush()
            os.fsync(sink.fileno())
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)  # keep the old file's permissions
        else:
            os.chmod(temporary, 0o666 & ~UMASK)  # what open() would have given a new file
    except BaseException:
        discard(temporary)
        raise
    return temporary


def discard(temporary: str) -> None:
    try:
        os.unlink(temporary)
    except OSError:
        pass


def write_text_atomically(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """``write_bytes_atomically`` of ``text`` encoded first: an unencodable character fails
    before anything is touched."""
    write_bytes_atomically(path, text.encode(encoding))


def current_umask() -> int:
    """The process's umask (reading it means setting it: set straight back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = current_umask()  # read once, at import: os.umask is process-wide, not thread-safe


class ReplacedWhenClosed(io.TextIOWrapper):
    """A text file for ``path`` that is written beside it as a run goes (a ``--trace``) and
    renamed over it when closed — unless a write failed: then ``path`` keeps what it had.

    >>> import tempfile, pathlib; folder = tempfile.TemporaryDirectory()
    >>> target = pathlib.Path(folder.name) / "trace.jsonl"; _ = target.write_text("old\\n")
    >>> with ReplacedWhenClosed(target) as trace:
    ...     _ = trace.write("new\\n"); target.read_text()
    'old\\n'
    >>> target.read_text()
    'new\\n'
    >>> folder.cleanup()
    """

    def __init__(self, path: str | os.PathLike[str], encoding: str = "utf-8") -> None:
        self.target = Path(path).resolve()  # as write_bytes_atomically: the link stays
        handle, self.temporary = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".tmp", dir=self.target.parent)
        super().__init__(os.fdopen(handle, "wb"), encoding=encoding)
        self.failed = False

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except BaseException:
            self.failed = True
            raise

    def flush(self) -> None:
        try:
            super().flush()
        except BaseException:
            self.failed = True
            raise

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()
        except BaseException:
            self.failed = True
            raise
        finally:
            self.settle()

    def settle(self) -> None:
        """Rename the finished file over the target, or drop it if a write failed."""
        try:
            if self.failed:
                os.unlink(self.temporary)
                return
            if self.target.exists():
                os.chmod(self.temporary, self.target.stat().st_mode & 0o7777)
            else:
                os.chmod(self.temporary, 0o666 & ~UMASK)
            os.replace(self.temporary, self.target)
        except OSError:
            pass  # the temporary file stays beside the target: nothing was destroyed
