"""An abort over real HTTP (article §4.2, exercise 6): a read blocked on the server ends quietly.

A scripted server on 127.0.0.1 (fake_server.py) sends the first events of the article's abort
scenario, then holds the connection; another thread aborts. The stream must end at once, without
the server going on, with the events so far. Retries, errors and timeouts of the transport are
tests/test_transport.py's, which shares ``REQUEST``, ``provider`` and ``frames`` from here.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from .fake_server import FakeModelServer, Pause, Reply
from .helpers import fixture_bytes
from .implementation import Implementation

API_KEY = "sk-test-SECRET-0123456789"
REQUEST = {"model": "gpt-4o-mini", "system": "You are ink.", "messages": [{"role": "user", "content": "hi"}]}


def provider(ink: Implementation, server: Any, api_key: str | None = API_KEY) -> Any:
    return ink.openai_completions.OpenAICompletionsProvider(server.base_url, api_key)


def frames(fixture: str) -> list[bytes | Pause]:
    """A fixture's events as separate body parts (one write each)."""
    return [f + b"\n\n" for f in fixture_bytes(fixture).split(b"\n\n") if f]


@pytest.mark.ex6
@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_abort_from_another_thread_ends_a_blocked_read_quietly(ink: Implementation, framing: Any) -> None:
    pause = Pause(limit=10)
    controller = ink.abort.AbortController()
    reply = Reply(parts=[*frames("article/abort"), pause, *frames("article/readme")[2:]], framing=framing)
    with FakeModelServer([reply]) as server:
        events = []
        for event in provider(ink, server).stream(dict(REQUEST, signal=controller.signal)):
            events.append(event)
            if len(events) == 1:
                threading.Timer(0.05, controller.abort).start()  # the read below is blocked when this fires
        still_waiting = not pause.event.is_set()
        pause.event.set()
    assert still_waiting  # the stream ended because of the abort, not because the server went on
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta"]
