"""Every course command, run as a student runs it, speaks one language: the student's.

Under ``LANG=zh_CN.UTF-8`` (or ``INK_COURSE_LANG=zh``) every sentence ``ink-py exercise`` prints —
help, usage mistakes, list, start, the stub's NotImplementedError, hint, check (a stub, a wrong
value, the linear-time verdict), check --all with its progress, report, reset, diff, a damaged
progress file's warning — is Chinese; under ``C.UTF-8`` (or ``INK_COURSE_LANG=en``) English.
Identifiers, commands, paths and values are no sentences and are set aside (``sentences_of_the_other``).
The commands run in this process (``exercises.main``) with the student's variables in its
environment, which the checks' child pytest inherits; that a real process reads its locale from its
environment is tested once, for each language, with the console's own ``ink-py exercise``. No
locale needs to be installed: ink_py reads the variables (ink_py/course/language.py), and Python
runs UTF-8 whatever the locale.
"""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ink_py.course import exercises

from .helpers import ROOT
from .test_exercise_feedback import QUADRATIC_PARSE_SSE, write_solution
from .test_exercises import put_back

LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG", "INK_COURSE_LANG")
HAN = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")
QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")
COMMAND = re.compile(r"(?:ink-py|python3?|pytest|cd) [^\n,;:,;:。]*")  # a command, to the end of its clause
CODE_WORD = re.compile(r"\S*[/_.\[\]:=<>{}()@\\]\S*|--?[\w-]+|\b[A-Z][A-Z_]+\b|\b\w+-\w+(?:-\w+)*\b")
ENGLISH_RUN = re.compile(r"\b[A-Za-z]{2,}(?:[ ,]+[A-Za-z]{2,}){2,}\b")  # three English words in a row
COMMANDS = {"list", "start", "check", "hint", "reset", "diff", "report", "watch"}  # the commands' names: identifiers


def sentences_of_the_other(text: str, language: str) -> list[str]:
    """What in ``text`` is a sentence of the language that is not ``language``: for English, any Chinese
    outside quoted values; for Chinese, three English words in a row outside quotes, commands, code
    and paths.

    >>> sentences_of_the_other("exercise 1 · parse-frame — not yet: 从 '读' to", "en")
    ['从']
    >>> sentences_of_the_other("练习 1 —— 从 64 KiB to 512 KiB in 64-byte reads", "zh")
    ['KiB in   reads']
    """
    text = QUOTED.sub(" ", text)
    if language == "en":
        return HAN.findall(text)
    text = COMMAND.sub(" ", text)
    text = CODE_WORD.sub(" ", text)
    found = [m.group(0) for m in ENGLISH_RUN.finditer(text)]
    return [words for words in found if not set(re.findall(r"\w+", words)) <= COMMANDS]


def test_the_judge_finds_a_mixed_sentence_and_passes_identifiers_commands_and_values():
    mixed = "练习 2 —— 还不对:从 64 KiB to 512 KiB in 64-byte reads 增长了 ×15"
    assert sentences_of_the_other(mixed, "zh") != []
    clean = (
        "练习 2 · parse-sse —— 还不对:1 个测试通过,然后 test_a_long_event_in_small_reads 失败了。\n"
        "  期望      {'event': 'delta', 'data': {'a': 1}}\n"
        "调试:  python -m pytest --impl /tmp/my_ink 'tests/test_parse_sse.py::test_x' --pdb\n"
        "用法:ink-py exercise check [-h] [--dir DIR] (NAME [DIR] | --all [DIR])"
    )
    assert sentences_of_the_other(clean, "zh") == []
    assert sentences_of_the_other("started exercise 1 · parse-frame — 开始了", "en") == ["开", "始", "了"]
    assert sentences_of_the_other("got  'read 我先读一下'", "en") == []


def environment(language: str, how: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARIABLES}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="100")
    if how == "locale":
        env["LANG"] = "zh_CN.UTF-8" if language == "zh" else "C.UTF-8"
    else:  # the switch, against the locale
        env.update(LANG="C.UTF-8" if language == "zh" else "zh_CN.UTF-8", INK_COURSE_LANG=language)
    return env


class Student:
    """Runs ``ink-py exercise …`` in a folder of their own, with their environment and no terminal (in
    this process: ``exercises.main``), keeping everything each command printed."""

    def __init__(self, folder: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys) -> None:
        self.folder, self.said, self.capsys = folder, [], capsys
        for name in LOCALE_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            if os.environ.get(name) != value:
                monkeypatch.setenv(name, value)
        monkeypatch.chdir(folder)
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal: reset asks for --yes

    def run(self, *argv: str, code: int | None = None) -> str:
        returned = exercises.main(list(argv))
        out, err = self.capsys.readouterr()
        if code is not None:
            assert returned == code, (argv, out, err)
        self.said.append((" ".join(argv), out + err))
        return out + err


def every_command(student: Student) -> None:
    """The course, end to end: what a student types in their first hour, mistakes included."""
    copy = student.folder / "my_ink"
    student.run(code=0)
    for command in ("--help", "list --help", "start --help", "check --help", "hint --help", "reset --help",
                    "diff --help", "report --help", "watch --help"):  # fmt: skip
        student.run(*command.split(), code=0)
    for mistake in ("frob", "start", "start 99", "check", "list --dir=", "start 1 a b", "check 1"):
        student.run(*mistake.split(), code=1)
    student.run("list", code=0)
    student.run("hint", "1", code=0)
    student.run("start", "1", code=0)
    student.run("start", "1", code=0)  # already started
    student.run("list", code=0)
    student.run("check", "1", code=1)  # the stub
    put_back(copy, 1, ("return not_json(frame, event, data, err)", "return None"))  # [DONE] lost
    student.run("check", "1", code=1)
    for _ in range(5):
        student.run("hint", "1", code=0)
    student.run("diff", "1", code=1)
    student.run("reset", "1", code=1)  # no terminal, no --yes
    student.run("check", "3", code=1)  # not started
    student.run("start", "2", code=0)
    stub = (copy / "provider" / "shared.py").read_text(encoding="utf-8")
    student.said.append(("the stub", re.search(r"raise NotImplementedError\((.*)\)", stub)[1]))
    put_back(copy, 1)
    write_solution(copy, 2, QUADRATIC_PARSE_SSE)  # the article's loop: quadratic time
    student.run("check", "2", code=1)  # the linear-time verdict
    student.run("reset", "2", "--yes", code=0)  # now: check --all and report need not time the quadratic again
    student.run("check", "--all", code=1)
    student.run("report", code=0)
    (copy / ".exercises.json").write_text('{"made_by": "ink-py exercise start", "started": [1], "hints": {"1": -1}}')
    student.run("list", code=0)  # the warning


@pytest.mark.parametrize("how", ["locale", "switch"])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_every_course_command_speaks_the_students_language_only(tmp_path, monkeypatch, capsys, language, how):
    student = Student(tmp_path, environment(language, how), monkeypatch, capsys)
    every_command(student)
    other = {command: sentences_of_the_other(text, language) for command, text in student.said}
    assert {command: found for command, found in other.items() if found} == {}
    said = "\n".join(text for _, text in student.said)
    if language == "zh":  # the sentences, now in one language
        assert "练习 2 还没写" in said  # the stub's NotImplementedError
        assert re.search(r"输入      一个 64 KiB 的事件", said)  # the input, not the verdict
        assert "线性时间 —— 这个检查这样量" in said and "提示 2/4:几乎是答案" in said
        assert "正在检查练习 1 · parse-frame" in said
    else:
        assert "exercise 2 not written yet" in said and "fed       one event of 64 KiB" in said
        assert "hint 2/4: Almost the answer" in said and "checking exercise 1 · parse-frame" in said


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_real_process_reads_the_language_from_its_environment(tmp_path, language):
    """The console script, as a student starts it: its locale (zh) or the switch against it (en)."""
    env = environment(language, "locale" if language == "zh" else "switch")
    command = [str(Path(sys.executable).parent / "ink-py"), "exercise"]
    said = ""
    for argv in (["--help"], ["start", "1"], ["check", "1"], ["frob"]):
        done = subprocess.run([*command, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == (0 if argv[0] in ("--help", "start") else 1), (argv, done.stderr)
        said += done.stdout + done.stderr
    assert sentences_of_the_other(said, language) == [] and "Traceback" not in said
    stub = "练习 1 · parse-frame —— 还没写" if language == "zh" else "exercise 1 · parse-frame — not written yet"
    assert stub in said
