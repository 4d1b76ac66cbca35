"""The project as a user gets it: its files as a checkout has them, and the sdist and wheel built from them.

``project_files`` reads the tree without git (the sdist's own tests run where there is none): every
file but what .gitignore leaves out. ``build`` does what ``python -m build --no-isolation`` does, through
the same PEP 517 hooks of setuptools and with no network: the sdist from a copy of the tree, then the
wheel from that sdist unpacked, so a file the sdist forgets is missing from the wheel too. Used by
tests/test_packaging.py and the installs of .ci/test_installs.py and .ci/test_wheel_course.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from fnmatch import fnmatch
from pathlib import Path
from typing import NamedTuple

from .helpers import ROOT

SDIST_ONLY = {"PKG-INFO"}  # what building the sdist adds at its top (and its ink_py.egg-info/, ignored)


class Built(NamedTuple):
    sdist: Path  # ink_py-<version>.tar.gz
    unpacked: Path  # the sdist unpacked: the folder the wheel was built from
    wheel: Path  # ink_py-<version>-py3-none-any.whl


def ignored(folder: Path) -> list[str]:
    """The patterns of ``folder``'s .gitignore, each a name (``/rec/`` is ``rec``); a cache such as
    .mypy_cache/ ignores itself whole with ``*``."""
    gitignore = folder / ".gitignore"
    lines = gitignore.read_text(encoding="utf-8").splitlines() if gitignore.is_file() else []
    return [line.strip().strip("/") for line in lines if line.strip() and not line.startswith("#")]


def project_files(root: Path = ROOT) -> set[str]:
    """Every file of the project under ``root``, relative, as a checkout (or the sdist unpacked) has it:
    what git would list, read without git — less the top .gitignore's patterns, the repository's own
    ``.git``, and the folders whose own .gitignore ignores them whole (``*``: .mypy_cache/, .ruff_cache/)."""
    patterns = [".git", *ignored(root)]
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        if here != root and "*" in ignored(here):
            dirs.clear()
            continue
        dirs[:] = [d for d in dirs if not any(fnmatch(d, p) for p in patterns)]
        found.update(str((here / f).relative_to(root)) for f in files if not any(fnmatch(f, p) for p in patterns))
    return found - SDIST_ONLY


def copy_project(target: Path, root: Path = ROOT) -> Path:
    for name in project_files(root):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target / name)
    return target


def backend(hook: str, source: Path, dist: Path) -> Path:
    """Run setuptools' PEP 517 ``hook`` (build_sdist, build_wheel) in ``source``: the file it built."""
    code = f"from setuptools import build_meta; print(build_meta.{hook}({str(dist)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dist / done.stdout.splitlines()[-1]


def build(folder: Path, root: Path = ROOT) -> Built:
    """The sdist of a copy of ``root``, and the wheel of that sdist unpacked, all under ``folder``."""
    dist = folder / "dist"
    dist.mkdir(parents=True)
    sdist = backend("build_sdist", copy_project(folder / "checkout", root), dist)
    with tarfile.open(sdist) as archive:
        archive.extractall(folder / "unpacked", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    [unpacked] = (folder / "unpacked").iterdir()
    return Built(sdist, unpacked, backend("build_wheel", unpacked, dist))
