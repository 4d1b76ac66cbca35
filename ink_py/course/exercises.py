"""Course exercises: re-implement one piece of the article at a time — ``ink-py exercise``.

    ink-py exercise list                 the exercises, and how far you are
    ink-py exercise start 1              copy ink_py to ./my_ink, with parse_frame cut out
    ink-py exercise check 1              run exercise 1's tests on ./my_ink; the first failure in plain words
    ink-py exercise hint 1               one more hint each time, the one the last failure calls for first
    ink-py exercise check --all          every started exercise, as a table (--whole-suite: the project's suite too)
    ink-py exercise diff 1 / reset 1     once green: yours beside the reference / back to the stub
    ink-py exercise report               JSON and JUnit XML for a teacher or an autograder
    ink-py exercise watch                the first exercise not green, checked again at every save
    pytest --impl my_ink -m ex1 --pdb    the same tests, straight, with a debugger (impl_option.py)

This module is the command: ``exercise_parser`` (argparse subcommands on the project's ``CliParser``),
``read_command`` (the working copy's folder, however it was given) and ``main``, which hands each
subcommand to its module — ``catalogue.py`` (the exercises), ``stubs.py`` (where they are in the
source, and their stubs), ``working_copy.py`` (``my_ink/``: start, reset, diff), ``progress.py``
(list, hint), ``checker.py`` (check), ``exercise_report.py`` (check --all, report) and ``watch.py``.

    >>> args = read_command(["check", "--all", "--dir", "mine"])
    >>> args.command, args.name, str(args.folder)
    ('check', None, 'mine')
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from ..arguments import EXIT_USAGE, CliParser
from .catalogue import ExerciseError, exercise_number
from .checker import check
from .exercise_report import REPORT_JSON, REPORT_XML, check_all, write_report
from .language import say
from .progress import hint, list_exercises
from .running import Progress
from .stubs import available
from .watch import watch_command
from .working_copy import DEFAULT_DIR, diff, reset, start

EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports it
SUBCOMMANDS = ("list", "start", "check", "hint", "reset", "diff", "report", "watch")  # --help: words.py's help_…
ARGPARSE_SAYS = [  # argparse's own mistakes (Python's words) → the key words.py says them with
    (re.compile(r"unrecognized arguments: (?P<rest>.*)", re.S), "unrecognized"),
    (re.compile(r"the following arguments are required: (?P<rest>.*)", re.S), "required"),
    (re.compile(r"invalid choice: (?P<value>.*?) \(choose from (?P<choices>.*)\)", re.S), "invalid_choice"),
    (re.compile(r"expected one argument"), "one_argument"),
]


def argparse_words(message: str) -> str:
    """An argparse mistake in the student's language (``argument --dir: …`` too); one it does not
    know is passed on as argparse said it.

    >>> argparse_words("argument --dir: expected one argument")
    'argument --dir: expected one argument'
    """
    argument = re.fullmatch(r"argument (?P<name>\S+): (?P<rest>.*)", message, re.S)
    if argument:
        return say("argument", name=argument["name"], rest=argparse_words(argument["rest"]))
    for pattern, key in ARGPARSE_SAYS:
        found = pattern.fullmatch(message)
        if found:
            return say(key, **found.groupdict())
    return message


class CourseFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, its ``usage:`` in the student's language."""

    def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, say("usage_prefix") if prefix is None else prefix)


class CourseParser(CliParser):
    """``CliParser`` speaking the student's language: the headings, ``-h`` and argparse's mistakes."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("formatter_class", CourseFormatter)
        super().__init__(add_help=False, **options)
        self._positionals.title = say("positionals")
        self._optionals.title = say("optionals")
        self.add_argument("-h", "--help", action="help", help=say("arg_help"))

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, say("see_help", message=argparse_words(message), prog=self.prog) + "\n")


class CommandParser(CourseParser):
    """A subcommand's parser: its words and flags in any order, as before (``reset 1 --yes mine``)."""

    intermixing = False

    def parse_known_args(  # type: ignore[override]  # the overloads of typeshed, in one signature
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.intermixing:  # parse_known_intermixed_args comes back here for each of its two passes
            return super().parse_known_args(args, namespace)
        self.intermixing = True
        if self.usage is None:  # else argparse keeps format_usage()[7:] while it parses: "usage: " cut, in English only
            self.usage = self.format_usage().removeprefix(say("usage_prefix")).rstrip("\n")
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self.intermixing = False


def given_path(text: str) -> str:
    """The value of ``--dir``, ``--json`` or ``--junit``: any path but an empty one."""
    if not text:
        raise argparse.ArgumentTypeError(say("empty_path"))
    return text


def exercise_parser() -> CliParser:
    """``ink-py exercise``: one subparser per command, each with ``--help`` and ``--dir``."""
    parser = CourseParser(prog="ink-py exercise", description=say("description"), epilog=say("overview"))
    default = DEFAULT_DIR
    parser.add_argument(
        "--dir", dest="dir_before", type=given_path, metavar="DIR", help=say("arg_dir_before", default=default)
    )
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", help=", ".join(SUBCOMMANDS), parser_class=CommandParser
    )
    for name in SUBCOMMANDS:
        usage = "%(prog)s [-h] [--dir DIR] (NAME [DIR] | --all [--whole-suite] [DIR])" if name == "check" else None
        sub = commands.add_parser(name, description=say(f"help_{name}"), usage=usage)
        if name in ("start", "hint", "reset", "diff"):
            sub.add_argument("name", metavar="NAME", help=say("arg_name"))
        elif name == "check":
            sub.add_argument("name", nargs="?", metavar="NAME", help=say("arg_name_check"))
            sub.add_argument("--all", action="store_true", help=say("arg_all"))
        if name in ("check", "report"):
            sub.add_argument("--whole-suite", action="store_true", help=say("arg_whole_suite"))
        sub.add_argument("folder", nargs="?", metavar="DIR", help=say("arg_folder", default=default))
        sub.add_argument("--dir", dest="dir_option", type=given_path, metavar="DIR", help=say("arg_dir"))
        if name == "reset":
            sub.add_argument("--yes", action="store_true", help=say("arg_yes"))
        if name == "report":
            sub.add_argument("--json", type=given_path, default=REPORT_JSON, metavar="PATH", help=say("arg_json"))
            sub.add_argument("--junit", type=given_path, default=REPORT_XML, metavar="PATH", help=say("arg_junit"))
    return parser


def read_command(argv: list[str], parser: CliParser | None = None) -> argparse.Namespace:
    """The parsed command, with ``folder`` the working copy's Path — from ``--dir DIR`` or a trailing DIR."""
    args = (parser or exercise_parser()).parse_args(argv)
    if args.command is None:
        raise ExerciseError(say("which_command", commands=", ".join(SUBCOMMANDS)))
    args.name, args.all = getattr(args, "name", None), getattr(args, "all", False)
    if args.all:  # check --all [DIR]: the word after --all is the folder
        if args.folder is not None:
            raise ExerciseError(say("too_many", rest=args.folder))
        args.name, args.folder = None, args.name
    elif args.command == "check" and args.name is None:
        raise ExerciseError(say("which_exercise"))
    if args.command == "check" and args.whole_suite and not args.all:
        raise ExerciseError(say("whole_suite_with_all"))
    given = [folder for folder in (args.dir_before, args.dir_option, args.folder) if folder is not None]
    if len(given) > 1:
        raise ExerciseError(say("folder_once"))
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
            print(write_report(folder, Path(args.json), Path(args.junit), Progress.on_stderr(), args.whole_suite))
            return 0
        if args.command == "watch":
            return watch_command(folder)
        if args.command == "check" and args.all:
            green, words = check_all(folder, Progress.on_stderr(), args.whole_suite)
            print(words)
            return 0 if green else 1
        number = exercise_number(args.name)
        if args.command in ("start", "check", "reset", "diff") and not available(number):
            raise ExerciseError(say("not_available", n=number))
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
        green, words = check(number, folder, Progress.on_stderr(always=False))  # in place, on a terminal only
        print(words)
        return 0 if green else 1
    except ExerciseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `ink-py exercise diff 1 | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # the tests' child is gone already (running.py); every file was written whole
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
