"""run_agent_loop (article §4.2–§4.4): what the loop does with a reply that was cut, aborted or unparseable.

Exercise 8: a reply that hit the output limit with tool calls runs none of them and answers each
(fail_tool_calls_from_truncated_message), the calls staying in the history as sent; exercise 7:
arguments that are not JSON are blocked with the reason; exercise 6: an abort mid-stream or between
tools. The loop's other rules (schemas, unknown tools, the gate, max turns, bounds) are
tests/test_loop.py's, which shares ``fake_read``, ``run`` and ``results_of`` from here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from .helpers import ScriptedProvider, fixture_bytes, text_reply, tool_reply
from .implementation import Implementation

READ_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "offset": {"type": "integer", "minimum": 1}},
    "required": ["path"],
    "additionalProperties": False,
}


def fake_read(
    files: dict[str, str], ran: list[str] | None = None, hook: Callable[[dict[str, Any]], object] | None = None
) -> dict[str, Any]:
    """A read tool over an in-memory workspace, recording each call it really ran."""
    calls: list[str] = [] if ran is None else ran

    def execute(args: dict[str, Any], signal: Any) -> dict[str, Any]:
        calls.append(args["path"])
        if hook:
            hook(args)
        if args["path"] not in files:
            return {"output": f"Error: {args['path']} not found", "isError": True}
        return {"output": files[args["path"]]}

    return {"name": "read", "description": "Read a file", "parameters": READ_SCHEMA, "execute": execute}


def run(ink: Implementation, provider: Any, tools: list[dict[str, Any]], **options: Any) -> tuple[Any, Any, Any]:
    history = options.pop("history", [])
    events: list[dict[str, Any]] = []
    result = ink.loop.run_agent_loop(
        provider=provider,
        model="test-model",
        system="You are ink.",
        tools=tools,
        history=history,
        user_message=options.pop("user_message", "读取 README.md,告诉我项目怎样启动"),
        on_event=options.pop("on_event", events.append),
        **options,
    )
    return result, history, events


def results_of(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for m in history if m["role"] == "toolResult" for r in m["results"]]


@pytest.mark.ex8
def test_max_tokens_with_tool_calls_runs_none_and_asks_for_them_again(ink: Implementation) -> None:
    ran: list[str] = []
    provider = ScriptedProvider(
        ink, fixture_bytes("article/length_tool"), tool_reply(("t3", "read", '{"path":"README.md"}')), text_reply("ok")
    )
    result, history, events = run(ink, provider, [fake_read({"README.md": "x"}, ran)])
    first_results = history[2]["results"]
    assert [r["toolCallId"] for r in first_results] == ["t1", "t2"]  # even t1, whose arguments parsed
    for r in first_results:
        assert r["isError"] is True
        assert "output token limit" in r["content"] and "Send the call again" in r["content"]
    assert ran == ["README.md"]  # only the re-issued call of the next reply ran
    assert result["stopReason"] == "completed" and result["turns"] == 3
    ends = [e for e in events if e["type"] == "tool_end"]
    assert [e["result"]["toolCallId"] for e in ends] == ["t1", "t2", "t3"]


@pytest.mark.ex8
def test_fail_tool_calls_from_truncated_message(ink: Implementation) -> None:
    calls = [
        {"type": "toolCall", "id": "a", "name": "read", "arguments": {"path": "README.md"}},
        {"type": "toolCall", "id": "b", "name": "grep", "arguments": {"_parseError": "x", "raw": "{"}},
    ]
    results: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    ink.loop.fail_tool_calls_from_truncated_message(calls, results, events.append)
    summary = [(r["toolCallId"], r["toolName"], r["isError"]) for r in results]
    assert summary == [("a", "read", True), ("b", "grep", True)]
    assert all("may be truncated" in r["content"] and "not run" in r["content"] for r in results)
    assert [e["type"] for e in events] == ["tool_start", "tool_end", "tool_start", "tool_end"]


@pytest.mark.ex8
def test_a_refused_call_stays_in_the_history_as_the_model_sent_it(ink: Implementation) -> None:
    """Each refused call gets its own result; the call itself is not changed — the history keeps
    what the model asked for, so it can send the same call again, complete.

    中文:每个被拒绝的调用各得一条结果;调用本身不改 —— 历史里保留模型当初请求的样子,它才能把同一个调用完整地重发。
    """
    calls = [
        {"type": "toolCall", "id": "a", "name": "read", "arguments": {"path": "README.md"}},
        {"type": "toolCall", "id": "b", "name": "read", "arguments": {"_parseError": "x", "raw": '{"path'}},
    ]
    before = copy.deepcopy(calls)
    results: list[dict[str, Any]] = []
    ink.loop.fail_tool_calls_from_truncated_message(calls, results, None)
    assert calls == before
    assert [r["toolCallId"] for r in results] == ["a", "b"]


@pytest.mark.ex8
def test_max_tokens_without_tool_calls_completes_truncated(ink: Implementation) -> None:
    provider = ScriptedProvider(ink, fixture_bytes("article/length_text"))
    result, history, _ = run(ink, provider, [fake_read({})])
    assert result["stopReason"] == "completed"  # the loop is done…
    assert result["truncated"] is True  # …but the answer is not whole
    assert history[-1]["stopReason"] == "max_tokens"


@pytest.mark.ex7
def test_arguments_that_are_not_json_are_blocked_with_the_reason(ink: Implementation) -> None:
    ran: list[str] = []
    provider = ScriptedProvider(ink, fixture_bytes("article/invalid_json"), text_reply("sorry"))
    result, history, _ = run(ink, provider, [fake_read({"README.md": "x"}, ran)])
    [r] = results_of(history)
    assert ran == []
    assert r["isError"] is True
    assert "not valid JSON" in r["content"] and '{\\"path\\":\\"README.md\\"' in r["content"]
    assert "Send the call again" in r["content"]
    assert result["stopReason"] == "completed"


@pytest.mark.ex6
def test_abort_mid_stream_stops_without_an_assistant_message(ink: Implementation) -> None:
    controller = ink.abort.AbortController()

    def stalled_reply(request: Any) -> Any:
        yield fixture_bytes("article/abort")
        controller.abort()  # Ctrl-C while the next read is pending
        raise ConnectionResetError("closed by abort")

    provider = ScriptedProvider(ink, stalled_reply)
    result, history, events = run(ink, provider, [fake_read({})], signal=controller.signal)
    assert result["stopReason"] == "aborted" and result["turns"] == 0
    assert [m["role"] for m in history] == ["user"]
    assert "message_end" not in [e["type"] for e in events]


@pytest.mark.ex6
def test_abort_between_tools_answers_the_calls_that_never_ran(ink: Implementation) -> None:
    controller = ink.abort.AbortController()
    ran: list[str] = []
    provider = ScriptedProvider(ink, tool_reply(("c1", "read", '{"path": "a"}'), ("c2", "read", '{"path": "b"}')))
    tool = fake_read({"a": "x", "b": "y"}, ran, hook=lambda args: controller.abort())
    result, history, _ = run(ink, provider, [tool], signal=controller.signal)
    assert ran == ["a"]
    assert results_of(history) == [
        {"toolCallId": "c1", "toolName": "read", "content": "x", "isError": False},
        {"toolCallId": "c2", "toolName": "read", "content": "(interrupted before this tool ran)", "isError": True},
    ]
    assert result["stopReason"] == "aborted" and result["turns"] == 1
