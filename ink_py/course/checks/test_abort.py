"""AbortController / AbortSignal: the web API the TypeScript relies on, in Python."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from .implementation import Implementation

pytestmark = pytest.mark.ex6


def test_abort_sets_the_flag_and_calls_each_listener_once(ink: Implementation) -> None:
    controller = ink.abort.AbortController()
    calls = []
    controller.signal.add_listener(lambda: calls.append("a"))
    controller.signal.add_listener(lambda: calls.append("b"))
    assert controller.signal.aborted is False
    controller.abort()
    controller.abort()
    assert controller.signal.aborted is True
    assert calls == ["a", "b"]


def test_a_listener_added_after_the_abort_runs_at_once(ink: Implementation) -> None:
    controller = ink.abort.AbortController()
    controller.abort()
    calls = []
    controller.signal.add_listener(lambda: calls.append("late"))
    assert calls == ["late"]


def test_removed_listeners_are_not_called_and_a_failing_one_does_not_stop_the_rest(ink: Implementation) -> None:
    controller = ink.abort.AbortController()
    calls = []

    def boom() -> Any:
        raise OSError("socket already closed")

    removed = lambda: calls.append("removed")  # noqa: E731
    controller.signal.add_listener(boom)
    controller.signal.add_listener(removed)
    controller.signal.add_listener(lambda: calls.append("kept"))
    controller.signal.remove_listener(removed)
    controller.abort()
    assert calls == ["kept"]


def test_wait_returns_early_when_another_thread_aborts(ink: Implementation) -> None:
    controller = ink.abort.AbortController()
    threading.Timer(0.05, controller.abort).start()
    assert controller.signal.wait(30) is True  # would take 30 s without the abort
    assert ink.abort.AbortController().signal.wait(0) is False
