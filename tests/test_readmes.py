"""README.md and README.zh-CN.md: each links the other from its first line, and both show the same commands.

"The same commands" means: the lines of every ``sh`` code block, in order, and the set of
inline code spans that are commands (they start with ``ink-py``, ``python``, ``pip``,
``pytest``, ``curl`` or ``printf``). Prose may differ; a command changed in one README and
not in the other fails here.
"""

from __future__ import annotations

import re

import pytest

from .helpers import ROOT

ENGLISH = (ROOT / "README.md").read_text(encoding="utf-8")
CHINESE = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
COMMAND_WORDS = ("ink-py", "python", "pip ", "pytest", "curl ", "printf ")
_FENCE = re.compile(r"^(`{3,})sh\n(.*?)^\1$", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def block_lines(text: str) -> list[str]:
    return [line for match in _FENCE.finditer(text) for line in match.group(2).splitlines()]


def inline_commands(text: str) -> set[str]:
    outside_blocks = re.sub(r"^(`{3,}).*?^\1$", "", text, flags=re.MULTILINE | re.DOTALL)
    return {span for span in _INLINE.findall(outside_blocks) if span.startswith(COMMAND_WORDS)}


def test_each_readme_links_the_other_on_its_first_line() -> None:
    assert "(README.zh-CN.md)" in ENGLISH.splitlines()[0]
    assert "(README.md)" in CHINESE.splitlines()[0]


def prose(text: str) -> str:
    """What a README says in words: without code blocks, inline code and links (file names)."""
    text = re.sub(r"^(`{3,}).*?^\1$", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"\[[^\]]*\]\([^)]*\)", "", _INLINE.sub("", text))


def test_the_chinese_readme_is_chinese() -> None:
    """Its prose is Chinese: Chinese characters far outnumber the Latin words left between them (the
    names of APIs and products). The READMEs are short (issue 18), so this is a share, not a count."""
    chinese_characters = sum("\u4e00" <= c <= "\u9fff" for c in prose(CHINESE))
    latin_words = len(re.findall(r"[A-Za-z]+", prose(CHINESE)))
    assert chinese_characters > 600 and chinese_characters > 4 * latin_words
    assert sum("\u4e00" <= c <= "\u9fff" for c in prose(ENGLISH)) < 50  # and the English one is not


def test_both_show_the_same_code_blocks() -> None:
    assert block_lines(ENGLISH) == block_lines(CHINESE)
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && ink-py" in block_lines(CHINESE)


def test_both_show_the_same_inline_commands() -> None:
    assert inline_commands(ENGLISH) == inline_commands(CHINESE)
    assert len(inline_commands(ENGLISH)) > 10  # the table of providers and more


@pytest.mark.parametrize("text", [ENGLISH, CHINESE], ids=["en", "zh"])
def test_every_subcommand_is_shown(text: str) -> None:
    from ink_py.arguments import COMMANDS

    for name in COMMANDS:
        assert f"ink-py {name}" in text


# Issue 18: documents at a reader's length; details live in docs/ and benchmarks/README.md.
@pytest.mark.parametrize(
    ("name", "limit"), [("README.md", 10_000), ("README.zh-CN.md", 10_000), ("walkthrough.md", 45_000)]
)
def test_each_document_stays_at_a_readers_length(name: str, limit: int) -> None:
    size = len((ROOT / name).read_bytes())
    assert size <= limit, f"{name} is {size} bytes; move details to docs/ (at most {limit})"
