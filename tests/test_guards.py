"""The guards around the article's parse_sse (shared.py, beyond §2.1): what servers send beyond LF frames.

Each guard is asked through ``parse_sse(guarded(reads))``, the way every reader composes them:
CR and CRLF line ends (also split across reads), a byte-order mark, a body that ends inside an
event, the cap on one unfinished event (and ``ink-py`` against a server that never ends one:
memory bounded by the cap); then ``sniffed`` (a 200 body that is not SSE); a key the server
echoes is test_api_key.py's. parse_sse alone is test_parse_sse.py's (exercise 2).
"""

import socket
from pathlib import Path
from typing import Any

import pytest

from ink_py.course.checks.helpers import arrivals, fixture_bytes, growth_verdict, split_at

from .raw_servers import ink_py_against, one_error_line, sse_server

A = {"event": "message", "data": {"a": 1}}
B = {"event": "message", "data": {"b": "读"}}
DONE = {"event": "message", "data": "[DONE]"}


def events(ink: Any, reads: list[bytes]) -> list[dict]:
    return list(ink.shared.parse_sse(ink.shared.guarded(reads)))


# (reads as the network delivers them, the events expected)
READS = [
    pytest.param([b'data: {"a": 1}\r\n\r\n'], [A], id="crlf"),
    pytest.param([b'data: {"a": 1}\r\r'], [A], id="cr"),
    pytest.param([b'data: {"a": 1}\r', b"\n\r\n"], [A], id="cr-then-lf-in-next-read"),
    pytest.param([b'data: {"a": 1}\r', b"", b"\n\r\n"], [A], id="cr-then-empty-read-then-lf"),
    pytest.param(
        [b'data: {"a": 1}\r\n\r', b'\ndata: {"b": "\xe8\xaf\xbb"}\r\n\r\n'], [A, B], id="crlf-split-in-middle"
    ),
    pytest.param([b'data: {"a": 1}\n\r\n'], [A], id="lf-then-crlf"),
    pytest.param(
        [b"event: delta\r", b'\ndata: {"a": 1}\r\n\r\n'],
        [{"event": "delta", "data": {"a": 1}}],
        id="crlf-split-in-event",
    ),
    pytest.param([b'data: {"a": 1}\r', b"x: y\n\n"], [A], id="cr-then-text-ends-the-line"),
    pytest.param([b'\xef\xbb\xbfdata: {"a": 1}\n\n'], [A], id="bom-stripped"),
    pytest.param([b"\xef\xbb", b'\xbfdata: {"a": 1}\n\n'], [A], id="bom-split"),
    pytest.param([b"\xef", b"", b"\xbb\xbf", b'data: {"a": 1}\n\n'], [A], id="bom-in-three-reads"),
    pytest.param([b'data: {"a": 1}\n\ndata: [DONE]'], [A, DONE], id="done-no-blank"),
    pytest.param([b'data: {"a": 1}\n\ndata: [DONE]\n'], [A, DONE], id="done-one-lf"),
    pytest.param([b'data: {"a": 1}\n\ndata: [DONE]\r'], [A, DONE], id="done-one-cr"),
    pytest.param([b'data: {"a": 1}'], [A], id="only-event-no-blank"),
    pytest.param([b""], [], id="empty-body"),
    pytest.param([b"\r\n\r\n\r\n"], [], id="only-line-ends"),
    pytest.param([b"\xef\xbb\xbf"], [], id="only-a-bom"),
]


@pytest.mark.parametrize("reads, expected", READS)
def test_guarded_bodies_parse_as_their_lf_twin(ink, reads, expected):
    assert events(ink, reads) == expected


@pytest.mark.parametrize(
    "reads, arrival",
    [
        pytest.param([b'data: {"a": 1}\r\n\r\n', b'data: {"a": 1}\r\n\r\n'], [1, 2], id="crlf"),
        pytest.param([b'data: {"a": 1}\r\r', b'data: {"a": 1}\r\r'], [1, 2], id="cr"),
        pytest.param([b'data: {"a": 1}\r\n\r', b'\ndata: {"a": 1}\r', b"\r"], [1, 3], id="cr-at-end-of-read"),
        pytest.param([b'data: {"a": 1}\n', b'\ndata: {"a": 1}\n', b"\n"], [2, 3], id="blank-line-opens-next-read"),
        pytest.param([b'\xef\xbb\xbfdata: {"a": 1}\n\n', b"data: [DONE]\n\n"], [1, 2], id="bom"),
    ],
)
def test_each_event_is_yielded_in_the_read_that_completes_it(ink, reads, arrival):
    """Never held back until the next read — a streaming display depends on it."""
    assert arrivals(reads, lambda body: ink.shared.parse_sse(ink.shared.guarded(body))) == arrival


def test_bom_only_stripped_at_the_start(ink):
    reads = [b'data: {"a": 1}\n\n', b'\xef\xbb\xbfdata: {"a": 1}\n\n']
    # A BOM later in the stream is part of a field name, so that line is an unknown field.
    assert events(ink, reads) == [A]


def test_body_ending_inside_an_event_is_reported_not_dropped(ink):
    with pytest.raises(ink.shared.ProviderError, match="middle of an event"):
        events(ink, [b'data: {"a": 1}\n\ndata: {"choices": [{"del'])


@pytest.mark.parametrize("name", ["servers/proxy_bom_mixed_endings", "servers/proxy_cr", "servers/proxy_crlf"])
def test_one_byte_reads_of_a_fixture_equal_one_read(ink, name):
    body = fixture_bytes(name)
    whole = events(ink, [body])
    assert events(ink, split_at(body, list(range(len(body))))) == whole
    assert whole and whole == events(ink, [body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")])


def test_the_cap_counts_one_unfinished_event_not_the_stream(ink: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ink.shared, "MAX_EVENT_BYTES", 1000)
    many = [b'data: {"n": ' + str(i).encode() + b', "pad": "' + b"p" * 900 + b'"}\n\n' for i in range(50)]
    assert [e["data"]["n"] for e in events(ink, [b"".join(many)])] == list(range(50))
    pieces = [b'data: "' + b"y" * 300] + [b"y" * 300] * 3  # 1207 bytes, no blank line yet
    with pytest.raises(ink.shared.ProviderError, match="more than 0 MiB without ending it"):
        events(ink, pieces)
    wide = ["字" * 200] * 2  # 1200 bytes of UTF-8 in 400 characters: bytes are what is counted
    with pytest.raises(ink.shared.ProviderError):
        events(ink, [b'data: "', *(w.encode() for w in wide)])
    # A blank line split across two reads ends the event: the next one is counted afresh.
    straddling = [b'data: "' + b"q" * 900 + b'"\n', b'\ndata: "' + b"r" * 900 + b'"\n\n']
    assert [e["data"][:1] for e in events(ink, straddling)] == ["q", "r"]


def test_an_event_that_never_ends_fails_with_memory_bounded_by_the_cap(tmp_path: Path) -> None:
    sent = {"bytes": 0}

    def endless(conn: socket.socket) -> None:
        conn.sendall(b'data: {"choices":[{"delta":{"content":"')
        piece = b"x" * 65536
        while sent["bytes"] < 256 * 1024 * 1024:  # 256 MiB at most: the cap is 32 MiB
            conn.sendall(piece)
            sent["bytes"] += len(piece)

    with sse_server(endless) as server:
        result = ink_py_against(server, tmp_path, timeout=60)
    line = one_error_line(result.err)
    assert result.code == 1 and "32 MiB" in line and "without ending it" in line
    assert result.peak_mib < 160, f"peak {result.peak_mib:.0f} MiB for a 32 MiB cap"  # not: all it was sent
    assert sent["bytes"] < 256 * 1024 * 1024  # the client stopped reading: the server's sendall broke


def one_event_in_small_reads(size: int, read: int = 64, line_end: bytes = b"\r\n") -> list[bytes]:
    data = b'data: {"x": "' + b"a" * size + b'"}' + line_end * 2
    return [data[i : i + read] for i in range(0, len(data), read)]


def test_a_long_event_in_small_reads_takes_linear_time(ink):
    """The guards scan each read once: a long CRLF event in 64-byte reads grows like its size."""
    verdict = growth_verdict(
        lambda reads: events(ink, iter(reads)),
        lambda reads: list(ink.shared.parse_sse(iter(reads))),
        one_event_in_small_reads(64 << 10),
        one_event_in_small_reads(512 << 10),
        8,
        ("64 KiB", "512 KiB"),
        (
            "one CRLF event of 64 KiB, then one of 512 KiB, in 64-byte reads",
            "一个 64 KiB 的 CRLF 事件,再一个 512 KiB 的,每次读取 64 字节",
        ),
    )
    if verdict:
        pytest.fail(verdict, pytrace=False)


# ── sniffed: a 200 body that is not an event stream ─────────────────────────────────────


def test_sniffed_hands_an_event_stream_on_untouched_and_decides_on_the_first_byte(ink):
    reads = [b"\r\n", b"\n", b"data: {}\n\n", b"data: [DONE]\n\n"]
    assert list(ink.shared.sniffed(iter(reads), "text/event-stream", bytes)) == [b"\r\n\ndata: {}\n\n", reads[3]]
    with pytest.raises(ink.shared.ProviderError, match="empty response body"):
        list(ink.shared.sniffed(iter([b"", b"\n"]), "text/event-stream", bytes))
    with pytest.raises(ink.shared.ProviderError, match="not an event stream"):
        list(ink.shared.sniffed(iter([b"<html>"]), "text/html", bytes))
    assert list(ink.shared.sniffed(iter([b' {"a"', b": 1}"]), "application/json", bytes.upper)) == [b' {"A": 1}']


# llama-cpp-python's keep-alive (sse_starlette's ping comment), the whole body when a streamed "auto" fails.
PING = b": ping - 2026-12-01 20:05:13.497651+00:00\r\n\r\n"
COMMENTS_THEN_EVENT = b"\xef\xbb\xbf" + PING + b": OPENROUTER PROCESSING\n\n" + b'data: {"a": 1}\n\n'


@pytest.mark.parametrize("cut", range(len(COMMENTS_THEN_EVENT) + 1))
def test_comments_then_an_event_pass_untouched_wherever_the_reads_are_cut(ink, cut):
    reads = [COMMENTS_THEN_EVENT[:cut], COMMENTS_THEN_EVENT[cut:]]
    assert b"".join(ink.shared.sniffed(iter(reads), "text/event-stream", bytes)) == COMMENTS_THEN_EVENT


@pytest.mark.parametrize("body", [PING, PING * 3 + b": keep-alive\n\n", b"\n" + PING[:-2]])
@pytest.mark.parametrize("size", [1, 7, 1000])
def test_a_body_of_comments_only_is_no_reply_not_a_truncated_one(ink, body, size):
    reads = [body[i : i + size] for i in range(0, len(body), size)]
    with pytest.raises(ink.shared.ProviderError) as caught:
        list(ink.shared.sniffed(iter(reads), "text/event-stream", bytes, "; the note"))
    assert str(caught.value) == (
        "the server sent an empty response body (HTTP 200, Content-Type: text/event-stream, only comments): "
        "no reply at all; the note"
    )
