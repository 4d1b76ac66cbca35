"""parse_sse (article §2.1): bytes in reads → complete events — exercise 2.

The article's loop on LF line ends; what servers add beyond it (CR line ends, a BOM, an
unfinished last event, the cap) is ``guarded``'s, tested in test_guards.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from ink_py.provider import shared as reference

from .helpers import arrivals, fixture_bytes, growth_verdict, split_at
from .implementation import Implementation

pytestmark = pytest.mark.ex2

A = {"event": "message", "data": {"a": 1}}
B = {"event": "message", "data": {"b": "读"}}

# (reads as the network delivers them, the events expected)
READS = [
    pytest.param([b'data: {"a": 1}\n\n'], [A], id="one-read-one-event"),
    pytest.param([b'data: {"a": 1}\n\ndata: {"b": "\xe8\xaf\xbb"}\n\n'], [A, B], id="one-read-two-events"),
    pytest.param([b'data: {"a"', b": 1}\n\n"], [A], id="event-split-across-reads"),
    pytest.param(
        [b'data: {"a": 1}\n', b"\ndata: {}\n\n"], [A, {"event": "message", "data": {}}], id="blank-line-split"
    ),
    pytest.param([b'data: {"b": "\xe8', b'\xaf\xbb"}\n\n'], [B], id="utf8-char-split"),
    pytest.param([b'data: {"b": "\xe8\xaf', b'\xbb"}\n\n'], [B], id="utf8-char-split-late"),
    pytest.param([b": keep-alive\n\n", b'data: {"a": 1}\n\n'], [A], id="comment-frame-skipped"),
    pytest.param([b'data: {"a": 1}\n\n\n\ndata: {"b": "\xe8\xaf\xbb"}\n\n'], [A, B], id="extra-blank-lines"),
    pytest.param([b""], [], id="empty-body"),
    pytest.param([b"\n\n\n"], [], id="only-newlines"),
    pytest.param([b"", b'data: {"a": 1}\n\n', b""], [A], id="empty-reads"),
]


@pytest.mark.parametrize("reads, expected", READS)
def test_parse_sse(ink: Implementation, reads: Any, expected: Any) -> None:
    assert list(ink.shared.parse_sse(reads)) == expected


def test_article_2_1_event_arrives_in_two_reads(ink: Implementation) -> None:
    """§2.1's walk-through: read ① has no blank line yet (nothing yielded), read ② completes it.

    中文:§2.1 的演示:第 ① 次读取还没有空行(什么都不交出),第 ② 次读取让事件完整。
    """
    body = fixture_bytes("article/readme").split(b"\n\n")[1] + b"\n\n"  # the first tool-call event
    cut = body.index(b'"index":0,') + len(b'"index":0,')
    first, second = body[:cut], body[cut:]
    assert first.endswith(b'"tool_calls":[{"index":0,')

    reads_taken = []

    def network() -> Any:
        for number, read in enumerate([first, second], start=1):
            reads_taken.append(number)
            yield read

    events = []
    for event in ink.shared.parse_sse(network()):
        events.append((len(reads_taken), event))
    [(read_number, event)] = events
    assert read_number == 2  # handed on only after the second read
    call = event["data"]["choices"][0]["delta"]["tool_calls"][0]
    assert event["event"] == "message"
    assert call == {"index": 0, "id": "t1", "function": {"name": "read", "arguments": '{"path":"REA'}}


@pytest.mark.parametrize(
    "reads, arrival",
    [
        pytest.param([b'data: {"a": 1}\n\n', b'data: {"a": 1}\n\n'], [1, 2], id="lf"),
        pytest.param([b'data: {"a": 1}\n', b'\ndata: {"a": 1}\n', b"\n"], [2, 3], id="blank-line-opens-next-read"),
    ],
)
def test_each_event_is_yielded_in_the_read_that_completes_it(ink: Implementation, reads: Any, arrival: Any) -> None:
    """Never held back until the next read — a streaming display depends on it.

    中文:绝不留到下一次读取才交出 —— 流式显示靠的就是这一点。
    """
    assert arrivals(reads, ink.shared.parse_sse) == arrival


def test_one_byte_reads_of_a_fixture_equal_one_read(ink: Implementation) -> None:
    body = fixture_bytes("article/interleaved")
    whole = list(ink.shared.parse_sse([body]))
    assert list(ink.shared.parse_sse(split_at(body, list(range(len(body)))))) == whole
    assert len(whole) == 5


def one_event_in_small_reads(size: int, read: int = 64) -> list[bytes]:
    """One event of ``size`` bytes of text, delivered ``read`` bytes at a time."""
    data = b'data: {"x": "' + b"a" * size + b'"}\n\n'
    return [data[i : i + read] for i in range(0, len(data), read)]


def test_a_long_event_in_small_reads_takes_linear_time_like_the_reference(ink: Implementation) -> None:
    """The buffer is searched only where new text arrived: re-scanning it from the start on every
    read (the article's shape, in Python) takes quadratic time — ×100 the reference at 512 KiB.

    中文:只在新到的文本里找分隔符:每次读取都从头重扫 buffer(文章的写法照搬到 Python)是平方时间 ——
    在 512 KiB 时是参考实现的 100 倍。
    """
    verdict = growth_verdict(
        lambda reads: list(ink.shared.parse_sse(iter(reads))),
        lambda reads: list(reference.parse_sse(iter(reads))),
        one_event_in_small_reads(64 << 10),
        one_event_in_small_reads(512 << 10),
        8,
        ("64 KiB", "512 KiB"),
        (
            "one event of 64 KiB, then one of 512 KiB, each read 64 bytes at a time",
            "一个 64 KiB 的事件,再一个 512 KiB 的,都是每次读取 64 字节",
        ),
    )
    if verdict:
        pytest.fail(verdict, pytrace=False)
