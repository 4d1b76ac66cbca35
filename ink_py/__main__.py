"""``python -m ink_py`` and the ``ink-py`` command (see ink_py/cli.py).

Beyond Ink: Ctrl-C means "exit 130, no traceback" from the first instruction on. The
handler below is installed before anything heavy (requests, the CLI) is imported; a
Ctrl-C during those imports, or after the run while the interpreter shuts down, ends
the process at once. While ``cli.main`` runs, Ctrl-C is Python's usual
KeyboardInterrupt, which the CLI and the runner turn into a clean abort.
"""

import os
import signal
import sys

EXIT_INTERRUPTED = 130


def _quit_at_once(signum: int, frame: object) -> None:
    os.write(2, b"\ninterrupted\n")
    os._exit(EXIT_INTERRUPTED)  # nothing has started yet (or everything has ended): no cleanup to do


def main() -> int:
    signal.signal(signal.SIGINT, _quit_at_once)  # first: before the imports below take their 0.1 s
    from .cli import main as cli_main

    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # cli.main turns it into exit 130
        code = cli_main(sys.argv[1:])
    except KeyboardInterrupt:  # between the two lines above and cli.main's own try
        code = EXIT_INTERRUPTED
    signal.signal(signal.SIGINT, _quit_at_once)  # and through the interpreter's shutdown
    return code


if __name__ == "__main__":
    raise SystemExit(main())
