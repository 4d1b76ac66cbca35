"""What every client driver shares: the cells, the task, the read tool, and how a turn is reported.

A driver (``python tests/clients/run.py CLIENT URLS``, or a ``tests/js/*.mjs`` for Node) runs one
client against ``ink-py serve-model`` — one server per scenario, ``URLS`` maps each scenario to
its root URL — for every scenario × dialect the client speaks, and prints one JSON line a cell:
``{"client", "dialect", "scenario", "turns": [Turn, …]}``. A turn reports what the client gave
its user: the text and how many deltas it came in, each call (id, name, arguments: the parsed
object, or ``{"raw": text}`` when the client passed them on unparsed), the finish reason in the
client's own word, the usage it reported, the error it raised — and, for a client that runs the
tools itself (pydantic-ai's agent, the AI SDK's steps), ``ran``: what it ran the tool with. A
Responses turn also says what its request ``sent`` (``tap_requests``): whether it named a
``previous_response_id``, and the type of each input item (``item_reference`` for one sent by
reference). Each Responses client also runs ``CHAINED`` scenarios a second time, ``"chained":
true``: its second turn continues by ``previous_response_id``, the client's own way to ask for it.
``tests/test_client_matrix.py`` reads the lines and holds them against its tables.

``CONNECTIONS`` says how each client reaches the built-in model; docs/usage.md shows the same
table (tests/test_readme_truth.py checks it).
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from collections.abc import Callable
from typing import Any

ROOT_SHOWN = "http://127.0.0.1:8765"  # the docs' port; a driver gets each server's own root
MODEL = "ink-scripted"  # any name works: the reply names the model asked for
SCENARIOS = ["readme", "interleaved", "missing-finish", "abort", "invalid-json", "length-tool", "length-text"]
CHAINED = ["readme", "interleaved"]  # run again by previous_response_id: one call, then two
CHAT, MESSAGES, RESPONSES = "openai-completions", "anthropic-messages", "openai-responses"

# (client, dialect) → (how the client is pointed at the server, the base URL it takes, the model name)
CONNECTIONS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("openai", CHAT): ("`OpenAI(base_url=…)` · `client.chat.completions`", "{root}/v1", MODEL),
    ("openai", RESPONSES): ("`OpenAI(base_url=…)` · `client.responses`", "{root}/v1", MODEL),
    ("anthropic", MESSAGES): ("`Anthropic(base_url=…)`", "{root}", MODEL),
    ("langchain-openai", CHAT): ("`ChatOpenAI(base_url=…)`", "{root}/v1", MODEL),
    ("langchain-openai", RESPONSES): ("`ChatOpenAI(base_url=…, use_responses_api=True)`", "{root}/v1", MODEL),
    ("langchain-anthropic", MESSAGES): ("`ChatAnthropic(base_url=…)`", "{root}", MODEL),
    ("litellm", CHAT): ("`litellm.completion(model=…, api_base=…)`", "{root}/v1", f"openai/{MODEL}"),
    ("litellm", RESPONSES): ("`litellm.responses(model=…, api_base=…)`", "{root}/v1", f"openai/{MODEL}"),
    ("litellm", MESSAGES): ("`litellm.completion(model=…, api_base=…)`", "{root}", f"anthropic/{MODEL}"),
    ("pydantic-ai", CHAT): ("`OpenAIChatModel(…, provider=OpenAIProvider(base_url=…))`", "{root}/v1", MODEL),
    ("pydantic-ai", RESPONSES): ("`OpenAIResponsesModel(…, provider=OpenAIProvider(base_url=…))`", "{root}/v1", MODEL),
    ("pydantic-ai", MESSAGES): ("`AnthropicModel(…, provider=AnthropicProvider(base_url=…))`", "{root}", MODEL),
    ("ai-sdk/openai-compatible", CHAT): (
        "`createOpenAICompatible({baseURL, name, includeUsage: true})`",
        "{root}/v1",
        MODEL,
    ),
    ("ai-sdk/openai", CHAT): ("`createOpenAI({baseURL}).chat(…)`", "{root}/v1", MODEL),
    ("ai-sdk/openai", RESPONSES): ("`createOpenAI({baseURL}).responses(…)`", "{root}/v1", MODEL),
    ("ai-sdk/anthropic", MESSAGES): ("`createAnthropic({baseURL})`", "{root}/v1", MODEL),
    ("openai-js", CHAT): ("`new OpenAI({baseURL})` · `client.chat.completions`", "{root}/v1", MODEL),
    ("openai-js", RESPONSES): ("`new OpenAI({baseURL})` · `client.responses`", "{root}/v1", MODEL),
    ("anthropic-js", MESSAGES): ("`new Anthropic({baseURL})`", "{root}", MODEL),
}

DRIVERS = {  # client → the driver process that runs it (one per library: its imports are paid once)
    "openai": "openai",
    "anthropic": "anthropic",
    "langchain-openai": "langchain",
    "langchain-anthropic": "langchain",
    "litellm": "litellm",
    "pydantic-ai": "pydantic-ai",
    "ai-sdk/openai-compatible": "ai-sdk",
    "ai-sdk/openai": "ai-sdk",
    "ai-sdk/anthropic": "ai-sdk",
    "openai-js": "openai-js",
    "anthropic-js": "anthropic-js",
}
PROMPTS = {  # the first user message of each scenario (the script reads the file name from it)
    "interleaved": "读取 README.md 和 package.json",
    "length-tool": "读取 README.md 和 package.json",
}
PROMPT = "读取 README.md,告诉我项目怎样启动"
SYSTEM = "You are a coding agent. Use the read tool to read files."
README_TEXT = "# ink_py\n\nA teaching reference.\n\n```sh\n$ pip install -e .\nink-py --help\n```\n"
FILES = {"README.md": README_TEXT, "package.json": '# package.json\n\n{"name": "demo", "version": "1.0.0"}\n'}
RETRY_ERROR = "Error: the arguments of read were not valid JSON. Send the call again with complete JSON arguments."
READ_DESCRIPTION = "Read a text file in the workspace."
READ_PARAMETERS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOLS = {  # the read tool in each dialect's shape
    CHAT: [
        {
            "type": "function",
            "function": {"name": "read", "description": READ_DESCRIPTION, "parameters": READ_PARAMETERS},
        }
    ],
    RESPONSES: [{"type": "function", "name": "read", "description": READ_DESCRIPTION, "parameters": READ_PARAMETERS}],
    MESSAGES: [{"name": "read", "description": READ_DESCRIPTION, "input_schema": READ_PARAMETERS}],
}
TIMEOUT = 20.0  # seconds for any one request: a hang is reported, never waited out
DELTAS_SEEN_FIRST = 1  # abort: the driver aborts once this many pieces arrived


def url(client: str, dialect: str, root: str) -> str:
    return CONNECTIONS[(client, dialect)][1].format(root=root)


def model(client: str, dialect: str) -> str:
    return CONNECTIONS[(client, dialect)][2]


def prompt(scenario: str) -> str:
    return PROMPTS.get(scenario, PROMPT)


def read(arguments: Any) -> str:
    """The read tool: a file's text for ``{"path": …}``, the loop's retry error for anything else."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return RETRY_ERROR
    path = arguments.get("path") if isinstance(arguments, dict) else None
    return FILES.get(path, f"Error: {path!r}: no such file") if isinstance(path, str) else RETRY_ERROR


def arguments(value: Any) -> Any:
    """A call's arguments as the client gave them: the object, or ``{"raw": text}`` when they do not parse."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"raw": value}
        return parsed if isinstance(parsed, dict) else {"raw": value}
    return value


def new_turn() -> dict[str, Any]:
    return {"text": "", "deltas": 0, "calls": [], "finish": None, "usage": None, "error": None}


def error_text(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"[:300]


def wants_second_turn(turn: dict[str, Any], scenario: str) -> bool:
    """A second turn where the first handed over tool calls without an error — but not after
    length-tool: a reply cut at the limit is not one to act on (§4.4)."""
    return bool(turn["calls"]) and turn["error"] is None and scenario != "length-tool"


def converse(scenario: str, ask: Callable[[dict[str, Any]], Any], answer: Callable[[Any], None]) -> dict[str, Any]:
    """Up to two turns, the way a caller loops by hand: ``ask`` streams one request, fills the turn
    and returns the reply the client assembled (None when it has none); ``answer`` sends the tool
    results back the client's own way before the second."""
    turns = []
    for _ in range(2):
        turn, reply = new_turn(), None
        try:
            reply = ask(turn)
        except Exception as err:
            turn["error"] = error_text(err)
        turns.append(turn)
        if reply is None or not wants_second_turn(turn, scenario):
            break
        answer(reply)
    return {"turns": turns}


Runner = Callable[[str, str, str, str, bool], dict[str, Any]]  # (client, dialect, scenario, root, chained) → report
SENT: list[dict[str, Any]] = []  # what each Responses request of the cell running sent, in order


def sent(body: Any) -> dict[str, Any]:
    """What a Responses request sent: whether it named a previous response, and its input items' types.

    >>> sent({"previous_response_id": "resp_1", "input": [{"type": "item_reference", "id": "msg_1"}, {"role": "user"}]})
    {'previous_response_id': True, 'input': ['item_reference', 'message']}
    """
    items = body.get("input") if isinstance(body, dict) else None
    items = [{"role": "user"}] if isinstance(items, str) else items if isinstance(items, list) else []
    types = [str(item.get("type", "message")) if isinstance(item, dict) else "?" for item in items]
    return {"previous_response_id": isinstance(body.get("previous_response_id"), str), "input": types}


def tap_requests() -> None:
    """Note what every ``POST …/responses`` sends (``SENT``), in whichever HTTP library carries it:
    httpx under LangChain's, LiteLLM's and pydantic-ai's clients, httpx2 under newer openai releases."""
    for name in ("httpx", "httpx2"):
        try:
            http = importlib.import_module(name)
        except ImportError:
            continue
        for kind in (http.Client, http.AsyncClient):
            kind.send = _tapped(kind.send)


def _tapped(send: Any) -> Any:
    def tapped(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if request.method == "POST" and request.url.path.endswith("/responses"):
            try:
                SENT.append(sent(json.loads(request.content)))
            except Exception:  # a body streamed, or not JSON: say so, in order
                SENT.append({"previous_response_id": False, "input": ["?"]})
        return send(self, request, *args, **kwargs)  # for an AsyncClient, a coroutine its caller awaits

    return tapped


def main(pairs: list[tuple[str, str]], run: Runner, roots: dict[str, str], only: set[str] | None = None) -> None:
    """Run every cell of a driver's (client, dialect) pairs and print one JSON line each; a driver's
    own failure is reported as the cell's. ``only``: ``dialect/scenario`` (``+chained`` for a chained cell)."""
    tap_requests()
    for client, dialect in pairs:
        chained = [(scenario, True) for scenario in CHAINED] if dialect == RESPONSES else []
        for scenario, chain in [(scenario, False) for scenario in SCENARIOS] + chained:
            if only and f"{dialect}/{scenario}{'+chained' if chain else ''}" not in only:
                continue
            cell: dict[str, Any] = {"client": client, "dialect": dialect, "scenario": scenario, "chained": chain}
            SENT.clear()
            try:
                cell |= run(client, dialect, scenario, roots[scenario], chain)
            except Exception as err:  # the driver's own mistake: reported, so the table names the cell
                cell |= {"turns": [], "driver_error": error_text(err), "trace": traceback.format_exc()[-2000:]}
            for turn, request in zip(cell["turns"], SENT if dialect == RESPONSES else [], strict=False):
                turn["sent"] = request
            print("CELL " + json.dumps(cell, ensure_ascii=False), flush=True)  # a client may print too
    sys.stdout.flush()


def task(roots: dict[str, str]) -> dict[str, Any]:
    """Everything a Node driver needs, from here: one source for the prompts, files and settings."""
    connections = {f"{client} {dialect}": [url, name] for (client, dialect), (_, url, name) in CONNECTIONS.items()}
    return {
        "roots": roots,
        "scenarios": SCENARIOS,
        "chained": CHAINED,
        "connections": connections,
        "prompts": {s: prompt(s) for s in SCENARIOS},
        "system": SYSTEM,
        "files": FILES,
        "retry_error": RETRY_ERROR,
        "read_description": READ_DESCRIPTION,
        "read_parameters": READ_PARAMETERS,
        "timeout_ms": int(TIMEOUT * 1000),
    }
