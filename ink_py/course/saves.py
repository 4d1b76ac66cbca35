"""A save under the working copy, seen without a dependency: file times and sizes, polled — ``exercise watch``.

``snapshot`` walks the folder (``os.scandir``, links not followed) and keeps each file's modification
time, size and inode; two snapshots differ when a file was saved, added, removed or replaced (an
editor that writes a new file and renames it changes the inode even within one tick of a coarse
clock). What the course writes itself (the progress file and its temporary files, ``.reset/``,
``__pycache__``) and what an editor writes beside the file it saves (``is_ignored``: vim's ``.swp``
and ``4913``, a ``backup~``, emacs's ``.#lock`` and ``#autosave#``, JetBrains' safe-write files) are
left out, so they never start a check. At most ``MAX_FILES`` entries are looked at: a huge folder
costs a bounded walk, and ``Snapshot["complete"]`` says it was cut.

    >>> [is_ignored(n) for n in ("shared.py", ".shared.py.swp", "shared.py~", ".#shared.py", "4913", "#shared.py#")]
    [False, True, True, True, True, True]
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TypedDict

MAX_FILES = 5_000  # entries walked at most (a copy of ink_py holds about 100)
IGNORED = re.compile(
    r"^\."  # hidden: .exercises.json and its .…tmp, .reset/, .name.swp, .#lock, .hypothesis/
    r"|~$|^#.*#$|^4913$"  # a backup~, emacs's #autosave#, the file vim writes to test a folder
    r"|\.sw[a-px]$|\.py[co]$|^__pycache__$"  # vim's swap files (and its .swx probe) wherever they are; bytecode
    r"|___jb_(?:tmp|old)___$"  # JetBrains' safe write
)


class Snapshot(TypedDict):
    files: dict[str, tuple[int, int, int]]  # relative path → (mtime in ns, size, inode)
    complete: bool  # False: MAX_FILES entries were walked and the rest left out


def is_ignored(name: str) -> bool:
    """Is ``name`` (a file's or folder's, without its path) left out of a snapshot?"""
    return IGNORED.search(name) is not None


def snapshot(folder: Path, limit: int = MAX_FILES) -> Snapshot:
    """Every file under ``folder`` that is not ignored, with its time, size and inode; a folder that
    cannot be read (or has gone) adds nothing. ``limit`` entries are walked at most."""
    files: dict[str, tuple[int, int, int]] = {}
    todo, walked = [(str(folder), "")], 0
    while todo:
        path, relative = todo.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if is_ignored(entry.name):
                        continue
                    walked += 1
                    if walked > limit:
                        return {"files": files, "complete": False}
                    inside = f"{relative}{entry.name}"
                    if entry.is_dir(follow_symlinks=False):
                        todo.append((entry.path, inside + "/"))
                    elif entry.is_file(follow_symlinks=False):
                        try:
                            facts = entry.stat(follow_symlinks=False)
                        except OSError:  # removed since it was listed
                            continue
                        files[inside] = (facts.st_mtime_ns, facts.st_size, facts.st_ino)
        except OSError:  # a folder not readable, or removed while walked: what was seen is kept
            continue
    return {"files": files, "complete": True}
