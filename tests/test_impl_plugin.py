"""The pytest11 entry point does nothing in another project's pytest run (issue 35 item 4).

ink_py is installed in this environment, so pytest loads ``ink_py/course/impl_option.py`` in every
run of every project. A temporary project with its own test and its own ``--strict-markers``: no
``--impl`` in ``--help``, no ex1 … ex9 among its markers, its test runs as it would without ink_py;
``--impl`` given there brings the course's plugin (and ``-p no:`` the entry point turns it off).
"""

import subprocess
import sys
from pathlib import Path

from ink_py.course.impl_option import wants_the_course


def pytest_in(project: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120)


def test_another_projects_run_has_no_impl_option_no_marker_and_no_hook_of_ours(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    (tmp_path / "test_theirs.py").write_text(
        "def test_theirs(pytestconfig):\n"
        "    assert pytestconfig.pluginmanager.get_plugin('ink_py.course.checks.plugin') is None\n"
        "    assert not [m for m in pytestconfig.getini('markers') if m.startswith('ex1:')]\n"
    )
    (tmp_path / "test_marked.py").write_text("import pytest\n\n@pytest.mark.ex1\ndef test_ex1_is_theirs():\n    pass\n")
    helped = pytest_in(tmp_path, "--help")
    assert helped.returncode == 0 and "--impl" not in helped.stdout
    markers = pytest_in(tmp_path, "--markers")
    assert "ex1:" not in markers.stdout
    ran = pytest_in(tmp_path, "-q", "test_theirs.py")
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout + ran.stderr
    strict = pytest_in(tmp_path, "-q", "test_marked.py")  # their --strict-markers: no ex1 of ours for them
    assert strict.returncode != 0 and "'ex1' not found in `markers` configuration option" in strict.stdout
    asked = pytest_in(tmp_path, "--impl", "nowhere", "--help")
    assert asked.returncode == 0 and "--impl" in asked.stdout  # given --impl, the course's plugin is there


def test_only_an_impl_argument_wakes_the_plugin():
    assert wants_the_course(["-x", "--impl", "my_ink"]) and wants_the_course(["--impl=../my_ink", "-q"])
    assert not wants_the_course([]) and not wants_the_course(["-k", "impl", "--implicit"])
    assert not wants_the_course(["--", "--impl"])  # after --, test paths
