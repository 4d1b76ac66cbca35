"""The working copy ``my_ink/``: the whole package copied, its exercises stubbed, put back and compared.

The copy is importable as package ``my_ink``, and it imports only itself, because ink_py uses
relative imports throughout. ``start`` replaces each region of the exercise with its stub; starting
more exercises stubs more regions in the same copy and leaves every other line alone. The
progress file, ``DIR/.exercises.json``, is ``state.py``'s. Sections: making the copy and ``start``,
how a folder is shown to the student, ``reset`` (its backups never overwrite each other) and
``diff`` (side by side, in columns). Every file is written through ``ink_py/atomic.py``.

    >>> fit("parse_frame", 8) + "|", fit("解析一行", 6) + "|", fit("解析", 6) + "|"
    ('parse_fr|', '解析… |', '解析  |')
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from ..atomic import write_new_text_atomically, write_text_atomically
from .catalogue import EXERCISES, ExerciseError, Region, reading, title
from .language import columns, course_language, say
from .places import CHECKS_DIR, PACKAGE_DIR, PAGES_DIR
from .state import MADE_BY, STATE_FILE, is_working_copy, load_state, now, save_state
from .stubs import (
    body_of,
    find_regions,
    group_by_file,
    is_stub,
    package_regions,
    region_name,
    replace_body,
    stub_body,
)

DEFAULT_DIR = "my_ink"

# ── the copy ──────────────────────────────────────────────────────────────────────────

RESERVED_NAMES = {"ink_py", "tests", "pytest", "_pytest", "hypothesis", "requests", "urllib3"}


def check_copy_name(folder: Path) -> None:
    name = folder.name
    if not name.isidentifier() or name in RESERVED_NAMES or name in sys.stdlib_module_names:
        raise ExerciseError(say("bad_name", folder=folder))


def left_out(directory: str, names: list[str]) -> set[str]:
    """What the copy leaves out: bytecode, a progress file, and what is the reference's, not the code —
    its checks (they test the copy from the package) and its pages (a wheel's ink_py/pages/)."""
    skipped = {name for name in names if name in ("__pycache__", STATE_FILE) or name.endswith(".pyc")}
    return skipped | {name for name in names if Path(directory, name) in (CHECKS_DIR, PAGES_DIR)}


def make_copy(folder: Path) -> None:
    """Copy the reference package to ``folder`` (which must not exist, or be empty) in one step."""
    check_copy_name(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))  # same disk: a rename
    try:
        building = scratch / folder.name
        shutil.copytree(PACKAGE_DIR, building, ignore=left_out)
        hints = load_state(Path.cwd()).get("hints", {})  # hints read before the copy existed
        save_state(building, {"made_by": MADE_BY, "started": [], "checks": {}, "hints": hints})
        if folder.exists():
            folder.rmdir()  # empty: checked by the caller
        os.replace(building, folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def start(number: int, folder: Path) -> str:
    """Stub exercise ``number`` in the copy at ``folder`` (made if missing); what was done, in words."""
    if PACKAGE_DIR == folder.resolve() or is_working_copy(PACKAGE_DIR):
        raise ExerciseError(say("from_reference"))
    if folder.exists() and not folder.is_dir():
        raise ExerciseError(say("is_a_file", folder=folder))
    made = False
    if not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
        make_copy(folder)
        made = True
    elif not is_working_copy(folder):
        raise ExerciseError(say("not_a_copy", folder=folder, state=STATE_FILE))
    state = load_state(folder)
    exercise = EXERCISES[number]
    language = course_language()  # the stub's TODO lines: in the student's language
    if number in state.get("started", []):
        return say("already_started", n=number, slug=exercise["slug"], folder=shown(folder))

    # Work out every file first; write only when all of them are right.
    new_texts: dict[Path, str] = {}
    stubs: list[str] = []
    for relative, regions in group_by_file(package_regions()[number]).items():
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        target = folder / relative
        if not target.exists():  # a module added to ink_py after the copy was made
            target.parent.mkdir(parents=True, exist_ok=True)
            text = reference
        else:
            text = target.read_text(encoding="utf-8")
        mine = copy_regions(text, folder, relative, number, len(regions))
        for region, ours in reversed(list(zip(regions, mine, strict=True))):
            if is_stub(text, ours):
                continue
            if body_of(text, ours) != body_of(reference, region):
                where = f"{shown(folder)}/{relative}:{ours['start'] + 1}"
                raise ExerciseError(say("region_edited", where=where, n=number))
            text = replace_body(text, ours, stub_body(reference, {**region, "label": ours["label"]}, language))
        compile(text, str(target), "exec")  # a stub always compiles; make sure before writing
        new_texts[target] = text
        for ours, region in zip([r for r in find_regions(text) if r["number"] == number], regions, strict=False):
            name = region_name(reference, {**region, "label": ours["label"] or region["label"]})
            stubs.append(f"{shown(folder)}/{relative}:{ours['start'] + 1}" + (f"  ({name})" if name else ""))
    for target, text in new_texts.items():
        write_text_atomically(target, text)
    state["started"] = sorted({*state.get("started", []), number})
    save_state(folder, state)
    where = shown(folder)
    return "\n".join(
        [
            say("started", n=number, slug=exercise["slug"], title=title(number)),
            say("made_copy", folder=where, package=folder.name) if made else say("in_copy", folder=where),
            *[f"  {stub}" for stub in stubs],
            say("read_first", reading=reading(number)),
            say("then_check", n=number, dir=dir_argument(folder)),
            say("stuck_hint", n=number, dir=dir_argument(folder)),
            say("watch_it", demo=demo_command(folder)),
        ]
    )


def copy_regions(text: str, folder: Path, relative: str, number: int, expected: int) -> list[Region]:
    """Exercise ``number``'s regions in the copy's ``relative`` file; ExerciseError unless all are there."""
    mine = [r for r in find_regions(text, f"{shown(folder)}/{relative}") if r["number"] == number]
    if len(mine) != expected:
        raise ExerciseError(say("region_lost", where=f"{shown(folder)}/{relative}", n=number))
    return mine


# ── a folder, as the student types it ─────────────────────────────────────────────────


def demo_command(folder: Path) -> str:
    """``python -m my_ink demo``: the copy runs its own demo — from the folder it lies in."""
    parent = folder.resolve().parent
    where = "" if parent == Path.cwd().resolve() else f"cd {shlex.quote(shown(parent))} && "
    return f"{where}python -m {folder.name} demo"


def shown(folder: Path) -> str:
    """A folder as the user would type it: relative to the current directory when inside it."""
    try:
        return str(folder.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(folder)


def dir_argument(folder: Path) -> str:
    return "" if folder.resolve() == Path(DEFAULT_DIR).resolve() else f" {shlex.quote(shown(folder))}"


# ── reset and diff ────────────────────────────────────────────────────────────────────


def reset(number: int, folder: Path, yes: bool = False) -> str:
    """Put exercise ``number``'s stub back in the copy, after confirmation; every other line stays."""
    if not is_working_copy(folder):
        raise ExerciseError(say("no_copy", folder=shown(folder)))
    state = load_state(folder)
    exercise = EXERCISES[number]
    language = course_language()
    if number not in state.get("started", []):
        raise ExerciseError(say("not_started_reset", n=number, folder=shown(folder)))
    new_texts: dict[Path, str] = {}
    kept: list[str] = []  # the student's code, saved before it is replaced
    for relative, regions in group_by_file(package_regions()[number]).items():
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        target = folder / relative
        text = target.read_text(encoding="utf-8")
        mine = copy_regions(text, folder, relative, number, len(regions))
        for region, ours in reversed(list(zip(regions, mine, strict=True))):
            kept.append(f"# {relative}:{ours['start'] + 1}\n" + "\n".join(body_of(text, ours)))
            text = replace_body(text, ours, stub_body(reference, {**region, "label": ours["label"]}, language))
        compile(text, str(target), "exec")
        new_texts[target] = text
    if not yes:
        if sys.stdin is None or not sys.stdin.isatty():
            raise ExerciseError(say("reset_needs_terminal"))
        asking = say("reset_ask", n=number, slug=exercise["slug"], folder=shown(folder), count=len(kept))
        print(asking, end="", flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            return say("nothing_changed")
    backup = keep_backup(folder / ".reset", f"exercise-{number}-{now().replace(':', '')}", "\n\n".join(reversed(kept)))
    for target, text in new_texts.items():
        write_text_atomically(target, text)
    state.get("checks", {}).pop(str(number), None)
    save_state(folder, state)
    return "\n".join(
        [
            say("reset_done", n=number, slug=exercise["slug"], folder=shown(folder)),
            say("your_code_was", backup=shown(backup)),
            say("then_check", n=number, dir=dir_argument(folder)),
        ]
    )


def keep_backup(where: Path, stem: str, code: str) -> Path:
    """``code`` in ``where/stem.py``, or ``stem-2.py``, ``stem-3.py`` …: the first name no backup has —
    claimed atomically, so two resets in one second (or at once) never overwrite each other's."""
    where.mkdir(exist_ok=True)
    for attempt in range(1, 10_000):
        backup = where / (f"{stem}.py" if attempt == 1 else f"{stem}-{attempt}.py")
        try:
            write_new_text_atomically(backup, code + "\n")
            return backup
        except FileExistsError:
            continue
    raise ExerciseError(say("too_many_backups", where=shown(where), stem=stem))


def diff(number: int, folder: Path, width: int | None = None) -> str:
    """Once exercise ``number`` is green: the student's code beside the reference's, region by region."""
    import difflib

    if not is_working_copy(folder):
        raise ExerciseError(say("no_copy", folder=shown(folder)))
    state = load_state(folder)
    if state.get("checks", {}).get(str(number)) != "green":
        raise ExerciseError(say("not_green_diff", n=number, dir=dir_argument(folder)))
    width = width or shutil.get_terminal_size((120, 24)).columns
    half = max(30, (width - 3) // 2)
    out = [say("diff_heading", n=number, slug=EXERCISES[number]["slug"])]
    for relative, regions in group_by_file(package_regions()[number]).items():
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        text = (folder / relative).read_text(encoding="utf-8")
        mine = [r for r in find_regions(text) if r["number"] == number]
        for region, ours in zip(regions, mine, strict=False):
            left, right = body_of(text, ours), body_of(reference, region)
            out += ["", f"{shown(folder)}/{relative}:{ours['start'] + 2}  ·  ink_py/{relative}:{region['start'] + 2}"]
            if left == right:
                out.append(say("diff_same"))
                continue
            for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
                mark = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}[tag]
                for i in range(max(a2 - a1, b2 - b1)):
                    mine_line = left[a1 + i] if a1 + i < a2 else ""
                    their_line = right[b1 + i] if b1 + i < b2 else ""
                    out.append(f"{fit(mine_line, half)} {mark} {fit(their_line, half)}".rstrip())
    return "\n".join(out)


def fit(line: str, width: int) -> str:
    """``line`` padded or cut to ``width`` terminal columns."""
    line = line.replace("\t", "    ")
    while columns(line) > width:
        line = line[: -2 if columns(line) - width > 1 else -1]
        if columns(line) <= width - 1:
            line += "…"
            break
    return line + " " * (width - columns(line))
