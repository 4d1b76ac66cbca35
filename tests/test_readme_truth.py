"""The READMEs are true: every flag they show exists on its command, and their sample output
is what the program prints now (issue 22, items 3 and 9). The same holds for the docs/ pages the
READMEs' details moved to when they were cut to a reader's length (issue 18, item 7): ``DOCS``.

Flags: each ``ink-py …`` command line (``sh`` blocks, inline code, the usage block; a
comment's ``--flag`` too, as in ``# add --base-url URL``) names its command, and every
``--flag`` on it must appear in that command's ``--help`` (run as a user runs it). A flag
written alone (`` `--serial-tools` ``, the flags table) belongs to the section it is in: the
section's first ``ink-py`` command shown as one (in a block, or with flags) says which
(none: ``ink-py``'s own, unless the section shows only other programs). Samples: the ``text`` blocks that begin like
``ink-py``'s and ``ink-py chat``'s output are compared with a real run on the built-in model
in this checkout (a line ``…`` stands for lines left out; the port is any port): ``ink-py``'s in
both READMEs, ``ink-py chat``'s in docs/usage.md.
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from .helpers import ROOT, cli_env

READMES = {"en": ROOT / "README.md", "zh": ROOT / "README.zh-CN.md"}
DOCS = {name: ROOT / "docs" / f"{name}.md" for name in ("usage", "dialects", "second-article")}
COMMAND_WORDS = ("ink-py", "python", "pip", "pytest", "curl", "printf", "export", ".ci/")
NOT_INK_PY = {"--impl"}  # pytest's option (ink_py/course/impl_option.py), named in the exercises section
_HEADING = re.compile(r"^#{2,3} ", re.MULTILINE)
_FENCE = re.compile(r"^(`{3,})(\w*)\n(.*?)^\1$", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_SEPARATORS = {"&&", "||", "|", ";", "&"}
_PORT = re.compile(r"127\.0\.0\.1:\d+")


# ── flags ───────────────────────────────────────────────────────────────────────────────


def command_lines(section: str) -> list[tuple[str, bool]]:
    """The command lines a section shows, in order, each with whether it is in a code block."""
    found: list[tuple[int, int, str, bool]] = []
    for fence in _FENCE.finditer(section):
        if fence.group(2) in ("sh", "text", ""):
            found += [(fence.start(), n, line, True) for n, line in enumerate(fence.group(3).splitlines())]
    outside = _FENCE.sub(lambda m: " " * len(m.group(0)), section)
    found += [(m.start(), 0, m.group(1), False) for m in _INLINE.finditer(outside)]
    return [(line.strip(), block) for _, _, line, block in sorted(found) if line.strip().startswith(COMMAND_WORDS)]


def ink_py_commands(line: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """``(command path, flags)`` for each ``ink-py …`` in ``line`` (``ink-py a && ink-py demo …``: two)."""
    code, _, comment = line.partition(" #")
    try:
        words = shlex.split(code.replace("\\|", "|"))
    except ValueError:  # an unbalanced quote in a shortened example: split on spaces
        words = code.split()
    words = [word.strip("[]") for word in words]  # a usage line's [--port N]
    commands: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(word)
    if comment:
        commands[-1] += _FLAG.findall(comment)  # "# add --base-url URL --model NAME": flags it promises
    found = []
    for command in commands:
        if not command or command[0] != "ink-py":
            continue
        path = command_path(command[1:])
        found.append((path, [w.split("=")[0] for w in command if _FLAG.fullmatch(w.split("=")[0])]))
    return found


def command_path(words: list[str]) -> tuple[str, ...]:
    from ink_py.arguments import COMMANDS

    if not words or words[0] not in COMMANDS:
        return ()
    if words[0] == "exercise" and len(words) > 1 and not words[1].startswith("-"):
        return ("exercise", words[1])
    return (words[0],)


def promised_flags(text: str) -> set[tuple[tuple[str, ...], str]]:
    """Every ``(command path, --flag)`` a README shows."""
    promised = set()
    for section in _HEADING.split(text):
        lines = command_lines(section)
        subject: tuple[str, ...] | None = ()  # a section with no command is about ink-py itself
        shown = []  # the section's ink-py commands shown as commands: in a block, or with flags
        for line, in_block in lines:
            for path, flags in ink_py_commands(line):
                promised |= {(path, flag) for flag in flags}
                if in_block or flags:
                    shown.append(path)
        if shown:
            subject = shown[0][:1]  # the first one's (`exercise list` first: the section is exercise's)
        elif lines and not any(line.startswith("ink-py") for line, _ in lines):
            subject = None  # only another program's commands (benchmarks/run.py --quick): not our flags
        if subject is None:
            continue
        outside = _FENCE.sub("", section)
        spans = [s for s in _INLINE.findall(outside) if s.startswith("--")]
        promised |= {(subject, _FLAG.match(span).group(0)) for span in spans if _FLAG.match(span)}  # type: ignore[union-attr]
    return {(path, flag) for path, flag in promised if flag not in NOT_INK_PY}


@functools.cache
def help_text(path: tuple[str, ...]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ink_py", *path, "--help"], env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def accepted_flags(path: tuple[str, ...]) -> set[str]:
    text = help_text(path)
    if path and path[0] == "exercise" and len(path) == 1:  # `exercise` alone: any of its subcommands' flags
        for name in re.findall(r"^\s{4}(\w+)\s", text, re.MULTILINE):
            text += help_text(("exercise", name))
    return set(_FLAG.findall(text))


@pytest.mark.parametrize("readme", [*READMES, *DOCS])
def test_every_flag_a_readme_shows_exists_on_its_command(readme: str) -> None:
    promised = promised_flags({**READMES, **DOCS}[readme].read_text(encoding="utf-8"))
    if readme in READMES:
        assert ((), "--tool-choice") in promised and (("serve",), "--serial-tools") in promised  # the issue's own
    missing = sorted(
        f"ink-py {' '.join(path)} {flag}".replace("  ", " ")
        for path, flag in promised
        if flag not in accepted_flags(path)
    )
    assert missing == [], f"{readme} README shows flags its commands do not take: {missing}"


def test_the_flag_check_finds_a_flag_that_does_not_exist() -> None:
    text = "## Serve\n\n```sh\nink-py serve --port 0\n```\n\n`--no-such-flag` does nothing.\n"
    promised = promised_flags(text)
    assert promised == {(("serve",), "--port"), (("serve",), "--no-such-flag")}
    assert "--no-such-flag" not in accepted_flags(("serve",))


# ── sample output ───────────────────────────────────────────────────────────────────────

CHAT_INPUT = "项目怎样启动?\n继续\n它的第一条命令是什么?\n"
SAMPLES = {  # how a sample begins → the run it shows
    "(no --base-url: a built-in scripted model": ([], None),
    "› 项目怎样启动?": (["chat", "--scenario", "length-text"], CHAT_INPUT),
}
SHOWN_IN = [  # (page, how its sample begins)
    ("en", "(no --base-url: a built-in scripted model"),
    ("zh", "(no --base-url: a built-in scripted model"),
    ("usage", "› 项目怎样启动?"),
]


def samples(text: str) -> dict[str, list[str]]:
    found = {}
    for fence in _FENCE.finditer(text):
        lines = fence.group(3).splitlines()
        for start in SAMPLES:
            if fence.group(2) == "text" and lines and lines[0].startswith(start):
                found[start] = lines
    return found


@functools.cache
def shown(start: str) -> list[str]:
    """What the run a sample shows prints, stdout and stderr together as a terminal shows them."""
    args, stdin = SAMPLES[start]
    done = subprocess.run(
        [sys.executable, "-m", "ink_py", *args],
        cwd=ROOT,
        env=cli_env(INK_SCRIPTED_DELAY="0", NO_COLOR="1"),
        input=stdin or "",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    assert done.returncode in (0, 2), done.stdout
    return _PORT.sub("127.0.0.1:PORT", done.stdout).splitlines()


def sample_mismatch(sample: list[str], actual: list[str]) -> str:
    """ "" when each run of sample lines (between lines that are only ``…``) appears whole, in order."""
    runs: list[list[str]] = [[]]
    for line in sample:
        if line == "…":
            runs.append([])
        else:
            runs[-1].append(_PORT.sub("127.0.0.1:PORT", line))
    at = 0
    for run in filter(None, runs):
        width = len(run)
        match = next((i for i in range(at, len(actual) - width + 1) if actual[i : i + width] == run), None)
        if match is None:
            nearest = next((line for line in run if line not in actual), run[0])
            return f"the sample's line {nearest!r} is not what the program prints now"
        at = match + width
    return ""


@pytest.mark.parametrize("readme, start", SHOWN_IN, ids=["en-ink-py", "zh-ink-py", "usage-chat"])
def test_the_sample_output_is_what_the_program_prints(readme: str, start: str) -> None:
    sample = samples({**READMES, **DOCS}[readme].read_text(encoding="utf-8")).get(start)
    assert sample is not None, f"the {readme} page has no sample beginning {start!r}"
    problem = sample_mismatch(sample, shown(start))
    assert problem == "", f"{readme}: {problem}; the program prints:\n" + "\n".join(shown(start))


def test_a_stale_sample_is_found() -> None:
    actual = ["a", "← read ok · 26.7 KB", "b", "c"]
    assert sample_mismatch(["a", "← read ok · 26.7 KB", "…", "c"], actual) == ""
    assert "15.1 KB" in sample_mismatch(["a", "← read ok · 15.1 KB", "…", "c"], actual)


# ── what the README's commands leave in a checkout ──────────────────────────────────────


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to ask what `git status` shows")
def test_the_readmes_commands_leave_nothing_git_status_shows(tmp_path):
    """``ink-py --record rec``, ``ink-py exercise start 1`` and ``ink-py exercise report``, run in a
    checkout (a fresh repository with this one's .gitignore), as the README shows them."""
    (tmp_path / ".gitignore").write_bytes((ROOT / ".gitignore").read_bytes())
    (tmp_path / "README.md").write_text("# Demo\n\n```sh\nmake run\n```\n", encoding="utf-8")
    git = ["git", "-c", "user.email=test@example.com", "-c", "user.name=test"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a checkout"]):
        subprocess.run([*git, *step], cwd=tmp_path, check=True, capture_output=True)
    for command in (["--record", "rec"], ["exercise", "start", "1"], ["exercise", "report"]):
        done = subprocess.run(
            [sys.executable, "-m", "ink_py", *command],
            cwd=tmp_path,
            env=cli_env(INK_SCRIPTED_DELAY="0"),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "rec" / "001-response.sse").exists() and (tmp_path / "exercise-report.xml").exists()
    status = subprocess.run([*git, "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True)
    assert status.stdout == ""


# ── the client tables: what docs/usage.md and docs/dialects.md say is what the client matrix runs ──


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the first table under ``heading`` (header and rule left out)."""
    section = text.split(heading, 1)[1]
    lines = [line for line in section.split("\n\n")[1:] if line.startswith("| ")][0].splitlines()
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[2:]]


def test_usage_says_how_each_client_reaches_the_built_in_model_as_the_client_matrix_does() -> None:
    """Every row of usage.md's table is a (client, dialect) tests/test_client_matrix.py runs, with the
    base URL and model name its driver gives that client (the port shown: 8765)."""
    from .clients.common import CONNECTIONS, ROOT_SHOWN

    rows = table_rows(DOCS["usage"].read_text(encoding="utf-8"), "## Use the built-in model from your own client")
    shown = {(client, dialect): (how, url, model) for client, dialect, how, url, model in rows}
    assert shown == {
        (client, DIALECT_NAMES[dialect]): (how, f"`{url.format(root=ROOT_SHOWN)}`", f"`{model}`")
        for (client, dialect), (how, url, model) in CONNECTIONS.items()
    }
    assert "ink-py serve-model --port 8765" in DOCS["usage"].read_text(encoding="utf-8")  # the port shown


def test_usage_names_each_responses_clients_switch_for_previous_response_id() -> None:
    """The second table under the same heading: one row for every Responses client the matrix runs chained."""
    from .clients.common import CONNECTIONS

    section = DOCS["usage"].read_text(encoding="utf-8").split("## Use the built-in model from your own client")[1]
    table = section.split("| client | its second turn by `previous_response_id` |")[1].split("\n\n")[0]
    named = {client for line in table.splitlines()[2:] for client in line.split(" | ")[0].strip("| ").split(", ")}
    assert named == {client for client, dialect in CONNECTIONS if dialect == "openai-responses"}


def test_dialects_shows_what_each_client_did_with_the_two_faults_as_the_matrix_found() -> None:
    from .test_client_matrix import REPORTED

    rows = table_rows(DOCS["dialects"].read_text(encoding="utf-8"), "### What real clients do with the two faults")
    assert {(c, d): (mf, ij) for c, d, mf, ij in rows} == {
        (client, DIALECT_NAMES[dialect]): said for (client, dialect), said in REPORTED.items()
    }


DIALECT_NAMES = {
    "openai-completions": "Chat Completions",
    "anthropic-messages": "Messages",
    "openai-responses": "Responses",
}
