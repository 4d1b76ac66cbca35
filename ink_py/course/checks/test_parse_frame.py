"""parse_frame (article §2.1): one frame's lines → {"event", "data"} — exercise 1."""

from __future__ import annotations

from typing import Any

import pytest

from .implementation import Implementation

pytestmark = pytest.mark.ex1

# (frame text, expected result) — None means "nothing to hand on".
FRAMES = [
    pytest.param('data: {"a": 1}', {"event": "message", "data": {"a": 1}}, id="default-event-name"),
    pytest.param('event: delta\ndata: {"a": 1}', {"event": "delta", "data": {"a": 1}}, id="named-event"),
    pytest.param('data: {"a":\ndata: 1}', {"event": "message", "data": {"a": 1}}, id="data-lines-joined"),
    pytest.param('data:{"a": 1}', {"event": "message", "data": {"a": 1}}, id="no-space-after-colon"),
    pytest.param('data: "  two spaces"', {"event": "message", "data": "  two spaces"}, id="value-whitespace-kept"),
    pytest.param('data:  {"a": 1}', {"event": "message", "data": {"a": 1}}, id="only-one-space-stripped-json-ok"),
    pytest.param("data: [DONE]", {"event": "message", "data": "[DONE]"}, id="done-marker"),
    pytest.param("data:[DONE]", {"event": "message", "data": "[DONE]"}, id="done-without-space"),
    pytest.param("data: [DONE] ", {"event": "message", "data": "[DONE]"}, id="done-trailing-space"),
    pytest.param('event:  delta\ndata: {"a": 1}', {"event": " delta", "data": {"a": 1}}, id="only-one-space-stripped"),
    pytest.param(": keep-alive", None, id="comment-only"),
    pytest.param(": OPENROUTER PROCESSING", None, id="openrouter-comment"),
    pytest.param("data:", None, id="empty-data-is-keep-alive"),
    pytest.param("data: ", None, id="blank-data-is-keep-alive"),
    pytest.param("event: ping", None, id="no-data-lines"),
    pytest.param('id: 7\nretry: 1000\ndata: {"a": 1}', {"event": "message", "data": {"a": 1}}, id="id-retry-ignored"),
    pytest.param(': note\ndata: {"a": 1}\n: more', {"event": "message", "data": {"a": 1}}, id="comments-between"),
    pytest.param('foo: bar\ndata: {"a": 1}', {"event": "message", "data": {"a": 1}}, id="unknown-field-ignored"),
    pytest.param('event:\ndata: {"a": 1}', {"event": "message", "data": {"a": 1}}, id="empty-event-name"),
    pytest.param('\ndata: {"a": 1}', {"event": "message", "data": {"a": 1}}, id="leading-blank-line"),
    pytest.param('data: {"t": "a:b"}', {"event": "message", "data": {"t": "a:b"}}, id="colon-in-value"),
    pytest.param(
        'error: {"code": 400, "message": "too long"}',
        {"event": "error", "data": {"code": 400, "message": "too long"}},
        id="llamacpp-error-field",
    ),
    pytest.param('data: {"msg": "读取"}', {"event": "message", "data": {"msg": "读取"}}, id="unicode"),
    pytest.param("error: slot unavailable", {"event": "error", "data": "slot unavailable"}, id="error-field-text"),
]


@pytest.mark.parametrize("frame, expected", FRAMES)
def test_parse_frame(ink: Implementation, frame: Any, expected: Any) -> None:
    assert ink.shared.parse_frame(frame) == expected


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param('data: {"choices": [', id="truncated-json"),
        pytest.param("data: hello", id="plain-text"),
        pytest.param('data: {"a":\ndata: "x\ndata: y"}', id="newline-inside-string"),
        pytest.param('data: {"a": NaN}', id="nan"),
        pytest.param("data: Infinity", id="infinity"),
        pytest.param('data: {"a": 1e999}', id="too-large-for-a-float"),
        pytest.param("data: " + "[" * 100_000, id="nested-too-deep"),
    ],
)
def test_data_that_is_not_json_raises_and_quotes_the_frame(ink: Implementation, frame: Any) -> None:
    """What is not JSON — NaN, Infinity and 1e999 included — is an error that quotes the frame, never a value.

    中文:不是 JSON 的数据(包括 NaN、Infinity 和 1e999)都报错,并引用这个 frame,绝不当作一个值交出去。
    """
    with pytest.raises(ink.shared.ProviderError) as caught:
        ink.shared.parse_frame(frame)
    message = str(caught.value)
    assert "not JSON" in message
    assert frame.split("\n")[0][:20] in message  # the start of the bad frame is quoted
