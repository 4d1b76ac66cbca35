"""The checks' ``ink`` fixture, and their markers when the course's plugin is not loaded.

With ``--impl`` (or in the checkout, or through ``check``) the plugin registers the markers; a run of
the installed checks on the reference (``pytest --pyargs ink_py.course.checks``) has only this file.
"""

from __future__ import annotations

import pytest

from .implementation import ink, register_markers

__all__ = ["ink"]


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)
