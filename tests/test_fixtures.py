"""Every recorded stream in fixtures/, and what its dialect's assemble_stream must make of it.

Real servers' documented behaviours, one fixture each: ``fixtures/servers/`` (OpenAI-compatible
Chat Completions servers and proxies: that table is exercise 4's, ink_py/course/checks/test_fixtures.py),
``fixtures/anthropic/`` (Anthropic Messages and the endpoints that speak it), ``fixtures/responses/``
(OpenAI Responses). Every row: a raw body and the assistant message — or the error — it must
assemble into; one test a table, across the three dialects. The article's own scenarios, in every
folder, are tests/test_dialects.py's and ink_py/course/checks/test_assemble.py's.
"""

import pytest

from ink_py.course.checks.helpers import (
    ARTICLE_FOLDER,
    dialect_of,
    fixture_bytes,
    message,
    read_call,
    run_assembly,
    text,
    usage,
)
from ink_py.course.checks.test_fixtures import SERVERS

from .helpers import FIXTURES
from .test_dialects import ARTICLE_SCENARIOS

# The long answers of two recorded streams below.
CODE_EXECUTION_ANSWER = (
    "Perfect! The script has been created and executed successfully. \n\n"
    "**Result: The 10th Fibonacci number is 34**\n\nThe script includes:\n"
    "1. An **iterative function** (`fibonacci`) - efficient and fast, suitable for larger numbers\n"
    "2. A **recursive function** (`fibonacci_recursive`) - simpler but less efficient for large values\n"
    "3. The main execution block that calculates and displays the 10th Fibonacci number\n"
    "4. A bonus display showing all Fibonacci numbers from F(1) to F(10)\n\n"
    "The Fibonacci sequence starts with 0, 1, and each subsequent number is the sum of the previous two numbers: "
    "0, 1, 1, 2, 3, 5, 8, 13, 21, 34, ..."
)

COPILOT_ANSWER = (
    "There are **3** letter **“r”**s in **“strawberry.”**\n\nBreakdown: **s t r a w b e r r y**  \n"
    "You can see **r** at positions **3, 8, and 9**."
)


# (fixture, words the error must contain) — streams that must fail, never look like success.
FAILING_SERVERS = [
    ("vllm_error", "This model's maximum context length is 32768 tokens."),
    ("llamacpp_error_field", "the request exceeds the available context size"),
    ("event_error", "upstream provider overloaded"),
    ("malformed_frame", 'not JSON: \'data: {"choices"'),
]


# ── Anthropic Messages ──────────────────────────────────────────────────────────────────

# (fixture, expected message), then (fixture, words the error must contain).
ANTHROPIC = [
    # Anthropic's own shape: usage in message_start (cache reads apart), ping, cumulative output_tokens.
    ("anthropic_text", message([text("项目用 `make run` 启动。")], "end_turn", usage(472, 15, 2048))),
    # The first input_json_delta is "" — no delta for it; text block and tool block kept apart by index.
    (
        "anthropic_tool_use",
        message(
            [text("我先读一下 README.md。"), read_call("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "README.md")],
            "tool_use",
            usage(384, 89),
        ),
    ),
    # A tool block with no input deltas at all: arguments {}.
    (
        "anthropic_parameterless_tool",
        message(
            [{"type": "toolCall", "id": "toolu_01Now", "name": "current_time", "arguments": {}}],
            "tool_use",
            usage(120, 12),
        ),
    ),
    # Thinking with its signature (kept to be sent back); cache writes count as input.
    (
        "anthropic_thinking",
        message(
            [
                {
                    "type": "thinking",
                    "thinking": "用户问怎样启动,先看 README。",
                    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
                },
                text("运行 make run。"),
            ],
            "end_turn",
            usage(120, 42),
        ),
    ),
    (
        "anthropic_redacted_thinking",
        message(
            [
                {
                    "type": "thinking",
                    "thinking": "",
                    "redacted": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
                },
                text("Run make run."),
            ],
            "end_turn",
            usage(50, 7),
        ),
    ),
    ("anthropic_stop_sequence", message([text("Run make run.")], "end_turn", usage(40, 5))),
    ("anthropic_refusal", message([text("I can't help with that.")], None, usage(40, 6))),
    # Compatible endpoints: input_tokens 0 at the start, the real counts in message_delta.
    ("proxy_input_tokens_in_message_delta", message([text("运行 make run。")], "end_turn", usage(120, 9, 64))),
    ("proxy_no_event_lines", message([text("我先读一下 README。"), read_call("t1", "README.md")], "tool_use")),
    ("proxy_whole_input_in_start", message([read_call("toolu_gw1", "README.md")], "tool_use")),
    ("proxy_empty_text_block", message([read_call("toolu_e1", "README.md")], "tool_use")),
    # Server-side tools (the Vercel AI SDK's recordings of Anthropic): server_tool_use / mcp_tool_use blocks and
    # their results are the server's — their input_json_delta events never become client calls; the text stays.
    (
        "server_mcp",
        message(
            [
                text(
                    "The echo tool responded back with: **hello world**\n\n"
                    "It simply echoed back the exact message that was sent to it."
                )
            ],
            "end_turn",
            usage(1250, 83),
        ),
    ),
    (
        "server_code_execution",
        message(
            [
                text(
                    "I'll create a Python script to calculate Fibonacci numbers and then execute it to find the 10th "
                    "Fibonacci number."
                ),
                text("Now let's execute the script to find the 10th Fibonacci number:"),
                text(CODE_EXECUTION_ANSWER),
            ],
            "end_turn",
            usage(8050, 771),
        ),
    ),
    # message_delta's usage is cumulative per field: its cache counts join message_start's input_tokens (17 + 10).
    ("cache_counts_in_message_delta", message([text("Hello")], "end_turn", usage(27, 227, 5))),
    # llama-server: a sentence (index 0) and then a tool_use block (index 1); LiteLLM bridging onto it.
    (
        "llama_server_text_then_call",
        message(
            [text("I will read README.md first.\n"), read_call("u75c5Y7JzZPqhY03gGPewJ8sHxIDZ8NE", "README.md")],
            "tool_use",
            usage(1, 42, 249),
        ),
    ),
    (
        "litellm_tool_call",
        message([read_call("g9mQtRXxVlJXzj8dzfchkHTbBCUiJXot", "README.md")], "tool_use", usage(25, 32, 207)),
    ),
]

FAILING_ANTHROPIC = [
    ("proxy_no_message_stop", "stream ended without message_stop"),
    ("anthropic_overloaded", "the server reported an error in the stream: overloaded_error: Overloaded"),
    ("anthropic_api_error", "api_error: Internal server error"),
]


# ── OpenAI Responses ────────────────────────────────────────────────────────────────────

# (fixture, expected message), then (fixture, words the error must contain).
RESPONSES = [
    # OpenAI's full text sequence; input_tokens include the cached ones, moved apart.
    ("openai_text", message([text("项目用 `make run` 启动。")], "end_turn", usage(176, 9, 1024))),
    # The call's id is its call_id (what function_call_output must name), not the item id fc_….
    (
        "openai_function_call",
        message([read_call("call_unLAR8MvFNptuiZK6K6HCy5k", "README.md")], "tool_use", usage(291, 23)),
    ),
    (
        "openai_reasoning_summary",
        message(
            [{"type": "thinking", "thinking": "用户问怎样启动,先看 README。"}, text("运行 make run。")],
            "end_turn",
            usage(44, 42, 256),
        ),
    ),
    (
        "reasoning_text",
        message(
            [{"type": "thinking", "thinking": "Check the README first."}, text("Run make run.")],
            "end_turn",
            usage(80, 12),
        ),
    ),
    ("arguments_only_in_done", message([read_call("call_d1", "README.md")], "tool_use", usage(200, 18))),
    ("whole_call_in_item_added", message([read_call("call_w1", "README.md")], "tool_use", usage(150, 16))),
    (
        "linked_by_item_id_only",
        message([read_call("call_a", "README.md"), read_call("call_b", "setup.cfg")], "tool_use"),
    ),
    ("proxy_no_event_lines", message([text("ok")], "end_turn")),
    ("incomplete_content_filter", message([text("The project starts with")], None, usage(40, 5))),
    # llama-server: items named by item_id only (no output_index): the sentence *and* the call, each its own item.
    (
        "llama_server_text_then_call",
        message(
            [text("I will read README.md first.\n"), read_call("call_nV05YvvxU9kC9FBgBC6n72T4z1gXKZyf", "README.md")],
            "tool_use",
            usage(1, 42, 249),
        ),
    ),
    (
        "llama_server_tool_call",
        message([read_call("call_Haq8gJdSIpyqTDeUBUKWrJwva22plCMD", "README.md")], "tool_use", usage(25, 32, 207)),
    ),
    # .added's call_id is provisional: .done's is the one the tool result must name.
    (
        "provisional_call_id",
        message([read_call("call_Haq8gJdSIpyqTDeUBUKWrJwva22plCMD", "README.md")], "tool_use", usage(25, 32, 207)),
    ),
    # LiteLLM bridging onto llama-server's Chat Completions: output_index 0 and 1.
    (
        "litellm_text_then_call",
        message(
            [text("I will read README.md first.\n"), read_call("0QNxKjl7qPyQKPJqdnKvjIbfOOCnlqon", "README.md")],
            "tool_use",
            usage(1, 42, 249),
        ),
    ),
    # GitHub Copilot (the Vercel AI SDK's recording): a new item_id on every event, output_index steady.
    (
        "copilot_id_rotation",
        message(
            [{"type": "thinking", "thinking": "**Counting character occurrences**"}, text(COPILOT_ANSWER)],
            "end_turn",
            usage(19, 105),
        ),
    ),
]

FAILING_RESPONSES = [
    ("no_terminal_event", "stream ended without response.completed"),
    ("response_failed", "server_error: The server had an error while processing your request."),
    ("error_flat", "rate_limit_exceeded: Rate limit reached for gpt-4.1 on tokens per min (TPM)."),
    ("error_nested", "context_length_exceeded: Your input exceeds the context window of this model."),
]


# Every table but Chat Completions' (exercise 4's, in the checks), each row named by its fixture.
STREAMS = [
    *[pytest.param(f"anthropic/{name}", want, id=f"anthropic/{name}") for name, want in ANTHROPIC],
    *[pytest.param(f"responses/{name}", want, id=f"responses/{name}") for name, want in RESPONSES],
]
FAILING = [
    *[(f"servers/{name}", words) for name, words in FAILING_SERVERS],
    *[(f"anthropic/{name}", words) for name, words in FAILING_ANTHROPIC],
    *[(f"responses/{name}", words) for name, words in FAILING_RESPONSES],
]


@pytest.mark.parametrize("fixture, expected", STREAMS)
def test_a_fixture_stream_assembles_into_the_expected_message(ink, fixture, expected):
    events, error = run_assembly(ink, [fixture_bytes(fixture)], dialect=dialect_of(fixture))
    assert error is None
    assert events[-1] == {"type": "message_end", "message": expected}
    assert [e["type"] for e in events].count("message_end") == 1


@pytest.mark.parametrize("fixture, words", FAILING, ids=[row[0] for row in FAILING])
def test_a_failing_fixture_stream_raises_with_the_servers_message(ink, fixture, words):
    events, error = run_assembly(ink, [fixture_bytes(fixture)], dialect=dialect_of(fixture))
    assert error is not None and words in error
    assert "message_end" not in [e["type"] for e in events]


def test_every_fixture_is_in_a_table():
    article = [row[0] for row in ARTICLE_SCENARIOS] + ["abort", "missing_finish"]  # in each dialect's folder
    named = {row.values[0] for row in STREAMS} | {f"servers/{row[0]}" for row in SERVERS} | {row[0] for row in FAILING}
    named |= {f"{folder}/{name}" for folder in ARTICLE_FOLDER.values() for name in article}
    assert {str(p.relative_to(FIXTURES).with_suffix("")) for p in FIXTURES.glob("*/*.sse")} == named
