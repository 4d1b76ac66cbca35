"""pytest's ``--impl DIR``: run the project's tests on a student's copy — wherever pytest starts.

``pytest --impl my_ink -m ex1 --pdb`` must work as written, from the checkout and from the
folder the student made the copy in. A conftest would not do: pytest reads the command line
before it loads any conftest, so an unknown ``--impl`` leaves ``my_ink`` behind as a test
path. This plugin is loaded before that — from the installed package (a ``pytest11`` entry
point in setup.cfg) and from the checkout's top-level ``conftest.py`` (for runs with plugin
autoload off) — and does two things:

- it adds the ``--impl`` option (the ``ink`` fixture of tests/conftest.py reads it);
- given ``--impl`` but no test path, it runs the checkout's tests (``tests/``, with the
  checkout's setup.cfg) instead of whatever folder pytest was started in.

Without ``--impl`` it changes nothing: any other project's pytest run is left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SOURCE_ROOT = Path(__file__).resolve().parents[2]  # a source checkout: tests/ and setup.cfg live here


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--impl",
        default=None,
        metavar="DIR",
        help="test a copy of ink_py (a package folder such as my_ink) instead of the reference",
    )


def pytest_cmdline_main(config: Any) -> int | None:
    """``--impl`` without a test path: run the checkout's tests, from wherever pytest started."""
    import pytest

    if config.getoption("impl", None) is None or config.args_source != pytest.Config.ArgsSource.INVOCATION_DIR:
        return None
    tests, ini = SOURCE_ROOT / "tests", SOURCE_ROOT / "setup.cfg"
    if not (tests / "conftest.py").is_file() or not ini.is_file():
        raise pytest.UsageError(
            f"--impl: the tests are not here ({tests}); run pytest from a source checkout of ink_py"
        )
    # Same arguments, the checkout as rootdir and its tests as the path (not a loop: a path is given now).
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:  # this session's capture would hide the inner one's debugger prompt
        capture.stop_global_capturing()
    args = [*config.invocation_params.args, "--rootdir", str(SOURCE_ROOT), "-c", str(ini), str(tests)]
    return int(pytest.main(args, plugins=list(config.invocation_params.plugins or ())))
