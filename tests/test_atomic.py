"""Files written for a user through a link (a dotfiles repo's link, a trace kept under another name): the
file the link names gets the new content, the link stays a link, and no temporary file is left."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ink_py.atomic import ReplacedWhenClosed, write_text_atomically


def written_whole(path: Path, text: str) -> None:
    write_text_atomically(path, text)


def written_as_a_run_goes(path: Path, text: str) -> None:
    with ReplacedWhenClosed(path) as sink:
        sink.write(text)


@pytest.mark.parametrize("write", [written_whole, written_as_a_run_goes])
def test_a_link_stays_a_link_and_its_file_gets_the_text(tmp_path: Path, write: Callable[[Path, str], None]) -> None:
    (tmp_path / "kept").mkdir()
    kept = tmp_path / "kept" / "session.json"
    kept.write_text("old\n", encoding="utf-8")
    kept.chmod(0o600)
    link = tmp_path / "session.json"
    link.symlink_to(Path("kept") / "session.json")  # relative, as links usually are
    write(link, "new\n")
    assert link.is_symlink() and link.read_text(encoding="utf-8") == "new\n"
    assert kept.stat().st_mode & 0o777 == 0o600  # the file's permissions, not the link's
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["kept", "session.json", "session.json"]
