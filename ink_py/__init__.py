"""ink_py: the access layer of the coding agent Ink, in synchronous Python (README.md, walkthrough.md).

``__version__`` is the one place the version is written: setup.cfg reads it (``version = attr:``),
``ink-py -V`` prints it.

    >>> __version__.count(".")
    2
"""

__version__ = "0.1.0"
