"""Documented behaviours of real OpenAI-compatible servers, one fixture each.

Every row: a raw body in ``fixtures/servers/`` and the assistant message (or the error)
that ink_py must make of it.
"""

import pytest

from .helpers import FIXTURES, fixture_bytes, message, read_call, run_assembly, text, usage

# (fixture, expected message) — what each server's stream must assemble into.
SERVERS = [
    # OpenAI with include_usage: usage null on chunks, then a choices-less usage chunk;
    # content null when the reply opens with a tool call; the call opens with arguments "".
    ("openai_include_usage", message([read_call("call_Abc123", "README.md")], "tool_use", usage(176, 18, 1024))),
    ("openai_text", message([text("项目用 `make run` 启动。")], "end_turn", usage(50, 12))),
    # Azure: a first chunk with choices [] and prompt_filter_results; a choice with no delta;
    # content_filter is a finish reason ink_py does not know → stopReason None.
    ("azure_content_filter", message([text("The project starts with")], None)),
    # DeepSeek: keep-alive comments while queued, reasoning_content → a thinking block,
    # prompt_cache_hit_tokens counted as cache reads.
    (
        "deepseek_reasoning",
        message(
            [{"type": "thinking", "thinking": "用户问怎样启动,先看 README。"}, text("运行 make run。")],
            "end_turn",
            usage(44, 42, 256),
        ),
    ),
    # Ollama: whole calls in one chunk, all at index 0 with different ids — two calls.
    (
        "ollama_parallel",
        message([read_call("call_kq1", "README.md"), read_call("call_kq2", "setup.cfg")], "tool_use", usage(210, 40)),
    ),
    # vLLM: a name chunk without "arguments", fragments, a leftover fragment on the finish chunk.
    ("vllm_name_then_fragments", message([read_call("chatcmpl-tool-9f2", "README.md")], "tool_use", usage(500, 30))),
    # OpenRouter: processing comments, finish_reason twice, usage on a chunk with choices.
    ("openrouter", message([text("Run `make run`.")], "end_turn", usage(26, 6, 64))),
    # Gemini: calls with no index at all, each whole, distinct ids.
    (
        "gemini_no_index",
        message(
            [
                read_call("function-call-1111", "README.md"),
                read_call("function-call-2222", "setup.cfg"),
                read_call("function-call-3333", "walkthrough.md"),
            ],
            "tool_use",
            usage(700, 45),
        ),
    ),
    # Fireworks / NVIDIA NIM: id, type and name repeated on every chunk — never concatenated.
    ("fireworks_repeated_name", message([read_call("call_fw1", "README.md")], "tool_use", usage(400, 20))),
    # DashScope (Qwen): continuation chunks carry "id": "" — the real id stays.
    ("dashscope_empty_id", message([read_call("call_ds81", "README.md")], "tool_use", usage(330, 21))),
    # Moonshot (Kimi): usage inside choices[0], cached_tokens at its top level.
    ("moonshot_usage_in_choice", message([text("运行 make run。")], "end_turn", usage(20, 9, 100))),
    # Groq: usage on the finish chunk (and in x_groq) and again in a usage-only chunk.
    ("groq_usage_twice", message([text("Run make run.")], "end_turn", usage(80, 5))),
    # Together: finish reason "eos".
    ("together_eos", message([text("Run make run.")], None, usage(60, 4))),
    # Proxies and gateways.
    ("proxy_crlf", message([text("第一行\nsecond line")], "end_turn")),
    ("proxy_cr", message([text("第一行\nsecond line")], "end_turn")),
    ("proxy_bom_mixed_endings", message([text("第一行\nsecond line")], "end_turn")),
    ("proxy_data_without_space", message([text(" leading space kept")], "end_turn")),
    ("proxy_done_without_blank_line", message([text("ok")], "end_turn")),
    ("proxy_no_finish_reason_done", message([text("Run make run."), read_call("call_p1", "Makefile")], "tool_use")),
    (
        "proxy_index_from_one",
        message([read_call("call_i1", "README.md"), read_call("call_i2", "setup.cfg")], "tool_use"),
    ),
    (
        "proxy_parameterless_tool",
        message([{"type": "toolCall", "id": "call_now", "name": "current_time", "arguments": {}}], "tool_use"),
    ),
    ("gateway_function_call_finish", message([read_call("call_legacy", "README.md")], "tool_use")),
    ("empty_reply", message([text("(empty)")], "end_turn")),
]

# (fixture, words the error must contain) — streams that must fail, never look like success.
FAILING_SERVERS = [
    ("vllm_error", "This model's maximum context length is 32768 tokens."),
    ("llamacpp_error_field", "the request exceeds the available context size"),
    ("event_error", "upstream provider overloaded"),
    ("malformed_frame", 'not JSON: \'data: {"choices"'),
]


@pytest.mark.ex4
@pytest.mark.parametrize("fixture, expected", SERVERS, ids=[row[0] for row in SERVERS])
def test_server_stream_assembles_into_the_expected_message(ink, fixture, expected):
    events, error = run_assembly(ink, [fixture_bytes(f"servers/{fixture}")])
    assert error is None
    assert events[-1] == {"type": "message_end", "message": expected}
    assert [e["type"] for e in events].count("message_end") == 1


@pytest.mark.parametrize("fixture, words", FAILING_SERVERS, ids=[row[0] for row in FAILING_SERVERS])
def test_server_error_streams_raise_with_the_servers_message(ink, fixture, words):
    events, error = run_assembly(ink, [fixture_bytes(f"servers/{fixture}")])
    assert error is not None and words in error
    assert "message_end" not in [e["type"] for e in events]


def test_every_server_fixture_is_in_a_table():
    named = {row[0] for row in SERVERS} | {row[0] for row in FAILING_SERVERS}
    on_disk = {p.stem for p in (FIXTURES / "servers").glob("*.sse")}
    assert on_disk == named
