"""Chat Completions servers' recorded streams (fixtures/servers/): exercise 4's tool-call fragments, for real.

Each row is a server's documented behaviour, one fixture each — Ollama's parallel calls all at index 0,
Gemini's calls with no index, DashScope's empty ids, vLLM's late names — and the assistant message
``assemble_stream`` must make of it. The other dialects' tables and the streams that must fail are
tests/test_fixtures.py's, which takes ``SERVERS`` from here.
"""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import fixture_bytes, message, read_call, run_assembly, text, usage
from .implementation import Implementation

# ── Chat Completions servers ────────────────────────────────────────────────────────────

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


@pytest.mark.ex4
@pytest.mark.parametrize(
    "fixture, expected", [pytest.param(f"servers/{name}", want, id=f"servers/{name}") for name, want in SERVERS]
)
def test_a_fixture_stream_assembles_into_the_expected_message(
    ink: Implementation, fixture: str, expected: dict[str, Any]
) -> None:
    events, error = run_assembly(ink, [fixture_bytes(fixture)])
    assert error is None
    assert events[-1] == {"type": "message_end", "message": expected}
    assert [e["type"] for e in events].count("message_end") == 1
