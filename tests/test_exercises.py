"""The course exercises' machinery (``ink_py/course/``): markers, stubs, the copy, the documented command.

The heart of it, for every exercise that has markers: a freshly stubbed copy FAILS the
exercise's tests (each region on its own, too — no region's tests pass vacuously), and the
reference PASSES them, with at least one test selected. Those pytest sessions all run in
one fresh interpreter (see ``run_sessions``) with exactly the arguments ``check`` uses. The
command a student types (start, list, hint, check, …) is tests/test_exercise_command.py's.
"""

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ink_py.course.catalogue import EXERCISES
from ink_py.course.checker import HYPOTHESIS_PLUGIN, REPORT_ENV, marked_test_files, pytest_arguments
from ink_py.course.places import CHECKS_DIR, CHECKS_INI
from ink_py.course.stubs import (
    PACKAGE_DIR,
    MarkerError,
    body_of,
    find_regions,
    group_by_file,
    is_stub,
    package_regions,
    replace_body,
    stub_body,
    stub_source,
)
from ink_py.course.working_copy import make_copy, start

ROOT = Path(__file__).resolve().parent.parent
REGIONS = package_regions()
AVAILABLE = sorted(REGIONS)  # every exercise whose regions are marked in the source
REPORT_PLUGIN = "ink_py.course.check_plugin"  # what check loads into pytest
SPLIT = [(n, i) for n in AVAILABLE if len(REGIONS[n]) > 1 for i in range(len(REGIONS[n]))]


def files_of(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.py"))}


def put_back(copy: Path, number: int, change: tuple[str, str] = ("", "")) -> None:
    """Put the reference's code back into exercise ``number``'s regions of the copy — a correct
    solution — optionally with ``change`` (old, new) applied to it: a wrong one."""
    for relative, regions in group_by_file(REGIONS[number]).items():
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        target = copy / relative
        text = target.read_text(encoding="utf-8")
        ours = [r for r in find_regions(text) if r["number"] == number]
        for region, mine in reversed(list(zip(regions, ours, strict=True))):
            body = "\n".join(body_of(reference, region))
            if change[0]:
                body = body.replace(*change)
            text = replace_body(text, mine, body.split("\n"))
        target.write_text(text, encoding="utf-8")


# ── the marker grammar and the stub generator ──────────────────────────────────────────


def test_every_exercise_has_markers_hints_and_a_section_of_a_page_that_exists():
    assert set(AVAILABLE) == set(EXERCISES) == set(range(1, 10))
    for number in range(1, 10):
        exercise = EXERCISES[number]
        assert 3 <= len(exercise["hints"]) <= 4 and exercise["section"].startswith("§")
        page = (ROOT / exercise["page"]).read_text(encoding="utf-8")
        for section in re.findall(r"§(\d(?:\.\d)?)", exercise["section"]):
            assert re.search(rf"^#+ {re.escape(section)}[. ]", page, re.M), f"{exercise['page']} has no §{section}"


@pytest.mark.parametrize(
    "source, problem",
    [
        ("# exercise 1 ▼\nx = 1\n", "never closed"),
        ("x = 1\n# exercise 1 ▲\n", "closes no open region"),
        ("# exercise 1 ▼\nx = 1\n# exercise 2 ▲\n", "closes no open region"),
        ("# exercise 1 ▼\n# exercise 2 ▼\nx = 1\n# exercise 2 ▲\n# exercise 1 ▲\n", "opens inside"),
        ("def f():\n    # exercise 1 ▼\n    x = 1\n# exercise 1 ▲\n", "indentation differs"),
        ("def f():\n    # exercise 1 ▼\n    # only prose\n    # exercise 1 ▲\n", "has no code"),
        ("if x:\n    # exercise 1 ▼\n    y = 1\nz = 2\n    # exercise 1 ▲\n", "indented less"),
    ],
    ids=["unclosed", "stray-close", "wrong-number", "nested", "indent-mismatch", "no-code", "dedented-line"],
)
def test_markers_that_break_the_grammar_are_reported_with_their_line(source, problem):
    with pytest.raises(MarkerError, match=problem) as caught:
        find_regions(source, "demo.py")
    assert str(caught.value).startswith("demo.py:")


def test_a_stub_compiles_wherever_the_region_is_and_raises_only_when_reached():
    source = textwrap.dedent(
        """\
        def f(items):
            for item in items or []:
                # exercise 3 ▼ a loop body
                last = item  # keep the last one
                # exercise 3 ▲
            if items:
                return last
            elif items is None:
                # exercise 7 ▼ an elif branch
                return 1
                # exercise 7 ▲
            else:
                return 2
        """
    )
    stubbed = stub_source(stub_source(source, 3), 7)
    namespace: dict = {}
    exec(compile(stubbed, "<stub>", "exec"), namespace)
    f = namespace["f"]
    assert f([]) == 2  # the stubs are not on this path
    with pytest.raises(NotImplementedError, match=r"^exercise 3 not written yet: .* \S*walkthrough\.md §2 ①$"):
        f([1])
    with pytest.raises(NotImplementedError, match="exercise 7 not written yet"):
        f(None)
    assert "        # TODO: keep the last one\n" in stubbed
    assert "last = item" not in stubbed
    assert [(r["number"], r["indent"]) for r in find_regions(stubbed)] == [(3, " " * 8), (7, " " * 8)]


@pytest.mark.parametrize("relative", sorted({relative for regions in REGIONS.values() for relative, _ in regions}))
def test_stubbing_every_exercise_keeps_each_signature_and_docstring(relative):
    reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
    stubbed = reference
    for number in AVAILABLE:
        stubbed = stub_source(stubbed, number)

    def signatures(text: str) -> dict[str, tuple[str, str | None]]:
        tree = ast.parse(text)
        return {
            node.name: (ast.unparse(node.args), ast.get_docstring(node))
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)
        }

    assert signatures(stubbed) == signatures(reference)
    for region in find_regions(stubbed):
        assert is_stub(stubbed, region)


def test_the_stub_of_parse_frame_keeps_the_reference_comments_as_todos():
    stubbed = stub_source((PACKAGE_DIR / "provider/shared.py").read_text(encoding="utf-8"), 1)
    [region] = [r for r in find_regions(stubbed) if r["number"] == 1]
    body = body_of(stubbed, region)
    assert "    # TODO: the default SSE event name when there is no `event:` line" in body
    assert body[-1] == (
        '    raise NotImplementedError("exercise 1 not written yet: parse_frame: event name, data lines, JSON, '
        f'[DONE] — see {ROOT / "walkthrough.md"} §2.1")'  # a path that opens from the student's folder
    )
    assert all(line.strip().startswith("# TODO: ") for line in body[:-1])


# ── both directions, for every exercise: stubs fail, the reference passes ──────────────

SESSIONS = """
import json, os, sys
import pytest
for job in json.loads(sys.argv[1]):
    os.environ[job["env"]] = job["report"]
    pytest.main(job["args"])
"""


def run_sessions(jobs: list[dict], processes: int = 2) -> None:
    """Run pytest sessions in a few fresh interpreters (one start-up each, not one per session), with
    plugin autoload off as ``check`` runs them (its arguments name the plugins the checks need)."""
    import os

    batches = [jobs[i::processes] for i in range(processes)]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    running = [
        subprocess.Popen(
            [sys.executable, "-c", SESSIONS, json.dumps(batch)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for batch in batches
        if batch
    ]
    for process in running:
        _, err = process.communicate()
        assert process.returncode == 0, err


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict]:
    """name → the plugin's report, for: each exercise's stub copy (made by ``start``), each region
    of a multi-region exercise stubbed alone, and the reference on every exercise's tests."""
    base = tmp_path_factory.mktemp("exercise_sessions")
    jobs = []

    def job(name: str, args: list[str]) -> None:
        jobs.append({"env": REPORT_ENV, "report": str(base / f"{name}.json"), "args": args})

    for number in AVAILABLE:
        copy = base / f"stub_ex{number}"
        start(number, copy)
        job(copy.name, pytest_arguments(copy, number))
    for number, index in SPLIT:
        copy = base / f"stub_ex{number}_r{index}"
        make_copy(copy)
        relative, region = REGIONS[number][index]
        reference = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        (copy / relative).write_text(replace_body(reference, region, stub_body(reference, region)))
        job(copy.name, pytest_arguments(copy, number))
    everything = " or ".join(f"ex{n}" for n in AVAILABLE)
    job(
        "reference",
        [
            "-m",
            everything,
            "-q",
            "--tb=short",
            "--no-header",
            "-p",
            "no:cacheprovider",
            "-p",
            "ink_py.course.check_plugin",
            "-p",
            HYPOTHESIS_PLUGIN,
            "-c",
            str(CHECKS_INI),
            str(CHECKS_DIR),
        ],
    )
    run_sessions(jobs)
    return {Path(j["report"]).stem: json.loads(Path(j["report"]).read_text(encoding="utf-8")) for j in jobs}


@pytest.mark.parametrize("number", AVAILABLE, ids=[f"ex{n}" for n in AVAILABLE])
def test_a_fresh_stub_copy_fails_the_exercise_tests_on_its_own_stub(reports, number):
    report = reports[f"stub_ex{number}"]
    assert report["exitstatus"] == 1
    assert report["failure"]["kind"] == "stub" and report["failure"]["exercise"] == number


@pytest.mark.parametrize("number, index", SPLIT, ids=[f"ex{n}-region{i + 1}" for n, i in SPLIT])
def test_each_region_stubbed_alone_fails_the_exercise_tests(reports, number, index):
    report = reports[f"stub_ex{number}_r{index}"]
    relative, _ = REGIONS[number][index]
    assert report["exitstatus"] == 1
    assert report["failure"]["kind"] == "stub" and report["failure"]["exercise"] == number
    assert report["failure"]["in_copy"].startswith(f"stub_ex{number}_r{index}/{relative}:")


@pytest.mark.parametrize("number", AVAILABLE, ids=[f"ex{n}" for n in AVAILABLE])
def test_the_reference_passes_the_exercise_tests_and_check_selects_them_all(reports, number):
    report = reports["reference"]
    mine = [nodeid for nodeid, marks in report["selected"].items() if number in marks]
    assert mine, f"no test is marked ex{number}"
    assert {report["outcomes"][nodeid] for nodeid in mine} == {"passed"}
    # check collects only the modules that say `mark.exN`: they must hold every such test
    assert {str(CHECKS_DIR / nodeid.split("::")[0]) for nodeid in mine} <= set(marked_test_files(number))


def test_every_exercise_test_ships_with_the_package():
    """A test of tests/ carrying an exercise's mark would never run in ``check`` (it runs the package's
    checks): every one lives in ink_py/course/checks/, which the repository's run collects too."""

    def marks_an_exercise(path: Path) -> bool:  # pytest.mark.exN in the code, not in a string
        tree = ast.parse(path.read_text(encoding="utf-8"))
        return any(isinstance(n, ast.Attribute) and re.fullmatch(r"ex\d+", n.attr) for n in ast.walk(tree))

    assert [p.name for p in sorted((ROOT / "tests").rglob("test_*.py")) if marks_an_exercise(p)] == []
    assert all((CHECKS_DIR / name).is_file() for n in AVAILABLE for name in map(lambda f: Path(f).name,
               marked_test_files(n)))  # fmt: skip


# ── the working copy ────────────────────────────────────────────────────────────────────


def test_the_copy_imports_only_itself(tmp_path):
    make_copy(tmp_path / "solo_ink")
    # the reference's checks and pages stay with it: the copy is the code the student writes in
    assert not (tmp_path / "solo_ink" / "course" / "checks").exists() and (tmp_path / "solo_ink" / "course").is_dir()
    script = textwrap.dedent(
        """\
        import importlib, pkgutil, sys
        import solo_ink
        names = [m.name for m in pkgutil.walk_packages(solo_ink.__path__, "solo_ink.")
                 if not m.name.endswith("__main__")]  # __main__ would run the agent
        for name in names:
            importlib.import_module(name)
        print(len(names), sorted(m for m in sys.modules if m == "ink_py" or m.startswith("ink_py.")))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    count, leaked = done.stdout.split(" ", 1)
    assert int(count) >= 15 and leaked.strip() == "[]"
    # …and nothing imports ink_py by name on a path that did not run above
    for path in (tmp_path / "solo_ink").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom):
                assert node.level > 0 or not (node.module or "").startswith("ink_py"), path
            if isinstance(node, ast.Import):
                assert not any(alias.name.startswith("ink_py") for alias in node.names), path
        assert not re.search(r"import_module\(\s*[\"']ink_py", source), path


# ── the documented command: pytest --impl my_ink -m ex1 ───────────────────────────────


def documented_run(cwd: Path, impl: str, *, script: bool, env: dict | None = None) -> subprocess.CompletedProcess:
    """``pytest --impl IMPL -m ex1`` (or ``python -m pytest …``), exactly as README and ``ink-py exercise`` print it."""
    import os

    pytest_command = [str(Path(sys.executable).parent / "pytest")] if script else [sys.executable, "-m", "pytest"]
    command = [*pytest_command, "--impl", impl, "-m", "ex1", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_pytest_impl_works_as_written_from_the_students_folder(tmp_path):
    start(1, tmp_path / "my_ink")
    stubbed = documented_run(tmp_path, "my_ink", script=True)
    assert stubbed.returncode == 1, stubbed.stdout + stubbed.stderr
    assert "unrecognized arguments" not in stubbed.stderr
    assert "NotImplementedError: exercise 1 not written yet" in stubbed.stdout
    put_back(tmp_path / "my_ink", 1)
    solved = documented_run(tmp_path, "my_ink", script=False)
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert re.search(r"\b\d+ passed", solved.stdout) and "failed" not in solved.stdout


def test_pytest_impl_works_as_written_from_the_checkout_even_without_plugin_autoload():
    import shutil
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix=".impl-test-", dir=ROOT))  # a copy inside the checkout: a relative path
    try:
        start(1, scratch / "my_ink")
        relative = f"{scratch.name}/my_ink"
        for env in ({}, {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}):  # the entry point, or the top-level conftest.py
            done = documented_run(ROOT, relative, script=False, env=env)
            assert done.returncode == 1 and "exercise 1 not written yet" in done.stdout, (env, done.stderr)
        put_back(scratch / "my_ink", 1)
        done = documented_run(ROOT, relative, script=True)
        assert done.returncode == 0 and "failed" not in done.stdout, done.stdout + done.stderr
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_each_stub_lists_the_words_its_tests_compare(tmp_path):
    for number in AVAILABLE:
        for message in EXERCISES[number]["messages"]:
            copy = tmp_path / f"words_ex{number}"
            if not copy.exists():
                start(number, copy)
            stubs = "".join(
                "\n".join(body_of(text, region))
                for relative, _ in REGIONS[number]
                for text in [(copy / relative).read_text(encoding="utf-8")]
                for region in find_regions(text)
                if region["number"] == number
            )
            assert f"# TODO:     {message}\n" in stubs + "\n", (number, message)
    for number in (5, 7, 8):  # the exact error texts of §4: each appears where the test looks for it
        assert EXERCISES[number]["messages"]
    assert "output token limit" in EXERCISES[8]["messages"][0] and "Send the call again" in EXERCISES[8]["messages"][0]
    assert "OpenAI stream ended without finish_reason — response may be truncated" in EXERCISES[5]["messages"][0]


def test_on_a_copy_hypothesis_is_derandomised_and_writes_nothing_in_the_students_folder(tmp_path):
    """``pytest --impl`` (and so check and report): the same examples every run, no example database,
    nothing of Hypothesis's in the folder the student runs it from (issue 21 §3)."""
    start(9, tmp_path / "my_ink")
    put_back(tmp_path / "my_ink", 9)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from hypothesis import settings\n"
        "def pytest_sessionfinish(session):\n"
        "    s = settings.default\n"
        "    print('PROFILE', s.derandomize, s.database, s.print_blob)\n"
    )
    command = [sys.executable, "-m", "pytest", "--impl", "my_ink", "-m", "ex9", "-q", "-s", "-p", "no:cacheprovider",
               "-p", "probe", str(CHECKS_DIR / "test_chunks.py")]  # fmt: skip
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}  # the probe, and this ink_py
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "PROFILE True None False" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["my_ink", "probe.py"]
    assert not (tmp_path / "my_ink" / ".hypothesis").exists()


def test_a_marker_run_deselects_the_browser_tests_instead_of_skipping_them():
    """``pytest --impl my_ink -m ex1`` on a machine without a browser: the browser tests are
    deselected like every other test the marker does not select — not reported as skipped (issue 21 §5)."""
    import os

    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no chromium, no chromedriver on it
    browser_tests = ["tests/test_relay_browser.py", "tests/test_demo_browser.py"]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"]
    alone = subprocess.run([*command, *browser_tests], cwd=ROOT, capture_output=True, text=True, env=env)
    # no browser here indeed: skipped for want of chromium, or (a bare venv) of selenium before that
    assert "skipped" in alone.stdout and ("chromium" in alone.stdout or "selenium" in alone.stdout), alone.stdout
    ex1 = "ink_py/course/checks/test_parse_frame.py"
    marked = subprocess.run([*command, "-m", "ex1", *browser_tests, ex1], cwd=ROOT, capture_output=True, text=True,
                            env=env)  # fmt: skip
    assert marked.returncode == 0, marked.stdout + marked.stderr
    assert "deselected" in marked.stdout and "skipped" not in marked.stdout.lower(), marked.stdout
