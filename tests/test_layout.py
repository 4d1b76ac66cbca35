"""The house (issue 10): the article's code at the front, the extras in wings the front never imports."""

import ast
from pathlib import Path

import pytest

from .helpers import ROOT

PACKAGE = ROOT / "ink_py"
WINGS = ("ink_py.scripted", "ink_py.course", "ink_py.second_article", "ink_py.provider.recording")
FRONT = ("ink_py/core", "ink_py/provider/shared.py", "ink_py/provider/openai_completions.py")
FRONT += ("ink_py/provider/types.py", "ink_py/provider/anthropic_messages.py", "ink_py/provider/openai_responses.py")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The ink_py modules ``path`` imports, at the top or inside a function, resolved to absolute names."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if (ROOT / (candidate.replace(".", "/") + ".py")).exists() else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            found.add("<dynamic>")
    return {name for name in found if name.startswith("ink_py") or name == "<dynamic>"}


GRAPH = {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.replace(".", "/").startswith(FRONT)))
def test_the_articles_code_never_imports_a_wing(module):
    assert not {name for name in GRAPH[module] if name.startswith(WINGS) or name == "<dynamic>"}


def test_core_imports_from_provider_only_its_types():
    core_to_provider = {
        (module, name) for module, names in GRAPH.items() if module.startswith("ink_py.core") for name in names
        if name.startswith("ink_py.provider")
    }  # fmt: skip
    assert core_to_provider == {("ink_py.core.loop", "ink_py.provider.types")}


def test_no_two_modules_import_each_other_in_a_cycle():
    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for name in GRAPH.get(todo.pop(), ()):
                if name in GRAPH and name not in seen:
                    seen.add(name)
                    todo.append(name)
        return seen

    assert [module for module in GRAPH if module in reach(module)] == []
