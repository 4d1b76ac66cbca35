"""Which implementation a test checks: the reference, or a student's copy — the ``ink`` fixture.

Every exercise test reaches the code through ``ink``: ``ink.shared`` is ``<package>.provider.shared``
(``MODULES`` names them all), where the package is ``ink_py`` or, under ``pytest --impl my_ink``, the
copy — imported by its folder's name, which works because the copy imports only itself. The project's
own tests (tests/conftest.py) take the same fixture from here. The exercise markers live here too:
the plugin registers them, and so does the checks' conftest.py when the plugin is not loaded
(``pytest --pyargs ink_py.course.checks`` on the reference).

    >>> Implementation("ink_py").shared.__name__
    'ink_py.provider.shared'
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

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
    "relay": "second_article.relay",
    "runner": "runner",
}

MARKERS = {  # the course's exercises, in article order: pytest -m ex1 selects exercise 1's tests
    "ex1": "exercise 1, parse_frame (article 2.1)",
    "ex2": "exercise 2, parse_sse (article 2.1)",
    "ex3": "exercise 3, text accumulation and text_delta (article 2 step 1)",
    "ex4": "exercise 4, tool-call fragments by index (article 2.2)",
    "ex5": "exercise 5, the finish-reason check and map_finish_reason (article 4.1, 4.4)",
    "ex6": "exercise 6, abort_safe (article 4.2)",
    "ex7": "exercise 7, safe_parse_json and blocking unparseable arguments (article 4.3)",
    "ex8": "exercise 8, fail_tool_calls_from_truncated_message (article 4.4)",
    "ex9": "exercise 9, chunk concat (second article, section 4)",
}


def register_markers(config: pytest.Config) -> None:
    """ex1 … ex9, each once, whoever asks first (the plugin or the checks' conftest.py)."""
    known = {line.split(":")[0].strip() for line in config.getini("markers")}
    for name, about in MARKERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {about}")


class Implementation:
    """The package under test; ``impl.shared`` imports ``<package>.provider.shared`` on first use."""

    def __init__(self, package: str, home: str | None = None) -> None:
        self.package = package
        self.home = home  # the folder a child Python must have on its path to import the copy (None: ink_py)

    def command(self) -> tuple[list[str], dict[str, str]]:
        """``python -m <package>`` and the environment a child needs for it: the implementation's own CLI."""
        return [sys.executable, "-m", self.package], ({"PYTHONPATH": self.home} if self.home else {})

    def __getattr__(self, short: str) -> Any:
        if short not in MODULES:
            raise AttributeError(short)
        module = importlib.import_module(f"{self.package}.{MODULES[short]}")
        setattr(self, short, module)  # cache
        return module


def load_implementation(impl: str | None) -> Implementation:
    """``ink_py``, or the copy in folder ``impl`` (a UsageError if it is no package folder)."""
    if impl is None:
        return Implementation("ink_py")
    folder = Path(impl).resolve()
    if not (folder / "__init__.py").is_file():
        raise pytest.UsageError(f"--impl {impl}: {folder} is not a package folder (no __init__.py)")
    sys.path.insert(0, str(folder.parent))  # the copy imports only itself: relative imports
    return Implementation(folder.name, str(folder.parent))


@pytest.fixture(scope="session")
def ink(pytestconfig: pytest.Config) -> Implementation:
    return load_implementation(pytestconfig.getoption("impl", None))
