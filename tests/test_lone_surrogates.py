"""A lone surrogate from the model (JSON's ``"\\ud800"``): shown, traced, sent back, and the run goes on.

JSON may escape half of a surrogate pair alone; Python decodes it into a string that no
UTF-8 stream can encode, so the answer on stdout, the trace line and the next request's body
each ended in ``internal error (UnicodeEncodeError)`` — in all three dialects and in the relay.
Now every string the provider yields is well formed (base.py · ``bounded_reply``: U+FFFD
in its place), every request body is encodable (transport.py · ``request_bytes``) and the trace
writes what is left (runner.py · ``write_trace``). Real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.course.checks.helpers import provider_in

from .raw_servers import INK_PY, SSE_HEAD, RawServer, run_measured, sse_server
from .test_dialects import WRITERS
from .test_relay import read_all, start_relay

DIALECTS = sorted(WRITERS)
LONE = b"\\ud800"  # a lone surrogate as JSON writes it


def frame(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(data).encode() + b"\n\n"


def with_lone_surrogates(body: bytes) -> bytes:
    """``body`` with SURR (a JSON string's text) and ARGS_SURR (inside an argument string) made lone surrogates."""
    return body.replace(b"ARGS_SURR", b"\\" + LONE).replace(b"SURR", LONE)


def first_reply(dialect: str) -> bytes:
    """Text, a call to a tool whose name has a lone surrogate, and a read whose path has one."""
    calls = [
        {"id": "t1", "name": "readSURR", "arguments": {}},
        {"id": "t2", "name": "read", "arguments": {"path": "aARGS_SURR.txt"}},
    ]
    order = [("text", "look SURR here "), (0, "{}"), (1, '{"path": "aARGS_SURR.txt"}')]
    return with_lone_surrogates(WRITERS[dialect](calls, order))


def reasoning_reply(dialect: str) -> bytes:
    if dialect == "openai_completions":
        return with_lone_surrogates(
            frame({"choices": [{"delta": {"reasoning_content": "think SURR"}}]})
            + frame({"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]})
        )
    if dialect == "anthropic_messages":
        events = [
            ("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "think SURR"}}),
            ("message_stop", {}),
        ]
        return with_lone_surrogates(b"".join(frame({"type": name, **data}, name) for name, data in events))
    events = [
        ("response.output_item.added", {"output_index": 0, "item": {"type": "reasoning", "id": "r1"}}),
        ("response.reasoning_text.delta", {"item_id": "r1", "output_index": 0, "delta": "think SURR"}),
        ("response.completed", {"response": {"status": "completed"}}),
    ]
    return with_lone_surrogates(b"".join(frame(data, name) for name, data in events))


REQUEST = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("reply", [first_reply, reasoning_reply], ids=["text-and-tools", "reasoning"])
def test_every_string_the_provider_yields_is_well_formed(ink: Any, dialect: str, reply: Any) -> None:
    with sse_server(reply(dialect)) as server:
        events = list(provider_in(ink, dialect, server.base_url).stream(REQUEST))
    for event in events:
        json.dumps(event, ensure_ascii=False).encode("utf-8")  # would raise on a lone surrogate
    assert "\ufffd" in json.dumps(events, ensure_ascii=False)
    # and the next request, carrying this reply back, is encodable in the dialect's words
    history = [*REQUEST["messages"], events[-1]["message"]]
    body = getattr(ink, dialect).build_request_body({**REQUEST, "messages": history})
    ink.transport.request_bytes(body).decode("utf-8")


def test_a_request_body_with_a_lone_surrogate_is_sent_as_valid_utf8(ink: Any) -> None:
    """Whatever put it in the history (argv, a resumed file, a student's provider): the body is encodable."""
    with sse_server(b"") as server:
        response = ink.transport.post_json_with_retry(f"{server.base_url}/chat/completions", {"content": "a\ud800b"})
        assert response is not None
        response.close()
    body = server.requests[0].split(b"\r\n\r\n", 1)[1]
    assert json.loads(body.decode("utf-8")) == {"content": "a\ufffdb"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_ink_py_shows_traces_and_sends_it_back_and_the_run_goes_on(tmp_path: Path, dialect: str) -> None:
    (tmp_path / "ws").mkdir()
    second = WRITERS[dialect]([], [("text", "done")])

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + (first_reply(dialect) if len(server.requests) == 1 else second))

    trace = tmp_path / "trace.jsonl"
    with RawServer(serve) as server:
        argv = [*INK_PY, "--api", dialect.replace("_", "-"), "--base-url", server.base_url, "--model", "m"]
        result = run_measured(
            [*argv, "--workspace", str(tmp_path / "ws"), "--trace", str(trace)], env={"ANTHROPIC_API_KEY": ""}
        )
    assert result.code == 0, result.err[-800:]
    assert "look \ufffd here" in result.out and result.out.rstrip().endswith("done")
    assert "unknown tool" in result.err and "Traceback" not in result.err
    assert len(server.requests) == 2
    sent = json.loads(server.requests[1].split(b"\r\n\r\n", 1)[1].decode("utf-8"))  # valid UTF-8 JSON
    assert "a\ufffd.txt" in json.dumps(sent, ensure_ascii=False)
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert records[-1]["type"] == "run_end" and records[-1]["stopReason"] == "completed"


def test_the_relay_streams_it_and_goes_on(tmp_path: Path) -> None:
    with sse_server(with_lone_surrogates(WRITERS["openai_completions"]([], [("text", "a SURR b")]))) as model:
        relay = start_relay(model.base_url, tmp_path)
        try:
            _, events = read_all(requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=10))
        finally:
            relay.close()
    assert "".join(e["data"]["text"] for e in events if e["event"] == "text") == "a \ufffd b"
    assert not [e for e in events if e["event"] == "error"]
