"""Where the course finds what it uses, however ink_py was installed: its checks, its pages, the whole suite.

- ``CHECKS_DIR``: the exercises' own tests, ``ink_py/course/checks/`` — a test package shipped in
  the wheel, run with their own configuration (``CHECKS_INI``), never the student's folder's.
- ``project_page``: the pages a command points to (walkthrough.md, docs/second-article.md). The
  repository keeps them at its top; setup.cfg maps that folder to the data-only package
  ``ink_py.pages`` (``package_dir``), so a wheel holds them as ``ink_py/pages/…``. From a checkout
  (or an editable install, which does not copy package data) the top of the source is read.
- ``whole_suite_tests``: the project's whole test suite — only in a source checkout (or the sdist
  unpacked): ``tests/`` beside the package. A wheel has none.

    >>> CHECKS_INI.name, project_page("walkthrough.md").name
    ('checks.ini', 'walkthrough.md')
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # ink_py (or wherever it was installed)
SOURCE_ROOT = PACKAGE_DIR.parent  # a source checkout: tests/, setup.cfg and the pages live here
CHECKS_DIR = PACKAGE_DIR / "course" / "checks"
CHECKS_INI = CHECKS_DIR / "checks.ini"
PAGES_DIR = PACKAGE_DIR / "pages"  # setup.cfg: package_dir ink_py.pages = . (the top of the source)


def project_page(relative: str) -> Path:
    """The page ``relative`` (``"walkthrough.md"``, ``"docs/second-article.md"``): the package's copy,
    else the source checkout's — the folder ``ink_py.pages`` is mapped from."""
    shipped = PAGES_DIR / relative
    return shipped if shipped.is_file() else SOURCE_ROOT / relative


def whole_suite_tests() -> Path | None:
    """The project's ``tests/`` (a source checkout, or the sdist unpacked), or None (a wheel)."""
    tests = SOURCE_ROOT / "tests"
    return tests if (tests / "conftest.py").is_file() and (SOURCE_ROOT / "setup.cfg").is_file() else None
