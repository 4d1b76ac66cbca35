"""The progress file and the backups of ``ink-py exercise``: untrusted when read, never lost when written.

A damaged ``.exercises.json`` — wrong types, huge numbers, not JSON at all — never gives a
traceback: the command goes on, one ``warning:`` line names the file and says where the old
one is kept, and what was wrong is reset (started exercises rebuilt from the copy's stubs).
``reset`` keeps the student's code in ``.reset/`` under a name no earlier backup has, even
twice in one second (issue 19, items 7 and 11).
"""

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ink_py.atomic import write_new_text_atomically
from ink_py.course import exercises as ex
from ink_py.course import state as state_module
from ink_py.course.state import MADE_BY, STATE_FILE, load_state

from .test_exercise_command import run
from .test_exercises import put_back

DAMAGED = [
    pytest.param(b'{"made_by": "ink-py exercise start", "started": "abc"}', [1], id="started-not-a-list"),
    pytest.param(b'{"made_by": "ink-py exercise start", "started": [1, "x", 99]}', [1], id="started-not-numbers"),
    pytest.param(b'{"made_by": 5, "started": [1]}', [1], id="made-by-wrong"),
    pytest.param(b'{"made_by": "ink-py exercise start", "started": [1], "hints": {"1": "x"}}', [1], id="hint-a-string"),
    pytest.param(b'{"made_by": "ink-py exercise start", "started": [1], "hints": {"1": 1e999}}', [1], id="hint-inf"),
    pytest.param(
        b'{"made_by": "ink-py exercise start", "started": [1], "hints": {"1": 100000000000000000000000}}',
        [1],
        id="hint-huge",
    ),  # fmt: skip
    pytest.param(b'{"made_by": "ink-py exercise start", "started": [1], "attempts": {"1": -3}}', [1], id="negative"),
    pytest.param(b'{"made_by": "ink-py exercise start", "started": [1], "checks": [1]}', [1], id="checks-a-list"),
    pytest.param(
        b'{"made_by": "ink-py exercise start", "started": [1], "tests": {"1": {"passed": "x"}}}', [1], id="tests-wrong"
    ),  # fmt: skip
    pytest.param(b'{"made_by": "ink-py exercise start", "started": [1], "hints": {"1": true}}', [1], id="bool"),
    pytest.param(b"not json", [1], id="not-json"),
    pytest.param(b"\xff\xfe\x00", [1], id="not-utf8"),
    pytest.param(b"[1, 2]", [1], id="a-list"),
    pytest.param(b"9" * 5000, [1], id="a-number-too-long"),
    pytest.param(b"[" * 100_000, [1], id="nested-too-deep"),
    pytest.param(b" " * (2 << 20) + b"{}", [1], id="too-big"),
]


@pytest.mark.parametrize("content, started", DAMAGED)
def test_a_damaged_progress_file_is_repaired_with_one_warning_and_kept(tmp_path, monkeypatch, capsys, content, started):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    (tmp_path / "my_ink" / STATE_FILE).write_bytes(content)
    for argv in (["list"], ["hint", "1"], ["list"]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "Traceback" not in out + err
        if argv == ["list"] and err:  # the first command repairs; the later ones are quiet
            [warning] = err.splitlines()
            assert warning.startswith("warning: my_ink/.exercises.json was damaged (") and ".damaged-1" in warning
        assert "started (stub still present)" in run(capsys, "list")[1]
    assert load_state(tmp_path / "my_ink")["started"] == started
    assert (tmp_path / "my_ink" / f"{STATE_FILE}.damaged-1").read_bytes() == content[: state_module.MAX_STATE_BYTES]
    assert not (tmp_path / "my_ink" / f"{STATE_FILE}.damaged-2").exists()


def test_a_damaged_progress_file_outside_a_copy_keeps_its_hints_apart(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / STATE_FILE).write_text('{"hints": {"1": 1e999, "2": 1}}')
    code, out, err = run(capsys, "hint", "1")
    assert code == 0 and "hint 1/4" in out and err.count("\n") == 1 and err.startswith("warning: ")
    assert json.loads((tmp_path / STATE_FILE).read_text())["hints"] == {"1": 1, "2": 1}
    (tmp_path / STATE_FILE).write_text("[]")
    code, out, err = run(capsys, "hint", "1")
    assert code == 0 and "hint 1/4" in out and ".damaged-2" in err


def test_every_field_of_the_progress_file_is_checked():
    state, problems = state_module.checked_state(
        {"made_by": MADE_BY, "started": [3, 1, 3], "checks": {"1": "green", "3": "blue"},
         "first_green": {"1": "2026-01-01T00:00:00Z", "3": "yesterday"}, "suite": "maybe", "unknown": 1}
    )  # fmt: skip
    assert state == {"made_by": MADE_BY, "started": [1, 3], "checks": {"1": "green"},
                     "first_green": {"1": "2026-01-01T00:00:00Z"}}  # fmt: skip
    assert len(problems) == 3 and all("'3'" in p or "suite" in p for p in problems)


# ── reset's backups ───────────────────────────────────────────────────────────────────


def test_two_resets_in_one_second_keep_both_versions_of_the_code(tmp_path, monkeypatch, capsys):
    from ink_py.course import working_copy

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(working_copy, "now", lambda: "2026-05-01T10:00:00Z")  # one second, for both
    run(capsys, "start", "3")
    copy = tmp_path / "my_ink"
    put_back(copy, 3, ("text_parts.append(content)", "text_parts.append(content)  # first try"))
    assert run(capsys, "reset", "3", "--yes")[0] == 0
    put_back(copy, 3, ("text_parts.append(content)", "text_parts.append(content)  # second try"))
    code, out, _ = run(capsys, "reset", "3", "--yes")
    assert code == 0 and "exercise-3-2026-05-01T100000Z-2.py" in out
    backups = sorted((copy / ".reset").iterdir())
    assert [b.name for b in backups] == ["exercise-3-2026-05-01T100000Z-2.py", "exercise-3-2026-05-01T100000Z.py"]
    assert "# second try" in backups[0].read_text() and "# first try" in backups[1].read_text()
    assert not [p for p in (copy / ".reset").iterdir() if p.name.endswith(".tmp")]


def test_a_new_name_is_claimed_once_when_two_writers_race(tmp_path):
    target = tmp_path / "backup.py"
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def claim(text: str) -> None:
        start.wait()
        try:
            write_new_text_atomically(target, text)
            outcomes.append(text)
        except FileExistsError:
            outcomes.append("taken")

    threads = [threading.Thread(target=claim, args=(f"writer {i}\n",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [winner] = [o for o in outcomes if o != "taken"]
    assert target.read_text() == winner and outcomes.count("taken") == 7
    assert [p.name for p in tmp_path.iterdir()] == ["backup.py"]  # no temporary file left


def test_the_commands_never_show_a_traceback_for_a_state_file_that_cannot_be_read(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "1")
    (tmp_path / "my_ink" / STATE_FILE).unlink()
    (tmp_path / "my_ink" / STATE_FILE).mkdir()  # not even a file
    ex.main(["list"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "is not a working copy" in out


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)
FIELDS = ["made_by", "started", "checks", "hints", "attempts", "tests", "first_green", "suite"]
KEYS = st.sampled_from(["1", "9", "10", "01", "²", "١", "-1", " 1", "1e3", "99"]) | st.text(max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), JSON | st.dictionaries(KEYS, JSON, max_size=3), max_size=8))
def test_any_json_object_is_checked_without_an_exception_and_what_is_kept_is_valid(value):
    """Whatever a progress file holds — keys such as "²" or "١" that look like numbers included —
    ``checked_state`` keeps only valid fields, and checking what it kept finds nothing wrong."""
    state, problems = state_module.checked_state(value)
    assert all(isinstance(problem, str) and "\n" not in problem for problem in problems)
    assert state_module.checked_state(state) == (state, [])
    json.dumps(state, allow_nan=False)  # what is kept can be written back as strict JSON
