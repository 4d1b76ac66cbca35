"""The ``ink-py`` command: flags in, exit code out — the front door of the README task.

    ink-py                                   the README task, on the built-in scripted model
    ink-py "读取 setup.cfg,说说依赖"           any prompt
    ink-py --base-url http://127.0.0.1:11434/v1 --model qwen3:8b     a real endpoint
    ink-py --scenario interleaved            one of the article's cases, scripted
    ink-py --api anthropic-messages          the same task in another wire dialect (also openai-responses)

``main`` parses the flags, ``resolve_endpoint`` picks the endpoint (with none configured,
the built-in scripted model starts on 127.0.0.1 and is reached over real HTTP through the
same provider code), and ``run_agent`` creates the provider and the read tool and hands
them to ``runner.run_prompt``. Exit codes: 0 completed, 1 error, 2 answer cut at the
output limit (as Ink), 3 stopped at max turns, 130 interrupted. Errors are one line. A setting
taken from the environment (``OPENAI_BASE_URL`` exported for another tool …) is named on the
run's first line and in any error about it, with the ``unset`` that brings the built-in model back.
"""

from __future__ import annotations

import argparse
import bdb
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

import requests

from . import __version__
from .arguments import COMMANDS, CliParser, UsageError, encodable_text, positive_int
from .atomic import ReplacedWhenClosed
from .core.loop import DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, MAX_CONCURRENT_TOOLS
from .core.tools.read import create_read_tool
from .core.tools.types import Tool
from .provider.anthropic_messages import AnthropicMessagesProvider
from .provider.base import HttpProvider
from .provider.errors import display_url, key_problem
from .provider.openai_completions import OpenAICompletionsProvider
from .provider.openai_responses import OpenAIResponsesProvider
from .provider.recording import recording
from .provider.types import LLMProvider, ProviderError
from .runner import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TRUNCATED, run_prompt
from .scripted.scenarios import SCENARIOS
from .terminal import one_line, paint, terminal_safe, wants_colour

if TYPE_CHECKING:
    from .scripted.server import ModelServer

# --api: the wire dialect → its provider, and the prefix of the variables its endpoint is read from.
APIS: dict[str, tuple[type[HttpProvider], str]] = {
    "openai-completions": (OpenAICompletionsProvider, "OPENAI"),
    "openai-responses": (OpenAIResponsesProvider, "OPENAI"),
    "anthropic-messages": (AnthropicMessagesProvider, "ANTHROPIC"),
}
DEFAULT_API = "openai-completions"

DEFAULT_PROMPT = "读取 README.md,告诉我项目怎样启动"
DELAY_NOTE = "                         (default 0.02, 0: none; a longer reply's pauses shrink to 75 of them)"
CHAT_HINT = "(ink-py answers one prompt and ends; `ink-py chat` keeps the conversation — send 继续 there)"
ABORT_NOTICE = (
    "(the abort scenario: the model stops mid tool call and stays silent, waiting for you — press Ctrl-C "
    "to abort the reply, as §4.2 does)"
)
SCRIPTED_MODEL = "ink-scripted"
DEFAULT_SYSTEM = (
    "You are ink, a small coding agent. Answer the user's question about the project in the workspace. "
    "Use the read tool to read files (paths are relative to the workspace root) before you answer; "
    "quote commands exactly as the files show them."
)


def build_parser(prog: str = "ink-py", description: str = "", epilog: str = "", *, prompt: bool = True) -> CliParser:
    """``ink-py``'s flags; ``ink-py chat`` takes the same ones but no prompt (``prompt=False``)."""
    commands = "\n".join(f"  ink-py {name:<12} {help_text}" for name, (_, help_text) in COMMANDS.items())
    parser = CliParser(
        prog=prog,
        description=description
        or "Stream a model's reply (Chat Completions, Responses or Messages), assemble it, "
        "and let a tiny agent loop read files to answer.",
        epilog=epilog
        or f"commands:\n{commands}\n\nexit codes: 0 completed, 1 error, 2 answer truncated at the output "
        "limit, 3 stopped at max turns, 130 interrupted\n\nenvironment:\n"
        "  INK_API, INK_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY (ANTHROPIC_… for anthropic-messages)\n"
        "                         read when the flags are absent; each one used is named on the run's\n"
        "                         first line (`unset OPENAI_BASE_URL`: the built-in model again)\n"
        f"  INK_SCRIPTED_DELAY=S   the built-in model pauses S seconds between writes\n{DELAY_NOTE}\n"
        "  NO_COLOR               no colour",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if prompt:
        parser.add_argument(
            "prompt",
            nargs="?",
            type=encodable_text,
            default=DEFAULT_PROMPT,
            help=f"what to ask (default: {DEFAULT_PROMPT})",
        )
    parser.add_argument("-V", "--version", action="version", version=f"ink-py {__version__}")  # as python -V
    add_endpoint_arguments(parser.add_argument_group("endpoint (default: the built-in scripted model)"))
    run = parser.add_argument_group("the run")
    run.add_argument("--workspace", default=".", help="folder the read tool may read (default: current directory)")
    run.add_argument("--max-turns", type=positive_int, default=DEFAULT_MAX_TURNS, help="stop after this many replies")
    run.add_argument("--max-tokens", type=positive_int, default=DEFAULT_MAX_TOKENS, help="output limit per reply")
    run.add_argument("--system", type=encodable_text, default=DEFAULT_SYSTEM, help="the system prompt")
    run.add_argument("--trace", metavar="FILE", help="write every event as a JSON line to FILE")
    run.add_argument(
        "--record",
        metavar="DIR",
        help="save every request and raw response body to DIR (for ink-py demo --file; this checkout's git "
        "ignores rec/, so --record rec leaves git status clean)",
    )
    run.add_argument(
        "--display",
        choices=["ink", "filtered"],
        default="ink",
        help="ink: show tool arguments as they stream in; filtered: only say a call is being prepared",
    )
    run.add_argument(
        "--tool-choice",
        type=encodable_text,
        default="auto",
        metavar="auto|required|none|NAME",
        help="what the model is told about calling tools; NAME forces that tool on the first turn only, "
        "then auto (default: auto; see docs/dialects.md)",
    )
    run.add_argument(
        "--serial-tools", action="store_true", help="run tool calls one at a time (default: reads run side by side)"
    )
    return parser


def add_endpoint_arguments(group: argparse._ActionsContainer) -> None:
    """The flags ``resolve_endpoint`` reads; ``ink-py serve`` takes the same ones."""
    group.add_argument(
        "--api",
        type=encodable_text,
        default=os.environ.get("INK_API", DEFAULT_API),
        metavar="|".join(APIS),
        help=f"the wire dialect the endpoint speaks (env INK_API; default {DEFAULT_API})",
    )
    group.add_argument(
        "--base-url",
        type=encodable_text,
        default=None,
        help="e.g. https://api.openai.com/v1 (env OPENAI_BASE_URL; ANTHROPIC_BASE_URL for anthropic-messages)",
    )
    group.add_argument(
        "--api-key-file",
        metavar="FILE",
        help="read the key from FILE (its first line); like the environment variable, it stays out of the process list",
    )
    group.add_argument(
        "--api-key",
        default=None,
        metavar="KEY",
        help="the endpoint's key; other local users can see it in the process list (ps), so prefer the "
        "environment variable OPENAI_API_KEY (ANTHROPIC_API_KEY for anthropic-messages) or --api-key-file",
    )
    group.add_argument(
        "--model",
        type=encodable_text,
        default=os.environ.get("INK_MODEL"),
        help="model name (env INK_MODEL); the built-in model is always ink-scripted",
    )
    group.add_argument(
        "--scenario", choices=sorted(SCENARIOS) + ["slow"], help="an article case, on the built-in model"
    )


def api_key_from(args: argparse.Namespace, env: str) -> str | None:
    """The key: ``--api-key``, else ``--api-key-file``, else ``<env>_API_KEY`` (beyond Ink: the file).

    Beyond Ink: surrounding whitespace (a key file saved with CRLF, ``"$(cat key.txt)"``) is
    stripped; a key that still holds what no HTTP header can carry is refused in one line
    that names where it came from, never the key (requests' own refusal would quote it).
    """
    if args.api_key:
        return checked_key(str(args.api_key), "--api-key")
    path = getattr(args, "api_key_file", None)
    if path:
        try:
            with open(path, encoding="utf-8") as file:
                key = file.readline(4096).strip()
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"--api-key-file {path}: {getattr(err, 'strerror', None) or err}") from None
        if not key:
            raise UsageError(f"--api-key-file {path}: the file is empty")
        return checked_key(key, f"--api-key-file {path}")
    value = os.environ.get(f"{env}_API_KEY", "")
    return checked_key(value, f"{env}_API_KEY") if value.strip() else None  # blank: as if unset


def checked_key(key: str, source: str) -> str:
    """``key`` stripped, or UsageError naming ``source`` and what is wrong (never the key).

    >>> checked_key(" sk-abc\\r\\n", "OPENAI_API_KEY")
    'sk-abc'
    """
    key = key.strip()
    if not key:
        raise UsageError(f"{source}: the key is blank")
    problem = key_problem(key)
    if problem:
        raise UsageError(f"{source}: the key {problem}, which no HTTP header can carry — check where it comes from")
    return key


def main(argv: list[str] | None = None) -> int:
    args: argparse.Namespace | None = None
    try:  # parsing too: a Ctrl-C at any point is "interrupted", never a traceback
        args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
        if not args.prompt.strip():
            print_error("the prompt is empty: ask a question (or leave the prompt out for the README task)")
            return EXIT_ERROR
        code = run_agent(args)
    except KeyboardInterrupt:  # a second Ctrl-C, or one outside the stream
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        raise  # whoever read our output has gone (`| head`): __main__ ends quietly, as Unix tools do
    except (ProviderError, requests.RequestException) as err:
        print_error(one_line(str(err)) + environment_hint(args))  # one line, whatever a server wrote
        return EXIT_ERROR
    except (UsageError, OSError) as err:
        print_error(one_line(str(err)))
        return EXIT_ERROR
    except Exception as err:  # a bug in ink_py, not the user's mistake: still one line, unless debugging
        if os.environ.get("INK_DEBUG") or isinstance(err, bdb.BdbQuit):  # BdbQuit: `q` in pdb
            raise
        print_error(f"internal error ({type(err).__name__}: {err}); INK_DEBUG=1 shows the traceback")
        return EXIT_ERROR
    if code == EXIT_TRUNCATED:  # §4.4's advice needs a conversation to follow it in
        print(CHAT_HINT, file=sys.stderr)
    return code


def print_error(message: str) -> None:
    """The one ``error: …`` line, red on a terminal (like the other error lines)."""
    print(paint(f"error: {terminal_safe(message)}", "31", wants_colour(sys.stderr)), file=sys.stderr)  # beyond Ink


def check_base_url(url: str, variable: str | None = None) -> str:
    """A base URL must say http:// or https:// — refused at once, not retried three times.
    ``variable``: the environment variable it came from, named in the refusal.

    >>> check_base_url("http://127.0.0.1:11434/v1")
    'http://127.0.0.1:11434/v1'
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        example = "http://" + url.split("://", 1)[-1].lstrip("/")
        where = f"{variable}={url} (from the environment)" if variable else f"--base-url {url}"
        fix = f"; or `unset {variable}` to use the built-in scripted model" if variable else ""
        raise UsageError(f"{where}: give the whole URL, with http:// or https:// (e.g. {example}){fix}")
    problem = url_problem(url)
    if problem:  # beyond Ink: a URL that can never work is refused at once, not retried three times
        shown = display_url(url)
        raise UsageError(
            f"{f'{variable}={shown} (from the environment)' if variable else f'--base-url {shown}'}: {problem}"
        )
    return url


def url_problem(url: str) -> str:
    """What makes an http(s) URL one that can never be reached ("" if nothing does).

    >>> url_problem("http://127.0.0.1:99999/v1"), url_problem("http://exa mple.com/v1")
    ('the port must be a number from 1 to 65535', 'the host name "exa mple.com" holds a character no host name has')
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return "the port must be a number from 1 to 65535"
    if port == 0:
        return "the port must be a number from 1 to 65535"
    host = parts.hostname or ""
    if not host:
        return "the URL names no host"
    if not host.startswith("[") and any(c.isspace() or not c.isprintable() or c in '<>\\^`{|}"' for c in host):
        return f'the host name "{terminal_safe(host)}" holds a character no host name has'
    return ""


def environment_base_url(args: argparse.Namespace) -> str | None:
    """The variable the base URL comes from (``OPENAI_BASE_URL`` …), when no ``--base-url`` was given."""
    if args.base_url or args.api not in APIS:
        return None
    variable = f"{APIS[args.api][1]}_BASE_URL"
    return variable if os.environ.get(variable) else None


def environment_hint(args: argparse.Namespace | None) -> str:
    """For an error about an endpoint the environment chose: which variable, and how to undo it."""
    variable = environment_base_url(args) if args is not None else None
    if variable is None:
        return ""
    return f" ({variable} is set in the environment; `unset {variable}` to use the built-in scripted model)"


def from_environment(args: argparse.Namespace, built_in: bool) -> list[str]:
    """The endpoint settings this run takes from the environment, as ``NAME=value`` (a key: its name only).

    Beyond Ink: a variable exported for another tool silently changes what ``ink-py`` talks to,
    so the run's first line names each one (``endpoint_notes``).
    """
    env = APIS[args.api][1]
    found = []
    if os.environ.get("INK_API") and args.api == encodable_text(os.environ["INK_API"]):
        found.append(f"INK_API={args.api}")
    variable = environment_base_url(args)
    if variable and not built_in:
        found.append(f"{variable}={display_url(os.environ[variable])}")
    if os.environ.get("INK_MODEL") and args.model == encodable_text(os.environ["INK_MODEL"]):
        found.append(
            f"INK_MODEL={args.model}" + (f", ignored: the built-in model is {SCRIPTED_MODEL}" if built_in else "")
        )
    explicit_key = args.api_key or getattr(args, "api_key_file", None)
    if not built_in and not explicit_key and os.environ.get(f"{env}_API_KEY"):
        found.append(f"{env}_API_KEY")
    return found


def resolve_endpoint(args: argparse.Namespace) -> tuple[str, str, str | None, ModelServer | None]:
    """Where requests go: ``(base_url, model, api_key, built_in_server)``.

    The configured endpoint (flags, then OPENAI_BASE_URL / INK_MODEL / OPENAI_API_KEY, or
    ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY with ``--api anthropic-messages``), or
    the built-in scripted model, started here on 127.0.0.1 (the caller closes it; it needs no
    key and always answers as ``ink-scripted``). Shared by ``ink-py``, ``chat`` and ``serve``;
    a refusal names the environment variable a setting came from.
    """
    if not Path(args.workspace).is_dir():
        raise UsageError(f"--workspace {args.workspace}: not a folder")
    if args.api not in APIS:
        if args.api == os.environ.get("INK_API"):
            raise UsageError(
                f"INK_API={args.api} (from the environment): choose one of {', '.join(APIS)}, "
                f"or `unset INK_API` for {DEFAULT_API}"
            )
        raise UsageError(f"--api {args.api}: choose one of {', '.join(APIS)}")
    env = APIS[args.api][1]  # OPENAI_… or ANTHROPIC_…
    api_key = api_key_from(args, env)
    variable = environment_base_url(args)
    base_url = args.base_url or (os.environ[variable] if variable else None)
    shown = f"{variable}={display_url(base_url or '')} (from the environment)"
    unset = f"`unset {variable}` to use the built-in scripted model"
    if base_url and args.scenario:
        if variable:
            raise UsageError(f"--scenario only applies to the built-in model, and {shown} points elsewhere: {unset}")
        raise UsageError(f"--scenario only applies to the built-in model; leave out --base-url (and {env}_BASE_URL)")
    if base_url and not args.model:
        if variable:
            raise UsageError(f"{shown} points ink-py at that endpoint, which needs a model: --model NAME "
                             f"(or set INK_MODEL); or {unset}")  # fmt: skip
        raise UsageError("name the model to use: --model NAME (or set INK_MODEL)")
    if base_url:
        return check_base_url(base_url, variable), args.model, api_key, None
    from .scripted.server import delay_setting, start_model_server  # only without a real endpoint

    server = start_model_server(scenario=args.scenario or "readme", delay=delay_setting())
    return server.base_url, SCRIPTED_MODEL, None, server  # it needs no key: none is sent to it


def endpoint_notes(args: argparse.Namespace, base_url: str, server: ModelServer | None) -> list[str]:
    """The run's first lines on stderr: the settings taken from the environment, then the built-in model.

    >>> args = argparse.Namespace(api=DEFAULT_API, base_url=None, model=None, api_key=None)
    >>> endpoint_notes(args, "http://127.0.0.1:8765/v1", None) if "INK_API" not in os.environ else []
    []
    """
    notes = []
    settings = from_environment(args, built_in=server is not None)
    if settings:
        variable = environment_base_url(args) if server is None else None
        back = f"; `unset {variable}` to use the built-in scripted model" if variable else ""
        notes.append(f"(from the environment: {' · '.join(settings)}{back})")
    if server is not None:
        notes.append(f"(no --base-url: a built-in scripted model at {base_url} is answering — no network, no key)")
        if args.model and args.model != os.environ.get("INK_MODEL"):
            notes.append(f"(--model {args.model} is ignored: the built-in model answers as {SCRIPTED_MODEL})")
    return [terminal_safe(note) for note in notes]


def run_agent(args: argparse.Namespace) -> int:
    tools = [create_read_tool(args.workspace)]
    check_tool_choice(args.tool_choice, [tool["name"] for tool in tools])
    provider, model, server = open_endpoint(args)
    trace = open_trace(args.trace)
    try:
        return prompt_runner(args, provider, model, tools, trace)(prompt=args.prompt)
    finally:
        if trace is not None:
            trace.close()
        if server is not None:
            server.close()


def prompt_runner(
    args: argparse.Namespace, provider: LLMProvider, model: str, tools: list[Tool], trace: IO[str] | None
) -> Callable[..., int]:
    """``run_prompt`` with the command line's settings filled in; the caller adds ``prompt=`` (and ``history=``)."""
    return functools.partial(
        run_prompt,
        provider=provider,
        model=model,
        system=args.system,
        tools=tools,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        max_concurrent=1 if args.serial_tools else MAX_CONCURRENT_TOOLS,
        display=args.display,
        trace=trace,
        tool_choice=args.tool_choice,
    )


def open_endpoint(args: argparse.Namespace) -> tuple[LLMProvider, str, ModelServer | None]:
    """``resolve_endpoint``, said on stderr, and the provider for it: ``(provider, model, built_in_server)``."""
    base_url, model, api_key, server = resolve_endpoint(args)
    for note in endpoint_notes(args, base_url, server):
        print(note, file=sys.stderr)
    if server is not None and args.scenario == "abort":  # §4.2: the model goes silent, and only the user can end it
        print(ABORT_NOTICE, file=sys.stderr, flush=True)
    return create_provider(args.api, base_url, api_key, record_dir=args.record), model, server


def check_tool_choice(choice: str, names: list[str]) -> None:
    if choice not in ("auto", "required", "none", *names):
        raise UsageError(f"--tool-choice {choice}: not auto, required, none or a tool's name ({', '.join(names)})")


def create_provider(api: str, base_url: str, api_key: str | None, record_dir: str | None = None) -> LLMProvider:
    """The provider that speaks ``api`` (``--api``); with ``--record DIR``, its recording twin."""
    provider_class = APIS[api][0]
    if record_dir:
        return recording(provider_class)(base_url, api_key, record_dir=record_dir)  # type: ignore[call-arg]
    return provider_class(base_url, api_key)


def open_trace(path: str | None) -> IO[str] | None:
    """A new trace file is written in place (``tail -f`` works); an existing one is written
    beside and renamed over it at the end (beyond Ink), so a failed run never destroys it."""
    if path is None:
        return None
    try:
        if Path(path).parts[:2] in (("/", "dev"), ("/", "proc")):  # /dev/stderr: a stream, maybe a log file
            return open(path, "a", encoding="utf-8")  # appended to, never truncated or renamed over
        if Path(path).is_file():
            return ReplacedWhenClosed(path)
        return open(path, "w", encoding="utf-8")  # a new file, a FIFO: nothing to keep
    except OSError as err:
        raise UsageError(f"--trace {path}: {err.strerror or err}") from None
