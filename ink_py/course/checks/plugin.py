"""The course's pytest plugin: ``pytest --impl my_ink -m ex1 --pdb`` checks a student's copy, from anywhere.

Loaded only when asked for: by ``--impl`` (the entry point, ``impl_option.py``), by setup.cfg's and
checks.ini's ``-p``. Its hooks: ``--impl DIR``, the copy the ``ink`` fixture hands to the tests; the
markers ex1 … ex9 (``--strict-markers`` works anywhere); on a copy, Hypothesis runs the same examples
every time, keeps no database and writes nothing where the student works, and no bytecode is written
beside the checks (an installed package stays as pip left it); ``--impl`` without a test path (or
with paths inside the checks, as ``check``'s debug command) runs the package's checks with their own
configuration, wherever pytest started; and under ``--impl`` a test that does not use ``ink`` checks
nothing of the copy: it is deselected, not run on the reference and called the copy's.

    >>> inside_the_checks(["test_parse_frame.py::test_parse_frame[named-event]"], CHECKS_DIR)
    True
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from ..places import CHECKS_DIR, CHECKS_INI
from .implementation import register_markers

_wrote_bytecode: list[bool] = []  # sys.dont_write_bytecode before this run, to put back at its end


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default=None,
        metavar="DIR",
        help="test a copy of ink_py (a package folder such as my_ink) instead of the reference; without a "
        "test path, the course's checks (ink_py/course/checks)",
    )


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)
    if config.getoption("impl", None) is None:
        return
    from hypothesis import settings
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(hypothesis_home())
    settings.register_profile("course", derandomize=True, database=None, print_blob=False)
    settings.load_profile("course")
    _wrote_bytecode.append(sys.dont_write_bytecode)
    sys.dont_write_bytecode = True  # pytest's rewritten checks would land in site-packages' __pycache__


def hypothesis_home() -> Path:
    """Where the course's Hypothesis keeps what it writes: a folder of ours in the temp folder, one a user,
    reused by every course run — not the student's folder."""
    owner = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return Path(tempfile.gettempdir()) / f"ink_py-course-hypothesis-{owner}"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _wrote_bytecode:
        sys.dont_write_bytecode = _wrote_bytecode.pop()


def inside_the_checks(paths: list[str], base: Path) -> bool:
    """Whether every test path given (``file.py::test`` as pytest takes it, relative to ``base``) lies in the checks."""
    folders = [(base / path.split("::")[0]).resolve() for path in paths]
    return bool(folders) and all(folder.is_relative_to(CHECKS_DIR) for folder in folders)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--impl`` and no test path (or only paths inside the checks): the checks, with their configuration."""
    if config.getoption("impl", None) is None or config.inipath == CHECKS_INI:
        return None
    given = config.args_source == pytest.Config.ArgsSource.ARGS
    if given and not inside_the_checks(list(config.args), config.invocation_params.dir):
        return None  # paths of the project's own suite: run as given (check --all --whole-suite)
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:  # this session's capture would hide the inner one's debugger prompt
        capture.stop_global_capturing()
    args = [*config.invocation_params.args, "-c", str(CHECKS_INI), *([] if given else [str(CHECKS_DIR)])]
    return int(pytest.main(args, plugins=list(config.invocation_params.plugins or ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--impl``: only the tests that use the copy (the ``ink`` fixture) are selected."""
    if config.getoption("impl", None) is None:
        return
    kept = [item for item in items if "ink" in getattr(item, "fixturenames", ())]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
