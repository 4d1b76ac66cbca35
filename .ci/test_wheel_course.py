"""The course from a wheel, in an empty folder, as a student gets it (issue 35 item 1).

The wheel is built from a copy of this checkout (``pip wheel --no-deps --no-build-isolation``: this
venv's setuptools, no network for the build), installed with pytest and Hypothesis in a fresh venv,
and the course is run from an empty folder: start 1, check 1 (red: the stub), the reference's code
in the stub, check 1 (green), hint, diff, report, ``pytest --impl my_ink -m ex1``, and
``check --all --whole-suite`` (one line: a wheel has no whole suite). Every path a command prints
exists; nothing is written into site-packages. It takes a minute (a venv, an install, several
pytest runs), so it is a step of .ci/run of its own, not part of the README's test command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.test_exercises: the reference's code put back into a stub

from tests.test_exercises import put_back  # noqa: E402

LEFT_OUT = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "node_modules", ".*")


def can_build_a_wheel() -> bool:
    try:
        import setuptools.command.bdist_wheel  # noqa: F401  # setuptools >= 70.1
    except ImportError:
        try:
            import wheel  # noqa: F401
        except ImportError:
            return False
    return True


pytestmark = pytest.mark.skipif(not can_build_a_wheel(), reason="building a wheel needs: pip install wheel")


def run(argv: list[str], cwd: Path, env: dict[str, str], code: int | None = 0) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    said = done.stdout + done.stderr
    if code is not None:
        assert done.returncode == code, (argv, said)
    assert "Traceback" not in said, said
    return said


def printed_paths(text: str) -> list[Path]:
    """Every absolute path a command printed that names a page or a file of ink_py."""
    return [Path(p) for p in re.findall(r"(/\S+?\.(?:md|py))\b", text)]


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_the_course_works_from_a_wheel_in_an_empty_folder(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=LEFT_OUT)
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source)], check=True)
    [wheel] = dist.glob("ink_py-*.whl")

    home = tmp_path / "venv"
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "INK_COURSE_LANG")}
    env.update(PATH=f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}", INK_COURSE_LANG="en")
    run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel), "pytest", "hypothesis"],
        tmp_path, env)  # fmt: skip
    site = Path(run([str(python), "-c", "import ink_py, os; print(os.path.dirname(ink_py.__file__))"], tmp_path, env))
    site = Path(str(site).strip())
    assert (site / "pages" / "walkthrough.md").is_file() and (site / "course" / "checks" / "checks.ini").is_file()
    installed = tree(site)

    work = tmp_path / "empty"
    work.mkdir()
    said = [run(["ink-py", "exercise", "start", "1"], work, env)]
    said.append(run(["ink-py", "exercise", "check", "1"], work, env, code=1))
    assert "exercise 1 · parse-frame — not written yet" in said[-1]
    put_back(work / "my_ink", 1)
    said.append(run(["ink-py", "exercise", "check", "1"], work, env))
    assert re.search(r"exercise 1 · parse-frame — all \d+ tests pass", said[-1])
    said.append(run(["ink-py", "exercise", "hint", "1"], work, env))
    said.append(run(["ink-py", "exercise", "diff", "1"], work, env))
    said.append(run(["ink-py", "exercise", "report"], work, env))
    assert "1 of 9 exercises green" in said[-1] and (work / "exercise-report.xml").is_file()
    said.append(run(["ink-py", "exercise", "check", "--all", "--whole-suite"], work, env, code=1))
    assert said[-1].startswith("error: --whole-suite needs the project's tests") and said[-1].count("\n") == 1
    straight = run(["pytest", "--impl", "my_ink", "-m", "ex1", "-q"], work, env)
    assert re.search(r"\b\d+ passed, \d+ deselected", straight) and "failed" not in straight

    everything = "\n".join(said)
    assert "clone" not in everything and "checkout of ink_py (tests/" not in everything
    pages = [p for p in printed_paths(everything) if p.suffix == ".md"]
    assert pages and all(p.is_file() for p in pages), pages  # walkthrough.md §2.1: the wheel's own copy
    assert all(p.is_relative_to(site) for p in pages)
    assert tree(site) == installed  # nothing written where ink_py is installed: no cache, no bytecode
    assert sorted(p.name for p in work.iterdir()) == ["exercise-report.json", "exercise-report.xml", "my_ink"]
