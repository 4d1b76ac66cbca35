"""``ink-py exercise`` as a student runs it: start, list, hint, check, and the course's tools.

``start`` accumulates exercises in one working copy, keeps the student's edits and refuses
what it cannot safely change; every command takes --help and reports a usage mistake in one
line; hints come one more each time; ``list`` says where each exercise stands; ``check``
says in plain words what was fed, expected and got, points to the right section and to the
exercise whose stub is in the way, and suggests the next once green; ``check --all``,
``report``, ``diff`` and ``reset`` on one copy. The machinery under them (markers, stubs,
the exercise tests in both directions) is tests/test_exercises.py's.
"""

import io
import json
import re
import sys
from pathlib import Path

import pytest

from ink_py.course import exercises as ex
from ink_py.course.catalogue import exercise_number
from ink_py.course.exercises import read_command
from ink_py.course.state import is_working_copy, load_state
from ink_py.course.stubs import find_regions, is_stub

from .test_exercises import AVAILABLE, files_of, put_back


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = ex.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def reading_opens(out: str, before: str, section: str) -> bool:
    """``out`` names the page to read after ``before`` as a path that opens from here (the student's
    folder holds no walkthrough.md), then the section."""
    found = re.search(re.escape(before) + r"(\S+\.md) " + re.escape(section), out)
    return found is not None and Path(found[1]).is_file()


def test_start_accumulates_keeps_the_students_edits_and_never_restarts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "start", "1")
    assert code == 0 and "my_ink/provider/shared.py:" in out and reading_opens(out, "read first:  ", "§2.1")
    copy = tmp_path / "my_ink"
    assert load_state(copy)["started"] == [1]

    put_back(copy, 1)  # the student solves exercise 1…
    loop = copy / "core" / "loop.py"
    loop.write_text(loop.read_text(encoding="utf-8") + "# my own note\n", encoding="utf-8")  # …and notes something
    solved = files_of(copy)

    code, out, _ = run(capsys, "start", "parse-sse")
    assert code == 0 and "started exercise 2" in out
    after = files_of(copy)
    assert after["core/loop.py"].endswith("# my own note\n")
    shared = after["provider/shared.py"]
    assert 'event = "message"  # the default SSE event name' in shared  # the solution of 1 stays
    assert [r["number"] for r in find_regions(shared) if is_stub(shared, r)] == [2]
    assert {k: v for k, v in after.items() if k != "provider/shared.py"} == {
        k: v for k, v in solved.items() if k != "provider/shared.py"
    }

    for name in ("2", "1"):
        code, out, _ = run(capsys, "start", name)
        assert code == 0 and "already started" in out and "nothing changed" in out
        assert files_of(copy) == after
    assert load_state(copy)["started"] == [1, 2]


def test_start_refuses_what_it_cannot_safely_change(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    theirs = tmp_path / "project"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    (tmp_path / "afile").write_text("x")
    for argv, words in [
        (["start", "1", "project"], "is not a working copy made by ink-py exercise start"),
        (["start", "1", "afile"], "is a file"),
        (["start", "1", "my-ink"], "must be a new Python identifier"),
        (["start", "1", "json"], "must be a new Python identifier"),
    ]:
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "" and err.startswith("error: ") and words in err and err.count("\n") == 1
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"]
    assert not (tmp_path / "my-ink").exists() and not (tmp_path / "json").exists()

    # An exercise whose region the student changed before starting it is left alone.
    assert run(capsys, "start", "1")[0] == 0
    shared = tmp_path / "my_ink" / "provider" / "shared.py"
    shared.write_text(shared.read_text(encoding="utf-8").replace("yield from source", "yield from list(source)"))
    before = files_of(tmp_path / "my_ink")
    code, _, err = run(capsys, "start", "6")
    assert code == 1 and "region differs from ink_py's" in err and "Nothing was changed" in err
    assert files_of(tmp_path / "my_ink") == before and load_state(tmp_path / "my_ink")["started"] == [1]

    empty = tmp_path / "empty_ink"
    empty.mkdir()
    assert run(capsys, "start", "1", "--dir", "empty_ink")[0] == 0  # an empty folder loses nothing
    assert is_working_copy(empty)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["start"], "the following arguments are required: NAME"),
        (["check"], "which exercise? e.g. ink-py exercise check 1"),
        (["start", "99"], "no exercise '99'"),
        (["hint", "parse-frames"], "no exercise 'parse-frames'"),
        (["start", "1", "a", "b"], "unrecognized arguments: b"),
        (["check", "--all", "a", "b"], "too many arguments for check: b"),
        (["start", "1", "a", "--dir", "b"], "give the folder once"),
        (["--dir", "a", "list", "b"], "give the folder once"),
        (["--dir", "a"], "which command?"),
        (["list", "--verbose"], "unrecognized arguments: --verbose"),
        (["list", "--dir="], "argument --dir: needs a path"),
        (["check", "1"], "no working copy at my_ink"),
    ],
)
def test_usage_mistakes_are_one_error_line(tmp_path, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "") and err.startswith("error: ") and words in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["help"], ["--dir", "mine", "--help"]])
def test_help_shows_every_command(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "") and out.startswith("usage: ink-py exercise") and "hint  NAME [DIR]" in out


COMMANDS = ["list", "start", "check", "hint", "reset", "diff", "report", "watch"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["alone", "after-a-name"])
def test_every_command_takes_help(capsys, command, where):
    words = [command, "--help"] if where == "alone" else [command, "1", "my_ink", "-h"]
    if where != "alone" and command in ("list", "report", "watch"):
        words = [command, "my_ink", "-h"]
    code, out, err = run(capsys, *words)
    assert (code, err) == (0, "") and out.startswith(f"usage: ink-py exercise {command} [-h]")
    assert "--dir DIR" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_flag_is_one_error_line_in_every_command(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, command, "1", "--frobnicate")
    assert (code, out) == (1, "") and err.startswith("error: ") and err.count("\n") == 1
    assert "--frobnicate" in err and not list(tmp_path.iterdir())  # nothing was done


@pytest.mark.parametrize(
    "argv, command, name, folder",
    [
        (["list"], "list", None, "my_ink"),
        (["list", "mine"], "list", None, "mine"),
        (["--dir", "mine", "list"], "list", None, "mine"),
        (["start", "1", "mine"], "start", "1", "mine"),
        (["start", "parse-frame", "--dir", "mine"], "start", "parse-frame", "mine"),
        (["start", "--dir=mine", "ex1"], "start", "ex1", "mine"),
        (["check", "1"], "check", "1", "my_ink"),
        (["check", "--all"], "check", None, "my_ink"),
        (["check", "--all", "mine"], "check", None, "mine"),
        (["check", "mine", "--all"], "check", None, "mine"),
        (["check", "--all", "--dir", "mine"], "check", None, "mine"),
        (["hint", "Text_Delta", "mine"], "hint", "Text_Delta", "mine"),
        (["reset", "1", "--yes", "mine"], "reset", "1", "mine"),
        (["diff", "1", "--dir", "mine"], "diff", "1", "mine"),
        (["report", "mine", "--json", "r.json", "--junit=r.xml"], "report", None, "mine"),
        (["watch"], "watch", None, "my_ink"),
        (["watch", "mine"], "watch", None, "mine"),
        (["--dir", "mine", "watch"], "watch", None, "mine"),
    ],
)
def test_every_spelling_of_a_command_reads_the_same(argv, command, name, folder):
    args = read_command(argv)
    assert (args.command, args.name, args.folder) == (command, name, Path(folder))
    assert getattr(args, "yes", False) == ("--yes" in argv)
    if command == "report":
        assert (args.json, args.junit) == ("r.json", "r.xml")


def test_no_subcommand_prints_the_usage(capsys):
    code, out, _ = run(capsys)
    assert code == 0 and out.startswith("usage: ink-py exercise") and "check NAME [DIR]" in out


@pytest.mark.parametrize("name, number", [("1", 1), ("ex2", 2), ("text-delta", 3), ("Safe_Parse_Json", 7)])
def test_exercise_names(name, number):
    assert exercise_number(name) == number


def test_hints_come_one_more_each_time_and_are_remembered(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "hint", "1")  # no copy yet: counted in the current directory
    assert code == 0 and "hint 1/4" in out and "hint 2/4" not in out
    assert json.loads((tmp_path / ".exercises.json").read_text())["hints"] == {"1": 1}
    assert "hint 2/4" in run(capsys, "hint", "parse-frame")[1]

    run(capsys, "start", "1")  # the copy takes the count over
    out = run(capsys, "hint", "1")[1]
    assert "hint 1/4" in out and "hint 3/4" in out and "hint 4/4" not in out
    assert load_state(tmp_path / "my_ink")["hints"] == {"1": 3}
    assert "hint 4/4" in run(capsys, "hint", "1")[1]
    out = run(capsys, "hint", "1")[1]
    assert "hint 4/4" in out and "last hint" in out


@pytest.mark.parametrize(
    "wrong, failed, first",
    [
        (("return not_json(frame, event, data, err)", "return None"), "[done", "not_json(frame, event, data, err)"),
        (('event = value or "message"', 'event = "message"'), "[named-event]", "renames the event"),
    ],
    ids=["done-marker", "named-event"],
)
def test_the_first_hint_is_the_one_the_failure_calls_for(tmp_path, monkeypatch, capsys, wrong, failed, first):
    """A [DONE] failure gets the not_json hint first (not last of four); the hints before it come after."""
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    put_back(tmp_path / "my_ink", 1, wrong)
    code, out, _ = run(capsys, "check", "1")
    assert code == 1 and failed in out.splitlines()[0]
    first_hint = run(capsys, "hint", "1")[1].splitlines()[1]
    assert first_hint.startswith("hint 1/4: ") and first in first_hint
    every = run(capsys, "hint", "1")[1] + run(capsys, "hint", "1")[1] + run(capsys, "hint", "1")[1]
    assert "hint 4/4" in every and every.count(first) >= 1


def test_list_shows_where_each_exercise_stands(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = run(capsys, "list")[1]
    assert "no working copy at my_ink yet" in out and out.count("not started") == len(AVAILABLE)
    run(capsys, "start", "1")
    run(capsys, "start", "2")
    put_back(tmp_path / "my_ink", 2)
    rows = {line.split()[1]: line for line in run(capsys, "list")[1].splitlines() if re.match(r"  \d ", line)}
    assert rows["parse-frame"].endswith("started (stub still present)")
    assert rows["parse-sse"].endswith("started (not checked yet)")
    assert rows["text-delta"].endswith("not started")
    if 9 not in AVAILABLE:
        assert rows["chunk-concat"].endswith("skipped until chunks.py has exercise markers")


# ── check: plain words, the right section, the order of exercises, green ──────────────


def test_check_on_a_fresh_stub_says_not_written_yet_and_where_to_read(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    code, out, err = run(capsys, "check", "1")
    assert (code, err) == (1, "")
    assert "exercise 1 · parse-frame — not written yet" in out
    assert "my_ink/provider/shared.py:" in out and reading_opens(out, "re-read ", "§2.1")
    assert len(out.splitlines()) <= 4 and "Traceback" not in out and "====" not in out
    assert load_state(tmp_path / "my_ink")["checks"] == {"1": "red"}


def test_check_a_wrong_solution_tells_what_was_fed_expected_and_got(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    put_back(tmp_path / "my_ink", 1, ('event = value or "message"', 'event = "message"'))  # ignores `event:`
    code, out, _ = run(capsys, "check", "1")
    assert code == 1
    assert "  test      test_parse_frame[named-event]" in out
    assert "  fed       frame = 'event: delta\\ndata: {\"a\": 1}'\n" in out  # the expected value is not "fed"
    assert "  expected  {'event': 'delta', 'data': {'a': 1}}" in out
    assert "  got       {'event': 'message', 'data': {'a': 1}}" in out
    assert reading_opens(out, "re-read ", "§2.1") and "--pdb" in out
    assert "Traceback" not in out and "assert " not in out


def test_check_points_to_the_exercise_whose_stub_is_in_the_way(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    run(capsys, "start", "2")
    put_back(tmp_path / "my_ink", 2)  # exercise 2 is right, but parse_sse calls the stub of 1
    code, out, _ = run(capsys, "check", "2")
    assert code == 1 and "also runs exercise 1" in out and "finish exercise 1 first" in out


def test_check_is_green_once_the_region_is_right_and_suggests_the_next(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "3")
    put_back(tmp_path / "my_ink", 3)
    code, out, _ = run(capsys, "check", "text-delta")
    assert code == 0
    assert re.search(r"exercise 3 · text-delta — all \d+ tests pass", out)
    assert "next: exercise 1 · parse-frame — ink-py exercise start 1" not in out  # next after 3, not before
    assert "next: exercise 4 · tool-calls — ink-py exercise start 4" in out
    listing = run(capsys, "list")[1]
    assert re.search(r"3  text-delta .* passed \(last check green\)", listing)
    assert "next: exercise 1 · parse-frame — ink-py exercise start 1" in listing


# ── the tools of a course: check --all, report, diff, reset ───────────────────────────


class Terminal:
    """A stdin that is a terminal and answers ``answer``."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.answer


def test_check_all_report_diff_and_reset_on_one_copy(tmp_path, monkeypatch, capsys):
    import xml.etree.ElementTree as ElementTree

    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    run(capsys, "start", "3")
    copy = tmp_path / "my_ink"
    put_back(copy, 1, ('event = value or "message"', 'event = "message"'))  # wrong: ignores `event:`
    put_back(copy, 3, ("text_parts.append(content)", "text_parts.append(content)  # mine"))  # right, in my words
    shared_before = (copy / "provider" / "shared.py").read_text(encoding="utf-8")

    code, out, _ = run(capsys, "check", "--all")
    assert code == 1  # exercise 1 is wrong
    rows = {line.split()[1]: line.split() for line in out.splitlines() if re.match(r"\d ", line)}
    assert rows["parse-frame"][2] == "red" and re.fullmatch(r"\d+/\d+", rows["parse-frame"][3])
    assert rows["text-delta"][2] == "green" and re.fullmatch(r"(\d+)/\1", rows["text-delta"][3])
    assert rows["tool-calls"][2:4] == ["not", "started"]
    state = load_state(copy)
    assert state["attempts"] == {"1": 1, "3": 1} and set(state["first_green"]) == {"3"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", state["first_green"]["3"])

    run(capsys, "hint", "1")
    code, out, _ = run(capsys, "report", "--json", "r.json", "--junit", "r.xml")
    assert code == 0 and "1 of 9 exercises green" in out
    report = {row["number"]: row for row in json.loads((tmp_path / "r.json").read_text())["exercises"]}
    assert report[3]["state"] == "green" and report[3]["first_green"] == state["first_green"]["3"]
    assert report[1]["state"] == "red" and report[1]["hints_used"] == 1 and "not yet" in report[1]["summary"]
    assert "then test_parse_frame[named-event] failed." in report[1]["summary"]  # the failing test, named
    assert report[1]["attempts"] == 1 and report[2]["state"] == "not started"
    suite = ElementTree.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("9", "1", "7")
    cases = {case.get("name"): case for case in suite}
    assert "test_parse_frame[named-event]" in cases["exercise 1 · parse-frame"].find("failure").get("message")
    assert len(cases["exercise 3 · text-delta"]) == 0
    assert load_state(copy)["attempts"] == {"1": 1, "3": 1}  # the report's own checks are not attempts

    code, _, err = run(capsys, "diff", "1")
    assert code == 1 and "not green yet" in err
    monkeypatch.setenv("COLUMNS", "160")  # the two columns fit whatever terminal (or none) runs the tests
    code, out, _ = run(capsys, "diff", "3")
    assert code == 0 and "yours (left) · the reference (right)" in out
    [changed] = [line for line in out.splitlines() if " | " in line]
    assert "# mine" in changed.split(" | ")[0] and "# mine" not in changed.split(" | ")[1]

    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, out, _ = run(capsys, "reset", "3")
    assert code == 0 and "[y/N]" in out and "nothing changed" in out
    assert "# mine" in (copy / "provider" / "openai_completions.py").read_text(encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal: only --yes resets
    code, _, err = run(capsys, "reset", "3")
    assert code == 1 and "add --yes" in err
    code, out, _ = run(capsys, "reset", "text-delta", "--yes")
    assert code == 0 and "back to its stub" in out
    text = (copy / "provider" / "openai_completions.py").read_text(encoding="utf-8")
    assert [r["number"] for r in find_regions(text) if is_stub(text, r)] == [3]
    assert (copy / "provider" / "shared.py").read_text(encoding="utf-8") == shared_before  # exercise 1 untouched
    [backup] = (copy / ".reset").iterdir()
    assert "# mine" in backup.read_text(encoding="utf-8")
    assert "3" not in load_state(copy)["checks"] and load_state(copy)["started"] == [1, 3]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["check", "1", "--yes"], "unrecognized arguments: --yes"),
        (["reset"], "the following arguments are required: NAME"),
        (["report", "--json"], "argument --json: expected one argument"),
        (["report", "--junit", ""], "argument --junit: needs a path"),
        (["diff", "2"], "no working copy"),
    ],
)
def test_the_new_commands_report_usage_mistakes_in_one_line(tmp_path, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "") and err.startswith("error: ") and words in err and err.count("\n") == 1


# ── every exercise green: its own checks; the whole suite on the copy behind --whole-suite (issue 34 §4) ──


def fake_run_tests(suite_green: bool):
    """``run_tests`` without pytest: every exercise's own tests pass; the whole suite as told."""
    failure = {
        "nodeid": "tests/test_guards.py::test_guarded", "name": "test_guarded", "file": "tests/test_guards.py",
        "line": 9, "kind": "assert", "compare": {"op": "==", "left": "[]", "right": "[1]"}, "regions": [2],
        "message": "assert [] == [1]", "params": {}, "fixtures": [], "notes": [], "doc": "",
    }  # fmt: skip

    def run_tests(folder, number, progress=None):
        if number is not None:
            return {"exitstatus": 0, "passed": 3, "selected": {f"t{number}": [number]}, "failure": None}
        if suite_green:
            return {"exitstatus": 0, "passed": 1300, "selected": {}, "failure": None}
        return {"exitstatus": 1, "passed": 700, "selected": {failure["nodeid"]: []}, "failure": failure}

    return run_tests


def test_check_all_is_every_exercises_own_checks_and_the_whole_suite_only_when_asked(tmp_path, monkeypatch, capsys):
    from ink_py.course import checker, exercise_report

    monkeypatch.chdir(tmp_path)
    for number in AVAILABLE:
        run(capsys, "start", str(number))
    monkeypatch.setattr(checker, "run_tests", fake_run_tests(suite_green=False))
    monkeypatch.setattr(exercise_report, "run_tests", fake_run_tests(suite_green=False))
    for number in AVAILABLE:
        code, out, err = run(capsys, "check", str(number))
    assert code == 0 and "every exercise green: each one's checks pass on your copy. Well done." in out
    code, out, err = run(capsys, "check", "--all")
    assert code == 0 and "every exercise green: each one's checks pass" in out
    assert "whole suite" not in out + err and "suite" not in load_state(tmp_path / "my_ink")
    code, out, _ = run(capsys, "report", "--json", "r.json", "--junit", "r.xml")
    assert json.loads((tmp_path / "r.json").read_text())["whole_suite"]["state"] == "not run"
    assert "9 of 9 exercises green" in out and "whole suite" not in (tmp_path / "r.xml").read_text()

    code, out, err = run(capsys, "check", "1", "--whole-suite")
    assert (code, out) == (1, "") and "--whole-suite goes with --all" in err and err.count("\n") == 1


def test_the_whole_suite_from_a_wheel_is_one_line_saying_what_it_needs(tmp_path, monkeypatch, capsys):
    from ink_py.course import checker, exercise_report

    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    ran = []
    monkeypatch.setattr(checker, "run_tests", lambda *args, **kwargs: ran.append(args))
    for module in (checker, exercise_report):
        monkeypatch.setattr(module, "whole_suite_tests", lambda: None)  # installed from a wheel: no tests/
    for command in (["check", "--all", "--whole-suite"], ["report", "--whole-suite"]):
        code, out, err = run(capsys, *command)
        assert (code, out) == (1, "") and err.count("\n") == 1 and ran == []  # said at once, nothing run
        assert err.startswith("error: --whole-suite needs the project's tests") and "source checkout" in err


@pytest.mark.parametrize("suite_green", [True, False], ids=["suite-green", "suite-red"])
def test_check_all_whole_suite_says_so_only_when_the_whole_suite_passes(tmp_path, monkeypatch, capsys, suite_green):
    from ink_py.course import checker, exercise_report

    monkeypatch.chdir(tmp_path)
    for number in AVAILABLE:
        run(capsys, "start", str(number))
    monkeypatch.setattr(checker, "run_tests", fake_run_tests(suite_green))
    monkeypatch.setattr(exercise_report, "run_tests", fake_run_tests(suite_green))
    code, out, err = run(capsys, "check", "--all", "--whole-suite")
    assert "running the project's whole suite on your copy" in err
    if suite_green:
        assert code == 0 and "every exercise green — and the whole suite passes on your copy" in out
        assert "the whole suite on your copy: all 1300 tests pass." in out
        assert load_state(tmp_path / "my_ink")["suite"] == "green"
    else:
        assert code == 1 and "every exercise green" not in out
        assert "the whole suite on your copy: 700 tests passed, then test_guarded failed." in out
        assert "it ran exercise 2 · parse-sse's code (yours)" in out
        assert "every exercise's own tests pass, but the whole suite does not" in out
        assert load_state(tmp_path / "my_ink")["suite"] == "red"
    code, out, _ = run(capsys, "report", "--whole-suite", "--json", "r.json", "--junit", "r.xml")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["whole_suite"]["state"] == ("green" if suite_green else "red")
    assert ("the whole suite on my_ink" in (tmp_path / "r.xml").read_text()) and "9 of 9 exercises green" in out

    run(capsys, "check", "1")  # a check afresh: the suite is to be run again before "all green"
    assert "suite" not in load_state(tmp_path / "my_ink")


def test_start_and_check_name_every_stub_of_an_exercise_and_what_to_write_there(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "start", "9")
    assert code == 0 and "add_tool_piece and concat" in out
    assert re.search(r"my_ink/second_article/chunks\.py:\d+  \(add_tool_piece\)", out)
    assert re.search(r"my_ink/second_article/chunks\.py:\d+  \(concat\)", out)
    code, out, _ = run(capsys, "check", "9")
    assert code == 1 and "not written yet: 2 stubs still raise NotImplementedError:" in out
    assert re.search(r"\n  my_ink/second_article/chunks\.py:\d+ \(add_tool_piece\)\n", out)
    assert re.search(r"\n  my_ink/second_article/chunks\.py:\d+ \(concat\)\n", out)
    code, out, _ = run(capsys, "start", "3")
    assert re.search(r"openai_completions\.py:\d+  \(assemble_stream: text accumulation\)", out)
    stub = (tmp_path / "my_ink" / "provider" / "openai_completions.py").read_text(encoding="utf-8")
    assert '# TODO: ④ overwrites text_block["text"] with "".join(text_parts): not Ink\'s +=' in stub  # so += is lost


@pytest.mark.parametrize(
    "failure, expected, got",
    [
        ({"kind": "assert", "compare": {"op": "is", "left": "'x'", "right": "None"}}, "None", "'x'"),
        ({"kind": "assert", "compare": {"op": "==", "left": "None", "right": "[1]"}}, "[1]",
         "None (nothing: no value came back)"),
        ({"kind": "error", "message": "TypeError: no", "test_line": "assert f(x) == expected", "expected_value": "[1]"},
         "[1]", "an error — TypeError: no"),
        ({"kind": "error", "message": "KeyError: 'a'", "test_line": "assert 'x' in f(y)"},
         "'x' in f(y)", "an error — KeyError: 'a'"),
        ({"kind": "error", "message": "OSError: x", "test_line": "events = list(f())"},
         "no error from  events = list(f())", "an error — OSError: x"),
    ],
    ids=["expected-none", "got-none", "raised-before-comparing", "raised-in-a-condition", "raised-elsewhere"],
)  # fmt: skip
def test_the_expected_line_shows_the_value_the_test_wants(failure, expected, got):
    from ink_py.course.checker import plain_words

    failure = {"file": "tests/t.py", "line": 3, **failure}
    assert plain_words(failure, "en")[1:] == (expected, got)


def test_what_a_test_fed_is_its_own_input_not_a_pointer_to_its_source():
    from ink_py.course.checker import plain_words

    failure = {
        "kind": "assert",
        "compare": {"op": "==", "left": "[]", "right": "[1]"},
        "file": "tests/t.py",
        "line": 3,
        "params": {},
        "locals": {"reads": "[b'data: 1\\n\\n']", "expected": "[1]", "got": "[]"},
    }
    fed, _, _ = plain_words(failure, "en")
    assert fed == "reads = [b'data: 1\\n\\n']"  # not the expected value, not what came back
