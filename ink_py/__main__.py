"""``ink-py`` and ``python -m ink_py``: a subcommand's module, or the agent itself (``cli``)."""

from __future__ import annotations

import importlib
import sys

from . import cli
from .arguments import COMMANDS


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:  # a wing is loaded only when asked for
        return importlib.import_module(f".{COMMANDS[argv[0]][0]}", __package__).main(argv[1:])
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
