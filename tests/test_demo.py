"""``ink-py demo`` (issue 4): the article's §3 step-through, on the real assemble_stream.

The demo is not an exercise module, so these tests import ``ink_py.course.demo`` directly:
the steps it records, the text it prints, and the command as a user runs it
(pipes, a pseudo-terminal for Enter / q / Ctrl-C, ``--file`` on a recorded body).
"""

import inspect
import io
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time
from types import SimpleNamespace

import pytest

from ink_py.course import demo, demo_dialects, demo_panels, demo_screens, demo_steps
from ink_py.course.checks.helpers import all_fixture_names, dialect_of, fixture_bytes, run_assembly
from ink_py.provider import anthropic_messages, openai_completions, openai_responses, shared
from ink_py.scripted.scenarios import SCENARIOS, fixture_path

from .helpers import END_EVENT, ROOT, ctrl_c_reaches_children

REFERENCE = SimpleNamespace(
    openai_completions=openai_completions,
    anthropic_messages=anthropic_messages,
    openai_responses=openai_responses,
    shared=shared,
)
README_TITLES = [
    "等待第一条事件",
    "保存文本,先交给显示层",
    "建立 index 0 的工具请求",
    "继续拼接 index 0 的工具请求",
    "记下结束原因,继续读到流结束",
    "解析参数,交出完整回复",
]


def steps_of(name, api="openai-completions"):
    """The steps the demo records for scenario ``name``, from ``api``'s copy of its fixture."""
    fixture = SCENARIOS[name]["fixture"].replace("article/", demo_dialects.DIALECTS[api]["folder"] + "/")
    frames = demo_steps.split_frames(fixture_path(fixture).read_bytes())
    return demo_steps.record_steps(frames, len(frames) if name in demo.ABORT_SCENARIOS else None, api)


def message_ends(step):
    return [event for event in step["emitted"] if event["type"] == "message_end"]


def raw(step, index):
    return "".join(step["state"]["tool_raw_by_index"][index])


def source_line(function, needle):
    """(line number, text) of the one line of ``function`` containing ``needle``, as inspect sees it."""
    lines, first = inspect.getsourcelines(function)
    [(number, text)] = [(first + i, line.rstrip("\n")) for i, line in enumerate(lines) if needle in line]
    return number, text


def run_main(capsys, *argv):
    code = demo.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def command(*args):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(ROOT)
    return [sys.executable, "-m", "ink_py", "demo", *args], env


# ── the steps ────────────────────────────────────────────────────────────────────────


def test_readme_is_six_steps_and_only_the_last_hands_over_a_message():
    steps = steps_of("readme")
    assert [step["title"] for step in steps] == README_TITLES
    assert [len(message_ends(step)) for step in steps] == [0, 0, 0, 0, 0, 1]
    assert [step["outcome"] for step in steps] == ["pending"] * 5 + ["message_end"]
    assert [step["received"] for step in steps] == ["nothing", "event", "event", "event", "event", "end"]
    [end] = message_ends(steps[-1])
    assert end["message"]["blocks"][1]["arguments"] == {"path": "README.md"}


def test_at_step_4_the_arguments_are_complete_but_nothing_went_to_the_loop():
    step = steps_of("readme")[3]
    assert raw(step, 0) == '{"path":"README.md"}'
    assert step["state"]["tool_by_index"][0]["arguments"] == {}  # parsed only at ④, after the stream
    assert step["state"]["saw_finish"] is False
    assert step["outcome"] == "pending" and message_ends(step) == []
    assert step["emitted"] == [{"type": "tool_call_delta", "id": "t1", "jsonDelta": 'DME.md"}'}]


def test_the_state_shown_is_the_frames_own_text_as_it_grows():
    steps = steps_of("readme")
    assert [step["state"]["text_parts"] for step in steps] == [[]] + [["我先读一下 README。"]] * 5
    assert [step["state"]["stop_reason"] for step in steps] == [None] * 4 + ["tool_use"] * 2


def test_interleaved_keeps_two_raw_strings_that_never_mix():
    steps = steps_of("interleaved")
    assert [step["title"] for step in steps[1:5]] == [
        "建立 index 0 的工具请求",
        "建立 index 1 的工具请求",
        "继续拼接 index 0 的工具请求",
        "继续拼接 index 1 的工具请求",
    ]
    for step in steps:
        by_index = step["state"]["tool_raw_by_index"]
        assert set(by_index) <= {0, 1}
        if 0 in by_index:
            assert '{"path":"README.md"}'.startswith(raw(step, 0))
        if 1 in by_index:
            assert '{"path":"package.json"}'.startswith(raw(step, 1))
    assert (raw(steps[-1], 0), raw(steps[-1], 1)) == ('{"path":"README.md"}', '{"path":"package.json"}')
    [end] = message_ends(steps[-1])
    assert [block["id"] for block in end["message"]["blocks"]] == ["t1", "t2"]


@pytest.mark.parametrize("api", list(demo_dialects.DIALECTS))
@pytest.mark.parametrize(
    "name, outcome, last_title, says",
    [
        ("missing-finish", "error", "缺少结束原因,拒绝交付", "stream ended without {end}"),
        ("abort", "aborted", "用户中断,结束接收", "aborted = true"),
    ],
)
def test_a_stream_that_fails_never_hands_over_a_message(api, name, outcome, last_title, says):
    steps = steps_of(name, api)
    says = says.format(end=END_EVENT[api.replace("-", "_")])
    assert all(message_ends(step) == [] for step in steps)
    assert steps[-1]["outcome"] == outcome and steps[-1]["title"] == last_title
    text = demo_screens.render_step(steps[-1], len(steps), len(steps), demo_screens.Style(False))
    assert says in text and "不产出 message_end" in text


def test_abort_is_three_steps_and_abort_safe_swallows_the_read_error():
    steps = steps_of("abort")
    assert [step["received"] for step in steps] == ["nothing", "event", "abort"]
    number, _ = source_line(shared.abort_safe, "return  # aborted")
    assert number in steps[-1]["lines"]["abort_safe"]


@pytest.mark.parametrize(
    "name, check",
    [
        ("invalid-json", lambda m: "_parseError" in m["blocks"][0]["arguments"]),
        ("length-tool", lambda m: m["stopReason"] == "max_tokens"),
        ("length-text", lambda m: m["stopReason"] == "max_tokens" and m["blocks"][0]["type"] == "text"),
    ],
)
def test_the_last_step_hands_over_what_section_4_describes(name, check):
    steps = steps_of(name)
    [end] = message_ends(steps[-1])
    assert check(end["message"])
    assert all(message_ends(step) == [] for step in steps[:-1])


@pytest.mark.parametrize("name", all_fixture_names())
def test_one_frame_per_read_changes_nothing_the_assembler_yields(name):
    """Every fixture: the demo's steps carry exactly the events a plain run yields, in order."""
    body = fixture_bytes(name)
    assert b"".join(demo_steps.split_frames(body)) == body
    dialect = dialect_of(name)  # each fixture folder's own dialect
    expected, error = run_assembly(REFERENCE, [body], dialect=dialect)  # the demo shows ink_py, whatever --impl says
    steps = demo_steps.record_steps(demo_steps.split_frames(body), api=dialect.replace("_", "-"))
    assert [event for step in steps for event in step["emitted"]] == expected
    assert (steps[-1]["outcome"] == "error") == (error is not None)
    assert all(step["outcome"] == "pending" for step in steps[:-1])


# ── the code shown ───────────────────────────────────────────────────────────────────


def test_the_text_step_highlights_the_real_source_line():
    number, text = source_line(openai_completions.assemble_stream, "text_parts.append(content)")
    step = steps_of("readme")[1]
    assert number in step["lines"]["assemble_stream"]
    shown = demo_screens.render_step(step, 2, 6, demo_screens.Style(False))
    assert f"▶ {number:>4} │ {text}" in shown.splitlines()


def test_each_step_shows_only_the_lines_that_ran_in_it():
    steps = steps_of("readme")
    append_text, _ = source_line(openai_completions.assemble_stream, "text_parts.append(content)")
    append_fragment, _ = source_line(openai_completions.assemble_stream, "tool_raw_by_index[index].append(fragment)")
    build_end, _ = source_line(openai_completions.assemble_stream, '"type": "message_end"')
    ran = [set(step["lines"].get("assemble_stream", [])) for step in steps]
    assert [append_text in lines for lines in ran] == [False, True, False, False, False, False]
    assert [append_fragment in lines for lines in ran] == [False, False, True, True, False, False]
    assert [build_end in lines for lines in ran] == [False] * 5 + [True]
    assert "safe_parse_json" in steps[-1]["lines"] and "map_finish_reason" in steps[4]["lines"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_code_shown_never_includes_an_exercise_marker(capsys, name):
    """Markers are course scaffolding (issue 10): the demo shows only the article's code."""
    code, out, _ = run_main(capsys, name, "--no-pause", "--context", "3")
    assert code in (0, 1) and "│" in out
    assert not [line for line in out.splitlines() if "# exercise" in line]


def test_colour_marks_executed_lines_and_never_reaches_a_pipe(capsys):
    step = steps_of("readme")[1]
    coloured = demo_screens.render_step(step, 2, 6, demo_screens.Style(True))
    assert any(line.startswith("\x1b[1;7m▶") for line in coloured.splitlines())
    code, out, _ = run_main(capsys, "readme", "--no-pause")
    assert code == 0 and "\x1b[" not in out and "▶" in out


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("no_color, coloured", [("", True), ("1", False)])
def test_colour_on_a_terminal_unless_no_color(monkeypatch, no_color, coloured):
    monkeypatch.setenv("NO_COLOR", no_color)
    monkeypatch.setattr(sys, "stdout", FakeTerminal())
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # not a terminal: no pausing
    assert demo.main(["readme"]) == 0
    assert ("\x1b[" in sys.stdout.getvalue()) == coloured


# ── the command ──────────────────────────────────────────────────────────────────────


def test_list_prints_every_scenario_name_first(capsys):
    code, out, _ = run_main(capsys, "--list")
    lines = out.splitlines()
    assert code == 0
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    for line, scenario in zip(lines, SCENARIOS.values(), strict=True):
        assert scenario["title"] in line and f"  {scenario['section']}" in line


def test_file_steps_through_a_copy_of_a_fixture_exactly_like_the_scenario(capsys, tmp_path):
    copy = tmp_path / "001-response.sse"
    shutil.copy(fixture_path("article/interleaved.sse"), copy)
    _, from_scenario, _ = run_main(capsys, "interleaved", "--no-pause")
    code, from_file, _ = run_main(capsys, "--file", str(copy), "--no-pause")
    assert code == 0
    assert from_file.splitlines()[1:] == from_scenario.splitlines()[1:]  # all but the header naming the source


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--file", "/no/such/file.sse"], "error: --file /no/such/file.sse: No such file or directory"),
        (["nope"], "error: unknown scenario 'nope' (choose from: readme, interleaved, missing-finish, abort"),
        (["readme", "--file", "x.sse"], "error: give a scenario or --file, not both"),
        (["--context", "x"], "error: argument --context: invalid int value: 'x'"),
    ],
)
def test_mistakes_are_one_line_errors(capsys, argv, words):
    try:
        code = demo.main(argv)
    except SystemExit as exit:  # argparse's own complaints end this way
        code = exit.code
    out, err = capsys.readouterr()
    assert code == 1
    assert out == "" and err.startswith(words) and err.count("\n") == 1


def test_without_a_terminal_on_stdin_every_step_is_printed_at_once():
    argv, env = command("readme")
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("━━")] == [
        f"━━ 步骤 {k} / 6  {title}" for k, title in enumerate(README_TITLES, 1)
    ]
    assert "[任意键" not in done.stderr


def test_a_reader_that_goes_away_ends_the_demo_quietly():
    argv, env = command("readme", "--no-pause")  # as in `ink-py demo --no-pause | head -1`
    process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # gone before the first line is written
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0 and stderr == b""


def spawn_on_a_terminal(*args):
    """The demo with a pseudo-terminal as stdin, as a person runs it; returns (process, terminal end)."""
    ours, theirs = pty.openpty()
    argv, env = command(*args)
    process = subprocess.Popen(argv, env=env, stdin=theirs, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(theirs)
    return process, ours


def read_until(stream, marker, limit=30.0):
    """Read a pipe until ``marker`` appears (or the process ends); ``limit`` only guards against a hang."""
    seen, deadline = b"", time.monotonic() + limit
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            data = os.read(stream.fileno(), 4096)
            if not data:
                break
            seen += data
    return seen


PROMPT = "[任意键 下一步 · q 退出]".encode()


def test_on_a_terminal_a_key_advances_and_q_quits_without_enter_and_the_terminal_is_restored():
    ours, theirs = pty.openpty()
    before = termios.tcgetattr(theirs)
    argv, env = command("readme")
    process = subprocess.Popen(argv, env=env, stdin=theirs, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert PROMPT in read_until(process.stderr, PROMPT)
        os.write(ours, b" ")  # one key, no Enter
        assert PROMPT in read_until(process.stderr, PROMPT)
        os.write(ours, b"q")  # and q, no Enter
        stdout, stderr = process.communicate(timeout=60)
        after = termios.tcgetattr(theirs)
    finally:
        process.kill()
        os.close(ours)
        os.close(theirs)
    out = stdout.decode()
    assert process.returncode == 0, stderr.decode()
    assert "步骤 1 / 6" in out and "步骤 2 / 6" in out and "步骤 3 / 6" not in out
    assert after == before  # echo and line editing are back


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_a_kill_at_the_prompt_ends_the_demo_and_restores_the_terminal(how):
    ours, theirs = pty.openpty()
    before = termios.tcgetattr(theirs)
    argv, env = command("readme")
    with ctrl_c_reaches_children():
        process = subprocess.Popen(argv, env=env, stdin=theirs, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert PROMPT in read_until(process.stderr, PROMPT)
        deadline = time.monotonic() + 30
        while termios.tcgetattr(theirs)[3] & termios.ICANON and time.monotonic() < deadline:
            time.sleep(0.01)  # until the demo waits for the key: cbreak mode, its SIGTERM handler in place
        process.send_signal(how)
        _, stderr = process.communicate(timeout=60)
        after = termios.tcgetattr(theirs)
    finally:
        process.kill()
        os.close(ours)
        os.close(theirs)
    assert process.returncode == 128 + how
    assert b"Traceback" not in stderr
    assert after == before


def test_a_body_recorded_by_ink_py_record_can_be_stepped_through(tmp_path):
    (tmp_path / "README.md").write_text("# demo\n\nmake run\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "INK_MODEL")}
    env.update(PYTHONPATH=str(ROOT), INK_SCRIPTED_DELAY="0")
    run = [sys.executable, "-m", "ink_py", "--record", str(tmp_path / "rec"), "--workspace", str(tmp_path)]
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    argv, env = command("--file", str(tmp_path / "rec" / "001-response.sse"))
    shown = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert shown.returncode == 0, shown.stderr
    titles = [line for line in shown.stdout.splitlines() if line.startswith("━━")]
    assert titles[0].endswith("等待第一条事件") and titles[-1].endswith("交出完整回复")
    assert "read" in shown.stdout and "message_end:" in shown.stdout


# ── one step, one screen ────────────────────────────────────────────────────────────

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PANELS = ("本次收到", "接入层暂存", "交给 Agent 循环", "执行的代码")


def every_step():
    for api, dialect in demo_dialects.DIALECTS.items():
        for name, scenario in SCENARIOS.items():
            fixture = scenario["fixture"].replace("article/", dialect["folder"] + "/")
            frames = demo_steps.split_frames(fixture_path(fixture).read_bytes())
            steps = demo_steps.record_steps(frames, len(frames) if name in demo.ABORT_SCENARIOS else None, api)
            for number in range(1, len(steps) + 1):
                yield f"{api} {name}", number, steps


@pytest.mark.parametrize("columns, rows", [(80, 24), (140, 45)])
def test_every_step_of_every_scenario_fits_the_terminal_panels_first(columns, rows):
    for name, number, steps in every_step():
        step = steps[number - 1]
        full = demo_screens.render_step(step, number, len(steps), demo_screens.Style(False, columns)).split("\n")
        shown = demo_screens.render_step(
            step, number, len(steps), demo_screens.Style(True, columns), height=rows - 2, previous=steps[number - 2]
        )
        lines = [ANSI.sub("", line) for line in shown.split("\n")]
        where = f"{name} step {number} at {columns}×{rows}"
        assert len(lines) <= rows - 2, where  # the label above, the prompt below
        assert max(demo_panels.display_width(line) for line in lines) <= columns, where
        assert all(any(line.startswith(panel) for line in lines) for panel in PANELS), where
        assert lines[0] == full[0]  # the step's title, whole
        heading = lines.index(next(line for line in lines if line.startswith("交给 Agent 循环")))
        first = full[full.index(lines[heading]) + 1]  # what reached the loop: its first line, at most cut short
        assert first.startswith(lines[heading + 1].removesuffix("…")), where
        ran = [line for line in lines if line.startswith("▶")]
        assert ran or not any(line.startswith("▶") for line in full), where
        assert all(line in full or line.endswith("…") for line in ran), where  # real lines, at most cut short
        if len(full) <= rows - 2:
            assert len(lines) == len(full), f"{where}: cut although it fits"


def test_on_a_terminal_each_step_is_one_cleared_screen_and_a_pipe_gets_them_whole():
    ours, theirs = pty.openpty()
    argv, env = command("readme")
    env.update(COLUMNS="80", LINES="24")
    process = subprocess.Popen(argv, env=env, stdin=theirs, stdout=theirs, stderr=theirs)
    os.close(theirs)
    seen = b""
    try:
        for _ in range(5):
            seen += read_pty_until(ours, PROMPT)
            os.write(ours, b"\n")
        seen += read_pty_until(ours, "步骤 6 / 6".encode())
        assert process.wait(timeout=60) == 0
        seen += read_pty_until(ours, b"\x00", limit=1.0)  # whatever is left
    finally:
        process.kill()
        os.close(ours)
    screens = seen.decode("utf-8", "replace").split(demo_screens.CLEAR)[1:]
    assert len(screens) == 6
    for number, screen in enumerate(screens, 1):
        text = ANSI.sub("", screen.replace("\r\n", "\n")).split(PROMPT.decode())[0].rstrip("\n")
        assert f"步骤 {number} / 6" in text and len(text.split("\n")) <= 23  # and the prompt's row
        assert max(demo_panels.display_width(line) for line in text.split("\n")) <= 80

    done = subprocess.run(command("readme")[0], env=env, capture_output=True, text=True, timeout=60)
    assert demo_screens.CLEAR not in done.stdout and done.stdout.count("━━ 步骤") == 6  # a pipe: every step, whole
    assert "还有" not in done.stdout


def read_pty_until(fd, marker, limit=30.0):
    seen, deadline = b"", time.monotonic() + limit
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            seen += data
    return seen


def test_the_page_of_each_dialect_shows_that_dialects_code():
    for api, dialect in demo_dialects.DIALECTS.items():
        args = demo.build_parser().parse_args(["--web", "--api", api, "abort"])
        pages, code = demo.web_recordings(args), demo.code_view(api)
        assert next(iter(pages)) == "abort"  # the scenario named opens first
        module = dialect["module"]
        assert code["assemble_stream"]["first"] == inspect.getsourcelines(module.assemble_stream)[1]
        ran = {name for step in pages["readme"]["steps"] for name in step["lines"]}
        assert "assemble_stream" in ran and ran <= set(code)


def test_demo_web_prints_its_url_first_serves_the_page_and_stops_on_ctrl_c():
    import urllib.request

    argv, env = command("--web", "--port", "0")
    with ctrl_c_reaches_children():
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        with urllib.request.urlopen(url + "scenarios.json", timeout=30) as response:
            names = [choice["name"] for choice in json.loads(response.read())["scenarios"]]
        assert names == list(SCENARIOS)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0 and "Traceback" not in stderr and "Ctrl-C stops" in stderr


def test_over_a_students_copy_the_demo_says_so_and_shows_the_functions_they_wrote(tmp_path):
    """``python -m my_ink demo`` runs the copy: its heading names the copy, and the functions of the
    started exercises (parse_sse, parse_frame) are among the code shown (issue 21 §5)."""
    from ink_py.course.working_copy import start

    from .test_exercises import put_back

    copy = tmp_path / "my_ink"
    for number in (1, 2):
        start(number, copy)
        put_back(copy, number)
    done = subprocess.run([sys.executable, "-m", "my_ink", "demo", "--no-pause"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "(▶ 本步执行过的行,来自你的副本 my_ink)" in done.stdout and "来自运行中的 ink_py" not in done.stdout
    assert "my_ink/provider/shared.py · parse_sse()" in done.stdout
    assert "my_ink/provider/shared.py · parse_frame()" in done.stdout
    reference = subprocess.run([sys.executable, "-m", "ink_py", "demo", "--no-pause"], cwd=ROOT, capture_output=True,
                               text=True, timeout=60)  # fmt: skip
    assert "来自运行中的 ink_py" in reference.stdout and "parse_sse()" not in reference.stdout  # 本次收到 shows it


@pytest.mark.parametrize("api", list(demo_dialects.DIALECTS))
def test_every_parse_error_the_demo_shows_has_its_word(api):
    """``{"_parseError"…}`` never stands alone: the state panel says what it is (§4.3); the abort's
    last step says ④ ran before the abort check and the record is dropped; invalid-json's says the
    blocking is ink_py's step beyond §4.3 (Ink hands the record to the tool, which refuses it)."""
    for name in SCENARIOS:
        for number, step in enumerate(steps_of(name, api), 1):
            state = demo_panels.state_text(step)
            for at, line in enumerate(state):
                if "_parseError" in line and "arguments" in line:
                    assert "safe_parse_json 不抛异常" in state[at + 1], (name, number)
    loop = demo_panels.loop_text(steps_of("abort", api)[-1])
    assert "④ 在检查中断之前就运行了" in "".join(loop) and "不交给循环" in "".join(loop)
    loop = "".join(demo_panels.loop_text(steps_of("invalid-json", api)[-1]))
    assert "beyond §4.3" in loop and "Ink 照样把这条记录交给工具" in loop
