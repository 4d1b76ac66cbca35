"""Real clients against ``ink-py serve-model``: every scenario × every dialect each client speaks (issue 28).

Seven servers on 127.0.0.1 (port 0, no delay), one per article scenario; one driver process per
client library runs all of that library's cells and prints one JSON line a cell
(tests/clients/*.py, tests/js/*.mjs — LangChain's or Node's start-up is paid once, not 133 times).
Each cell checks what a user of that client relies on: the text, in several deltas; each call's
id, name and parsed arguments; the finish reason in the client's own word (length for
``length-*``); usage > 0 where the client reports it; no client error; and where there is a tool
call, a second turn with the result sent back the client's own way. ``missing-finish`` and
``invalid-json`` differ from a good stream in their one fault only, so what each client does
with them is its own answer to that fault: ``REPORTED`` (also the table in docs/dialects.md).
Where a client cannot do something with a real provider either, ``LIMITS`` says so in one line.
Every client runs with its default settings: the AI SDK's Responses provider (``store`` on) sends
its first turn's message back by ``item_reference``, the others send the items whole
(``CONTINUES``); each Responses client also runs ``CHAINED`` scenarios a second time, its second
turn by ``previous_response_id`` alone — the server keeps what it answered, and the answer shows
the model saw the whole history.
An absent client's cells skip with one line saying how to get it; .ci/run installs them all.
(``slow`` is not an article scenario: the README task's text paced over twenty seconds to press
Ctrl-C on, the same wire as ``readme``'s second turn; it is left out.)
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ink_py.scripted.server import ModelServer, start_model_server

from .clients.common import CHAINED, CHAT, CONNECTIONS, DRIVERS, MESSAGES, RESPONSES, SCENARIOS, task
from .helpers import ROOT

JS = ROOT / "tests" / "js"
NEEDS: dict[str, tuple[str, ...]] = {  # driver → the Python modules it imports, or the npm packages
    "openai": ("openai",),
    "anthropic": ("anthropic",),
    "langchain": ("langchain_openai", "langchain_anthropic"),
    "litellm": ("litellm",),
    "pydantic-ai": ("pydantic_ai",),
    "ai-sdk": ("ai", "@ai-sdk/openai", "@ai-sdk/openai-compatible", "@ai-sdk/anthropic"),
    "openai-js": ("openai",),
    "anthropic-js": ("@anthropic-ai/sdk",),
}
NODE_DRIVERS = {"ai-sdk": "ai_sdk.mjs", "openai-js": "openai_js.mjs", "anthropic-js": "anthropic_js.mjs"}
DRIVER_SECONDS = 300  # one driver's whole run, all its cells: far beyond what it takes, never waited out


def absent(driver: str) -> str:
    """Why ``driver`` cannot run here ("" when it can): the one line its cells skip with."""
    if driver in NODE_DRIVERS:
        if shutil.which("node") is None:
            return "needs Node.js (node) on PATH; .ci/run uses Debian's"
        missing = [p for p in NEEDS[driver] if not (JS / "node_modules" / p / "package.json").is_file()]
        return f"needs npm's {', '.join(missing)}: `npm ci --prefix tests/js` (.ci/run does)" if missing else ""
    missing = [m for m in NEEDS[driver] if importlib.util.find_spec(m) is None]
    return f"needs {', '.join(missing)}: pip install -e '.[ci]'" if missing else ""


# ── what each client calls the three endings, and what it does with the two faults ─────

WORDS = {  # the provider's words for (tool calls, stop, length), in each dialect
    CHAT: ("tool_calls", "stop", "length"),
    RESPONSES: ("completed", "completed", "incomplete"),
    MESSAGES: ("tool_use", "end_turn", "max_tokens"),
}
CLIENT_WORDS = {  # clients that say it their own way
    ("litellm", MESSAGES): WORDS[CHAT],  # litellm.completion answers in OpenAI's words whatever the provider
    ("pydantic-ai", CHAT): ("tool_call", "stop", "length"),
    ("pydantic-ai", RESPONSES): ("stop", "stop", "length"),
    ("pydantic-ai", MESSAGES): ("tool_call", "stop", "length"),
    **{
        (client, dialect): ("tool-calls", "stop", "length")
        for client, dialect in CONNECTIONS
        if client.startswith("ai-sdk")
    },
}
LIMITS = {  # (client, dialect, scenario) → (the error it raises, why: one line) — a real provider gets the same
    **{
        ("openai", CHAT, s): (
            "LengthFinishReasonError",
            "openai-python's chat.completions.stream() raises at finish_reason length, on any provider",
        )
        for s in ("length-tool", "length-text")
    },
    **{
        ("openai", RESPONSES, s): (
            "Didn't receive a `response.completed` event",
            "openai-python's get_final_response() wants response.completed; a cut reply ends response.incomplete",
        )
        for s in ("length-tool", "length-text")
    },
}
# What each client does with the two faults (docs/dialects.md shows this table). ink_py: an error for
# missing-finish, no message; invalid-json's call blocked, never run.
REPORTED: dict[tuple[str, str], tuple[str, str]] = {
    ("openai", CHAT): ("returns the call, finish None", "passes the raw text on"),
    ("openai", RESPONSES): ("raises: Didn't receive a `response.completed` event", "passes the raw text on"),
    ("anthropic", MESSAGES): ("returns the call, finish None", "repairs the JSON"),
    ("langchain-openai", CHAT): ("returns the call, finish None", "repairs the JSON"),
    ("langchain-openai", RESPONSES): ("returns the call, finish None", "repairs the JSON"),
    ("langchain-anthropic", MESSAGES): ("returns the call, finish None", "repairs the JSON"),
    ("litellm", CHAT): ("raises: Stream ended before a finish_reason was received", "passes the raw text on"),
    ("litellm", MESSAGES): ("raises: Stream ended before a finish_reason was received", "passes the raw text on"),
    ("litellm", RESPONSES): ("raises: closed the responses stream before any terminal event", "passes the raw text on"),
    ("pydantic-ai", CHAT): ("runs the tool, finish 'stop'", "sends the error back to the model"),
    ("pydantic-ai", RESPONSES): ("runs the tool, finish None", "sends the error back to the model"),
    ("pydantic-ai", MESSAGES): ("runs the tool, finish None", "sends the error back to the model"),
    ("ai-sdk/openai-compatible", CHAT): (
        "raises: Response stream ended without a finish reason", "sends the error back to the model"
    ),
    ("ai-sdk/openai", CHAT): ("returns the call, finish 'other'", "sends the error back to the model"),
    ("ai-sdk/openai", RESPONSES): ("returns no call, finish 'other'", "sends the error back to the model"),
    ("ai-sdk/anthropic", MESSAGES): ("returns no call, finish 'other'", "sends the error back to the model"),
    ("openai-js", CHAT): ("raises: missing finish_reason for choice 0", "passes the raw text on"),
    ("openai-js", RESPONSES): ("returns the call, finish 'in_progress'", "passes the raw text on"),
    ("anthropic-js", MESSAGES): ("raises: stream ended without producing a Message", "repairs the JSON"),
}  # fmt: skip
LENGTH_TOOL_SECOND = {  # length-tool's second call, cut at `{"path":"pack`: what each client hands over
    "raw": {"raw": '{"path":"pack'},  # as it came
    "repaired": {"path": "pack"},  # LangChain completes the partial JSON
    "emptied": {},  # Anthropic's SDKs drop the unfinished value
}
CUT_REPLY_RUNS = {  # length-tool: what a client that runs the tools itself runs of the cut reply
    # pydantic-ai's agent runs the complete call and asks the model to retry the cut one, whoever cut it
    "pydantic-ai": [{"path": "README.md"}],
}
CONTINUES = {  # how a client's second turn refers to the first, with its default settings (readme)
    **{pair: "whole" for pair in CONNECTIONS if pair[1] == RESPONSES},  # the output items sent back whole
    ("ai-sdk/openai", RESPONSES): "item_reference",  # the message by reference, the call whole: store is on
}
LENGTH_TOOL: dict[tuple[str, str], str] = {
    **{pair: "raw" for pair in CONNECTIONS},
    **{(c, d): "repaired" for c, d in CONNECTIONS if c.startswith("langchain")},
    ("anthropic", MESSAGES): "emptied",
    ("anthropic-js", MESSAGES): "emptied",
}


# ── the matrix ──────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """scenario → the root URL of a server running it."""
    running: dict[str, ModelServer] = {}
    try:
        for scenario in SCENARIOS:
            running[scenario] = start_model_server(port=0, scenario=scenario, delay=0)
        yield {scenario: server.base_url.removesuffix("/v1") for scenario, server in running.items()}
    finally:
        for server in running.values():
            server.close()


Cells = dict[tuple[str, str, str, bool], dict[str, Any]]  # (client, dialect, scenario, chained) → its report


@pytest.fixture(scope="module")
def run_driver(servers: dict[str, str]) -> Iterator[Any]:
    """driver → its cells; each driver runs once, on first use."""
    done: dict[str, Cells] = {}

    def cells(driver: str) -> Cells:
        if driver not in done:
            done[driver] = run(driver, servers)
        return done[driver]

    yield cells


def run(driver: str, servers: dict[str, str]) -> Cells:
    if driver in NODE_DRIVERS:
        command = ["node", str(JS / NODE_DRIVERS[driver]), json.dumps(task(servers))]
    else:
        command = [sys.executable, str(ROOT / "tests" / "clients" / "run.py"), driver, json.dumps(servers)]
    env = {**os.environ, "NO_COLOR": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(command, capture_output=True, text=True, encoding="utf-8", timeout=DRIVER_SECONDS, env=env)
    lines = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("CELL ")]
    assert lines, f"the {driver} driver printed no cell (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return {(c["client"], c["dialect"], c["scenario"], c["chained"]): c for c in lines}


CELLS = [
    pytest.param(
        client,
        dialect,
        scenario,
        chained,
        id=f"{client}-{dialect}-{scenario}{'-chained' if chained else ''}",
        marks=pytest.mark.skipif(bool(absent(DRIVERS[client])), reason=absent(DRIVERS[client])),
    )
    for client, dialect in CONNECTIONS
    for scenario, chained in [(s, False) for s in SCENARIOS] + [(s, True) for s in CHAINED if dialect == RESPONSES]
]


@pytest.mark.parametrize("client, dialect, scenario, chained", CELLS)
def test_each_client_on_each_scenario(run_driver: Any, client: str, dialect: str, scenario: str, chained: bool) -> None:
    cells = run_driver(DRIVERS[client])
    cell = cells[(client, dialect, scenario, chained)]
    assert "driver_error" not in cell, cell.get("trace")
    turns = cell["turns"]
    tool, stop, length = CLIENT_WORDS.get((client, dialect), WORDS[dialect])
    first = turns[0]
    if scenario == "abort":  # aborted once the first piece arrived: no error, no hang
        assert first["aborted"] and first["error"] is None and len(turns) == 1
        return
    if scenario in REPORTED_SCENARIOS:
        expected = REPORTED[(client, dialect)][REPORTED_SCENARIOS.index(scenario)]
        assert_reported(cell, expected)
        return
    limit = LIMITS.get((client, dialect, scenario))
    if limit is not None:  # the client raises where a real provider's reply would make it raise too
        assert limit[0] in str(first["error"]), limit[1]
    else:
        assert first["error"] is None
        assert_usage(first)
    assert first["deltas"] >= 2 or first["text"] == ""  # text streams in several deltas
    if scenario == "readme":
        assert first["text"] == "我先读一下 README.md。" and first["finish"] == tool
        [call] = first["calls"]
        assert call["name"] == "read" and call["id"] and call["arguments"] == {"path": "README.md"}
        assert_answer(turns, stop, ["「ink_py」", "pip install -e ."])
    elif scenario == "interleaved":
        assert first["text"] == "" and first["finish"] == tool
        calls = [(c["id"], c["name"], c["arguments"]) for c in first["calls"]]
        assert calls == [("t1", "read", {"path": "README.md"}), ("t2", "read", {"path": "package.json"})]
        assert_answer(turns, stop, ["README.md 的标题是「ink_py」", "package.json"])  # named by the call alone
    elif scenario == "length-text":
        assert first["text"] == "项目这样启动:先安装依赖,再运行" and first["calls"] == [] and len(turns) == 1
        assert first["finish"] == length or (limit is not None and first["finish"] is None)
    elif limit is None:  # length-tool: §4.4 runs no call of a cut reply; the drivers that loop by hand neither
        assert first["text"] == "我来读取两个文件。" and first["finish"] == length
        ran = first.get("ran")  # a client that runs tools itself decides for itself
        assert ran is None or ran == CUT_REPLY_RUNS.get(client, []), ran
        assert len(turns) == (2 if ran else 1)
        ids = [(c["id"], c["name"]) for c in first["calls"]]
        assert ids == [("t1", "read"), ("t2", "read")] and first["calls"][0]["arguments"] == {"path": "README.md"}
        assert first["calls"][1]["arguments"] == LENGTH_TOOL_SECOND[LENGTH_TOOL[(client, dialect)]]
    else:
        assert first["text"] == "我来读取两个文件。" and first["finish"] in (None, length)

    if chained:  # the second turn by previous_response_id alone: nothing of the first sent again
        second = turns[1]["sent"]
        assert second["previous_response_id"] and "function_call" not in second["input"], second
        assert "item_reference" not in second["input"] and "function_call_output" in second["input"], second
        whole = cells[(client, dialect, scenario, False)]["turns"][1]  # the same turn, its history sent
        assert turns[1]["usage"]["input"] >= whole["usage"]["input"] > 0  # the model read the whole history
    elif dialect == RESPONSES and scenario == "readme":
        assert continues(turns[1]["sent"]) == CONTINUES[(client, dialect)], turns[1]["sent"]


REPORTED_SCENARIOS = ["missing-finish", "invalid-json"]


def continues(sent: dict[str, Any]) -> str:
    """How a Responses request refers to the turns before it: by previous_response_id, by
    item_reference, or with every item whole."""
    if sent["previous_response_id"]:
        return "previous_response_id"
    return "item_reference" if "item_reference" in sent["input"] else "whole"


def assert_usage(turn: dict[str, Any]) -> None:
    usage = turn["usage"]
    if usage is not None:  # where the client reports it, it adds up to something
        assert usage["input"] > 0 and usage["output"] > 0, usage


def assert_answer(turns: list[dict[str, Any]], stop: str, words: list[str]) -> None:
    """The second turn: the tool results went back, and the answer names them."""
    assert len(turns) == 2, "no second turn"
    second = turns[1]
    assert second["error"] is None and second["finish"] == stop and second["deltas"] >= 2
    assert all(word in second["text"] for word in words), second["text"]
    assert_usage(second)


def outcome(cell: dict[str, Any]) -> str:
    """What the client did with the fault, in the words of ``REPORTED``."""
    first = cell["turns"][0]
    if first["error"] is not None:
        return f"raises: {first['error']}"
    if cell["scenario"] == "missing-finish":
        if first.get("ran"):
            return f"runs the tool, finish {first['finish']!r}"
        return f"returns {'the call' if first['calls'] else 'no call'}, finish {first['finish']!r}"
    [call] = first["calls"]
    if call["arguments"] == {"path": "README.md"}:
        return "repairs the JSON"
    assert call["arguments"] == {"raw": '{"path":"README.md"'}, call
    if first.get("ran") == []:  # the client runs tools itself, and did not run this one
        return "sends the error back to the model"
    return "passes the raw text on"


def assert_reported(cell: dict[str, Any], expected: str) -> None:
    said = outcome(cell)
    if expected.startswith("raises: "):
        assert said.startswith("raises: ") and expected.removeprefix("raises: ") in said, said
    else:
        assert said == expected
    if said in ("passes the raw text on", "sends the error back to the model"):  # refused: the model retries
        second = cell["turns"][1]
        assert second["error"] is None and second["calls"][0]["arguments"] == {"path": "README.md"}


def test_every_connection_has_a_driver_and_a_reported_row() -> None:
    assert set(REPORTED) == set(CONNECTIONS)
    assert {client for client, _ in CONNECTIONS} == set(DRIVERS)
    assert set(DRIVERS.values()) == set(NEEDS)
