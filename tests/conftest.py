"""Which implementation the tests check: the reference, or a student's copy (``pytest --impl``).

Every test that checks the package's code reaches it through the ``ink`` fixture, the same one the
course's checks use (``ink_py/course/checks/implementation.py``): ``ink.shared`` is
``<package>.provider.shared``. Under ``--impl`` the course's plugin keeps only those tests
(``ink_py/course/checks/plugin.py``): the others check nothing of the copy. On the reference, the
course speaks English (``INK_COURSE_LANG=en``), whatever the developer's locale: the tests compare its
words.
"""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, settings

from ink_py.course.checks.implementation import ink
from ink_py.course.checks.plugin import hypothesis_home

__all__ = ["ink"]

# memprobe/ is put on a child's PYTHONPATH (tests/raw_servers.py), never imported here: its
# sitecustomize would clash with the interpreter's own (Debian's python3 ships one) under --doctest-modules.
# clients/ holds the client matrix's drivers, run as processes (tests/test_client_matrix.py): each imports
# its client library, which a bare install does not have.
collect_ignore = ["memprobe", "clients"]


# Hypothesis's two clocks are off in the project's runs: its deadline (200 ms an example) and its
# too_slow health check (a second to generate the first examples) time the wall clock of a machine the
# suite shares with its own workers (-n auto) and anyone else's work, so they failed runs under load
# (test_model_server's and test_dialect_model's random bodies). No test here is about how fast an
# example is made or run: speed is measured in benchmarks/, never asserted in a test.
settings.register_profile("ink_py", deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("impl", None) is None:
        os.environ["INK_COURSE_LANG"] = "en"
        settings.load_profile("ink_py")  # under --impl, the course's profile (ink_py/course/checks/plugin.py)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without the plugin, no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (the README's command): two workers a core, at most 16. Much of this suite's time is a
    wait (a server, a child process, a timeout), which another worker's test fills: on 2 cores with one of
    them busy, 4 workers ran it in 108 s and 2 in 148 s. PYTEST_XDIST_AUTO_NUM_WORKERS still decides."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own reading of it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(2 * cores, 16)


COURSE_CACHE_WAS_THERE: list[bool] = []  # set by the run's main process (xdist's controller, or the only one)


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):
        COURSE_CACHE_WAS_THERE.append(hypothesis_home().exists())


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The course runs the tests start make its Hypothesis folder in the temp folder (plugin.hypothesis_home):
    a run leaves the temp folder as it found it, so a folder this run made goes; a user's own stays."""
    if COURSE_CACHE_WAS_THERE and not COURSE_CACHE_WAS_THERE.pop():
        shutil.rmtree(hypothesis_home(), ignore_errors=True)
