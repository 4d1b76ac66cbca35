"""What a reader stepping through the README task meets: calls and file changes per streamed event.

    python benchmarks/call_path.py            # the README task on the built-in model, in every dialect
    python benchmarks/call_path.py --api openai-completions --files

Runs ``ink-py`` (no flags: the README task) in this process with ``sys.setprofile`` on the main
thread only — the thread a debugger steps through; the built-in model answers from its own
thread and is not counted. It counts, for the whole run:

    events     SSE events the provider parsed (``parse_frame`` returned one)
    calls      calls into the package's code, generator resumptions included (what ``step`` enters)
    moves      those calls that go into another of the package's files than the caller's
    files      the package's files whose functions ran (module bodies not counted)

and prints calls and moves per event. ``tests/test_call_path.py`` holds the same figures to
issue 18's bounds; this script is for looking.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # ink_py from this checkout, installed or not

PACKAGE = str(HERE.parent / "ink_py")


def profile_readme_task(
    api: str = "openai-completions", workspace: str | None = None, delay: str | None = None
) -> dict[str, Any]:
    """Run the README task once on the built-in model and return the figures (see the module doc)."""
    import ink_py
    from ink_py import cli
    from ink_py.provider import shared

    package = os.path.dirname(ink_py.__file__)
    main_thread = threading.main_thread()
    calls = 0
    moves = 0  # calls from one of the package's files into another
    files: dict[str, int] = {}
    stack: list[str | None] = []  # the package file of each frame the profiler saw enter, innermost last
    events = [0]
    parse_frame = shared.parse_frame

    def counting_parse_frame(*args: Any, **kwargs: Any) -> Any:
        parsed = parse_frame(*args, **kwargs)
        if parsed is not None:
            events[0] += 1
        return parsed

    def innermost() -> str | None:
        for file in reversed(stack):
            if file is not None:
                return file
        return None

    def profiler(frame: Any, what: str, arg: Any) -> None:
        nonlocal calls, moves
        if threading.current_thread() is not main_thread or what not in ("call", "return"):
            return
        file = frame.f_code.co_filename
        ours = file.startswith(package) and frame.f_code.co_name != "<module>"
        ours = ours and frame.f_code is not counting_parse_frame.__code__
        if what == "call":
            caller = innermost()
            stack.append(file if ours else None)
            if ours:
                calls += 1
                files[file] = files.get(file, 0) + 1
                if caller is not None and caller != file:
                    moves += 1
        elif stack:
            stack.pop()

    args = ["--api", api, "--workspace", workspace or str(HERE.parent)]
    out, err = io.StringIO(), io.StringIO()
    previous_delay = os.environ.get("INK_SCRIPTED_DELAY")
    if delay is not None:
        os.environ["INK_SCRIPTED_DELAY"] = delay
    shared.parse_frame = counting_parse_frame  # type: ignore[assignment]
    for module in list(sys.modules.values()):  # every module that imported parse_frame by name
        if getattr(module, "parse_frame", None) is parse_frame and module is not shared:
            module.parse_frame = counting_parse_frame  # type: ignore[attr-defined]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            sys.setprofile(profiler)
            try:
                code = cli.main(args)
            finally:
                sys.setprofile(None)
    finally:
        shared.parse_frame = parse_frame
        for module in list(sys.modules.values()):
            if getattr(module, "parse_frame", None) is counting_parse_frame:
                module.parse_frame = parse_frame  # type: ignore[attr-defined]
        if previous_delay is None:
            os.environ.pop("INK_SCRIPTED_DELAY", None)
        else:
            os.environ["INK_SCRIPTED_DELAY"] = previous_delay
    return {
        "api": api,
        "exit": code,
        "events": events[0],
        "calls": calls,
        "moves": moves,
        "files": {os.path.relpath(f, os.path.dirname(package)): n for f, n in sorted(files.items())},
        "answer": out.getvalue(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api", action="append", help="a dialect (default: all three)")
    parser.add_argument("--files", action="store_true", help="list the files entered, with their calls")
    args = parser.parse_args()
    for api in args.api or ["openai-completions", "anthropic-messages", "openai-responses"]:
        figures = profile_readme_task(api)
        per_event = figures["events"] or 1
        print(
            f"{api:20} exit {figures['exit']}  {figures['events']} events  "
            f"{figures['calls'] / per_event:.1f} calls/event  {figures['moves'] / per_event:.1f} moves/event  "
            f"{len(figures['files'])} files"
        )
        if args.files:
            for file, count in figures["files"].items():
                print(f"    {count:7}  {file}")


if __name__ == "__main__":
    main()
