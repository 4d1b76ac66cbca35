"""assemble_stream (article §2, §2.2, §4.1–§4.4): the article's scenarios, step by step.

Each test names the exercise it checks (ex3 text, ex4 tool fragments, ex5 finish reason,
ex6 abort, ex7 unparseable arguments). A scenario every dialect has its copy of (a missing
end event, an abort, a read error) runs in all three; the exercise's mark stays on Chat
Completions, the article's own. What every dialect must yield alike is tests/test_dialects.py's.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from ink_py.provider import openai_completions, shared

from .helpers import ARTICLE_FOLDER, NO_END_MESSAGE, fixture_bytes, growth_verdict, in_each_dialect, run_assembly
from .implementation import Implementation

REFERENCE = SimpleNamespace(openai_completions=openai_completions, shared=shared)  # whatever ``ink`` is

NO_USAGE = {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0}


def chunk(delta: Any = None, finish: Any = None, **extra: Any) -> Any:
    """One chat.completion.chunk frame as bytes."""
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice], **extra}, ensure_ascii=False).encode() + b"\n\n"


def call(index: Any, arguments: Any = None, id: Any = None, name: Any = None) -> Any:
    tc = {"index": index, "function": {}}
    if id is not None:
        tc["id"] = id
    if name is not None:
        tc["function"]["name"] = name
    if arguments is not None:
        tc["function"]["arguments"] = arguments
    return chunk({"tool_calls": [tc]})


# ── ex3: text ───────────────────────────────────────────────────────────────────────────


@pytest.mark.ex3
def test_text_deltas_are_yielded_as_they_arrive_and_joined_in_the_message(ink: Implementation) -> None:
    reads = [chunk({"content": "我先读"}), chunk({"content": "一下 README。"}), chunk(finish="stop")]
    events, error = run_assembly(ink, reads)
    assert error is None
    assert events[:2] == [{"type": "text_delta", "text": "我先读"}, {"type": "text_delta", "text": "一下 README。"}]
    assert events[2]["message"]["blocks"] == [{"type": "text", "text": "我先读一下 README。"}]


@pytest.mark.ex3
@pytest.mark.parametrize("content", [None, "", 42], ids=["null", "empty", "not-a-string"])
def test_empty_or_missing_content_yields_nothing(ink: Implementation, content: Any) -> None:
    events, error = run_assembly(ink, [chunk({"content": content}), chunk({"content": "ok"}), chunk(finish="stop")])
    assert [e["type"] for e in events] == ["text_delta", "message_end"]
    assert events[-1]["message"]["blocks"] == [{"type": "text", "text": "ok"}]


@pytest.mark.ex3
def test_a_refusal_is_the_replys_text(ink: Implementation) -> None:
    """OpenAI sends a refused answer as ``delta.refusal``: it is shown and kept like ``content``.

    中文:OpenAI 把拒绝回答放在 ``delta.refusal`` 里:它和 ``content`` 一样显示、一样保存。
    """
    events, error = run_assembly(
        ink, [chunk({"refusal": "I can't "}), chunk({"refusal": "help."}), chunk(finish="stop")]
    )
    assert error is None
    assert [e.get("text") for e in events[:-1]] == ["I can't ", "help."]
    assert events[-1]["message"]["blocks"] == [{"type": "text", "text": "I can't help."}]


@pytest.mark.ex3
def test_text_is_one_block_even_when_tool_calls_arrive_between(ink: Implementation) -> None:
    reads = [
        chunk({"content": "a"}),
        call(0, "{}", id="t1", name="read"),
        chunk({"content": "b"}),
        chunk(finish="stop"),
    ]
    events, _ = run_assembly(ink, reads)
    blocks = events[-1]["message"]["blocks"]
    assert blocks[0] == {"type": "text", "text": "ab"}
    assert blocks[1]["type"] == "toolCall"


@pytest.mark.ex3
def test_long_text_in_many_pieces_takes_linear_time_like_the_reference(ink: Implementation) -> None:
    """Each piece is kept once and the text joined once at ④: rebuilding the whole text for every
    piece (`text_block["text"] += content`, or a join per piece) takes quadratic time.

    中文:每段文字只保存一次,在第 ④ 步一次性拼接:每来一段就重建全文(`text_block["text"] += content`,
    或者每段都 join 一次)是平方时间。
    """

    def reads(size: int, piece: int = 1024) -> list[bytes]:
        return [chunk({"content": "x" * piece})] * (size // piece) + [chunk(finish="stop")]

    verdict = growth_verdict(
        lambda body: run_assembly(ink, body),
        lambda body: run_assembly(REFERENCE, body),
        reads(512 << 10),
        reads(4 << 20),
        8,
        ("512 KiB", "4 MiB"),
        (
            "a reply of 512 KiB of text, then one of 4 MiB, in 1 KiB pieces",
            "一条 512 KiB 文字的回复,再一条 4 MiB 的,每段 1 KiB",
        ),
    )
    if verdict:
        pytest.fail(verdict, pytrace=False)


@pytest.mark.ex3
@pytest.mark.ex4
@pytest.mark.ex5
@pytest.mark.parametrize("fixture", ["article/readme", "article/interleaved", "article/length_text"])
def test_assembly_writes_nothing_to_the_terminal(
    ink: Implementation, capfd: pytest.CaptureFixture[str], fixture: Any
) -> None:
    """The display gets events, never the assembler's own print: a line on stdout corrupts the CLI's output.

    中文:显示层只从事件里拿内容,组装代码自己不能 print:stdout 上多出的一行会弄乱命令行的输出。
    """
    run_assembly(ink, [fixture_bytes(fixture)])
    written = capfd.readouterr()
    assert written.out + written.err == ""


# ── ex4: tool-call fragments by index (§2.2) ───────────────────────────────────────────


@pytest.mark.ex4
def test_article_readme_scenario(ink: Implementation) -> None:
    events, error = run_assembly(ink, [fixture_bytes("article/readme")])
    assert error is None
    assert events == [
        {"type": "text_delta", "text": "我先读一下 README。"},
        {"type": "tool_call_start", "id": "t1", "name": "read"},
        {"type": "tool_call_delta", "id": "t1", "jsonDelta": '{"path":"REA'},
        {"type": "tool_call_delta", "id": "t1", "jsonDelta": 'DME.md"}'},
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "blocks": [
                    {"type": "text", "text": "我先读一下 README。"},
                    {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "README.md"}},
                ],
                "usage": NO_USAGE,
                "stopReason": "tool_use",
            },
        },
    ]


@pytest.mark.ex4
def test_article_interleaved_scenario_keeps_each_index_apart(ink: Implementation) -> None:
    events, error = run_assembly(ink, [fixture_bytes("article/interleaved")])
    assert error is None
    assert [(e["type"], e.get("id"), e.get("jsonDelta")) for e in events[:-1]] == [
        ("tool_call_start", "t1", None),
        ("tool_call_delta", "t1", '{"path":"REA'),
        ("tool_call_start", "t2", None),
        ("tool_call_delta", "t2", '{"path":"pack'),
        ("tool_call_delta", "t1", 'DME.md"}'),
        ("tool_call_delta", "t2", 'age.json"}'),
    ]
    assert events[-1]["message"]["blocks"] == [
        {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "README.md"}},
        {"type": "toolCall", "id": "t2", "name": "read", "arguments": {"path": "package.json"}},
    ]


@pytest.mark.ex4
def test_name_arriving_after_the_id_is_filled_in(ink: Implementation) -> None:
    reads = [call(0, id="t1"), call(0, name="read"), call(0, '{"path":"a"}'), chunk(finish="tool_calls")]
    events, _ = run_assembly(ink, reads)
    assert events[0] == {"type": "tool_call_start", "id": "t1", "name": ""}
    assert events[-1]["message"]["blocks"] == [
        {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a"}}
    ]


@pytest.mark.ex4
def test_missing_id_falls_back_to_call_index(ink: Implementation) -> None:
    reads = [call(3, '{"x": 1}', name="read"), chunk(finish="tool_calls")]
    events, _ = run_assembly(ink, reads)
    assert events[0] == {"type": "tool_call_start", "id": "call_3", "name": "read"}
    assert events[-1]["message"]["blocks"][0]["id"] == "call_3"


@pytest.mark.ex4
def test_an_id_arriving_after_an_invented_one_does_not_split_the_call(ink: Implementation) -> None:
    reads = [call(0, '{"p":', name="read"), call(0, " 1}", id="real"), chunk(finish="tool_calls")]
    events, _ = run_assembly(ink, reads)
    assert events[-1]["message"]["blocks"] == [
        {"type": "toolCall", "id": "call_0", "name": "read", "arguments": {"p": 1}}
    ]


@pytest.mark.ex4
def test_a_later_name_never_replaces_the_first(ink: Implementation) -> None:
    reads = [call(0, "{}", id="t1", name="read"), call(0, name="grep"), chunk(finish="tool_calls")]
    events, _ = run_assembly(ink, reads)
    assert events[-1]["message"]["blocks"][0]["name"] == "read"


@pytest.mark.ex4
def test_empty_fragments_yield_no_delta_and_blank_arguments_become_empty_object(ink: Implementation) -> None:
    reads = [call(0, "", id="t1", name="now"), call(0, ""), call(0, "  "), chunk(finish="tool_calls")]
    events, _ = run_assembly(ink, reads)
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "message_end"]
    assert events[-1]["message"]["blocks"][0]["arguments"] == {}


@pytest.mark.ex4
def test_a_new_id_at_an_occupied_index_is_a_new_call(ink: Implementation) -> None:
    reads = [
        call(0, '{"p": 1}', id="a", name="read"),
        call(0, '{"p": 2}', id="b", name="read"),
        chunk(finish="tool_calls"),
    ]
    events, _ = run_assembly(ink, reads)
    assert [b["id"] for b in events[-1]["message"]["blocks"]] == ["a", "b"]
    assert [b["arguments"] for b in events[-1]["message"]["blocks"]] == [{"p": 1}, {"p": 2}]


@pytest.mark.ex4
def test_nothing_reaches_the_loop_before_the_stream_ends(ink: Implementation) -> None:
    """tool_call_start/delta only report progress: message_end comes last, once.

    中文:tool_call_start/delta 只报告进度:message_end 最后出现,而且只出现一次。
    """
    events, _ = run_assembly(ink, [fixture_bytes("article/interleaved")])
    assert [e["type"] for e in events].count("message_end") == 1
    assert events[-1]["type"] == "message_end"


# ── ex5: the finish reason (§4.1, §4.4) ────────────────────────────────────────────────


@pytest.mark.ex5
@pytest.mark.parametrize(
    "reason, stop_reason",
    [
        ("tool_calls", "tool_use"),
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("content_filter", None),
        ("eos", None),
    ],
)
def test_map_finish_reason(ink: Implementation, reason: Any, stop_reason: Any) -> None:
    assert ink.openai_completions.map_finish_reason(reason) == stop_reason


@pytest.mark.parametrize("dialect", in_each_dialect(pytest.mark.ex5))
def test_article_missing_finish_reason_raises_and_yields_no_message(ink: Implementation, dialect: Any) -> None:
    events, error = run_assembly(ink, [fixture_bytes(f"{ARTICLE_FOLDER[dialect]}/missing_finish")], dialect=dialect)
    assert error == NO_END_MESSAGE[dialect]
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_delta"]


@pytest.mark.ex5
def test_usage_sent_after_the_finish_reason_is_kept(ink: Implementation) -> None:
    """No break at the finish reason: OpenAI sends the usage in a chunk after it.

    中文:见到结束原因也不要 break:OpenAI 在它后面的块里才发用量。
    """
    usage = {"prompt_tokens": 12, "completion_tokens": 3}
    reads = [chunk({"content": "hi"}), chunk(finish="stop"), b'data: {"choices": [], "usage": '
             + json.dumps(usage).encode() + b"}\n\n", b"data: [DONE]\n\n"]  # fmt: skip
    events, error = run_assembly(ink, reads)
    assert error is None
    assert events[-1]["message"]["usage"] == {"inputTokens": 12, "outputTokens": 3, "cacheReadTokens": 0}


@pytest.mark.ex5
def test_an_empty_finish_reason_still_counts_as_seen(ink: Implementation) -> None:
    events, error = run_assembly(ink, [chunk({"content": "hi"}), chunk(finish="")])
    assert error is None and events[-1]["message"]["stopReason"] is None


@pytest.mark.ex5
def test_done_without_finish_reason_counts_as_complete(ink: Implementation) -> None:
    events, error = run_assembly(ink, [chunk({"content": "hi"}), b"data: [DONE]\n\n"])
    assert error is None
    assert events[-1]["message"]["stopReason"] is None


@pytest.mark.ex5
def test_unknown_finish_reason_with_tool_calls_is_tool_use(ink: Implementation) -> None:
    events, _ = run_assembly(ink, [call(0, "{}", id="t1", name="read"), chunk(finish="function_call")])
    assert events[-1]["message"]["stopReason"] == "tool_use"


@pytest.mark.ex5
@pytest.mark.parametrize(
    "fixture, stop_reason",
    [("article/length_text", "max_tokens"), ("article/length_tool", "max_tokens"), ("article/readme", "tool_use")],
)
def test_article_stop_reasons(ink: Implementation, fixture: Any, stop_reason: Any) -> None:
    events, error = run_assembly(ink, [fixture_bytes(fixture)])
    assert error is None
    assert events[-1]["message"]["stopReason"] == stop_reason


@pytest.mark.ex5
def test_empty_reply_gets_a_placeholder_block(ink: Implementation) -> None:
    events, _ = run_assembly(ink, [chunk({"content": ""}), chunk(finish="stop")])
    assert events == [
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "blocks": [{"type": "text", "text": "(empty)"}],
                "usage": NO_USAGE,
                "stopReason": "end_turn",
            },
        }
    ]


# ── ex6: abort (§4.2) ───────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("dialect", in_each_dialect(pytest.mark.ex6))
def test_article_abort_scenario_ends_quietly_without_message_end(ink: Implementation, dialect: Any) -> None:
    controller = ink.abort.AbortController()

    def network() -> Any:
        yield fixture_bytes(f"{ARTICLE_FOLDER[dialect]}/abort")
        controller.abort()  # the user presses Ctrl-C while the next read is pending
        raise ConnectionResetError("connection closed by abort")

    events = list(getattr(ink, dialect).assemble_stream(network(), controller.signal))
    assert events == [  # the events so far, the same in every dialect, and no message_end
        {"type": "tool_call_start", "id": "t1", "name": "read"},
        {"type": "tool_call_delta", "id": "t1", "jsonDelta": '{"path":"REA'},
    ]


@pytest.mark.ex6
def test_abort_after_the_last_event_still_yields_no_message_end(ink: Implementation) -> None:
    controller = ink.abort.AbortController()

    def network() -> Any:
        yield fixture_bytes("article/readme")
        controller.abort()

    events = list(ink.openai_completions.assemble_stream(network(), controller.signal))
    assert "message_end" not in [e["type"] for e in events]


@pytest.mark.ex6
def test_abort_safe_passes_items_and_swallows_errors_only_when_aborted(ink: Implementation) -> None:
    controller = ink.abort.AbortController()

    def failing() -> Any:
        yield 1
        yield 2
        raise OSError("read failed")

    with pytest.raises(OSError, match="read failed"):
        list(ink.shared.abort_safe(failing(), controller.signal))
    with pytest.raises(OSError):
        list(ink.shared.abort_safe(failing(), None))
    controller.abort()
    assert list(ink.shared.abort_safe(failing(), controller.signal)) == [1, 2]


@pytest.mark.parametrize("dialect", in_each_dialect(pytest.mark.ex6))
def test_a_read_error_without_abort_propagates_through_assembly(ink: Implementation, dialect: Any) -> None:
    def network() -> Any:
        yield fixture_bytes(f"{ARTICLE_FOLDER[dialect]}/abort")
        raise ConnectionResetError("peer reset")

    with pytest.raises(ConnectionResetError, match="peer reset"):
        list(getattr(ink, dialect).assemble_stream(network(), ink.abort.AbortController().signal))


# ── ex7: arguments that are not JSON (§4.3) ────────────────────────────────────────────


@pytest.mark.ex7
@pytest.mark.parametrize(
    "raw, parsed",
    [
        ('{"path":"README.md"}', {"path": "README.md"}),
        ("[1, 2]", [1, 2]),
        ('{"path":"README.md"', {"_parseError": "tool arguments were not valid JSON", "raw": '{"path":"README.md"'}),
        ("x" * 600, {"_parseError": "tool arguments were not valid JSON", "raw": "x" * 500}),
        ('{"n": NaN}', {"_parseError": "tool arguments were not valid JSON", "raw": '{"n": NaN}'}),
        ('{"n": 1e999}', {"_parseError": "tool arguments were not valid JSON", "raw": '{"n": 1e999}'}),
        ("[" * 100_000, {"_parseError": "tool arguments were not valid JSON", "raw": "[" * 500}),
        ("[" * 150 + "]" * 150, {"_parseError": "tool arguments were nested more than 100 deep", "raw": "[" * 150
                                 + "]" * 150}),
    ],
    ids=["object", "array", "missing-brace", "long-raw-cut-to-500", "nan", "too-large-for-a-float",
         "nested-too-deep-to-parse", "nested-too-deep-to-send-back"],
)  # fmt: skip
def test_safe_parse_json(ink: Implementation, raw: Any, parsed: Any) -> None:
    assert ink.shared.safe_parse_json(raw) == parsed


@pytest.mark.ex7
def test_article_invalid_json_scenario_still_reaches_message_end_with_parse_error(ink: Implementation) -> None:
    events, error = run_assembly(ink, [fixture_bytes("article/invalid_json")])
    assert error is None
    assert events[-1]["message"]["blocks"] == [
        {
            "type": "toolCall",
            "id": "t1",
            "name": "read",
            "arguments": {"_parseError": "tool arguments were not valid JSON", "raw": '{"path":"README.md"'},
        }
    ]
