"""``ink-py chat``: a conversation in the terminal — §4.4's "用户可以再发一条消息继续", made possible.

Not a command in the article, but Ink's loop already keeps ``history``; this module keeps
it across prompts. Each line you type is one user message, run by ``runner.run_prompt``
on the same history: the reply streams, tool lines and the per-turn summary as in
``ink-py``. Ctrl-C during a reply aborts that reply — the loop never appends a partial
message (§4.2) — and the prompt comes back; Ctrl-C or Ctrl-D at an empty prompt ends the
session (exit 0). Commands: ``/new`` ``/save FILE`` ``/history`` ``/help`` ``/quit``;
``--resume FILE`` loads a saved history: JSON lines, one of the article's message dicts
each (``load_history`` reads them back in Python, checking every record's whole shape). With
stdin not a terminal, each line is one message: ``printf 'q1\\nq2\\n' | ink-py chat`` runs two
turns and exits. Beyond Ink: no failed turn ends the session (the history stays, to /save).

    >>> parse_command("/save notes.jsonl"), parse_command("读取 README.md")
    (('save', 'notes.jsonl'), None)
"""

from __future__ import annotations

import argparse
import bdb
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import requests

from .arguments import UsageError, encodable_text
from .atomic import write_text_atomically
from .cli import (
    build_parser,
    check_tool_choice,
    environment_hint,
    open_endpoint,
    open_trace,
    print_error,
    prompt_runner,
)
from .core.messages import AgentMessage, AssistantBlock
from .core.tools.read import create_read_tool
from .provider.shared import MAX_ARGUMENT_DEPTH, nesting_depth
from .provider.types import ProviderError
from .runner import EXIT_COMPLETED, EXIT_ERROR, EXIT_INTERRUPTED
from .terminal import fit_width, human_size, one_line, shorten, show_newlines, terminal_columns

PROMPT = "› "
MAX_HISTORY_BYTES = 20 * 1024 * 1024  # a --resume file larger than this is refused, not read
ROLES = {"user": "content", "assistant": "blocks", "toolResult": "results"}  # each role's required field
STOP_REASONS = ("tool_use", "end_turn", "max_tokens", None)
USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens")
BLOCK_FIELDS = {"text": ("text",), "thinking": ("thinking",), "toolCall": ("id", "name")}  # each a string
RESULT_FIELDS = ("toolCallId", "toolName", "content")  # strings; and isError, a bool
HELP = """commands:
  /new          start a new conversation (empty history)
  /save FILE    save the history as JSON lines (ink-py chat --resume FILE loads it)
  /history      the history, one line per message
  /help         this list
  /quit         end the session (so do Ctrl-D and Ctrl-C at an empty prompt)
Ctrl-C during a reply aborts that reply: nothing of it enters the history."""
_COMMAND = re.compile(r"/([A-Za-z]+)(?:\s+(.*))?")  # "/save a.jsonl"; "/etc/passwd 是什么" is a message


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser(
        prog="ink-py chat",
        description="Talk to the agent: one message per line, the history kept across turns.",
        epilog=HELP + "\n\nexit code: 0 when the session ends; with stdin not a terminal, the last turn's code",
        prompt=False,
    )
    parser.add_argument("--resume", metavar="FILE", help="start from a history saved with /save")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    tools = [create_read_tool(args.workspace)]
    try:
        check_tool_choice(args.tool_choice, [tool["name"] for tool in tools])
        history = load_history(args.resume) if args.resume else []
        provider, model, server = open_endpoint(args)
    except (UsageError, ProviderError, OSError) as err:
        print_error(str(err))
        return EXIT_ERROR
    trace = None
    try:
        trace = open_trace(args.trace)  # one trace for the whole session: every turn's events and run_end

        run = prompt_runner(args, provider, model, tools, trace)

        def turn(message: str) -> int:
            return run(prompt=message, history=history)

        hint = environment_hint(args)

        interactive = sys.stdin.isatty()
        if interactive:
            use_readline()
            resumed = f"{len(history)} messages from {args.resume}; " if args.resume else ""
            print(f"(ink-py chat: {resumed}type a message · /help · Ctrl-D ends)", file=sys.stderr)
        lines = terminal_lines() if interactive else piped_lines(sys.stdin, sys.stderr)
        return run_session(lines, turn, history, sys.stderr, keep_last_code=not interactive, hint=hint)
    except UsageError as err:
        print_error(str(err))
        return EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C pressed twice during a reply: quit at once
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if trace is not None:
            trace.close()
        if server is not None:
            server.close()


# ── the session ─────────────────────────────────────────────────────────────────────────


def run_session(
    lines: Iterator[str],
    turn: Callable[[str], int],
    history: list[AgentMessage],
    err: IO[str],
    keep_last_code: bool = False,
    hint: str = "",
) -> int:
    """Each line a message (``turn`` runs it on ``history``) or a command; ends with the lines.
    ``hint`` follows a failed turn's error (cli.environment_hint)."""
    code = EXIT_COMPLETED
    for line in lines:
        line = line.strip()
        if not line:
            continue
        command = parse_command(line)
        if command is None:
            code = run_turn(turn, line, err, hint)
            continue
        name, argument = command
        if name in ("quit", "exit"):
            break
        if name == "help":
            print(HELP, file=err)
        elif name == "new":
            history.clear()
            print("(a new conversation: the history is empty)", file=err)
        elif name == "history":
            print("\n".join(history_lines(history, terminal_columns(err))) or "(the history is empty)", file=err)
        elif name == "save":
            save_command(argument, history, err)
        else:
            print(f"unknown command /{name} — /help lists the commands", file=err)
    return code if keep_last_code else EXIT_COMPLETED


def run_turn(turn: Callable[[str], int], message: str, err: IO[str], hint: str = "") -> int:
    """One message through the loop; a failed reply is one error line, and the session goes on.

    Beyond Ink: even a bug (an exception nobody expected) costs only this turn — the history
    so far, which may not be saved yet, stays for the next message and for /save.
    """
    try:
        return turn(message)
    except BrokenPipeError:
        raise  # the reader of our output has gone: __main__ ends quietly
    except (ProviderError, requests.RequestException, OSError) as problem:
        print_error(one_line(str(problem)) + hint)
        return EXIT_ERROR
    except Exception as problem:
        if os.environ.get("INK_DEBUG") or isinstance(problem, bdb.BdbQuit):
            raise
        print_error(
            f"internal error ({type(problem).__name__}: {one_line(str(problem))}); the conversation is kept "
            "(/save FILE keeps it on disk); INK_DEBUG=1 shows the traceback"
        )
        return EXIT_ERROR


def parse_command(line: str) -> tuple[str, str] | None:
    """``("save", "a.jsonl")`` for ``/save a.jsonl``; None for a message."""
    match = _COMMAND.fullmatch(line.strip())
    return (match.group(1).lower(), (match.group(2) or "").strip()) if match else None


def save_command(path: str, history: list[AgentMessage], err: IO[str]) -> None:
    if not path:
        print("usage: /save FILE", file=err)
        return
    try:
        save_history(path, history)
    except OSError as problem:
        print_error(f"/save {path}: {problem.strerror or problem}")
        return
    print(f"(saved {len(history)} messages to {path}; ink-py chat --resume {path} continues from there)", file=err)


# ── input: the terminal (with readline) or a pipe ───────────────────────────────────────


def use_readline() -> None:
    """Line editing and ↑ for earlier lines, where the stdlib has readline (not on Windows)."""
    try:
        import readline  # noqa: F401  (importing it is what makes input() use it)
    except ImportError:
        pass


def terminal_lines() -> Iterator[str]:
    """Lines typed at the prompt. Ctrl-D, or Ctrl-C on an empty line, ends; Ctrl-C on text clears it."""
    while True:
        try:
            yield input(PROMPT)
        except EOFError:
            print(file=sys.stderr)
            return
        except KeyboardInterrupt:
            if not typed_text():
                print(file=sys.stderr)
                return
            print(file=sys.stderr)  # the line is dropped: a fresh prompt, as a shell does


def typed_text() -> str:
    """What was typed before Ctrl-C (readline keeps it); "" without readline."""
    readline = sys.modules.get("readline")
    return readline.get_line_buffer() if readline is not None else ""


def piped_lines(stdin: IO[str], err: IO[str]) -> Iterator[str]:
    """Each line of a pipe or file, echoed after the prompt so the transcript reads as a session."""
    for line in stdin:
        if line.strip():
            print(f"{PROMPT}{line.strip()}", file=err, flush=True)
        yield line


# ── the history on disk: JSON lines of the article's message dicts ──────────────────────


def save_history(path: str | os.PathLike[str], history: list[AgentMessage]) -> None:
    """One message dict per line, as the loop keeps them (``stopReason``, ``toolCallId`` …).

    Written whole or not at all (``atomic``): a failure never truncates the file that was
    there. A lone surrogate a model sent is saved as U+FFFD, as it was shown, so the file
    is UTF-8 that ``--resume`` takes back.
    """
    text = "".join(encodable_text(json.dumps(message, ensure_ascii=False)) + "\n" for message in history)
    write_text_atomically(path, text)


def load_history(path: str | os.PathLike[str]) -> list[AgentMessage]:
    """The messages ``save_history`` wrote; UsageError naming the line for anything else.

    Usable from Python too: ``run_agent_loop(..., history=load_history("chat.jsonl"))``.
    """
    try:
        if os.path.getsize(path) > MAX_HISTORY_BYTES:
            raise UsageError(f"--resume {path}: larger than {MAX_HISTORY_BYTES // 2**20} MB")
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as problem:
        reason = problem.strerror if isinstance(problem, OSError) else "not UTF-8 text"
        raise UsageError(f"--resume {path}: {reason or problem}") from None
    history: list[AgentMessage] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise UsageError(f"--resume {path}: line {number} is not JSON") from None
        wrong = message_problem(message)
        if wrong:
            raise UsageError(f"--resume {path}: line {number}: {wrong}")
        history.append(message)
    return history


def message_problem(message: Any) -> str:
    """Why ``message`` is not one of the article's three message shapes, whole ("" if it is one).

    Every field the loop, the three dialects' request builders and ``/history`` read is
    checked, so a loaded history can never fail later, turns into the session.

    >>> message_problem({"role": "user", "content": "hi"}), message_problem({"role": "system"})
    ('', 'role must be user, assistant or toolResult')
    """
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return "role must be user, assistant or toolResult"
    role = message["role"]
    field = message.get(ROLES[role])
    if role == "user":
        wrong = "" if isinstance(field, str) else "a user message needs a content string"
    elif not isinstance(field, list) or not all(isinstance(item, dict) for item in field):
        wrong = f"a {role} message needs a list of {ROLES[role]}"
    elif role == "assistant":
        wrong = assistant_problem(message)
    else:
        wrong = next((result_problem(result) for result in field if result_problem(result)), "")
    if not wrong:
        try:
            json.dumps(message, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            wrong = "its text has a lone surrogate (such as \\ud800), which no request can carry"
    return wrong


def assistant_problem(message: dict[str, Any]) -> str:
    usage = message.get("usage")
    if not isinstance(usage, dict) or not all(is_count(usage.get(key)) for key in USAGE_FIELDS):
        return f"an assistant message needs usage with {', '.join(USAGE_FIELDS)} (whole numbers)"
    if message.get("stopReason", None) not in STOP_REASONS:
        return f"an assistant message's stopReason must be one of {', '.join(map(str, STOP_REASONS))}"
    if "model" in message and not isinstance(message["model"], str):
        return "an assistant message's model must be a string"
    for block in message["blocks"]:
        strings = BLOCK_FIELDS.get(block.get("type"))
        if strings is None:
            return "an assistant block must be text, thinking or toolCall"
        if not all(isinstance(block.get(key), str) for key in strings):
            return f"a {block['type']} block needs {' and '.join(strings)} (strings)"
        if block["type"] == "thinking" and not all(
            isinstance(block.get(k, ""), str) for k in ("signature", "redacted")
        ):
            return "a thinking block's signature and redacted must be strings"
        if block["type"] == "toolCall" and "arguments" not in block:
            return "a toolCall block needs arguments"
        if block["type"] == "toolCall" and nesting_depth(block["arguments"]) > MAX_ARGUMENT_DEPTH:
            return f"a toolCall block's arguments are nested deeper than {MAX_ARGUMENT_DEPTH}"
    return ""


def result_problem(result: dict[str, Any]) -> str:
    if not all(isinstance(result.get(key), str) for key in RESULT_FIELDS) or not isinstance(
        result.get("isError"), bool
    ):
        return "a tool result needs toolCallId, toolName, content (strings) and isError (true or false)"
    return ""


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def history_lines(history: list[AgentMessage], columns: int | None = None) -> list[str]:
    """``/history``: one line per message — role, its blocks, tool results' sizes — each at most
    ``columns`` terminal cells wide (a wide character takes two)."""
    lines = []
    for number, message in enumerate(history, 1):
        if message["role"] == "user":
            parts = [quoted(message["content"])]
        elif message["role"] == "assistant":
            parts = [block_summary(block) for block in message["blocks"]]
            if message.get("stopReason") == "max_tokens":
                parts.append("(cut at the output limit)")
        else:
            parts = [
                f"{r['toolName']} {'error' if r['isError'] else 'ok'} · {human_size(r['content'])}"
                for r in message["results"]
            ]
        line = f"{number:>3} {message['role']:<10} " + " · ".join(parts or ["(empty)"])
        lines.append(line if columns is None else fit_width(line, columns))
    return lines


def block_summary(block: AssistantBlock) -> str:
    if block["type"] == "toolCall":
        return f"{block['name']} {shorten(show_newlines(json.dumps(block.get('arguments'), ensure_ascii=False)), 60)}"
    text = block["text"] if block["type"] == "text" else block["thinking"]
    return f"{block['type']} {len(text)} chars {quoted(text, 40)}"


def quoted(text: str, limit: int = 70) -> str:
    return "「" + shorten(show_newlines(text), limit) + "」"


if __name__ == "__main__":
    raise SystemExit(main())
