"""How this ink_py was installed, and the ``pip install`` that fits it (beyond Ink).

Run from its source — a clone, an editable install of one (``pip install -e .``), the sdist unpacked —
ink_py sits beside the setup.cfg that names it, and what is missing is installed from that folder:
``pip install -e '.[redis]'``. Installed from a wheel (a venv, ``--user``, ``--target``, ``--prefix``)
it sits among other packages, and the command is ``pip install 'ink_py[redis]'``. Every message that
names an install command asks ``pip_install``: redis-py for the relay, pytest for the course's checks,
the fixtures, a dependency missing altogether (``__main__``). Standard library only: it must work
before requests is installed.

    >>> pip_install("redis", source=True), pip_install("redis", source=False)
    ("pip install -e '.[redis]'", "pip install 'ink_py[redis]'")
"""

from __future__ import annotations

import configparser
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent  # ink_py, or a course copy (my_ink)


def in_its_source(package_dir: Path = PACKAGE_DIR) -> bool:
    """Whether ``package_dir`` is the package folder of ink_py's source: beside a setup.cfg naming ink_py."""
    setup = configparser.ConfigParser(interpolation=None)
    try:
        setup.read(package_dir.parent / "setup.cfg", encoding="utf-8")  # a file that cannot be opened: none
    except (configparser.Error, UnicodeDecodeError):  # another project's setup.cfg beside a --target folder
        return False
    return setup.get("metadata", "name", fallback="") == "ink_py"


def pip_install(extra: str = "", *, reinstall: bool = False, source: bool | None = None) -> str:
    """The command that installs ink_py (with ``extra``, e.g. ``"redis"``) as this one was installed.

    >>> pip_install(reinstall=True, source=False), pip_install(reinstall=True, source=True)
    ('pip install --force-reinstall ink_py', 'pip install -e .')
    """
    if in_its_source() if source is None else source:
        return f"pip install -e '.[{extra}]'" if extra else "pip install -e ."
    again = "--force-reinstall " if reinstall else ""
    return f"pip install {again}'ink_py[{extra}]'" if extra else f"pip install {again}ink_py"
