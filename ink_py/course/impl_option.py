"""pytest's ``--impl DIR``, from any folder — and nothing at all in any other pytest run.

This module is the ``pytest11`` entry point setup.cfg declares, so pytest loads it in every run of
every project in the environment. It holds one hook, ``pytest_load_initial_conftests``, which pytest
calls after reading the command line for ``-p`` and the ini file, and before parsing it for real: only
when the arguments carry ``--impl`` does it register the course's plugin (``ink_py/course/checks/
plugin.py``: the option, the markers, the checks run on the copy). Without ``--impl`` it returns at
once: no option in ``--help``, no marker, no hook of ours runs. (pytest still names the distribution
in its header, ``plugins: ink_py-…``: it lists every entry point it loaded, and only a private list
could hide it.) The checkout's own runs load the plugin through setup.cfg's ``addopts`` (``-p``),
with or without plugin autoload.

    >>> wants_the_course(["--impl", "my_ink", "-m", "ex1"]), wants_the_course(["--impl=my_ink"])
    (True, True)
    >>> wants_the_course(["-k", "impl"]), wants_the_course(["tests", "--", "--impl"])
    (False, False)
"""

from __future__ import annotations

from typing import Any

PLUGIN = "ink_py.course.checks.plugin"


def wants_the_course(args: list[str]) -> bool:
    """Whether pytest's arguments (the ini's addopts and PYTEST_ADDOPTS included) give ``--impl``."""
    for arg in args:
        if arg == "--":  # what follows is test paths only
            return False
        if arg == "--impl" or arg.startswith("--impl="):
            return True
    return False


def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list[str]) -> None:
    if wants_the_course(args):
        early_config.pluginmanager.import_plugin(PLUGIN)  # once: a plugin already loaded by -p is kept
