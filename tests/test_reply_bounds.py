"""One reply's size is bounded (base.py · ``bounded_reply``, ``MAX_REPLY_BYTES`` in shared.py).

The dialects' loops keep every text, reasoning and argument piece until the reply ends; a
server that never ends one (endless 60 KB deltas) grew ``ink-py`` to ~1 GB in 6 s and, under
a memory limit, ended in ``internal error (MemoryError)``. Now the reply stops with one
``error:`` line once its pieces pass the cap — in each dialect, for text, reasoning and tool
arguments, and for many tiny pieces too (each piece and call is counted with what Python
spends to keep it). ``ink-py`` runs under an address-space limit, its peak measured from
outside (tests/raw_servers.py); chat and the relay run the same provider and get the same bound.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.course.checks.helpers import provider_in

from .helpers import ROOT
from .raw_servers import RawServer, one_error_line, run_measured, sse_server
from .test_chat import chat_env
from .test_relay import read_all, start_relay

LIMIT_MIB = 1024  # the child's whole address space: the reply sent is several times larger
PIECE = 60_000  # bytes of text in each delta, as in the issue
MAX_SENT = 2 << 30  # the server gives up after this much: the bound must stop the client long before


def frame(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(data).encode() + b"\n\n"


# What opens an endless reply, and one delta of it, for each dialect and kind of piece.
def endless_reply(dialect: str, kind: str, size: int = PIECE) -> tuple[bytes, bytes]:
    piece = "x" * size
    if dialect == "openai_completions":
        field = {"text": "content", "reasoning": "reasoning_content"}.get(kind)
        if field:
            return b"", frame({"choices": [{"delta": {field: piece}}]})
        call = {"index": 0, "id": "t1", "function": {"name": "read", "arguments": ""}}
        opening = frame({"choices": [{"delta": {"tool_calls": [call]}}]})
        return opening, frame(
            {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]}
        )
    if dialect == "anthropic_messages":
        block, delta = {
            "text": ({"type": "text", "text": ""}, {"type": "text_delta", "text": piece}),
            "reasoning": ({"type": "thinking", "thinking": ""}, {"type": "thinking_delta", "thinking": piece}),
            "arguments": (
                {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
                {"type": "input_json_delta", "partial_json": piece},
            ),
        }[kind]
        start = {"type": "content_block_start", "index": 0, "content_block": block}
        return frame(start, "content_block_start"), frame(
            {"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"
        )
    item, name = {
        "text": ({"type": "message", "id": "m1"}, "response.output_text.delta"),
        "reasoning": ({"type": "reasoning", "id": "m1"}, "response.reasoning_text.delta"),
        "arguments": (
            {"type": "function_call", "id": "m1", "call_id": "t1", "name": "read", "arguments": ""},
            "response.function_call_arguments.delta",
        ),
    }[kind]
    opening = frame({"output_index": 0, "item": item}, "response.output_item.added")
    return opening, frame({"item_id": "m1", "output_index": 0, "delta": piece}, name)


def endless(opening: bytes, delta: bytes, sent: dict[str, int]) -> Callable[[socket.socket], None]:
    def send(conn: socket.socket) -> None:
        conn.sendall(opening)
        while sent["bytes"] < MAX_SENT:
            conn.sendall(delta)
            sent["bytes"] += len(delta)

    return send


DIALECTS = ["openai_completions", "anthropic_messages", "openai_responses"]
KINDS = ["text", "reasoning", "arguments"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_endless_reply_ends_with_one_line_in_bounded_memory(tmp_path: Path, dialect: str) -> None:
    sent = {"bytes": 0}
    with sse_server(endless(*endless_reply(dialect, "text"), sent)) as server:
        prelude = textwrap.dedent(
            f"""
            import resource, runpy, sys
            resource.setrlimit(resource.RLIMIT_AS, ({LIMIT_MIB} << 20, {LIMIT_MIB} << 20))
            sys.path.insert(0, {str(ROOT)!r})
            sys.argv = ["ink-py", "--base-url", {server.base_url!r}, "--model", "m",
                        "--api", {dialect.replace("_", "-")!r}, "--workspace", {str(tmp_path)!r}]
            runpy.run_module("ink_py", run_name="__main__")
            """
        )
        result = run_measured([sys.executable, "-c", prelude], env={"ANTHROPIC_BASE_URL": ""}, timeout=120)
    line = one_error_line(result.err)
    assert result.code == 1 and "64 MiB of text, reasoning and tool arguments" in line, result.err[-500:]
    assert result.peak_mib < 200, f"peak {result.peak_mib:.0f} MiB for a 64 MiB cap"
    assert sent["bytes"] < MAX_SENT  # the client stopped reading long before the server gave up


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("kind", KINDS)
def test_text_reasoning_and_arguments_each_count(
    ink: Any, monkeypatch: pytest.MonkeyPatch, dialect: str, kind: str
) -> None:
    monkeypatch.setattr(ink.shared, "MAX_REPLY_BYTES", 100_000)
    sent = {"bytes": 0}
    with sse_server(endless(*endless_reply(dialect, kind, 1000), sent)) as server:
        provider = provider_in(ink, dialect, server.base_url)
        with pytest.raises(ink.types.ProviderError, match=r"MAX_REPLY_BYTES"):
            for _ in provider.stream({"model": "m", "system": "", "messages": []}):
                pass
    assert sent["bytes"] < MAX_SENT


def test_many_tiny_pieces_are_bounded_too(ink: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One character per delta: what Python keeps for each piece counts, not only its text."""
    monkeypatch.setattr(ink.shared, "MAX_REPLY_BYTES", 100_000)
    one = frame({"choices": [{"delta": {"content": "x"}}]})
    with sse_server(one * 5000 + frame({"choices": [{"delta": {}, "finish_reason": "stop"}]})) as server:
        provider = provider_in(ink, "openai_completions", server.base_url)
        with pytest.raises(ink.types.ProviderError, match=r"MAX_REPLY_BYTES"):
            list(provider.stream({"model": "m", "system": "", "messages": []}))


def test_a_reply_under_the_cap_is_whole(ink: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ink.shared, "MAX_REPLY_BYTES", 100_000)
    body = frame({"choices": [{"delta": {"content": "y" * 90_000}}]}) + frame(
        {"choices": [{"delta": {}, "finish_reason": "stop"}]}
    )
    with sse_server(body) as server:
        events = list(
            provider_in(ink, "openai_completions", server.base_url).stream({"model": "m", "system": "", "messages": []})
        )
    assert events[-1]["message"]["blocks"] == [{"type": "text", "text": "y" * 90_000}]


def test_chat_gets_the_bound_and_goes_on(tmp_path: Path) -> None:
    """The first message meets an endless reply; the session says so in one line and answers the next."""
    sent = {"bytes": 0}
    opening, delta = endless_reply("openai_completions", "text")
    answer = frame({"choices": [{"delta": {"content": "second answer"}, "finish_reason": "stop"}]})

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        if len(server.requests) == 1:
            endless(opening, delta, sent)(conn)
        else:
            conn.sendall(answer)

    with RawServer(serve) as server:
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", "chat", "--base-url", server.base_url, "--model", "m"],
            cwd=tmp_path,
            env=chat_env(),
            input="first\nsecond\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert "64 MiB of text, reasoning and tool arguments (MAX_REPLY_BYTES)" in done.stderr, done.stderr[-500:]
    assert "second answer" in done.stdout and "Traceback" not in done.stderr
    assert sent["bytes"] < MAX_SENT


def test_the_relay_gets_the_bound(ink: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ink.shared, "MAX_REPLY_BYTES", 100_000)
    sent = {"bytes": 0}
    with sse_server(endless(*endless_reply("openai_completions", "text", 1000), sent)) as model:
        relay = start_relay(model.base_url, tmp_path, ink=ink)  # the copy's relay, whose bound was lowered
        try:
            _, events = read_all(requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=30))
        finally:
            relay.close()
    [error] = [e["data"]["message"] for e in events if e["event"] == "error"]
    assert "MAX_REPLY_BYTES" in error


# ── what no event reports: the whole body is bounded (shared.py · guarded, MAX_BODY_BYTES) ──


def empty_block(dialect: str, index: int) -> bytes:
    """A block that opens and stays empty, at a new index: the loop keeps it, no event reports it."""
    if dialect == "anthropic_messages":
        start = {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
        return frame(start, "content_block_start")
    if dialect == "openai_responses":
        item = {"type": "message", "id": f"m{index}"}
        return frame({"output_index": index, "item": item}, "response.output_item.added")
    return frame({"choices": [{"delta": {}}]})  # Chat Completions keeps nothing for it


def endless_empty_blocks(dialect: str, sent: dict[str, int]) -> Callable[[socket.socket], None]:
    def send(conn: socket.socket) -> None:
        index = 0
        while sent["bytes"] < MAX_SENT:
            batch = b"".join(empty_block(dialect, index + i) for i in range(100))
            conn.sendall(batch)
            sent["bytes"] += len(batch)
            index += 100

    return send


@pytest.mark.parametrize("dialect", DIALECTS)
def test_what_no_event_reports_is_bounded_by_the_bodys_size(ink: Any, monkeypatch: pytest.MonkeyPatch, dialect: str):
    monkeypatch.setattr(ink.shared, "MAX_BODY_BYTES", 2 << 20)
    sent = {"bytes": 0}
    with sse_server(endless_empty_blocks(dialect, sent)) as server:
        provider = provider_in(ink, dialect, server.base_url)
        with pytest.raises(ink.types.ProviderError, match=r"more than 2 MiB \(MAX_BODY_BYTES\)"):
            list(provider.stream({"model": "m", "system": "", "messages": []}))
    assert sent["bytes"] < MAX_SENT


def test_endless_empty_blocks_end_with_one_line_in_bounded_memory(tmp_path: Path) -> None:
    """Before: endless content_block_start at new indexes grew the Messages reader without end."""
    sent = {"bytes": 0}
    with sse_server(endless_empty_blocks("anthropic_messages", sent)) as server:
        prelude = textwrap.dedent(
            f"""
            import resource, runpy, sys
            resource.setrlimit(resource.RLIMIT_AS, ({LIMIT_MIB} << 20, {LIMIT_MIB} << 20))
            sys.path.insert(0, {str(ROOT)!r})
            sys.argv = ["ink-py", "--base-url", {server.base_url!r}, "--model", "m",
                        "--api", "anthropic-messages", "--workspace", {str(tmp_path)!r}]
            runpy.run_module("ink_py", run_name="__main__")
            """
        )
        result = run_measured([sys.executable, "-c", prelude], env={"ANTHROPIC_BASE_URL": ""}, timeout=300)
    line = one_error_line(result.err)
    assert result.code == 1 and "a reply of more than 128 MiB (MAX_BODY_BYTES)" in line, result.err[-500:]
    assert sent["bytes"] < MAX_SENT
    assert result.peak_mib < 700, f"peak {result.peak_mib:.0f} MiB for a 128 MiB body"  # measured: 435 MiB


def test_a_signature_in_many_pieces_is_joined_once(ink: Any) -> None:
    """signature_delta pieces were added to one growing string (a copy per piece): now joined at the block's stop."""
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}
    pieces = [
        frame({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": s}})
        for s in ("Eq", "lK", "w==")
    ]
    body = frame({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}, "message_start")
    body += frame(start, "content_block_start") + b"".join(pieces)
    body += frame({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}})
    body += frame({"type": "content_block_stop", "index": 0}, "content_block_stop")
    body += frame({"type": "message_stop"}, "message_stop")
    [*_, end] = ink.anthropic_messages.assemble_stream([body])
    assert end["message"]["blocks"] == [{"type": "thinking", "thinking": "hm", "signature": "EqlKw=="}]
