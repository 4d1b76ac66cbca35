"""assemble_stream (article §2): usage reported twice, and a server's error inside the stream.

The article's scenarios, step by step — each test carrying the exercise it checks (ex3 … ex7) — are
ink_py/course/checks/test_assemble.py's; these two are the rest of the Chat Completions loop.
"""

import json

import pytest

from ink_py.course.checks.helpers import run_assembly
from ink_py.course.checks.test_assemble import chunk

# ── usage and server errors ─────────────────────────────────────────────────────────────


def test_usage_reported_twice_is_kept_not_summed(ink):
    usage = {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 60}}
    reads = [chunk({"content": "x"}), chunk(finish="stop", usage=usage), b'data: {"choices": [], "usage": '
             + json.dumps(usage).encode() + b"}\n\n"]  # fmt: skip
    events, _ = run_assembly(ink, reads)
    assert events[-1]["message"]["usage"] == {"inputTokens": 40, "outputTokens": 7, "cacheReadTokens": 60}


@pytest.mark.parametrize(
    "frame, message",
    [
        (b'data: {"error": {"message": "rate limited", "type": "rate_limit"}}\n\n', "rate limited"),
        (b'event: error\ndata: {"message": "overloaded"}\n\n', "overloaded"),
        (b'error: {"code": 500, "message": "slot unavailable"}\n\n', "slot unavailable"),
        (b'data: "just a string"\n\n', "not a chat.completion.chunk"),
    ],
    ids=["error-payload", "error-event", "llamacpp-error-field", "not-an-object"],
)
def test_server_errors_in_the_stream_raise_with_the_servers_message(ink, frame, message):
    events, error = run_assembly(ink, [chunk({"content": "partial"}), frame, chunk(finish="stop")])
    assert error is not None and message in error
    assert "message_end" not in [e["type"] for e in events]
