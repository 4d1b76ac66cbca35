"""Which implementation the tests check: the reference, or a student's copy.

Every test reaches the code through the ``ink`` fixture, so the same suite checks the
reference (``ink_py``) or a student's copy (``pytest --impl my_ink``: the option comes from
``ink_py/course/impl_option.py``, see the course exercises). ``ink.shared`` is ``<package>.provider.shared`` and so on.

On a student's copy, Hypothesis runs the same examples every time (derandomised: a check and
the report never disagree), keeps no example database and writes nothing into the student's
folder (its home is a temporary folder). On the reference, the course speaks English
(``INK_COURSE_LANG=en``), whatever the developer's locale: the tests compare its words.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

# memprobe/ is put on a child's PYTHONPATH (tests/raw_servers.py), never imported here: its
# sitecustomize would clash with the interpreter's own (Debian's python3 ships one) under --doctest-modules.
# clients/ holds the client matrix's drivers, run as processes (tests/test_client_matrix.py): each imports
# its client library, which a bare install does not have.
collect_ignore = ["memprobe", "clients"]

# Short names → module paths inside the package under test.
MODULES = {
    "shared": "provider.shared",
    "transport": "provider.transport",
    "errors": "provider.errors",
    "redaction": "provider.redaction",
    "base": "provider.base",
    "recording": "provider.recording",
    "openai_completions": "provider.openai_completions",
    "anthropic_messages": "provider.anthropic_messages",
    "openai_responses": "provider.openai_responses",
    "types": "provider.types",
    "messages": "core.messages",
    "abort": "core.abort",
    "loop": "core.loop",
    "read_tool": "core.tools.read",
    "chunks": "second_article.chunks",
    "runner": "runner",
}


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("impl", None) is None:
        os.environ["INK_COURSE_LANG"] = "en"
        return
    from hypothesis import settings
    from hypothesis.configuration import set_hypothesis_home_dir

    owner = os.getuid() if hasattr(os, "getuid") else os.getpid()  # a folder of ours, not the student's
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / f"ink_py-course-hypothesis-{owner}")
    settings.register_profile("course", derandomize=True, database=None, print_blob=False)
    settings.load_profile("course")


class Implementation:
    """The package under test; ``impl.shared`` imports ``<package>.provider.shared`` on first use."""

    def __init__(self, package: str) -> None:
        self.package = package

    def __getattr__(self, short: str) -> Any:
        if short not in MODULES:
            raise AttributeError(short)
        module = importlib.import_module(f"{self.package}.{MODULES[short]}")
        setattr(self, short, module)  # cache
        return module


def load_implementation(impl: str | None) -> Implementation:
    if impl is None:
        return Implementation("ink_py")
    folder = Path(impl).resolve()
    if not (folder / "__init__.py").is_file():
        raise pytest.UsageError(f"--impl {impl}: {folder} is not a package folder (no __init__.py)")
    sys.path.insert(0, str(folder.parent))  # the copy imports only itself: relative imports
    return Implementation(folder.name)


@pytest.fixture(scope="session")
def ink(pytestconfig: pytest.Config) -> Implementation:
    return load_implementation(pytestconfig.getoption("impl"))
