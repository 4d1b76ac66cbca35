"""walkthrough.md's pdb recipe, driven as an editor or a script drives it: the real ``python -m pdb``,
its commands on a pipe, one printout per stop.

The README task on the built-in model reaches §2.1's moment at the first ``c`` (the first read of the
call's event, no event cut yet), then the second read, the fragments ``{"path":"REA`` and ``DME.md"}``,
each turn's message_end and the read — eight stops, every one on the main thread, as the table says.
With two calls in one reply (``--scenario interleaved``) the tools run on worker threads, where pdb
does not stop; ``--serial-tools`` brings them back to the main thread: that command is run as the
section writes it, ``--`` before ink-py's flags (Python 3.13.0's pdb refuses them otherwise; the other
versions pass the ``--`` on, and ink-py skips it). So is the §2.1 test's ``pytest --trace`` line. Every
run has a time limit.
"""

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

from .helpers import ROOT, cli_env
from .test_walkthrough import PDB_SECTION, pdb_breakpoints

RECIPE_BLOCK = PDB_SECTION.split("```sh", 1)[1].split("```", 1)[0]
RECIPE = [line.removeprefix("(Pdb) ") for line in RECIPE_BLOCK.splitlines() if line.startswith("(Pdb) b ")]
THREAD = '__import__("threading").current_thread().name'
STOP = re.compile(r"> (\S+?)\((\d+)\)([\w<>]+)\(\)")
PRINTED = re.compile(r"\(Pdb\) (\('@@'.*\))$", re.M)

# The table's stops, in order: the file, and what is printed there ("n" steps over the line first).
STOPS = [
    ("ink_py/provider/shared.py", ["chunk, sep, buffer"]),  # 1 §2.1 ①
    ("ink_py/provider/shared.py", ["chunk, buffer[start:sep], buffer[sep + 2 :]"]),  # 2 §2.1 ②
    ("ink_py/provider/openai_completions.py", ["fragment"]),  # 3
    ("ink_py/provider/shared.py", ["buffer[start:sep]"]),  # 4
    ("ink_py/provider/openai_completions.py", ["fragment", "n", '"".join(tool_raw_by_index[index])']),  # 5
    ("ink_py/provider/openai_completions.py", ["blocks, stop_reason"]),  # 6
    ("ink_py/core/tools/read.py", ["path"]),  # 7
    ("ink_py/provider/openai_completions.py", ["stop_reason"]),  # 8
]


def as_written(command: str) -> list[str]:
    """A command of the section, to run: ``python`` and ``pytest`` are this venv's."""
    program, *args = shlex.split(command)
    return [sys.executable, *args] if program == "python" else [str(Path(sys.executable).parent / program), *args]


def run_pdb(args: list[str], commands: list[str], timeout: float = 120) -> tuple[list[tuple[str, int]], list]:
    """``python -m pdb -m ink_py ARGS`` fed ``commands``, then ``q``: the stops (file, line) and what each printed."""
    return run_debugger(as_written(shlex.join(["python", "-m", "pdb", "-m", "ink_py", *args])), commands, timeout)


def run_debugger(argv: list[str], commands: list[str], timeout: float = 120) -> tuple[list[tuple[str, int]], list]:
    done = subprocess.run(
        argv,
        input="\n".join([*commands, "q", ""]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=cli_env(INK_SCRIPTED_DELAY="0", PYTEST_ADDOPTS="-p no:cacheprovider"),
        timeout=timeout,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    stops = [(path, int(line)) for path, line, _ in STOP.findall(done.stdout)]
    stops = [(str(path).removeprefix(str(ROOT) + "/"), line) for path, line in stops]
    return stops, [ast.literal_eval(text) for text in PRINTED.findall(done.stdout)]


def probe(expression: str) -> str:
    return f'p ("@@", {THREAD}, {expression})'


def test_the_recipe_reaches_the_articles_moment_at_the_first_stop_all_on_the_main_thread():
    assert len(RECIPE) == 5 and all(command.startswith("b ink_py/") for command in RECIPE)
    commands = [*RECIPE, "c"]
    for _, expressions in STOPS:
        commands += [probe(e) if e != "n" else "n" for e in expressions] + ["c"]
    stops, printed = run_pdb([], commands)
    assert stops[0][0].endswith("ink_py/__main__.py")  # pdb first stops at the program's first line
    breakpoints = {(path, number) for path, number, _ in pdb_breakpoints(RECIPE_BLOCK)}
    stops = [stop for stop in stops if stop in breakpoints]  # not where `n` stepped to
    assert [path for path, _ in stops] == [path for path, _ in STOPS], stops
    assert {thread for _, thread, *_ in printed} == {"MainThread"}
    values = [entry[2:] for entry in printed]
    values[4:6] = [values[4] + values[5]]  # stop 5 prints twice: before and after its line runs

    chunk, sep, buffer = values[0]  # §2.1 ①: the first read ends after "index":0, and cuts nothing
    assert chunk.endswith(b'"tool_calls":[{"index":0,') and sep == -1
    assert buffer == chunk.decode("utf-8") and buffer.startswith("data: {")
    chunk, frame, rest = values[1]  # §2.1 ②: the second read brings the rest and the blank line
    assert chunk.startswith(b'"id":"call_') and chunk.endswith(b"\n\n") and rest == ""
    assert '"arguments":"{\\"path\\":\\"REA"}}]},"logprobs":null,"finish_reason":null}]' in frame
    assert values[2] == ('{"path":"REA',)
    assert 'DME.md\\"}' in values[3][0]
    assert values[4] == ('DME.md"}', '{"path":"README.md"}')
    blocks, stop_reason = values[5]
    assert blocks[-1]["arguments"] == {"path": "README.md"} and stop_reason == "tool_use"
    assert values[6] == ("README.md",)
    assert values[7] == ("end_turn",)


def read_breakpoint() -> str:
    [(path, number, _)] = [b for b in pdb_breakpoints(RECIPE_BLOCK) if b[0].endswith("tools/read.py")]
    return f"b {path}:{number}"


def test_with_two_calls_the_reads_stop_only_when_they_run_on_the_main_thread():
    """Two calls in one reply: the reads run side by side on worker threads, and pdb (which traces its
    own thread only) never stops there; --serial-tools runs them here, one after the other."""
    commands = [read_breakpoint(), "c", probe("path"), "c", probe("path"), "c"]
    stops, printed = run_pdb(["--scenario", "interleaved"], commands)
    assert not any(path.endswith("tools/read.py") for path, _ in stops) and printed == []
    [serial] = re.findall(r"`(python -m pdb -m ink_py -- [^`]+)`", PDB_SECTION)
    assert serial == "python -m pdb -m ink_py -- --scenario interleaved --serial-tools"
    stops, printed = run_debugger(as_written(serial), commands)
    assert [entry[1:] for entry in printed] == [("MainThread", "README.md"), ("MainThread", "package.json")]


def test_the_parse_sse_test_stops_where_the_section_says():
    """``pytest --trace …`` stops at the test's first line; the section's breakpoint then stops in
    parse_sse as the test's one event is cut from its read."""
    [command] = re.findall(r"`(pytest --trace [^`]+)`", PDB_SECTION)
    [(path, number)] = re.findall(r"\(Pdb\) break (ink_py/[\w/]+\.py):(\d+)`", PDB_SECTION)
    stops, printed = run_debugger(as_written(command), [f"break {path}:{number}", "c", probe("buffer[start:sep]"), "c"])
    assert stops == [("ink_py/course/checks/test_parse_sse.py", stops[0][1]), (path, int(number))], stops
    assert printed == [("@@", "MainThread", 'data: {"a": 1}')]
