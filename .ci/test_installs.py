"""ink_py installed every way pip installs it, each used from an empty folder as a user would (issue 35 item 2).

The wheel and the sdist are built once (tests/builds.py: the hooks ``python -m build`` calls, no network
for the build). Then: a fresh venv with the wheel; a ``--user`` install (a private HOME and
PYTHONUSERBASE, in a venv that sees its base Python's packages, which ``--user`` needs); a ``--prefix``
install; an editable install of a fresh copy of the checkout. In each, from an empty folder: the demo
and a scenario on the built-in model read the fixtures that install carries, ``-V`` says the version,
and a missing extra is named the way that install takes it — in the fresh venv, that command is then
run as printed. (``--target`` is tests/test_packaging.py's: it needs no venv.) Each install is a venv
and a pip run from pip's cache: a minute in all, so it is a step of .ci/run, not of the README's command.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.builds: the sdist and the wheel as python -m build makes them

import ink_py  # noqa: E402
from tests.builds import Built, build, copy_project  # noqa: E402

NO_REDIS = "import sys; sys.modules['redis'] = None; from ink_py.__main__ import main; sys.exit(main(sys.argv[1:]))"
QUIET_PIP = ["-m", "pip", "--disable-pip-version-check", "install", "-q"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("build"))


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without the venv, the checkout on PYTHONPATH or an endpoint: a user's shell."""
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONUSERBASE", "INK_MODEL", "INK_API")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return {**env, "INK_SCRIPTED_DELAY": "0", **extra}


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def make_venv(home: Path, *, system_site_packages: bool = False) -> Path:
    venv.create(home, with_pip=True, system_site_packages=system_site_packages)
    return home / "bin" / "python"


def used_as_a_user(python: Path, ink_py_command: list[str], env: dict[str, str], tmp_path: Path, fixtures: Path,
                   hint: str) -> None:  # fmt: skip
    """From an empty folder: where the fixtures are read, the demo, a scenario, -V, the redis hint."""
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    where = run([str(python), "-c", "from ink_py.scripted.scenarios import fixtures_dir; print(fixtures_dir())"],
                empty, env)  # fmt: skip
    assert where.stdout.strip() == str(fixtures), where.stderr
    demo = run([*ink_py_command, "demo", "--no-pause"], empty, env)
    assert demo.returncode == 0 and "· fixtures/article/readme.sse" in demo.stdout.splitlines()[0], demo.stderr
    scenario = run([*ink_py_command, "--scenario", "interleaved"], empty, env)
    assert scenario.returncode == 0 and '↳ read #2 {"path":"pack' in scenario.stderr, scenario.stderr
    assert run([*ink_py_command, "-V"], empty, env).stdout == f"ink-py {ink_py.__version__}\n"
    refused = run([str(python), "-c", NO_REDIS, "serve", "--redis", "redis://127.0.0.1:9/0"], empty, env)
    assert refused.stderr == f"error: a Redis URL needs redis-py: {hint}\n"
    assert sorted(os.listdir(empty)) == []


def test_a_fresh_venv_with_the_wheel_and_the_extra_its_hint_names(built: Built, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    env = clean_env(PATH=f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    run([str(python), *QUIET_PIP, str(built.wheel)], tmp_path, env)
    site = Path(run([str(python), "-c", "import ink_py; print(ink_py.__file__)"], tmp_path, env).stdout.strip()).parent
    hint = "pip install 'ink_py[redis]'"
    used_as_a_user(python, ["ink-py"], env, tmp_path, site / "fixtures", hint)
    installed = run(["bash", "-c", hint], tmp_path, env)  # as printed, with this venv's pip first on PATH
    assert installed.returncode == 0, installed.stderr
    kept = run([str(python), "-c", "import redis, ink_py; print(ink_py.__file__)"], tmp_path, env)
    assert kept.stdout.strip() == str(site / "__init__.py")  # the extra's package came; the installed ink_py stayed


def test_a_user_install_reads_the_fixtures_it_carries(built: Built, tmp_path: Path) -> None:
    """``pip install --user``: before issue 35 the fixtures went to ~/.local/share, where nothing looked."""
    python = make_venv(tmp_path / "venv", system_site_packages=True)  # --user needs a Python that sees user sites
    base = tmp_path / "userbase"
    env = clean_env(HOME=str(tmp_path / "home"), PYTHONUSERBASE=str(base))
    (tmp_path / "home").mkdir()
    run([str(python), *QUIET_PIP, "--user", str(built.wheel)], tmp_path, env)
    [package] = base.glob("lib/python3*/site-packages/ink_py")
    used_as_a_user(python, [str(base / "bin" / "ink-py")], env, tmp_path, package / "fixtures",
                   "pip install 'ink_py[redis]'")  # fmt: skip
    assert not (base / "share").exists()


def test_a_prefix_install_reads_the_fixtures_it_carries(built: Built, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    env = clean_env()
    run([str(python), *QUIET_PIP, "requests>=2.31", "urllib3>=2.2"], tmp_path, env)  # the venv has the dependencies
    prefix = tmp_path / "prefix"
    run([str(python), *QUIET_PIP, "--no-deps", "--prefix", str(prefix), str(built.wheel)], tmp_path, env)
    [site] = prefix.glob("lib/python3*/site-packages")
    env["PYTHONPATH"] = str(site)
    used_as_a_user(python, [str(prefix / "bin" / "ink-py")], env, tmp_path, site / "ink_py" / "fixtures",
                   "pip install 'ink_py[redis]'")  # fmt: skip
    assert not (prefix / "share").exists()


def test_an_editable_install_reads_the_checkouts_fixtures(tmp_path: Path) -> None:
    """``pip install -e .`` in a fresh copy of the checkout (pip's own build, as the README runs it): the
    package is the checkout's folder, so the fixtures are the checkout's and a hint says ``pip install -e``."""
    checkout = copy_project(tmp_path / "checkout")
    python = make_venv(tmp_path / "venv")
    env = clean_env(PATH=f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    run([str(python), *QUIET_PIP, "-e", str(checkout)], checkout, env)
    used_as_a_user(python, ["ink-py"], env, tmp_path, checkout / "fixtures", "pip install -e '.[redis]'")
