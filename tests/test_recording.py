"""``--record DIR`` (provider/recording.py): numbers that keep growing, names claimed atomically, nothing overwritten.

The next number was found by globbing three-digit names, so past 999 every exchange was
``1000`` again (each one overwriting the last), and two processes recording into one folder
took the same number. Now every ``NNN-…`` name counts, ``NNN-request.json`` is created
exclusively, and ``NNN-response.sse`` too; the request body is written whole or not at all
(ink_py/atomic.py), a lone surrogate in it included. The byte-for-byte recording is test_cli.py's.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from .raw_servers import sse_server
from .test_cli import README, ink_py


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_numbering_goes_on_past_999_and_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "999-request.json").write_text("{}")
    (rec / "999-response.sse").write_text("old 999")
    for _ in range(2):  # the README task: two exchanges a run
        done = ink_py("--record", "rec", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    numbers = ["999", "1000", "1001", "1002", "1003"]
    assert names(rec) == sorted(f"{n}-{kind}" for n in numbers for kind in ("request.json", "response.sse"))
    assert (rec / "999-response.sse").read_text() == "old 999"
    assert all((rec / f"{n}-response.sse").stat().st_size > 0 for n in numbers[1:])


def test_a_name_already_there_is_skipped_whichever_file_it_is(ink: Any, tmp_path: Path) -> None:
    (tmp_path / "1000-response.sse").write_text("someone's")  # a response whose request was deleted
    (tmp_path / "0042-request.json").write_text("{}")
    assert ink.recording.next_record_prefix(tmp_path).name == "1001"
    assert (tmp_path / "1000-response.sse").read_text() == "someone's"


def test_two_recorders_in_one_folder_never_take_the_same_number(ink: Any, tmp_path: Path) -> None:
    """Many threads at once stand for many processes: each claim is an exclusive create."""
    start = threading.Barrier(16)
    taken: list[str] = []

    def claim() -> None:
        start.wait()
        taken.append(ink.recording.next_record_prefix(tmp_path).name)

    threads = [threading.Thread(target=claim) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == [f"{n:03d}" for n in range(1, 17)]


def test_a_request_with_a_lone_surrogate_is_recorded_whole(ink: Any, tmp_path: Path) -> None:
    """The body is written as it is sent: a lone surrogate (from argv, a resumed file) becomes U+FFFD."""
    reply = b'data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    with sse_server(reply) as server:
        provider = ink.recording.recording(ink.openai_completions.OpenAICompletionsProvider)(
            server.base_url, record_dir=str(tmp_path)
        )
        request = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "a\ud800b"}]}
        assert list(provider.stream(request))[-1]["type"] == "message_end"
    recorded = json.loads((tmp_path / "001-request.json").read_text(encoding="utf-8"))
    assert recorded["messages"][-1]["content"] == "a\ufffdb"
    assert names(tmp_path) == ["001-request.json", "001-response.sse"]  # no temporary file left behind
