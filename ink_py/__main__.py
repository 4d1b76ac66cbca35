"""``python -m ink_py`` — the same as the ``ink-py`` command (see ink_py/cli.py)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
