"""The course speaks the student's language: check's words, the stubs' TODO lines and the about
lines in Chinese when the locale says so — identifiers and expected values exact (issue 21 §4).

The locale is read as gettext reads it (LANGUAGE, LC_ALL, LC_MESSAGES, LANG: the first that is
set); ``INK_COURSE_LANG=zh`` or ``=en`` overrides it.
"""

import string

import pytest

from ink_py.course.language import LANGUAGE_ENV, TODOS_ZH, WORDS, columns, course_language
from ink_py.course.stubs import BREAK_AFTER, body_of, find_regions, todo_lines

from .helpers import ROOT
from .test_exercise_command import reading_opens, run
from .test_exercises import put_back

LOCALES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG", LANGUAGE_ENV)


@pytest.mark.parametrize(
    "environment, language",
    [
        ({}, "en"),
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW.UTF-8"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LC_ALL": "C.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),  # LC_ALL wins over LANG
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, "zh"),
        ({LANGUAGE_ENV: "zh", "LANG": "en_US.UTF-8"}, "zh"),  # the switch wins over the locale
        ({LANGUAGE_ENV: "en", "LANG": "zh_CN.UTF-8"}, "en"),
        ({LANGUAGE_ENV: "fr", "LANG": "zh_CN.UTF-8"}, "zh"),  # an unknown switch: the locale
    ],
)
def test_the_language_follows_the_locale_or_the_switch(environment, language):
    assert course_language(environment) == language


def test_both_languages_fill_in_the_same_values():
    fields = {
        key: [{f for _, f, _, _ in string.Formatter().parse(t) if f} for t in pair] for key, pair in WORDS.items()
    }
    assert {key: f for key, f in fields.items() if f[0] != f[1]} == {}


@pytest.fixture
def chinese(monkeypatch):
    for name in LOCALES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")


@pytest.mark.parametrize("command", ["list", "start", "hint", "report", "watch"])
def test_each_commands_chinese_help_names_the_whole_command(capsys, chinese, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0 and out.startswith(f"用法:ink-py exercise {command} [-h]")


def test_a_stub_started_in_chinese_has_chinese_todos_and_the_exact_words(tmp_path, monkeypatch, capsys, chinese):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "5")
    text = (tmp_path / "my_ink" / "provider" / "openai_completions.py").read_text(encoding="utf-8")
    stubs = "\n".join(line for r in find_regions(text) if r["number"] == 5 for line in body_of(text, r))
    stubs = stubs.replace("\n    #       ", "").replace("\n        #       ", "")  # a long TODO's next lines
    assert "# TODO: 不要 break:用量常在后面才到" in stubs
    assert "# TODO: §4.4 的表:tool_calls → tool_use,stop → end_turn,length → max_tokens;其他原因 → None" in stubs
    assert "# TODO: 测试逐字比较下面这些话,照原样使用:" in stubs
    assert '# TODO:     ProviderError("OpenAI stream ended without finish_reason — response may be truncated")' in stubs
    compile(text, "openai_completions.py", "exec")


def test_check_explains_in_chinese_with_the_values_exact(tmp_path, monkeypatch, capsys, chinese):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    put_back(tmp_path / "my_ink", 1, ("FINITE_JSON.decode(data)", "json.loads(data)"))  # NaN accepted
    code, out, _ = run(capsys, "check", "1")
    assert code == 1
    first, _, *lines = out.splitlines()
    assert first.startswith("练习 1 · parse-frame —— 还不对:27 个测试通过,然后 ")
    assert "test_data_that_is_not_json_raises_and_quotes_the_frame[nan]" in first
    test = "test_data_that_is_not_json_raises_and_quotes_the_frame[nan]"
    assert lines[0].startswith(f"  测试      {test}   (ink_py/course/checks/test_parse_frame.py:")
    about = "不是 JSON 的数据(包括 NaN、Infinity 和 1e999)都报错,并引用这个 frame,绝不当作一个值交出去。"
    assert f"  说明      {about}" in lines
    assert "  输入      frame = 'data: {\"a\": NaN}'" in lines
    assert "  期望      ProviderError 传到调用方" in lines
    assert any(reading_opens(line, "重读 ", "§2.1") and line.endswith(",然后再检查一次。") for line in lines)
    monkeypatch.setenv("LC_ALL", "C")  # a C locale: English again
    code, out, _ = run(capsys, "check", "1")
    assert out.startswith("exercise 1 · parse-frame — not yet: 27 tests passed, then ")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_long_todo_is_wrapped_between_words_and_loses_nothing(language):
    """A TODO line is wrapped where a terminal reader expects (after a space or a punctuation mark,
    never inside an identifier such as ``finished_calls``), within the width, a Chinese character
    counting two columns."""
    for english, chinese in TODOS_ZH.items():
        comment = chinese if language == "zh" else english
        for indent in ("    ", "        "):
            lines = [line[len(indent) + len("# TODO: ") :] for line in todo_lines(indent, comment)]
            assert all(columns(indent + "# TODO: " + line) <= 110 for line in lines), lines
            assert "".join(lines).replace(" ", "") == comment.replace(" ", "")
            position = 0
            for line in lines[:-1]:  # each break follows a space or a punctuation mark of the comment
                position = comment.index(line, position) + len(line)
                assert comment[position - 1] in BREAK_AFTER or comment[position] == " ", (comment, line)


def test_the_chinese_readme_says_the_course_speaks_chinese_and_how_to_choose():
    readme = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    course = readme[readme.index("## 课程练习") :].split("\n## ", 1)[0]
    assert "LANG=zh_CN.UTF-8" in course and f"{LANGUAGE_ENV}=zh" in course and "docs/course.md" in course
