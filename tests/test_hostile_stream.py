"""A broken or malicious model server: what it sends must stay bounded, named and harmless.

Issue 12's problems 1 (one endless event), 3 (escape sequences), 4 (the key echoed back),
5 (Ctrl-C before the headers), 8 (malformed chunk shapes), 9 (a flood of tool calls) and
10 (NaN in usage). Servers are raw sockets on 127.0.0.1 (tests/hostile.py); memory is the
peak of a child process, never allocated here.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from ink_py.provider.anthropic_messages import AnthropicMessagesProvider
from ink_py.provider.openai_responses import OpenAIResponsesProvider

from .helpers import ScriptedProvider, run_assembly, sse, text_reply, tool_reply
from .hostile import INK_PY, SSE_HEAD, HostileServer, run_measured, sse_server

KEY = "sk-SECRET1234567890abcdefghij"
KEY_START = KEY[:9]  # "sk-SECRET": not even the start of the key may show


def ink_py(server: HostileServer, workspace: Path, *extra: str, **kwargs: Any):
    argv = [*INK_PY, "--base-url", server.base_url, "--model", "m", "--workspace", str(workspace), *extra]
    return run_measured(argv, env={"OPENAI_API_KEY": KEY}, **kwargs)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# demo\n\nrun `make`\n")
    return tmp_path


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


# ── 1. one event with no end ────────────────────────────────────────────────────────────


def test_an_event_that_never_ends_fails_with_memory_bounded_by_the_cap(workspace: Path) -> None:
    sent = {"bytes": 0}

    def endless(conn: socket.socket) -> None:
        conn.sendall(b'data: {"choices":[{"delta":{"content":"')
        piece = b"x" * 65536
        while sent["bytes"] < 256 * 1024 * 1024:  # 256 MiB at most: the cap is 32 MiB
            conn.sendall(piece)
            sent["bytes"] += len(piece)

    with sse_server(endless) as server:
        result = ink_py(server, workspace, timeout=60)
    line = one_error_line(result.err)
    assert result.code == 1 and "32 MiB" in line and "without ending it" in line
    assert result.peak_mib < 160, f"peak {result.peak_mib:.0f} MiB for a 32 MiB cap"  # before: > 256
    assert sent["bytes"] < 256 * 1024 * 1024  # the client stopped reading: the server's sendall broke


# ── 3. escape sequences from the model and the server ───────────────────────────────────

HOSTILE = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x9b31m\x85"


def test_escape_sequences_reach_the_terminal_only_as_visible_text(workspace: Path, tmp_path: Path) -> None:
    replies = [
        sse({"choices": [{"delta": {"reasoning_content": "think" + HOSTILE}}]})
        + sse({"choices": [{"delta": {"content": "text" + HOSTILE}}]})
        + sse(
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "id": "t1", "function": {"name": "bad" + HOSTILE, "arguments": "{}"}},
                                {"index": 1, "id": "t2", "function": {"name": "read", "arguments": '{"path":"'}},
                            ]
                        }
                    }
                ]
            }
        )
        + sse({"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"arguments": 'x\\u001b[2J"}'}}]}}]})
        + sse({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        b"event: error\ndata: " + json.dumps({"error": {"message": "boom" + HOSTILE}}).encode() + b"\n\n",
    ]

    def serve(conn: socket.socket, server: HostileServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + replies[min(len(server.requests), 2) - 1])

    trace = tmp_path / "trace.jsonl"
    with HostileServer(serve) as server:
        result = ink_py(server, workspace, "--trace", str(trace), timeout=30)
    assert result.code == 1 and "boom" in one_error_line(result.err)
    for stream in (result.out, result.err):
        assert not any(c in stream for c in "\x1b\x07\x9b\x85"), repr(stream)
    assert "\\x1b]52;c;" in result.out and "\\x9b31m" in result.err  # shown, not obeyed
    assert result.err.count("\\x1b]0;pwned\\x07") >= 3  # reasoning, tool name, tool error line
    raw = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {"type": "text_delta", "text": "text" + HOSTILE} in raw  # the trace keeps the raw text


def test_the_programs_own_colours_are_kept(ink: Any) -> None:
    from ink_py.runner import Display

    class Terminal:
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return True

    out, err = Terminal(), Terminal()
    display = Display(out, err)  # type: ignore[arg-type]
    display.show({"type": "thinking_delta", "text": "a\x1b[2Jb\tc\nd"})
    assert err.text == "\x1b[2;3ma\\x1b[2Jb\tc\nd\x1b[0m"  # ink_py's own dim italics, the model's ESC shown


# ── 4. the key, echoed back by the server ───────────────────────────────────────────────

ECHOES = {
    "event-error": b'event: error\ndata: {"error": {"message": "bad key ' + KEY.encode() + b'"}}\n\n',
    "error-payload": b'data: {"error": "invalid key ' + KEY.encode() + b'"}\n\n',
    "llamacpp-error-line": b'error: {"message": "' + KEY.encode() + b'"}\n\n',
    "not-json": b"data: key=" + KEY.encode() + b"\n\n",
    "truncated-event": b'data: {"choices": [{"delta": {"content": "' + KEY.encode(),
    "not-a-chunk": b'data: ["' + KEY.encode() + b'"]\n\n',
    "at-the-500-cut": b'data: {"error": "' + b"e" * 492 + KEY.encode() + b'"}\n\n',
    "at-the-200-cut": b"data: " + b"n" * 190 + KEY.encode() + b"\n\n",
    "split-across-reads": b"SPLIT",
    "in-the-answer": text_reply("your key is " + KEY),
}


def _split_echo(conn: socket.socket) -> None:
    conn.sendall(b'data: {"error": "' + KEY[:6].encode())
    time.sleep(0.05)
    conn.sendall(KEY[6:].encode() + b'"}\n\n')


@pytest.mark.parametrize("name", sorted(ECHOES))
def test_a_key_the_server_echoes_is_never_shown_nor_recorded(ink: Any, name: str, tmp_path: Path) -> None:
    body = _split_echo if ECHOES[name] == b"SPLIT" else ECHOES[name]
    with sse_server(body) as server:
        provider = ink.recording.recording(ink.openai_completions.OpenAICompletionsProvider)(
            server.base_url, KEY, record_dir=str(tmp_path)
        )
        request = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}]}
        shown = ""
        try:
            for event in provider.stream(request):
                shown += json.dumps(event, ensure_ascii=False)
        except ink.shared.ProviderError as err:
            shown += str(err)
    assert shown and KEY_START not in shown, shown
    recorded = (tmp_path / "001-response.sse").read_bytes()
    assert KEY_START.encode() not in recorded and b"***" in recorded
    assert b"Bearer " + KEY.encode() in server.requests[0]  # the key was sent, as it must be


@pytest.mark.parametrize("provider_class", [AnthropicMessagesProvider, OpenAIResponsesProvider])
def test_the_other_dialects_redact_an_echoed_key_too(provider_class: type, tmp_path: Path) -> None:
    with sse_server(ECHOES["not-json"]) as server:
        provider = provider_class(server.base_url, KEY)
        request = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}]}
        with pytest.raises(Exception) as caught:
            list(provider.stream(request))
    assert "not JSON" in str(caught.value) and KEY_START not in str(caught.value)


def test_a_key_at_the_cut_of_an_http_error_body_is_not_shown(ink: Any) -> None:
    body = json.dumps({"error": {"message": "e" * 489 + KEY}}).encode()  # the 500-character cut: sk-SECRET12

    def serve(conn: socket.socket, server: HostileServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    with HostileServer(serve) as server, pytest.raises(ink.shared.ProviderError) as caught:
        ink.transport.post_json_with_retry(f"{server.base_url}/chat/completions", {}, api_key=KEY)
    assert "API error 401" in str(caught.value) and KEY_START not in str(caught.value)


def test_a_password_in_the_base_url_is_never_printed(ink: Any, workspace: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens here once closed
    url = f"http://alice:hunter2pass@127.0.0.1:{port}/v1"
    provider = ink.openai_completions.OpenAICompletionsProvider(url, KEY)
    assert "hunter2pass" not in repr(provider) and "alice:***@" in repr(provider)
    result = run_measured([*INK_PY, "--base-url", url, "--model", "m", "--workspace", str(workspace)], timeout=60)
    assert result.code == 1 and "could not connect to http://alice:***@127.0.0.1" in one_error_line(result.err)
    assert "hunter2pass" not in result.err + result.out


# ── 5. Ctrl-C before the response headers; the wait for them is bounded ────────────────


def silent_server() -> HostileServer:
    """Reads the request, then says nothing until the client leaves."""

    def serve(conn: socket.socket, server: HostileServer) -> None:
        server.read_request(conn)
        server.wait_for_hang_up(conn, 60)

    return HostileServer(serve)


def test_ctrl_c_while_waiting_for_headers_exits_130_at_once(workspace: Path) -> None:
    with silent_server() as server:
        result = ink_py(server, workspace, timeout=30, sigint_when=lambda pid: server.got_request.is_set())
        assert server.closed_by_client.wait(5)  # the process is gone, and its connection with it
    assert not result.killed and result.code == 130, result
    assert result.seconds < 5, f"{result.seconds:.1f} s from Ctrl-C to exit"  # before: until killed
    assert "Traceback" not in result.err


def test_ctrl_c_while_connecting_exits_130_at_once(workspace: Path) -> None:
    # A listener that never accepts, its queue already full: the next connect waits for a SYN-ACK.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        fillers = []
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(listener.getsockname())
            fillers.append(filler)
        time.sleep(0.2)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        argv = [*INK_PY, "--base-url", url, "--model", "m", "--workspace", str(workspace)]
        result = run_measured(argv, timeout=30, sigint_after=2.0)
        for filler in fillers:
            filler.close()
    assert not result.killed and result.code == 130, result
    assert result.seconds < 5 and "Traceback" not in result.err


def test_the_wait_for_headers_has_its_own_bound_and_is_not_retried(ink: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ink.transport, "HEADERS_TIMEOUT_SECONDS", 0.5)
    with silent_server() as server:
        start = time.monotonic()
        with pytest.raises(ink.shared.ProviderError, match="sent no response headers within 0 s"):
            ink.transport.post_json_with_retry(f"{server.base_url}/chat/completions", {"model": "m"})
        elapsed = time.monotonic() - start
    assert len(server.requests) == 1  # a server that is thinking is not asked three times
    assert elapsed < 5  # bounded by the header timeout, not by 3 x READ_TIMEOUT_SECONDS


def test_the_body_keeps_its_longer_read_timeout_after_the_headers(ink: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ink.transport, "HEADERS_TIMEOUT_SECONDS", 0.3)

    def slow_body(conn: socket.socket) -> None:
        time.sleep(0.8)  # longer than the header timeout, far shorter than the body's
        conn.sendall(text_reply("late but fine"))

    with sse_server(slow_body) as server:
        events, error = run_assembly(
            ink, ink.transport.read_body(ink.transport.post_json_with_retry(f"{server.base_url}/chat/completions", {}))
        )
    assert error is None and events[0] == {"type": "text_delta", "text": "late but fine"}


# ── 8. malformed chunks: the field and its type, one line ───────────────────────────────

MALFORMED = [
    ({"choices": "oops"}, '"choices" is a string, expected an array'),
    ({"choices": [None]}, '"choices[0]" is null, expected an object'),
    ({"choices": [7]}, '"choices[0]" is a number, expected an object'),
    ({"choices": [[]]}, '"choices[0]" is an array, expected an object'),
    ({"choices": {"0": {}}}, '"choices" is an object, expected an array'),
    ({"choices": [{"delta": []}]}, '"delta" is an array, expected an object'),
    ({"choices": [{"delta": "hi"}]}, '"delta" is a string, expected an object'),
    ({"choices": [{"delta": {"tool_calls": {"index": 0}}}]}, '"tool_calls" is an object, expected an array'),
    ({"choices": [{"delta": {"tool_calls": "x"}}]}, '"tool_calls" is a string, expected an array'),
    ({"choices": [{"delta": {"tool_calls": [None]}}]}, '"tool_calls[]" is null, expected an object'),
    ({"choices": [{"delta": {"tool_calls": [1]}}]}, '"tool_calls[]" is a number, expected an object'),
    ({"choices": [{"delta": {"tool_calls": [{"index": [0]}]}}]}, '"index" is an array, expected a number'),
    ({"choices": [{"delta": {"tool_calls": [{"index": {}}]}}]}, '"index" is an object, expected a number'),
    ({"choices": [{"delta": {"tool_calls": [{"function": "read"}]}}]}, '"function" is a string, expected an object'),
    ({"choices": [{"delta": {"tool_calls": [{"function": {"name": 5}}]}}]}, '"name" is a number, expected a string'),
    ({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": {}}}]}}]}, '"arguments" is an object'),
    ({"choices": [{"delta": {"tool_calls": [{"id": ["t"]}]}}]}, '"id" is an array, expected a string'),
    ({"choices": [{"delta": {}, "finish_reason": ["stop"]}]}, '"finish_reason" is an array, expected a string'),
    ({"choices": [{"delta": {}, "finish_reason": 1}]}, '"finish_reason" is a number, expected a string'),
    ({"choices": [], "usage": "lots"}, '"usage" is a string, expected an object'),
    ({"choices": [], "usage": {"prompt_tokens": "12"}}, 'usage "prompt_tokens" is'),
    ({"choices": [], "usage": {"completion_tokens": -3}}, 'usage "completion_tokens" is'),
    ({"choices": [], "usage": {"prompt_tokens_details": []}}, '"prompt_tokens_details" is an array'),
    ({"choices": [], "x_groq": "u"}, '"x_groq" is a string, expected an object'),
    ({"choices": [{"delta": {}, "usage": 3}]}, '"usage" is a number, expected an object'),
]


@pytest.mark.parametrize(("chunk", "words"), MALFORMED, ids=[w[:40] for _, w in MALFORMED])
def test_a_malformed_chunk_names_the_field_and_its_type(ink: Any, chunk: dict, words: str) -> None:
    body = sse(chunk) + sse({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    _, error = run_assembly(ink, [body])
    assert error is not None and error.startswith("the server sent a malformed chunk: ") and words in error
    assert "\n" not in error


def test_a_malformed_chunk_ends_the_cli_with_one_line_and_exit_1(workspace: Path) -> None:
    with sse_server(sse({"choices": [{"delta": []}]})) as server:
        result = ink_py(server, workspace, timeout=30)
    assert result.code == 1
    assert '"delta" is an array, expected an object' in one_error_line(result.err)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
PATHS = [
    ("choices",),
    ("choices", 0),
    ("choices", 0, "delta"),
    ("choices", 0, "finish_reason"),
    ("choices", 0, "delta", "content"),
    ("choices", 0, "delta", "tool_calls"),
    ("choices", 0, "delta", "tool_calls", 0),
    ("choices", 0, "delta", "tool_calls", 0, "index"),
    ("choices", 0, "delta", "tool_calls", 0, "id"),
    ("choices", 0, "delta", "tool_calls", 0, "function"),
    ("choices", 0, "delta", "tool_calls", 0, "function", "name"),
    ("choices", 0, "delta", "tool_calls", 0, "function", "arguments"),
    ("usage",),
    ("usage", "prompt_tokens"),
]


@given(path=st.sampled_from(PATHS), value=JSON_VALUES)
@settings(max_examples=300, deadline=None)
def test_any_value_anywhere_in_a_chunk_is_a_reply_or_a_provider_error(ink: Any, path: tuple, value: Any) -> None:
    chunk: Any = {
        "choices": [
            {
                "delta": {
                    "content": "a",
                    "tool_calls": [{"index": 0, "id": "t", "function": {"name": "read", "arguments": "{}"}}],
                },
                "finish_reason": None,
            }
        ],
        "usage": {"prompt_tokens": 1},
    }
    holder = chunk
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    events, error = run_assembly(ink, [sse(chunk), sse({"choices": [{"delta": {}, "finish_reason": "stop"}]})])
    assert error is None or error.startswith("the server sent"), error  # never AttributeError/TypeError


# ── 9. a flood of tool calls; messages quote only the start of what they got ────────────


def test_calls_past_the_bound_are_answered_not_run(ink: Any, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x" * 1000)
    count = ink.loop.MAX_TOOL_CALLS_PER_REPLY * 20
    calls = [(f"t{i}", "read", '{"path": "a.txt"}') for i in range(count)]
    provider = ScriptedProvider(ink, tool_reply(*calls), text_reply("done"))
    ran = []
    read = ink.read_tool.create_read_tool(tmp_path)
    counted = {**read, "execute": lambda args, signal: ran.append(1) or read["execute"](args, signal)}
    history: list = []
    ink.loop.run_agent_loop(
        provider=provider, model="m", system="s", tools=[counted], history=history, user_message="go"
    )
    results = history[2]["results"]
    assert len(ran) == ink.loop.MAX_TOOL_CALLS_PER_REPLY == 64
    assert [r["toolCallId"] for r in results] == [f"t{i}" for i in range(count)]  # every call answered, in order
    refused = [r for r in results if "not run" in r["content"]]
    assert len(refused) == count - 64 and all(r["isError"] for r in refused)
    follow_up = json.dumps(provider.requests[1]["messages"][2])
    assert len(follow_up) < 64 * 1100 + (count - 64) * 300  # before: every call's file content


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read", json.dumps({"path": "p" * 5_000_000})),  # file not found: <path>
        ("r" * 5_000_000, "{}"),  # unknown tool "<name>"
        ("read", json.dumps({"path": "a", "extra": "e" * 5_000_000})),  # schema problems
        ("read", "[" + "1," * 2_000_000 + "1]"),  # arguments that are not an object
    ],
    ids=["long-path", "long-tool-name", "long-extra-property", "long-array"],
)
def test_error_messages_quote_only_the_start_of_their_input(
    ink: Any, tmp_path: Path, name: str, arguments: str
) -> None:
    provider = ScriptedProvider(ink, tool_reply(("t1", name, arguments)), text_reply("ok"))
    history: list = []
    tools = [ink.read_tool.create_read_tool(tmp_path)]
    ink.loop.run_agent_loop(provider=provider, model="m", system="s", tools=tools, history=history, user_message="u")
    [result] = history[2]["results"]
    assert result["isError"] and len(result["content"]) < 1000, result["content"][:300]


# ── 10. NaN and Infinity ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_non_finite_numbers_from_the_server_are_refused(ink: Any, number: str) -> None:
    body = b'data: {"choices": [], "usage": {"prompt_tokens": ' + number.encode() + b"}}\n\n"
    _, error = run_assembly(ink, [text_reply("hi") + body])
    assert error is not None and "not JSON" in error and "not a finite number" in error


def test_non_finite_tool_arguments_are_refused_so_the_history_stays_json(ink: Any) -> None:
    assert "_parseError" in ink.shared.safe_parse_json('{"offset": NaN}')
    assert "_parseError" in ink.shared.safe_parse_json('{"offset": 1e999}')
    assert ink.shared.safe_parse_json('{"offset": 1.5e3}') == {"offset": 1500.0}


def test_nan_in_usage_ends_the_run_with_an_error_and_a_valid_trace(workspace: Path, tmp_path: Path) -> None:
    body = text_reply("hi") + b'data: {"choices": [], "usage": {"prompt_tokens": NaN}}\n\n'
    trace = tmp_path / "trace.jsonl"
    with sse_server(body) as server:
        result = ink_py(server, workspace, "--trace", str(trace), timeout=30)
    assert result.code == 1 and "not a finite number: NaN" in one_error_line(result.err)
    assert "inf" not in result.err.split("error:")[0] and "nan" not in result.err.lower().split("error:")[0]
    for line in trace.read_text().splitlines():
        json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} in the trace"))


# ── already safe: the key is not sent to another origin on a redirect ───────────────────


def test_the_key_is_dropped_on_a_cross_origin_redirect(ink: Any) -> None:
    def target(conn: socket.socket, server: HostileServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + text_reply("moved"))

    with HostileServer(target) as other:

        def redirect(conn: socket.socket, server: HostileServer) -> None:
            server.read_request(conn)
            location = f"http://localhost:{other.port}/v1/chat/completions"  # another host name: another origin
            conn.sendall(
                f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()
            )

        with HostileServer(redirect) as first:
            response = ink.transport.post_json_with_retry(f"{first.base_url}/chat/completions", {}, api_key=KEY)
            assert response is not None
            events, error = run_assembly(ink, ink.transport.read_body(response))
    assert error is None and events[0]["text"] == "moved"
    assert b"Bearer " + KEY.encode() in first.requests[0]
    assert KEY.encode() not in other.requests[0] and b"authorization" not in other.requests[0].lower()


def test_requests_is_what_drops_it(ink: Any) -> None:
    """The redirect rule above is requests' (Session.rebuild_auth); keep relying on it knowingly."""
    session = requests.Session()
    prepared = requests.Request("GET", "http://localhost:1/", headers={"Authorization": "Bearer x"}).prepare()
    response = requests.Response()
    response.request = requests.Request("GET", "http://127.0.0.1:1/").prepare()
    session.rebuild_auth(prepared, response)
    assert "Authorization" not in prepared.headers
