"""``ink-py demo`` reads what a step shows off the assembler itself (``demo_dialects``).

The state shown is the locals ``assemble_stream`` sets up before its main loop, the event
is that loop's variable, the code shown is the functions it really calls: so a state
variable renamed or added, or a helper moved, shows up without editing the demo — and a
local the panels know by name may go missing without breaking it.
"""

from types import SimpleNamespace

import pytest

from ink_py.course import demo_panels, demo_screens, demo_steps
from ink_py.course.demo_dialects import DIALECTS, UNSHOWN, assembler, assembler_locals, callees, traced_functions
from ink_py.provider import anthropic_messages, shared

from .helpers import text_reply


def joined(parts: list[str]) -> str:
    """A helper of the assembler below: traced because it calls it."""
    return "".join(parts)


def renamed_assemble_stream(body, signal=None):
    """A Chat Completions reader whose state has names the demo does not know, and one local more."""
    pieces: list[str] = []  # ink_py's text_parts
    events = 0  # a local ink_py does not have
    got_finish = False
    for chunk in shared.parse_sse(body):
        events += 1
        choice = chunk["data"]["choices"][0]
        content = (choice.get("delta") or {}).get("content")
        if content:
            pieces.append(content)
            yield {"type": "text_delta", "text": content}
        got_finish = got_finish or choice.get("finish_reason") is not None
    blocks = [{"type": "text", "text": joined(pieces)}]
    yield {"type": "message_end", "message": {"role": "assistant", "blocks": blocks, "stopReason": "end_turn"}}


@pytest.fixture
def renamed(monkeypatch: pytest.MonkeyPatch) -> str:
    module = SimpleNamespace(assemble_stream=renamed_assemble_stream)
    monkeypatch.setitem(DIALECTS, "renamed", {"module": module, "folder": "article"})
    return "renamed"


def test_the_state_is_what_the_assembler_sets_up_before_its_loop_and_the_event_its_variable():
    assert assembler_locals(renamed_assemble_stream) == (("pieces", "events", "got_finish"), "chunk")
    for api in DIALECTS:
        state, event = assembler_locals(assembler(api))
        assert event == "sse" and "signal" not in state  # a parameter, though assigned before the loop
        assert {"blocks", "usage", "stop_reason"} <= set(state)


def test_a_renamed_or_added_local_is_shown_and_a_missing_known_one_is_no_error(renamed):
    steps = demo_steps.record_steps(demo_steps.split_frames(text_reply("你好")), api=renamed)
    assert [step["received"] for step in steps] == ["nothing", "event", "event", "end"]
    assert [step["title"] for step in steps] == [
        "等待第一条事件",
        "保存文本,先交给显示层",
        "记下结束原因,继续读到流结束",
        "拼好文本,交出完整回复",
    ]
    assert demo_panels.state_text(steps[0]) == ["events = 0", "got_finish = False"]
    assert demo_panels.state_text(steps[2]) == ["pieces = ['你好']", "events = 2", "got_finish = True"]
    shown = demo_screens.render_step(steps[-1], 4, 4, demo_screens.Style(False, 80), height=22, previous=steps[2])
    assert "tests/test_demo_dialects.py · renamed_assemble_stream()" in shown
    assert "tests/test_demo_dialects.py · joined()" in shown  # the helper it called at the end


@pytest.mark.parametrize("api", list(DIALECTS))
def test_the_code_shown_is_the_provider_helpers_the_assembler_really_calls(api):
    traced = traced_functions(assembler(api))
    assert traced[0] is assembler(api)
    for number, function in enumerate(traced[1:], 1):
        assert function.__module__.startswith("ink_py.provider.") and function.__name__ not in UNSHOWN
        assert any(function in callees(caller) for caller in traced[:number])  # called by one shown before it
    assert traced_functions(renamed_assemble_stream) == (renamed_assemble_stream, joined)  # its own package's


def test_a_helper_reached_only_through_another_is_traced():
    """Messages parses a call's arguments in finish_block → finish_tool_arguments → safe_parse_json."""
    traced, called = traced_functions(anthropic_messages.assemble_stream), callees(anthropic_messages.assemble_stream)
    assert shared.safe_parse_json in traced and shared.safe_parse_json not in called
    assert shared.parse_sse in called and shared.parse_sse not in traced  # UNSHOWN: its work is 本次收到
