"""Settings a newcomer already has in the environment (issue 22, items 1 and 10): named, with the way back.

``OPENAI_BASE_URL`` exported for another tool turns the README's first command into a run
against that endpoint. Whatever ink-py takes from the environment (base URL, key, model,
dialect) is named on the run's first line and in any error about it, with the ``unset``
that brings the built-in model back; a model name the built-in model cannot be is said to
be ignored, and the summary names the model that answered. Run as a user runs it: a
subprocess, real HTTP.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.course.checks.helpers import text_reply

from .test_cli import ink_py

README = "# Demo project\n\n```sh\nmake run\n```\n"
UNREACHABLE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "env, args",
    [
        ({"OPENAI_BASE_URL": UNREACHABLE}, []),
        ({"ANTHROPIC_BASE_URL": UNREACHABLE}, ["--api", "anthropic-messages"]),
        ({"OPENAI_BASE_URL": UNREACHABLE, "INK_API": "openai-responses"}, []),
    ],
    ids=["openai", "anthropic", "responses-from-INK_API"],
)
def test_a_base_url_from_the_environment_without_a_model_names_the_variable(workspace, env, args):
    done = ink_py(*args, cwd=workspace, env_extra=env)
    variable = next(name for name in env if name.endswith("_BASE_URL"))
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr == (
        f"error: {variable}={UNREACHABLE} (from the environment) points ink-py at that endpoint, which needs a "
        f"model: --model NAME (or set INK_MODEL); or `unset {variable}` to use the built-in scripted model\n"
    )


def test_the_first_line_names_every_setting_taken_from_the_environment(workspace):
    with FakeModelServer([Reply(parts=[text_reply("hi")])]) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "INK_MODEL": "env-model", "OPENAI_API_KEY": "sk-ENV-SECRET"}
        done = ink_py("hello", cwd=workspace, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"(from the environment: OPENAI_BASE_URL={server.base_url} · INK_MODEL=env-model · OPENAI_API_KEY; "
        "`unset OPENAI_BASE_URL` to use the built-in scripted model)"
    )
    assert "sk-ENV-SECRET" not in done.stderr + done.stdout  # the key is named, never shown


def test_an_error_about_an_endpoint_from_the_environment_says_how_to_go_back(workspace):
    done = ink_py("hello", cwd=workspace, env_extra={"OPENAI_BASE_URL": UNREACHABLE, "INK_MODEL": "m"})
    assert done.returncode == 1
    error = done.stderr.splitlines()[-1]
    assert error.startswith(f"error: could not connect to {UNREACHABLE}/chat/completions")
    assert error.endswith(
        "(OPENAI_BASE_URL is set in the environment; `unset OPENAI_BASE_URL` to use the built-in scripted model)"
    )


@pytest.mark.parametrize(
    "env, args, words",
    [
        (
            {"OPENAI_BASE_URL": "127.0.0.1:8080/v1", "INK_MODEL": "m"},
            [],
            "error: OPENAI_BASE_URL=127.0.0.1:8080/v1 (from the environment): give the whole URL, with http:// or "
            "https:// (e.g. http://127.0.0.1:8080/v1); or `unset OPENAI_BASE_URL` to use the built-in scripted model",
        ),
        (
            {"OPENAI_BASE_URL": UNREACHABLE, "INK_MODEL": "m"},
            ["--scenario", "abort"],
            f"error: --scenario only applies to the built-in model, and OPENAI_BASE_URL={UNREACHABLE} (from the "
            "environment) points elsewhere: `unset OPENAI_BASE_URL` to use the built-in scripted model",
        ),
    ],
    ids=["no-scheme", "scenario"],
)
def test_a_refusal_caused_by_the_environment_names_it(workspace, env, args, words):
    done = ink_py(*args, cwd=workspace, env_extra=env)
    assert done.returncode == 1 and done.stderr == words + "\n"


def test_ink_api_from_the_environment_is_named_on_the_built_in_model(workspace):
    done = ink_py(cwd=workspace, env_extra={"INK_API": "anthropic-messages"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == "(from the environment: INK_API=anthropic-messages)"
    assert done.stderr.splitlines()[1].startswith("(no --base-url: a built-in scripted model at ")


@pytest.mark.parametrize(
    "env, args, notice",
    [
        (
            {"INK_MODEL": "gpt-4o"},
            [],
            "(from the environment: INK_MODEL=gpt-4o, ignored: the built-in model is ink-scripted)",
        ),
        ({}, ["--model", "gpt-4o"], "(--model gpt-4o is ignored: the built-in model answers as ink-scripted)"),
    ],
    ids=["INK_MODEL", "--model"],
)
def test_a_model_name_on_the_built_in_model_is_said_to_be_ignored(workspace, env, args, notice):
    done = ink_py(*args, cwd=workspace, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert notice in done.stderr.splitlines()[:3]
    assert done.stderr.splitlines()[-1].startswith("— ink-scripted · 2 turns")  # the model that answered


def test_ink_py_serve_names_the_variable_too(workspace):
    done = ink_py("serve", "--port", "0", cwd=workspace, env_extra={"OPENAI_BASE_URL": UNREACHABLE})
    assert done.returncode == 1 and done.stderr.startswith(f"error: OPENAI_BASE_URL={UNREACHABLE} (from the env")
    assert "`unset OPENAI_BASE_URL`" in done.stderr and done.stderr.count("\n") == 1


def test_nothing_from_the_environment_leaves_the_first_line_as_it_was(workspace):
    done = ink_py(cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0].startswith("(no --base-url: a built-in scripted model at http://127.0.0.1:")
