"""``ink-py demo --api …``: the same "读取 README" story stepped through in each wire dialect."""

import pytest

from ink_py.course import demo, demo_dialects, demo_screens, demo_steps
from ink_py.scripted.scenarios import SCENARIOS, fixture_path

OTHER_APIS = ["anthropic-messages", "openai-responses"]


def steps_of(name, api):
    folder = demo_dialects.DIALECTS[api]["folder"]
    fixture = SCENARIOS[name]["fixture"].replace("article/", f"{folder}/")
    frames = demo_steps.split_frames(fixture_path(fixture).read_bytes())
    return demo_steps.record_steps(frames, len(frames) if name in demo.ABORT_SCENARIOS else None, api)


def emitted(steps):
    return [event for step in steps for event in step["emitted"]]


@pytest.mark.parametrize("api", OTHER_APIS)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_hands_the_display_and_the_loop_what_chat_completions_does(api, name):
    theirs, ours = steps_of(name, api), steps_of(name, "openai-completions")
    assert emitted(theirs) == emitted(ours)
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
                "收到结束事件 message_stop;解析参数,交出完整回复",
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


@pytest.mark.parametrize("api", OTHER_APIS)
def test_a_missing_end_event_is_refused_in_each_dialect(api):
    steps = steps_of("missing-finish", api)
    assert steps[-1]["title"] == "缺少结束原因,拒绝交付"
    assert "response may be truncated" in steps[-1]["error"]


def test_the_command_takes_api_and_says_which_fixture(capsys):
    code = demo.main(["--api", "openai-responses", "--no-pause", "interleaved"])
    out, _ = capsys.readouterr()
    assert code == 0 and "fixtures/responses/interleaved.sse" in out
    assert "index_by_item = " in out and "ink_py/provider/openai_responses.py · assemble_stream()" in out


def test_an_unknown_api_is_one_error_line(capsys):
    code = demo.main(["--api", "anthropic"])
    _, err = capsys.readouterr()
    assert code == 1 and err.startswith("error: --api anthropic: choose one of openai-completions")
