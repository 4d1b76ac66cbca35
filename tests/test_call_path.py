"""What a reader stepping through the README task meets (issue 18): few calls, few files, per event.

``benchmarks/call_path.py`` runs ``ink-py`` (the README task, built-in model) in this process with
``sys.setprofile`` on the main thread and counts calls into the package, the moves between its
files, and the files entered. A debugger stepping from ``stream_assistant`` into ``parse_frame``
should meet the article's code and its guards, not a maze: these bounds hold that. The counts are
deterministic in the worst case: the server writes each event in a few pieces, and a read never
returns less than one of them, so more reads than today's cannot happen.
"""

import importlib.util
import sys

import pytest

from .helpers import ROOT

MAX_CALLS_PER_EVENT = 20
MAX_MOVES_PER_EVENT = 10
MAX_FILES = 20
NEVER_ENTERED = (  # the other dialects, the recording wing and the scenario table
    "ink_py/provider/anthropic_messages.py",
    "ink_py/provider/openai_responses.py",
    "ink_py/provider/recording.py",
    "ink_py/scripted/scenarios.py",
    "ink_py/course",
    "ink_py/second_article",
)


def call_path():
    spec = importlib.util.spec_from_file_location("call_path", ROOT / "benchmarks" / "call_path.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(sys.getprofile() is not None, reason="another profiler (coverage?) is installed")
def test_the_readme_task_steps_through_few_calls_and_files_per_event():
    figures = call_path().profile_readme_task("openai-completions", str(ROOT))
    events = figures["events"]
    assert figures["exit"] == 0 and "「ink_py」" in figures["answer"] and events > 50
    calls, moves = figures["calls"] / events, figures["moves"] / events
    print(f"\n{events} events: {calls:.1f} calls and {moves:.1f} moves between files per event, "
          f"{len(figures['files'])} files")  # fmt: skip
    assert calls <= MAX_CALLS_PER_EVENT
    assert moves <= MAX_MOVES_PER_EVENT
    assert len(figures["files"]) <= MAX_FILES
    entered = [file for file in figures["files"] if file.startswith(NEVER_ENTERED)]
    assert entered == []
