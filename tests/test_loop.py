"""run_agent_loop and stream_assistant (article §2.3, §4.2–§4.4, and part 01's loop).

The README task end to end; arguments that break the schema, unknown tools, failing tools, the
gate; max turns; and the bounds on what a model may send: odd arguments in
every display and batch, more calls than the loop runs, huge names and paths in its messages,
two calls with one id (each gets its own result, in every dialect). The exercises' rules — a
cut reply (ex8), arguments that are not JSON (ex7), an abort (ex6) — are ink_py/course/checks/test_loop.py's.
"""

import io
import json

import pytest

from ink_py.course.checks.helpers import ScriptedProvider, fixture_bytes, provider_in, sse, text_reply, tool_reply
from ink_py.course.checks.test_loop import fake_read, results_of, run


def test_the_readme_task_end_to_end(ink):
    ran = []
    provider = ScriptedProvider(ink, fixture_bytes("article/readme"), text_reply("运行 `make run` 即可启动。"))
    result, history, events = run(ink, provider, [fake_read({"README.md": "# demo\n\n    make run\n"}, ran)])

    assert result == {
        "stopReason": "completed",
        "turns": 2,
        "usage": {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0},
        "truncated": False,
    }
    assert ran == ["README.md"]
    assert [m["role"] for m in history] == ["user", "assistant", "toolResult", "assistant"]
    assert history[1]["model"] == "test-model"
    assert results_of(history) == [
        {"toolCallId": "t1", "toolName": "read", "content": "# demo\n\n    make run\n", "isError": False}
    ]
    # The second request carries the tool result back to the model.
    assert provider.requests[1]["messages"][-1]["role"] == "toolResult"
    kinds = [e["type"] for e in events]
    assert kinds == [
        "text_delta",
        "tool_call_start",
        "tool_call_delta",
        "tool_call_delta",
        "message_end",
        "tool_start",
        "tool_end",
        "text_delta",
        "message_end",
    ]
    assert events[5] == {"type": "tool_start", "toolCallId": "t1", "name": "read", "args": {"path": "README.md"}}


def test_two_interleaved_reads_both_run_in_call_order(ink):
    ran = []
    files = {"README.md": "readme", "package.json": "{}"}
    provider = ScriptedProvider(ink, fixture_bytes("article/interleaved"), text_reply("done"))
    result, history, _ = run(ink, provider, [fake_read(files, ran)])
    assert ran == ["README.md", "package.json"]
    assert [(r["toolCallId"], r["content"]) for r in results_of(history)] == [("t1", "readme"), ("t2", "{}")]
    assert result["stopReason"] == "completed"


@pytest.mark.parametrize(
    "arguments, words",
    [
        ('{"path": 123}', "invalid arguments for read — /path: must be a string, got 123"),
        ("{}", "missing required property 'path'"),
        ('{"path": "a", "mode": "x"}', "unexpected property 'mode'"),
        ('{"path": "a", "offset": 0}', "/offset: must be at least 1"),
        ('["README.md"]', 'tool arguments must be a JSON object, got: ["README.md"]'),
    ],
    ids=["wrong-type", "missing-required", "extra-property", "below-minimum", "not-an-object"],
)
def test_arguments_breaking_the_schema_are_refused(ink, arguments, words):
    ran = []
    provider = ScriptedProvider(ink, tool_reply(("c1", "read", arguments)), text_reply("ok"))
    _, history, _ = run(ink, provider, [fake_read({"a": "x"}, ran)])
    [r] = results_of(history)
    assert ran == [] and r["isError"] is True
    assert words in r["content"]


def test_unknown_tool_lists_the_available_ones(ink):
    provider = ScriptedProvider(ink, tool_reply(("c1", "bash", '{"cmd": "ls"}')), text_reply("ok"))
    _, history, _ = run(ink, provider, [fake_read({})])
    assert results_of(history)[0]["content"] == 'Error: unknown tool "bash". Available tools: read.'


def test_a_tool_that_raises_becomes_an_error_result(ink):
    def boom(args):
        raise RuntimeError("disk on fire")

    provider = ScriptedProvider(ink, tool_reply(("c1", "read", '{"path": "a"}')), text_reply("ok"))
    result, history, _ = run(ink, provider, [fake_read({"a": "x"}, hook=boom)])
    assert results_of(history)[0]["content"] == "Error: tool read threw: disk on fire"
    assert result["stopReason"] == "completed"


def test_the_gate_can_block_a_call(ink):
    ran = []
    provider = ScriptedProvider(ink, tool_reply(("c1", "read", '{"path": "a"}')), text_reply("ok"))
    gate = lambda call: {"block": True, "reason": f"{call['args']['path']} is private"}  # noqa: E731
    _, history, _ = run(ink, provider, [fake_read({"a": "x"}, ran)], on_tool_call=gate)
    assert ran == [] and results_of(history)[0]["content"] == 'Tool "read" blocked: a is private'


def test_max_turns_stops_and_closes_the_dangling_calls(ink):
    replies = [tool_reply((f"c{i}", "read", '{"path": "missing"}')) for i in range(3)]
    provider = ScriptedProvider(ink, *replies)
    result, history, _ = run(ink, provider, [fake_read({})], max_turns=3)
    assert result["stopReason"] == "max_iterations" and result["turns"] == 3
    assert history[-1] == {
        "role": "toolResult",
        "results": [
            {"toolCallId": "c2", "toolName": "read", "content": "(not executed: reached max turns)", "isError": True}
        ],
    }
    assert result["usage"] == {"inputTokens": 300, "outputTokens": 30, "cacheReadTokens": 0}


def test_a_stream_without_message_end_is_an_error(ink):
    class Silent:
        def stream(self, request):
            yield {"type": "text_delta", "text": "hi"}

    with pytest.raises(ink.shared.ProviderError, match="Provider stream ended without a message_end event"):
        ink.loop.stream_assistant(Silent(), {"model": "m", "system": "", "messages": []})


def test_stream_assistant_stamps_the_model_and_closes_the_stream(ink):
    closed = []

    def events():
        try:
            yield from ink.openai_completions.assemble_stream([text_reply("hi")])
            yield {"type": "text_delta", "text": "never read"}
        finally:
            closed.append(True)

    class Provider:
        def stream(self, request):
            return events()

    message = ink.loop.stream_assistant(Provider(), {"model": "m1", "system": "", "messages": []})
    assert message["model"] == "m1" and message["blocks"] == [{"type": "text", "text": "hi"}]
    assert closed == [True]


def test_a_server_error_mid_run_propagates_from_the_loop(ink):
    error_body = sse({"choices": [{"delta": {"content": "partial"}}]}) + b'data: {"error": {"message": "boom"}}\n\n'
    provider = ScriptedProvider(ink, error_body)
    with pytest.raises(ink.shared.ProviderError, match="boom"):
        run(ink, provider, [fake_read({})])


# ── what a model may send: odd arguments, a flood of calls, huge names ──────────────────

ODD_ARGUMENTS = {
    "offset-400-digits": '{"path": "README.md", "offset": ' + "9" * 400 + "}",
    "limit-400-digits": '{"path": "README.md", "limit": ' + "9" * 400 + "}",
    "nested-100000-deep": "[" * 100_000 + "]" * 100_000,
    "nested-900-deep": '{"a": ' * 900 + "1" + "}" * 900,
    "a-number": "5",
    "an-array": "[1, 2]",
    "a-string": '"README.md"',
    "null": "null",
}


@pytest.mark.parametrize("name", sorted(ODD_ARGUMENTS))
@pytest.mark.parametrize("display", ["ink", "filtered"])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_odd_arguments_go_back_as_tool_errors_and_the_run_goes_on(ink, tmp_path, name, display, parallel):
    from ink_py.runner import Display
    from ink_py.second_article.stream import sse_fields

    (tmp_path / "README.md").write_text("# hi\n")
    calls = [("t1", "read", ODD_ARGUMENTS[name]), ("t2", "read", '{"path": "README.md"}')]
    provider = ScriptedProvider(ink, tool_reply(*calls), text_reply("ok"))
    shown = Display(io.StringIO(), io.StringIO(), display)
    result, history, _ = run(
        ink,
        provider,
        [ink.read_tool.create_read_tool(tmp_path)],
        user_message="u",
        on_event=lambda event: (shown.show(event), sse_fields(event)),
        max_concurrent=5 if parallel else 1,
    )
    assert result["stopReason"] == "completed"
    first, second = history[2]["results"]
    if name == "limit-400-digits":  # a limit past the end of the file simply means "to the end"
        assert first["content"] == "# hi"
    else:
        assert first["isError"] and first["content"].startswith("Error: ") and len(first["content"]) < 1000
    assert second == {"toolCallId": "t2", "toolName": "read", "content": "# hi", "isError": False}
    json.dumps(provider.requests[1]["messages"])  # the follow-up request can still be sent


def test_a_400_digit_integer_passes_the_schema_check_without_overflow():
    from ink_py.core.tools.schema import check_arguments

    assert check_arguments({"type": "integer", "minimum": 1}, 10**400) == []
    assert check_arguments({"type": "integer"}, 2.5) == ["(root): must be an integer, got 2.5"]


def test_calls_past_the_bound_are_answered_not_run(ink, tmp_path):
    (tmp_path / "a.txt").write_text("x" * 1000)
    count = ink.loop.MAX_TOOL_CALLS_PER_REPLY * 20
    calls = [(f"t{i}", "read", '{"path": "a.txt"}') for i in range(count)]
    provider = ScriptedProvider(ink, tool_reply(*calls), text_reply("done"))
    ran = []
    read = ink.read_tool.create_read_tool(tmp_path)
    counted = {**read, "execute": lambda args, signal: ran.append(1) or read["execute"](args, signal)}
    _, history, _ = run(ink, provider, [counted], user_message="go")
    results = history[2]["results"]
    assert len(ran) == ink.loop.MAX_TOOL_CALLS_PER_REPLY == 64
    assert [r["toolCallId"] for r in results] == [f"t{i}" for i in range(count)]  # every call answered, in order
    refused = [r for r in results if "not run" in r["content"]]
    assert len(refused) == count - 64 and all(r["isError"] for r in refused)
    follow_up = json.dumps(provider.requests[1]["messages"][2])
    assert len(follow_up) < 64 * 1100 + (count - 64) * 300  # not: every call's file content


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read", json.dumps({"path": "p" * 5_000_000})),  # file not found: <path>
        ("r" * 5_000_000, "{}"),  # unknown tool "<name>"
        ("read", json.dumps({"path": "a", "extra": "e" * 5_000_000})),  # schema problems
        ("read", "[" + "1," * 2_000_000 + "1]"),  # arguments that are not an object
    ],
    ids=["long-path", "long-tool-name", "long-extra-property", "long-array"],
)
def test_error_messages_quote_only_the_start_of_their_input(ink, tmp_path, name, arguments):
    provider = ScriptedProvider(ink, tool_reply(("t1", name, arguments)), text_reply("ok"))
    _, history, _ = run(ink, provider, [ink.read_tool.create_read_tool(tmp_path)], user_message="u")
    [result] = history[2]["results"]
    assert result["isError"] and len(result["content"]) < 1000, result["content"][:300]


# ── two calls a server gave one id ──────────────────────────────────────────────────────


@pytest.mark.parametrize("max_concurrent", [1, 5], ids=["serial", "parallel"])
def test_two_calls_with_one_id_each_get_their_own_result(ink, max_concurrent):
    """Results were keyed by id: two calls in one chunk both got b.txt's content back."""
    files = {"a.txt": "AAA", "b.txt": "BBB"}
    body = tool_reply(("same", "read", '{"path": "a.txt"}'), ("same", "read", '{"path": "b.txt"}'))
    provider = ScriptedProvider(ink, body, text_reply("done"))
    read = {**fake_read(files), "concurrencySafe": True}  # as the real read: the two share a chunk
    result, history, events = run(ink, provider, [read], max_concurrent=max_concurrent)
    assert [(r["toolCallId"], r["content"]) for r in results_of(history)] == [("same", "AAA"), ("same", "BBB")]
    assert [e["result"]["content"] for e in events if e["type"] == "tool_end"] == ["AAA", "BBB"]
    assert result["stopReason"] == "completed"


def test_calls_with_one_id_that_never_ran_are_each_answered(ink):
    calls = [{"id": "same", "name": "read", "arguments": {}}] * 3
    results = [{"toolCallId": "same", "toolName": "read", "content": "ran", "isError": False}]
    ink.loop.fill_missing_tool_results(calls, results, "never ran")
    assert [r["content"] for r in results] == ["ran", "never ran", "never ran"]  # was: ["ran"]


def sent_results(dialect, body):
    """The tool results a request body carries back, in order."""
    if dialect == "openai_completions":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if dialect == "anthropic_messages":
        blocks = [c for m in body["messages"] if isinstance(m["content"], list) for c in m["content"]]
        return [c["content"] for c in blocks if c["type"] == "tool_result"]
    return [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]


@pytest.mark.parametrize("dialect", ["openai_completions", "anthropic_messages", "openai_responses"])
def test_each_dialect_sends_each_calls_own_result_back(ink, tmp_path, dialect):
    from .raw_servers import SSE_HEAD, RawServer
    from .test_dialects import WRITERS

    (tmp_path / "a.txt").write_text("AAA\n")
    (tmp_path / "b.txt").write_text("BBB\n")
    calls = [{"id": "same", "name": "read", "arguments": {"path": p}} for p in ("a.txt", "b.txt")]
    first = WRITERS[dialect](calls, [(0, '{"path": "a.txt"}'), (1, '{"path": "b.txt"}')])
    second = WRITERS[dialect]([], [("text", "done")])

    def serve(conn, server):
        server.read_request(conn)
        conn.sendall(SSE_HEAD + (first if len(server.requests) == 1 else second))

    with RawServer(serve) as server:
        provider = provider_in(ink, dialect, server.base_url)
        result, _, _ = run(ink, provider, [ink.read_tool.create_read_tool(str(tmp_path))])
    body = json.loads(server.requests[1].split(b"\r\n\r\n", 1)[1])
    assert result["stopReason"] == "completed"
    assert [content.strip().splitlines()[0] for content in sent_results(dialect, body)] == ["AAA", "BBB"]


def test_the_display_numbers_two_calls_with_one_id_apart():
    from ink_py.runner import Display

    out, err = io.StringIO(), io.StringIO()
    display = Display(out, err)
    for path in ("a.txt", "b.txt"):
        display.show({"type": "tool_call_start", "id": "same", "name": "read"})
        display.show({"type": "tool_call_delta", "id": "same", "jsonDelta": path})
    assert err.getvalue().splitlines() == ["  ↳ read a.txt", "  ↳ read #2 b.txt"]
