"""What the wheel carries for the course: every package, the checks, and the pages a command names.

setup.cfg lists the packages (``ink_py.pages`` is a folder of the source, not a package, so
``find:`` cannot be used) and maps ``ink_py.pages`` to the top of the repository: whatever package
data it names from there lands in the wheel as ``ink_py/pages/…``, and every ``*.py`` file there
would land as a module. The wheel itself is built and used in .ci/test_wheel_course.py.
"""

import configparser

from ink_py.course.catalogue import EXERCISES
from ink_py.course.places import CHECKS_INI, PAGES_DIR, project_page

from .helpers import ROOT

SETUP = configparser.ConfigParser()
SETUP.read(ROOT / "setup.cfg", encoding="utf-8")


def listed(section: str, key: str) -> list[str]:
    return [line.strip() for line in SETUP[section][key].replace(",", "\n").splitlines() if line.strip()]


def test_every_package_under_ink_py_is_listed_and_the_pages_come_from_the_top():
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ink_py").rglob("__init__.py")}
    assert set(listed("options", "packages")) == packages | {"ink_py.pages"}
    assert listed("options", "package_dir") == ["ink_py.pages = ."]
    assert sorted(p.name for p in ROOT.glob("*.py")) == []  # each would be shipped as ink_py/pages/<name>.py


def test_every_page_a_command_names_is_shipped():
    shipped = listed("options.package_data", "ink_py.pages")
    assert shipped == ["walkthrough.md", "docs/*.md"]
    for exercise in EXERCISES.values():
        page = exercise["page"]
        assert page == "walkthrough.md" or (page.startswith("docs/") and page.endswith(".md")), page
        assert project_page(page).is_file()
    assert listed("options.package_data", "ink_py.course.checks") == [CHECKS_INI.name]


def test_in_a_checkout_the_pages_are_read_where_they_are():
    assert not PAGES_DIR.exists()  # only a wheel has ink_py/pages/
    assert project_page("walkthrough.md") == ROOT / "walkthrough.md"
