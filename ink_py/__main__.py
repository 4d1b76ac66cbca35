"""``ink-py`` and ``python -m ink_py``: a subcommand's module, or the agent itself (``cli``).

Beyond Ink, what every command gets here, once, before it runs:

- Ctrl-C means "exit 130, no traceback" from the first instruction on: a handler that ends
  the process at once is installed before anything heavy is imported, and again after the
  run for the interpreter's shutdown; while the command runs, Ctrl-C is Python's usual
  KeyboardInterrupt, which the CLI and the runner turn into a clean abort. Started with
  SIGINT ignored (a script's ``ink-py … &``), it stays ignored, as POSIX has it: no handler.
- Output the stream cannot encode (``PYTHONIOENCODING=latin-1``, a lone surrogate) is
  replaced, not fatal (``tolerant_streams``); input that is not UTF-8 arrives as U+FFFD.
- A reader that closes the pipe early (``ink-py demo --list | head -1``) ends the command
  quietly, with a shell's status for a pipe closed on it (``reader_gone``).
- Run before ``pip install``, a missing dependency is one line naming the install command (installed.py).
- A first argument ``--`` is skipped: pdb passes it on (``python -m pdb -m ink_py -- --scenario …``).
"""

from __future__ import annotations

import importlib
import io
import os
import signal
import sys

EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `yes | head -1`'s yes
DEPENDENCIES = ("requests", "urllib3")  # the runtime's only ones (setup.cfg install_requires)
INSTALL_HINT = "ink_py needs {name}, which this Python does not have: install ink_py first, {how}"
FROM_THE_CHECKOUT = "from the checkout — python3 -m venv .venv && . .venv/bin/activate && pip install -e ."


def _quit_at_once(signum: int, frame: object) -> None:
    os.write(2, b"\ninterrupted\n")
    os._exit(EXIT_INTERRUPTED)  # nothing has started yet (or everything has ended): nothing to clean up


def main(argv: list[str] | None = None) -> int:
    as_program = argv is None  # the console script and `python -m` pass nothing; tests pass argv
    takes_ctrl_c = as_program and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN  # ignored: left so
    if takes_ctrl_c:
        signal.signal(signal.SIGINT, _quit_at_once)  # first: before the imports below take their 0.1 s
    if as_program:
        tolerant_streams()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--"]:  # beyond Ink: pdb passes it on (`python -m pdb -m ink_py -- --flags`)
        argv = argv[1:]
    try:
        try:
            from . import cli
            from .arguments import COMMANDS
        except ModuleNotFoundError as err:  # `python -m ink_py` in a checkout before the install, or --no-deps
            if (err.name or "").split(".")[0] not in DEPENDENCIES:
                raise
            from .installed import in_its_source, pip_install  # here: nothing before the Ctrl-C handler

            how = FROM_THE_CHECKOUT if in_its_source() else f"with {pip_install()}"
            print(f"error: {INSTALL_HINT.format(name=err.name, how=how)}", file=sys.stderr)
            return 1

        if takes_ctrl_c:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on: KeyboardInterrupt
        if argv and argv[0] in COMMANDS:  # a wing is loaded only when asked for
            code = int(importlib.import_module(f".{COMMANDS[argv[0]][0]}", __package__).main(argv[1:]))
        else:
            code = cli.main(argv)
        sys.stdout.flush()  # here, not in the interpreter's shutdown: a closed pipe is still ours to handle
        return code
    except KeyboardInterrupt:  # before a command's own handling began
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return reader_gone()
    finally:
        if takes_ctrl_c:
            signal.signal(signal.SIGINT, _quit_at_once)  # and through the interpreter's shutdown


def tolerant_streams() -> None:
    """Beyond Ink: write what the terminal's encoding can show, and read what it cannot decode.

    stdout replaces what it cannot encode with ``?`` (Python's default, "strict", ends the
    run with UnicodeEncodeError under ``PYTHONIOENCODING=latin-1`` or for a model's lone
    surrogate); stderr keeps Python's own "backslashreplace" (``\\u2014``: exact for a
    diagnostic); stdin decodes bytes that are not UTF-8 as U+FFFD, so a chat line is always
    text a request can carry. An encoding or error handler chosen in PYTHONIOENCODING is kept.
    A stream someone read before us (``printf 'c\\n' | python -m pdb -m ink_py``: pdb reads its
    commands from stdin) can no longer be reconfigured; it is left as its reader set it up.
    """
    chosen = ":" in os.environ.get("PYTHONIOENCODING", "")  # "latin-1:strict" names its error handler
    for stream, errors in ((sys.stdout, "replace"), (sys.stdin, "replace")):
        if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict", "surrogateescape") and not chosen:
            try:
                stream.reconfigure(errors=errors)
            except io.UnsupportedOperation:  # already read from: Python allows no change any more
                pass


def reader_gone() -> int:
    """The pipe our output went to was closed (``| head -1``): stop quietly, as Unix tools do.

    A Unix tool is ended by SIGPIPE without a word, and the shell reports 141 (128 + 13);
    ink_py keeps SIGPIPE ignored (its built-in servers write to sockets that clients close)
    and returns that status instead, so ``set -o pipefail`` sees what it sees for ``yes | head``.
    Python's documented recipe: point stdout at /dev/null, so the interpreter's last flush
    cannot fail again (and turn the status into 120).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
        try:
            os.dup2(devnull, stream.fileno())  # whatever was still buffered goes nowhere
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
    os.close(devnull)
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    raise SystemExit(main())
