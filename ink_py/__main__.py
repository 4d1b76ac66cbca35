"""``ink-py`` and ``python -m ink_py``: a subcommand's module, or the agent itself (``cli``).

Beyond Ink: run as the program, Ctrl-C means "exit 130, no traceback" from the first
instruction on. A handler that ends the process at once is installed before anything
heavy (requests, the CLI, a wing) is imported, and again after the run for the
interpreter's shutdown; while the command runs, Ctrl-C is Python's usual
KeyboardInterrupt, which the CLI and the runner turn into a clean abort.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

EXIT_INTERRUPTED = 130


def _quit_at_once(signum: int, frame: object) -> None:
    os.write(2, b"\ninterrupted\n")
    os._exit(EXIT_INTERRUPTED)  # nothing has started yet (or everything has ended): nothing to clean up


def main(argv: list[str] | None = None) -> int:
    as_program = argv is None  # the console script and `python -m` pass nothing; tests pass argv
    if as_program:
        signal.signal(signal.SIGINT, _quit_at_once)  # first: before the imports below take their 0.1 s
    argv = sys.argv[1:] if argv is None else argv
    try:
        from . import cli
        from .arguments import COMMANDS

        if as_program:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on: KeyboardInterrupt
        if argv and argv[0] in COMMANDS:  # a wing is loaded only when asked for
            return int(importlib.import_module(f".{COMMANDS[argv[0]][0]}", __package__).main(argv[1:]))
        return cli.main(argv)
    except KeyboardInterrupt:  # before a command's own handling began
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if as_program:
            signal.signal(signal.SIGINT, _quit_at_once)  # and through the interpreter's shutdown


if __name__ == "__main__":
    raise SystemExit(main())
