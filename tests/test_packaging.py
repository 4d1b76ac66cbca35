"""What ``pip install`` gives a user (issue 35): the wheel and the sdist, built and read as a user gets them.

setup.cfg lists the packages (``ink_py.fixtures`` and ``ink_py.pages`` are folders of the source that
are no packages, so ``find:`` cannot be used) and maps them to ``fixtures/`` and the top of the
repository: whatever package data it names from there lands in the wheel as ``ink_py/fixtures/…``
and ``ink_py/pages/…``, and every ``*.py`` file there would land as a module. The sdist and the wheel
are built once for this module (tests/builds.py, a few seconds: the same hooks as ``python -m build``);
the wheel is installed with ``--target``, which needs no venv, and run from an empty folder. The
installs that need a venv of their own (a fresh venv, ``--user``, ``--prefix``, editable) and the sdist's
own test run are .ci/test_installs.py's and .ci/sdist-run's; the course from a wheel is
.ci/test_wheel_course.py's.
"""

from __future__ import annotations

import configparser
import email
import os
import re
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import ink_py
from ink_py.course.catalogue import EXERCISES
from ink_py.course.places import CHECKS_INI, PAGES_DIR, project_page
from ink_py.installed import in_its_source, pip_install
from ink_py.scripted.scenarios import fixtures_dir

from .builds import Built, build, project_files
from .helpers import ROOT, cli_env

SETUP = configparser.ConfigParser()
SETUP.read(ROOT / "setup.cfg", encoding="utf-8")
DATA_PACKAGES = {"ink_py.fixtures": "fixtures", "ink_py.pages": "."}  # package → the folder it is mapped from
EXTRAS = {"test", "redis", "bench"}  # what a user may ask for; CI's tools are .ci/requirements.txt's


def listed(section: str, key: str) -> list[str]:
    return [line.strip() for line in SETUP[section][key].replace(",", "\n").splitlines() if line.strip()]


def test_every_package_under_ink_py_is_listed_and_the_data_comes_from_the_top():
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ink_py").rglob("__init__.py")}
    assert set(listed("options", "packages")) == packages | set(DATA_PACKAGES)
    assert listed("options", "package_dir") == [f"{package} = {folder}" for package, folder in DATA_PACKAGES.items()]
    for folder in DATA_PACKAGES.values():  # each would be shipped as ink_py/fixtures/<name>.py, ink_py/pages/…
        assert sorted(p.name for p in (ROOT / folder).glob("*.py")) == []


def test_every_page_a_command_names_is_shipped():
    shipped = listed("options.package_data", "ink_py.pages")
    assert shipped == ["walkthrough.md", "docs/*.md"]
    for exercise in EXERCISES.values():
        page = exercise["page"]
        assert page == "walkthrough.md" or (page.startswith("docs/") and page.endswith(".md")), page
        assert project_page(page).is_file()
    assert listed("options.package_data", "ink_py.course.checks") == [CHECKS_INI.name]


def test_in_a_checkout_the_pages_and_the_fixtures_are_read_where_they_are():
    assert not PAGES_DIR.exists() and not (ROOT / "ink_py" / "fixtures").exists()  # only a wheel has them inside
    assert project_page("walkthrough.md") == ROOT / "walkthrough.md"
    assert fixtures_dir() == ROOT / "fixtures"


@pytest.mark.parametrize(
    ("setup_cfg", "from_its_source"),
    [
        ("[metadata]\nname = ink_py\nversion = attr: ink_py.__version__\n", True),  # a clone, the sdist unpacked
        (None, False),  # site-packages, a --target or --prefix folder
        ("[metadata]\nname = somebody_else\n", False),  # ink_py installed --target into another project
        ("name = ink_py\n", False),  # no section: not a setup.cfg setuptools would read either
        ("[metadata]\nname = ink_py\n[metadata]\n", False),  # a duplicate section
        (b"[metadata]\nname = ink_py\n\xff", False),  # not UTF-8
    ],
)
def test_the_install_hint_fits_where_the_package_sits(tmp_path, setup_cfg, from_its_source):
    package = tmp_path / "ink_py"
    package.mkdir()
    if setup_cfg is not None:
        data = setup_cfg if isinstance(setup_cfg, bytes) else setup_cfg.encode()
        (tmp_path / "setup.cfg").write_bytes(data)
    assert in_its_source(package) is from_its_source
    hint = pip_install("redis", source=in_its_source(package))
    assert hint == ("pip install -e '.[redis]'" if from_its_source else "pip install 'ink_py[redis]'")


def test_this_checkout_is_its_source():
    assert in_its_source() and pip_install("test") == "pip install -e '.[test]'"


@pytest.mark.parametrize("where", ["site-packages", "PYTHONPATH", "a checkout"])
def test_a_check_runs_the_checks_of_the_ink_py_that_started_it(monkeypatch, tmp_path, where):
    """``check``'s child pytest imports the ink_py whose checks it runs: one found where every Python here
    looks is left to be found; a checkout's is put first, also when this process has the checkout on its
    sys.path behind another folder (a copy's import puts its own first), as the sdist's tests run it next
    to the installed sdist."""
    from ink_py.course import checker

    homes = {"site-packages": Path(site.getsitepackages()[0]), "PYTHONPATH": tmp_path / "target"}
    home = homes.get(where, tmp_path / "clone")
    monkeypatch.setattr(checker, "PACKAGE_DIR", home / "ink_py")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "target"))
    monkeypatch.syspath_prepend(str(home))  # python -m pytest from the checkout
    monkeypatch.syspath_prepend(str(tmp_path / "copy_parent"))  # then a copy imported by its folder
    first = checker.child_environment()["PYTHONPATH"].split(os.pathsep)[0]
    assert first == str(home if where == "a checkout" else tmp_path / "target")


# ── the sdist and the wheel, built ───────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("build"))


def wheel_names(built: Built) -> set[str]:
    with zipfile.ZipFile(built.wheel) as wheel:
        return set(wheel.namelist())


def sdist_names(built: Built) -> set[str]:
    with tarfile.open(built.sdist) as sdist:
        return {m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile()}


def metadata(built: Built) -> email.message.Message:
    with zipfile.ZipFile(built.wheel) as wheel:
        [name] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_string(wheel.read(name).decode("utf-8"))


def test_the_sdist_is_the_project_as_a_checkout_has_it(built):
    """Its tests collect and run unpacked: tests/ whole (its package, conftest, helpers, clients/, js/),
    fixtures/, docs/, benchmarks/, .ci/, walkthrough.md, README.zh-CN.md, LICENSE — every file of the tree."""
    names = sdist_names(built)
    assert {n for n in names if not n.startswith("ink_py.egg-info/")} - {"PKG-INFO"} == project_files()
    assert {"tests/__init__.py", "tests/conftest.py", "LICENSE", "tests/js/package-lock.json"} <= names


def test_the_wheel_carries_the_fixtures_the_licence_and_the_type_marker(built):
    names = wheel_names(built)
    version = ink_py.__version__
    assert built.wheel.name == f"ink_py-{version}-py3-none-any.whl"
    assert {n.split("/")[0] for n in names} == {"ink_py", f"ink_py-{version}.dist-info"}  # nothing in <prefix>/share
    fixtures = {f"ink_py/{name}" for name in project_files() if re.fullmatch(r"fixtures/\w+/[^/]+\.sse", name)}
    assert len(fixtures) > 80 and fixtures <= names
    assert "ink_py/fixtures/README.md" in names  # whose bytes each stream is travels with them
    assert {"ink_py/py.typed", "ink_py/pages/walkthrough.md", "ink_py/course/checks/checks.ini"} <= names
    code = {f"ink_py/{p.relative_to(ROOT / 'ink_py')}" for p in (ROOT / "ink_py").rglob("*.py")}
    assert code <= names
    with zipfile.ZipFile(built.wheel) as wheel:
        [licence] = [n for n in names if re.fullmatch(r"ink_py-[^/]+\.dist-info/(licenses/)?LICENSE", n)]
        assert wheel.read(licence) == (ROOT / "LICENSE").read_bytes()


def test_the_metadata_publishes_what_a_user_needs_and_no_more(built):
    meta = metadata(built)
    assert meta["Version"] == ink_py.__version__ and meta["License"] == "MIT"
    assert meta["License-File"] == "LICENSE"
    assert set(meta.get_all("Provides-Extra")) == EXTRAS
    requires = meta.get_all("Requires-Dist")
    specifiers = [r.partition(";")[0] for r in requires]  # what follows ";" is the marker: extra == "test"
    assert specifiers and not [r for r in specifiers if "==" in r]  # exact pins are CI's (.ci/requirements.txt)
    assert not [r for r in specifiers if re.match(r"(ruff|mypy|litellm|langchain-openai|pydantic-ai)\b", r)]
    assert meta["Description-Content-Type"] == "text/markdown"


def test_the_index_page_carries_no_link_that_would_break_and_names_shipped_files(built):
    """README.md's links are relative, and there is no public address to make them absolute: the
    description a package index shows (docs/index-page.md) links nowhere and names each document as a
    file of the sdist, or of the wheel's ink_py/pages/."""
    description = metadata(built).get_payload()
    assert description.strip() == (ROOT / "docs" / "index-page.md").read_text(encoding="utf-8").strip()
    links = re.findall(r"\]\(([^)]*)\)|(?:href|src)=[\"']?([^\"'\s>]*)|^\[[^\]]+\]:\s*(\S+)", description, re.M)
    assert [link for link in map("".join, links) if not link.startswith("https://")] == []
    named = set(re.findall(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md|LICENSE)\b", description))
    in_the_wheel = {name for name in named if name.startswith("ink_py/")}
    assert {"README.md", "walkthrough.md", "docs/usage.md", "LICENSE", "ink_py/pages/walkthrough.md"} <= named
    assert named - in_the_wheel <= sdist_names(built) and in_the_wheel <= wheel_names(built), named
    assert "ink_py/pages/docs/" in description and any(n.startswith("ink_py/pages/docs/") for n in wheel_names(built))


# ── the wheel installed with --target, run from an empty folder ───────────────────────────


def test_a_target_install_finds_its_fixtures_and_names_the_install_it_is(built, tmp_path):
    """``pip install --target T`` (about a second, no venv) then, from an empty folder with T on
    PYTHONPATH: the demo and a scenario on the built-in model read T's fixtures, ``-V`` its version,
    and a missing extra is named as a package install, not ``pip install -e``."""
    target, empty = tmp_path / "target", tmp_path / "empty"
    empty.mkdir()
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--disable-pip-version-check"]
    subprocess.run([*pip, "--target", str(target), str(built.wheel)], check=True, capture_output=True, timeout=120)
    env = cli_env(PYTHONPATH=str(target), INK_SCRIPTED_DELAY="0")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *argv], cwd=empty, env=env, capture_output=True, text=True, timeout=60)

    where = run("-c", "import ink_py.scripted.scenarios as s; print(s.__file__); print(s.fixtures_dir())")
    assert where.stdout.splitlines() == [str(target / "ink_py/scripted/scenarios.py"), str(target / "ink_py/fixtures")]
    demo = run("-m", "ink_py", "demo", "--no-pause")
    assert demo.returncode == 0 and "· fixtures/article/readme.sse" in demo.stdout.splitlines()[0], demo.stderr
    scenario = run("-m", "ink_py", "--scenario", "interleaved", "--serial-tools")
    assert scenario.returncode == 0 and '↳ read #2 {"path":"pack' in scenario.stderr, scenario.stderr
    assert run("-m", "ink_py", "-V").stdout == f"ink-py {ink_py.__version__}\n"
    no_redis = "import sys; sys.modules['redis'] = None; from ink_py.__main__ import main; sys.exit(main(sys.argv[1:]))"
    refused = run("-c", no_redis, "serve", "--redis", "redis://127.0.0.1:9/0")
    assert refused.stderr == "error: a Redis URL needs redis-py: pip install 'ink_py[redis]'\n" and refused.returncode
    bare = subprocess.run([sys.executable, "-S", "-m", "ink_py"], cwd=empty, env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip  # -S: no site-packages, so no requests
    assert bare.stderr == (
        "error: ink_py needs requests, which this Python does not have: install ink_py first, with pip install ink_py\n"
    )
    assert sorted(os.listdir(empty)) == []
