"""``ink-py demo`` in each wire dialect (``--api``), and what a step shows, read off the assembler itself.

The same "读取 README" story stepped through in each dialect hands the display and the loop
what Chat Completions does, in steps named after the dialect's own events. The state shown
is the locals ``assemble_stream`` sets up before its main loop, the event is that loop's
variable, the code shown is the functions it really calls (``demo_dialects``): so a state
variable renamed or added, or a helper moved, shows up without editing the demo — and a
local the panels know by name may go missing without breaking it.
"""

import re
from types import SimpleNamespace

import pytest

from ink_py.course import demo, demo_panels, demo_screens, demo_steps
from ink_py.course.checks.helpers import text_reply
from ink_py.course.demo_dialects import (
    DIALECTS,
    LEFT_OUT,
    assembler,
    assembler_locals,
    callees,
    loop_head,
    traced_functions,
)
from ink_py.provider import anthropic_messages, shared
from ink_py.scripted.scenarios import SCENARIOS

from .test_demo import steps_of
from .test_dialects import by_call

OTHER_APIS = ["anthropic-messages", "openai-responses"]


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
        assert function.__module__.startswith("ink_py.provider.") and function.__name__ not in LEFT_OUT
        assert any(function in callees(caller) for caller in traced[:number])  # called by one shown before it
    assert traced_functions(renamed_assemble_stream) == (renamed_assemble_stream, joined)  # its own package's


def test_a_helper_reached_only_through_another_is_traced():
    """Messages parses a call's arguments in finish_block → finish_tool_arguments → safe_parse_json."""
    traced, called = traced_functions(anthropic_messages.assemble_stream), callees(anthropic_messages.assemble_stream)
    assert shared.safe_parse_json in traced and shared.safe_parse_json not in called
    assert shared.parse_sse in called and shared.parse_sse not in traced  # LEFT_OUT: its work is 本次收到


# ── the same story in each dialect: ink-py demo --api … ────────────────────────────────


def emitted(steps):
    return [event for step in steps for event in step["emitted"]]


@pytest.mark.parametrize("api", OTHER_APIS)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_hands_the_display_and_the_loop_what_chat_completions_does(api, name):
    theirs, ours = steps_of(name, api), steps_of(name, "openai-completions")
    assert by_call(emitted(theirs)) == by_call(emitted(ours))  # only Chat Completions interleaves two calls
    assert theirs[-1]["outcome"] == ours[-1]["outcome"]
    assert all(step["outcome"] == "pending" for step in theirs[:-1])


@pytest.mark.parametrize(
    "api, titles",
    [
        (
            "anthropic-messages",
            [
                "等待第一条事件",
                "回复开始",
                "打开 index 0 的 text 块",
                "保存文本,先交给显示层",
                "index 0 的块结束,拼好它的文本",
                "建立 index 1 的工具请求",
                "继续拼接 index 1 的工具请求",
                "继续拼接 index 1 的工具请求",
                "index 1 的块结束,解析它的参数",
                "记下结束原因,继续读到 message_stop",
                "收到结束事件 message_stop;交出完整回复",
            ],
        ),
        (
            "openai-responses",
            [
                "等待第一条事件",
                "回复开始",
                "打开 output_index 0 的 message 项",
                "保存文本,先交给显示层",
                "建立 index 1 的工具请求",
                "继续拼接 index 1 的工具请求",
                "继续拼接 index 1 的工具请求",
                "收到整串参数(.done),以它为准",
                "收到结束事件 response.completed;解析参数,交出完整回复",
            ],
        ),
    ],
)
def test_the_readme_steps_are_named_after_the_dialects_own_events(api, titles):
    assert [step["title"] for step in steps_of("readme", api)] == titles


def test_a_messages_tool_call_is_parsed_at_its_block_stop_before_the_reply_ends():
    steps = steps_of("readme", "anthropic-messages")
    stop = next(step for step in steps if step["title"].startswith("index 1 的块结束"))
    assert stop["state"]["block_by_index"][1]["arguments"] == {"path": "README.md"}
    assert stop["outcome"] == "pending" and "finish_block" in stop["lines"]
    text = demo_screens.render_step(stop, 9, 11, demo_screens.Style(False))
    assert 'arguments(解析后)= {"path": "README.md"}' in text
    assert "ink_py/provider/anthropic_messages.py · assemble_stream()" in text


def test_the_command_takes_api_and_says_which_fixture(capsys):
    code = demo.main(["--api", "openai-responses", "--no-pause", "interleaved"])
    out, _ = capsys.readouterr()
    assert code == 0 and "fixtures/responses/interleaved.sse" in out
    assert "index_by_item = " in out and "ink_py/provider/openai_responses.py · assemble_stream()" in out


@pytest.mark.parametrize("api", DIALECTS)
def test_interleaved_says_in_one_line_why_only_chat_completions_interleaves(capsys, api):
    """Messages and Responses stream one block / item after another (issue 28): the demo's first line says so."""
    assert demo.main(["--api", api, "--no-pause", "interleaved"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    said = "两次调用先后到达,交错只在 Chat Completions 出现(§2.2)" in first
    assert said == (api != "openai-completions")
    for other in SCENARIOS.keys() - {"interleaved"}:  # the other scenarios tell the same story everywhere
        assert demo.main(["--api", api, "--no-pause", other]) == 0
        assert "Chat Completions" not in capsys.readouterr().out.splitlines()[0]


def test_an_unknown_api_is_one_error_line(capsys):
    code = demo.main(["--api", "anthropic"])
    _, err = capsys.readouterr()
    assert code == 1 and err.startswith("error: --api anthropic: choose one of openai-completions")


# ── the code panel at the article's size: its loop and helpers; the guards on request ──


def test_each_name_left_out_is_a_function_some_assembler_really_reaches():
    """LEFT_OUT is checked against the source: a function renamed or removed fails here, instead of
    its new name showing up in every step (as check_chunk did when check_chunk_shape was listed)."""
    reached = {f.__name__ for api in DIALECTS for f in traced_functions(assembler(api), every=True)}
    assert LEFT_OUT - reached == set()


@pytest.mark.parametrize(
    "api, shown",
    [
        ("openai-completions", ["assemble_stream", "abort_safe", "finish_tool_arguments", "map_finish_reason",
                                "safe_parse_json"]),
        ("anthropic-messages", ["assemble_stream", "abort_safe", "open_block", "finish_block", "map_stop_reason",
                                "finish_tool_arguments", "safe_parse_json"]),
        ("openai-responses", ["assemble_stream", "abort_safe", "open_item", "finish_item", "map_status",
                              "finish_tool_arguments", "safe_parse_json"]),
    ],
)  # fmt: skip
def test_by_default_the_code_is_the_articles_loop_and_helpers_and_all_lines_adds_the_guards(api, shown):
    """The article's widget starts "from the SSE events already cut": no parse_sse, no guards, no usage.
    A function added to the assembler's calls shows up here first, to be named article or guard."""
    assert [f.__name__ for f in traced_functions(assembler(api))] == shown
    every = {f.__name__ for f in traced_functions(assembler(api), every=True)}
    assert {"parse_sse", "parse_frame", "guarded", "merge_usage"} <= every and every & {"check_chunk", "check_event"}
    steps = demo_steps.record_steps(demo_steps.split_frames(fixture_bytes_of(api, "readme")), api=api)
    assert {name for step in steps for name in step["lines"]} <= set(shown)
    steps = demo_steps.record_steps(demo_steps.split_frames(fixture_bytes_of(api, "readme")), api=api, every=True)
    assert "guarded" in {name for step in steps for name in step["lines"]}


def fixture_bytes_of(api: str, name: str) -> bytes:
    from ink_py.scripted.scenarios import fixture_path

    return fixture_path(SCENARIOS[name]["fixture"].replace("article/", DIALECTS[api]["folder"] + "/")).read_bytes()


def every_recording(every: bool = False):
    for api in DIALECTS:
        for name in SCENARIOS:
            frames = demo_steps.split_frames(fixture_bytes_of(api, name))
            yield api, name, demo_steps.record_steps(frames, len(frames) if name == "abort" else None, api, every)


def test_an_except_line_is_marked_only_when_its_handler_ran():
    """Closing the stream's generators at a normal end tests GeneratorExit against abort_safe's
    `except Exception:` — that line is not a caught error, and no step says it ran; the abort's is."""
    for api, name, steps in every_recording(every=True):
        for number, step in enumerate(steps, 1):
            for function in traced_functions(assembler(api), every=True):
                ran = set(step["lines"].get(function.__name__, []))
                for clause, handler in demo_steps.except_clauses(function):
                    assert clause not in ran or ran & handler, (api, name, number, function.__name__, clause)
    abort_safe_except = demo_steps.except_clauses(shared.abort_safe)[0][0]
    last = {(api, name): steps[-1]["lines"].get("abort_safe", []) for api, name, steps in every_recording()}
    assert all(abort_safe_except in lines for (_, name), lines in last.items() if name == "abort")
    assert not any(abort_safe_except in lines for (_, name), lines in last.items() if name == "readme")


def test_a_title_says_the_arguments_were_parsed_only_in_the_step_that_parsed_them():
    """In every dialect and scenario: "解析…参数" in a title ⇔ finish_tool_arguments ran in that step
    (Messages parses at the block's end, not at message_stop), except where the step ends in an
    error or an abort (the title says that instead)."""
    for api, name, steps in every_recording():
        for number, step in enumerate(steps, 1):
            parsed = "finish_tool_arguments" in step["lines"]
            says = "解析参数" in step["title"] or "解析它的参数" in step["title"]
            if step["outcome"] in ("error", "aborted"):
                assert not says, (api, name, number, step["title"])
            else:
                assert says == parsed, (api, name, number, step["title"])


@pytest.mark.parametrize("api", list(DIALECTS))
@pytest.mark.parametrize("name", ["readme", "interleaved"])
def test_at_50_rows_each_step_shows_the_lines_its_event_made_run(api, name):
    """A 50-row terminal (48 for the step: the label above, the prompt below): the text step shows ①,
    a tool step ② — every line of the assembler the step's event ran that the loop's head does not
    run for every event — until the last step, whose message takes the room."""
    steps = dict(((a, n), s) for a, n, s in every_recording())[(api, name)]
    head = loop_head(assembler(api))
    for number, step in enumerate(steps[:-1], 1):
        previous = steps[number - 2] if number > 1 else None
        shown = demo_screens.render_step(step, number, len(steps), demo_screens.Style(False, 80), 0, 48, previous)
        visible = {int(n) for n in re.findall(r"▶\s+(\d+) │", shown)}
        before = set(previous["lines"].get("assemble_stream", [])) if previous else set()
        news = set(step["lines"].get("assemble_stream", [])) - before - head
        assert news <= visible, (api, name, number, sorted(news - visible))
    if name == "readme":  # the text step: the line that yields text_delta is among the lines that ran, shown
        number, step = next(
            (n, s) for n, s in enumerate(steps, 1) if any(e["type"] == "text_delta" for e in s["emitted"])
        )
        shown = demo_screens.render_step(
            step, number, len(steps), demo_screens.Style(False, 80), 0, 48, steps[number - 2]
        )
        assert re.search(r"^▶ .*\"text_delta\"", shown, re.M), shown
