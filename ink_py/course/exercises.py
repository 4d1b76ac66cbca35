"""Course exercises: re-implement one piece of the article at a time — ``ink-py exercise``.

    ink-py exercise list                 the exercises, and how far you are
    ink-py exercise start 1              copy ink_py to ./my_ink, with parse_frame cut out
    ink-py exercise check 1              run exercise 1's tests on ./my_ink; the first failure in plain words
    ink-py exercise hint 1               one more hint each time (Chinese, like the article)
    ink-py exercise check --all          every started exercise, as a table
    ink-py exercise diff 1 / reset 1     once green: yours beside the reference / back to the stub
    ink-py exercise report               JSON and JUnit XML for a teacher or an autograder
    pytest --impl my_ink -m ex1 --pdb    the same tests, straight, with a debugger (impl_option.py)

This module is the command: ``exercise_parser`` (argparse subcommands on the project's ``CliParser``),
``read_command`` (the working copy's folder, however it was given) and ``main``, which hands each
subcommand to its module — ``catalogue.py`` (the exercises), ``stubs.py`` (where they are in the
source, and their stubs), ``working_copy.py`` (``my_ink/``: start, reset, diff), ``progress.py``
(list, hint), ``checker.py`` (check) and ``exercise_report.py`` (check --all, report).

    >>> args = read_command(["check", "--all", "--dir", "mine"])
    >>> args.command, args.name, str(args.folder)
    ('check', None, 'mine')
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..arguments import CliParser
from .catalogue import ExerciseError, exercise_number
from .checker import check
from .exercise_report import REPORT_JSON, REPORT_XML, check_all, write_report
from .progress import hint, list_exercises
from .stubs import available
from .working_copy import DEFAULT_DIR, diff, reset, start

OVERVIEW = """commands:
  list  [DIR]            the exercises and how far you are
  start NAME [DIR]       copy ink_py to DIR (default ./my_ink) with exercise NAME cut out
  check NAME [DIR]       run exercise NAME's tests on DIR and explain the first failure
  check --all [DIR]      check every started exercise; a table of where each stands
  hint  NAME [DIR]       one more hint
  reset NAME [DIR]       put exercise NAME's stub back (asks first; --yes for scripts)
  diff  NAME [DIR]       once NAME is green: your code beside the reference
  report [DIR]           what a teacher collects: exercise-report.json and exercise-report.xml
                         (JUnit) in the current folder, or --json PATH / --junit PATH

NAME is a number or a slug (1 or parse-frame). DIR can also be given as --dir DIR.
Each command takes --help.
The same tests, straight:      python -m pytest --impl my_ink -m ex1
The §3 demo over your copy:    python -m my_ink demo"""

SUBCOMMANDS = {  # name → what it does (its --help)
    "list": "The exercises, in article order, and how far you are.",
    "start": "Copy ink_py to DIR (default ./my_ink) with exercise NAME cut out; more exercises stub more of the copy.",
    "check": "Run exercise NAME's tests on DIR and explain the first failure; --all: every started exercise.",
    "hint": "One more hint each time (Chinese, like the article).",
    "reset": "Put exercise NAME's stub back; your code is kept in DIR/.reset/ (asks first; --yes for scripts).",
    "diff": "Once NAME is green: your code beside the reference, region by region.",
    "report": "What a teacher collects: exercise-report.json and exercise-report.xml (JUnit) in the current folder.",
}


class CommandParser(CliParser):
    """A subcommand's parser: its words and flags in any order, as before (``reset 1 --yes mine``)."""

    intermixing = False

    def parse_known_args(  # type: ignore[override]  # the overloads of typeshed, in one signature
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.intermixing:  # parse_known_intermixed_args comes back here for each of its two passes
            return super().parse_known_args(args, namespace)
        self.intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self.intermixing = False


def given_path(text: str) -> str:
    """The value of ``--dir``, ``--json`` or ``--junit``: any path but an empty one."""
    if not text:
        raise argparse.ArgumentTypeError("needs a path, not an empty string")
    return text


def exercise_parser() -> CliParser:
    """``ink-py exercise``: one subparser per command, each with ``--help`` and ``--dir``."""
    parser = CliParser(
        prog="ink-py exercise",
        description="Course exercises: re-implement the article one piece at a time; the project's tests check it.",
        epilog=OVERVIEW,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dir",
        dest="dir_before",
        type=given_path,
        metavar="DIR",
        help=f"the working copy (default ./{DEFAULT_DIR}); also after the command",
    )
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", help=", ".join(SUBCOMMANDS), parser_class=CommandParser
    )
    for name, what in SUBCOMMANDS.items():
        usage = "%(prog)s [-h] [--dir DIR] (NAME [DIR] | --all [DIR])" if name == "check" else None
        sub = commands.add_parser(name, description=what, usage=usage)
        if name in ("start", "hint", "reset", "diff"):
            sub.add_argument("name", metavar="NAME", help="the exercise: a number or a slug (1, ex1, parse-frame)")
        elif name == "check":
            sub.add_argument("name", nargs="?", metavar="NAME", help="the exercise: a number or a slug")
            sub.add_argument("--all", action="store_true", help="check every started exercise; a table")
        sub.add_argument("folder", nargs="?", metavar="DIR", help=f"the working copy (default ./{DEFAULT_DIR})")
        sub.add_argument("--dir", dest="dir_option", type=given_path, metavar="DIR", help="the same, as an option")
        if name == "reset":
            sub.add_argument("--yes", action="store_true", help="do not ask first (for scripts)")
        if name == "report":
            sub.add_argument("--json", type=given_path, default=REPORT_JSON, metavar="PATH", help="the JSON report")
            sub.add_argument("--junit", type=given_path, default=REPORT_XML, metavar="PATH", help="the JUnit XML")
    return parser


def read_command(argv: list[str], parser: CliParser | None = None) -> argparse.Namespace:
    """The parsed command, with ``folder`` the working copy's Path — from ``--dir DIR`` or a trailing DIR."""
    args = (parser or exercise_parser()).parse_args(argv)
    if args.command is None:
        raise ExerciseError(f"which command? {', '.join(SUBCOMMANDS)}")
    args.name, args.all = getattr(args, "name", None), getattr(args, "all", False)
    if args.all:  # check --all [DIR]: the word after --all is the folder
        if args.folder is not None:
            raise ExerciseError(f"too many arguments for check: {args.folder}")
        args.name, args.folder = None, args.name
    elif args.command == "check" and args.name is None:
        raise ExerciseError("which exercise? e.g. ink-py exercise check 1")
    given = [folder for folder in (args.dir_before, args.dir_option, args.folder) if folder is not None]
    if len(given) > 1:
        raise ExerciseError("give the folder once")
    args.folder = Path((given[0] if given else "") or DEFAULT_DIR)  # an empty DIR word: the default, as before
    return args


def main(argv: list[str] | None = None) -> int:
    """``ink-py exercise …``: 0 done (or green), 1 a usage mistake (or red)."""
    argv = sys.argv[1:] if argv is None else argv
    parser = exercise_parser()
    if not argv or argv[0] == "help":
        parser.print_help()
        return 0
    try:
        try:
            args = read_command(argv, parser)
        except SystemExit as done:  # --help, or a usage mistake argparse has told in one line
            return int(done.code or 0)
        folder = args.folder
        if args.command == "list":
            print(list_exercises(folder))
            return 0
        if args.command == "report":
            print(write_report(folder, Path(args.json), Path(args.junit)))
            return 0
        if args.command == "check" and args.all:
            green, words = check_all(folder)
            print(words)
            return 0 if green else 1
        number = exercise_number(args.name)
        if args.command in ("start", "check", "reset", "diff") and not available(number):
            raise ExerciseError(f"exercise {number} is not available yet: the source has no markers for it")
        if args.command == "start":
            print(start(number, folder))
            return 0
        if args.command == "hint":
            print(hint(number, folder))
            return 0
        if args.command == "reset":
            print(reset(number, folder, yes=args.yes))
            return 0
        if args.command == "diff":
            print(diff(number, folder))
            return 0
        green, words = check(number, folder)
        print(words)
        return 0 if green else 1
    except ExerciseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `ink-py exercise diff 1 | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
