"""The API key: sent to the server it belongs to, and shown, recorded or listed nowhere else.

``--api-key-file`` keeps it out of the process list; a key the server echoes back (in an
error event, a frame that is not JSON, an HTTP error body, at any cut, split across reads)
is replaced by ``***`` in what is shown and in what ``--record`` saves, in every dialect and
in the relay's status line; a password in the base URL is never printed; a redirect to
another origin drops the Authorization header. A key with whitespace around it is stripped
wherever it comes from, one no header can carry is refused without being shown; the key
escaped (``\\u0073k-…``, ``\\/``, repr, %XX) or spread over deltas is redacted from what the
parser decoded too. Servers are raw sockets on 127.0.0.1.
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

from ink_py.course.checks.helpers import PROVIDER_CLASSES, provider_in, run_assembly, text_reply
from ink_py.provider.anthropic_messages import AnthropicMessagesProvider
from ink_py.provider.openai_responses import OpenAIResponsesProvider

from .helpers import ROOT
from .raw_servers import INK_PY, SSE_HEAD, RawServer, one_error_line, run_measured, sse_server
from .test_dialects import WRITERS
from .test_relay import read_all, start_relay

KEY = "sk-SECRET1234567890abcdefghij"
KEY_START = KEY[:9]  # "sk-SECRET": not even the start of the key may show
REQUEST = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# demo\n\nrun `make`\n")
    return tmp_path


# ── the key given in a file, not on the command line ────────────────────────────────────


def test_api_key_file_sends_the_key_and_keeps_it_out_of_argv(workspace: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    with sse_server(text_reply("hi")) as server:
        argv = [*INK_PY, "--base-url", server.base_url, "--model", "m", "--api-key-file", str(key_file)]
        result = run_measured(argv, cwd=workspace, env={"OPENAI_API_KEY": ""})
    assert result.code == 0 and result.out == "hi\n", result
    assert b"Authorization: Bearer " + KEY.encode() in server.requests[0]
    assert KEY not in " ".join(argv) and KEY not in result.out + result.err


@pytest.mark.parametrize(("content", "words"), [(None, "No such file"), ("", "the file is empty"), ("\n", "empty")])
def test_a_missing_or_empty_key_file_is_one_usage_error(
    workspace: Path, tmp_path: Path, content: str | None, words: str
) -> None:
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_text(content)
    argv = [*INK_PY, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-file", str(key_file)]
    result = run_measured(argv, cwd=workspace)
    errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert result.code == 1 and len(errors) == 1 and "--api-key-file" in errors[0] and words in errors[0]


def test_help_and_readme_recommend_the_environment_variable() -> None:
    result = run_measured([*INK_PY, "--help"])
    help_text = " ".join(result.out.split())
    assert "process list" in help_text and "prefer the environment variable OPENAI_API_KEY" in help_text
    assert "--api-key-file" in help_text
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "--api-key-file" in readme and "process list" in readme
    serve_help = " ".join(run_measured([*INK_PY, "serve", "--help"]).out.split())
    assert "--api-key-file" in serve_help


# ── a key the server echoes back ────────────────────────────────────────────────────────

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
        shown = ""
        try:
            for event in provider.stream(REQUEST):
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
        with pytest.raises(Exception) as caught:
            list(provider.stream(REQUEST))
    assert "not JSON" in str(caught.value) and KEY_START not in str(caught.value)


def test_a_key_at_the_cut_of_an_http_error_body_is_not_shown(ink: Any) -> None:
    body = json.dumps({"error": {"message": "e" * 489 + KEY}}).encode()  # the 500-character cut: sk-SECRET12

    def serve(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    with RawServer(serve) as server, pytest.raises(ink.shared.ProviderError) as caught:
        ink.transport.post_json_with_retry(f"{server.base_url}/chat/completions", {}, api_key=KEY)
    assert "API error 401" in str(caught.value) and KEY_START not in str(caught.value)


def relay_error(model_reply: bytes, workspace: Path) -> str:
    """The message of the relay's ``event: error`` when the model server (given KEY) sends ``model_reply``."""
    with sse_server(model_reply) as model:
        relay = start_relay(model.base_url, workspace, api_key=KEY)
        try:
            _, events = read_all(requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=10))
        finally:
            relay.close()
    [error] = [e["data"]["message"] for e in events if e["event"] == "error"]
    return str(error)


def test_the_browser_status_line_never_shows_an_echoed_key(workspace: Path) -> None:
    error = relay_error(b'data: {"error": {"message": "' + b"e" * 470 + KEY.encode() + b'"}}\n\n', workspace)
    assert "the server reported an error" in error and KEY[:9] not in error


def test_a_password_in_the_base_url_is_never_printed(ink: Any, workspace: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens here once closed
    url = f"http://alice:hunter2pass@127.0.0.1:{port}/v1"
    provider = ink.openai_completions.OpenAICompletionsProvider(url, KEY)
    assert "hunter2pass" not in repr(provider) and "alice:***@" in repr(provider)
    command, env = ink.command()  # the implementation's own CLI: a student's copy under --impl
    result = run_measured([*command, "--base-url", url, "--model", "m", "--workspace", str(workspace)], env=env)
    assert result.code == 1 and "could not connect to http://alice:***@127.0.0.1" in one_error_line(result.err)
    assert "hunter2pass" not in result.err + result.out


# ── a redirect to another origin ────────────────────────────────────────────────────────


def test_the_key_is_dropped_on_a_cross_origin_redirect(ink: Any) -> None:
    def target(conn: socket.socket, server: RawServer) -> None:
        server.read_request(conn)
        conn.sendall(SSE_HEAD + text_reply("moved"))

    with RawServer(target) as other:

        def redirect(conn: socket.socket, server: RawServer) -> None:
            server.read_request(conn)
            location = f"http://localhost:{other.port}/v1/chat/completions"  # another host name: another origin
            conn.sendall(
                f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()
            )

        with RawServer(redirect) as first:
            response = ink.transport.post_json_with_retry(f"{first.base_url}/chat/completions", {}, api_key=KEY)
            assert response is not None
            events, error = run_assembly(ink, ink.transport.read_body(response))
    assert error is None and events[0]["text"] == "moved"
    assert b"Bearer " + KEY.encode() in first.requests[0]
    assert KEY.encode() not in other.requests[0] and b"authorization" not in other.requests[0].lower()


def test_it_is_requests_that_drops_the_key_on_a_cross_origin_redirect() -> None:
    """The redirect rule above is requests' (Session.rebuild_auth); keep relying on it knowingly."""
    session = requests.Session()
    prepared = requests.Request("GET", "http://localhost:1/", headers={"Authorization": "Bearer x"}).prepare()
    response = requests.Response()
    response.request = requests.Request("GET", "http://127.0.0.1:1/").prepare()
    session.rebuild_auth(prepared, response)
    assert "Authorization" not in prepared.headers


# ── a key with whitespace around it, or a character no header can carry ────────────────

KEY_HEADER = {"anthropic_messages": b"x-api-key: "}  # the others: Authorization: Bearer


def answer_in(dialect: str, text: str) -> bytes:
    return WRITERS[dialect]([], [("text", text)])


def sent_key(dialect: str, request: bytes) -> bool:
    """Did ``request`` carry exactly KEY in the dialect's header?"""
    header = KEY_HEADER.get(dialect, b"Authorization: Bearer ")
    return header + KEY.encode() + b"\r\n" in request


@pytest.mark.parametrize("dialect", sorted(PROVIDER_CLASSES))
@pytest.mark.parametrize("source", ["env", "--api-key", "--api-key-file"])
def test_a_key_with_whitespace_around_it_is_stripped_before_use(
    workspace: Path, tmp_path: Path, dialect: str, source: str
) -> None:
    """A key file saved with CRLF, ``"$(cat key.txt)"`` with a trailing newline: requests used to
    refuse the header and quote it with repr(), so the whole key was shown — and retried three times."""
    padded = f" {KEY}\r\n"
    env_name = "ANTHROPIC_API_KEY" if dialect == "anthropic_messages" else "OPENAI_API_KEY"
    env = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    extra: list[str] = []
    if source == "env":
        env[env_name] = padded
    elif source == "--api-key":
        extra = ["--api-key", padded]
    else:
        (tmp_path / "key.txt").write_bytes(padded.encode())
        extra = ["--api-key-file", str(tmp_path / "key.txt")]
    env_base = "ANTHROPIC_BASE_URL" if dialect == "anthropic_messages" else "OPENAI_BASE_URL"
    with sse_server(answer_in(dialect, "hi")) as server:
        env[env_base] = server.base_url
        argv = [*INK_PY, "--api", dialect.replace("_", "-"), "--model", "m", *extra]
        result = run_measured(argv, cwd=workspace, env=env)
    assert result.code == 0 and result.out == "hi\n", result
    assert len(server.requests) == 1 and sent_key(dialect, server.requests[0])


@pytest.mark.parametrize(
    ("key", "words"),
    [
        pytest.param(KEY[:10] + "\r" + KEY[10:], "a space or line break (character 11 of", id="cr-inside"),
        pytest.param(KEY[:10] + " " + KEY[10:], "a space or line break", id="space-inside"),
        pytest.param(KEY + "\x07", "a control character", id="control"),
        pytest.param(KEY + "é", "not ASCII", id="not-ascii"),
    ],
)
def test_a_key_no_header_can_carry_is_refused_in_one_line_that_never_shows_it(
    workspace: Path, key: str, words: str
) -> None:
    with sse_server(text_reply("hi")) as server:
        result = run_measured(
            [*INK_PY, "--base-url", server.base_url, "--model", "m"], cwd=workspace, env={"OPENAI_API_KEY": key}
        )
    line = one_error_line(result.err)
    assert result.code == 1 and line.startswith("error: OPENAI_API_KEY: the key holds ") and words in line
    assert KEY_START not in result.err + result.out and server.requests == []  # nothing was sent


def test_a_key_of_undecodable_bytes_from_the_environment_is_refused_too(workspace: Path) -> None:
    """A non-UTF-8 byte in the variable reaches Python as a surrogate: it was an internal error."""
    import os
    import subprocess

    env = {**os.environ, "OPENAI_API_KEY": "x", "PYTHONPATH": str(ROOT)}
    env_bytes = {k.encode(): v.encode() for k, v in env.items()}
    env_bytes[b"OPENAI_API_KEY"] = KEY.encode() + b"\xff"
    argv = [*INK_PY, "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    done = subprocess.run(argv, cwd=workspace, env=env_bytes, capture_output=True, timeout=60)  # type: ignore[arg-type]
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1 and "OPENAI_API_KEY: the key holds a character that is not ASCII" in one_error_line(err)
    assert KEY_START not in err


def test_the_relay_resolves_its_key_the_same_way(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    from ink_py.arguments import UsageError
    from ink_py.cli import resolve_endpoint
    from ink_py.second_article.relay import parse_args

    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\r\n")
    args = parse_args(["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--workspace", str(workspace)])
    assert resolve_endpoint(args)[2] == KEY
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\rX")
    with pytest.raises(UsageError) as refused:
        resolve_endpoint(args)
    assert "OPENAI_API_KEY: the key holds" in str(refused.value) and KEY_START not in str(refused.value)


@pytest.mark.parametrize("dialect", sorted(PROVIDER_CLASSES))
def test_a_provider_given_such_a_key_refuses_it_at_once_without_showing_it(ink: Any, dialect: str) -> None:
    """Beyond the command line (a library user, a student's wing): one error, nothing sent, no retry."""
    with sse_server(text_reply("hi")) as server:
        provider = provider_in(ink, dialect, server.base_url, KEY + "\r")
        with pytest.raises(ink.types.ProviderError) as caught:
            list(provider.stream(REQUEST))
    assert "no HTTP header can carry it" in str(caught.value) and KEY_START not in str(caught.value)
    assert server.requests == []


def test_a_library_error_quoting_the_key_in_repr_is_redacted_and_not_retried(ink: Any) -> None:
    """requests refuses a header with InvalidHeader, quoting the value with repr()."""
    quoted = repr(f"Bearer {KEY}\r")
    err = requests.exceptions.InvalidHeader(f"Invalid leading whitespace in header value: {quoted}")
    said = ink.transport.cannot_succeed(err, "http://127.0.0.1:9/v1/chat/completions", KEY)
    assert said is not None and "cannot be sent" in str(said) and KEY_START not in str(said)


# ── the key in any quoted or escaped form ───────────────────────────────────────────────


def json_escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


ESCAPED_FORMS = {
    "repr-with-cr": repr(KEY + "\r"),
    "json-u-escapes": json_escaped(KEY[:3]) + KEY[3:],
    "json-u-escapes-upper-hex": json_escaped(KEY).upper().replace("\\U", "\\u"),
    "json-every-char": json_escaped(KEY),
    "slash-escaped": (KEY[:5] + "/" + KEY[5:]).replace("/", "\\/"),
    "double-escaped": json_escaped(KEY[:4]).replace("\\", "\\\\") + KEY[4:],
    "percent-encoded": "".join(f"%{b:02X}" for b in KEY.encode()),
    "python-x-escapes": "".join(f"\\x{ord(c):02x}" for c in KEY),
}


@pytest.mark.parametrize("form", sorted(ESCAPED_FORMS))
def test_redact_finds_the_key_in_every_escaped_form(ink: Any, form: str) -> None:
    secret = KEY[:5] + "/" + KEY[5:] if form == "slash-escaped" else KEY
    shown = ink.redaction.redact(f"before {ESCAPED_FORMS[form]} after", secret)
    assert "***" in shown and shown.startswith("before ") and shown.endswith(" after")
    for start in (secret[:9], json_escaped(secret[:3]), json_escaped(secret[:3]).upper()[1:]):
        assert start not in shown, shown


KEY_ALPHABET = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


@st.composite
def escaped_key(draw: st.DrawFn) -> tuple[str, str]:
    """A key of printable ASCII and that key with each character written in a form a server or a
    library may use: as it is, \\uXXXX (either case), \\xXX, a backslash before it, %XX."""
    key = draw(st.text(KEY_ALPHABET, min_size=8, max_size=40))
    forms = [
        lambda c: c,
        lambda c: f"\\u{ord(c):04x}",
        lambda c: f"\\u{ord(c):04X}",
        lambda c: f"\\x{ord(c):02x}",
        lambda c: "\\" + c,
        lambda c: f"%{ord(c):02X}",
    ]
    return key, "".join(draw(st.sampled_from(forms))(c) for c in key)


@settings(max_examples=300, deadline=None)
@given(escaped_key(), st.text("abc .:'\"", max_size=10), st.text("abc .:'\"", max_size=10))
def test_the_key_written_any_way_is_redacted(ink: Any, case: tuple[str, str], before: str, after: str) -> None:
    key, written = case
    shown = ink.redaction.redact(before + written + after, key)
    assert written not in shown and key not in shown and "***" in shown


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_key_split_anywhere_across_two_reads_is_redacted(ink: Any, cut: int) -> None:
    body = b'data: {"error": "bad key sk-SECRET!"}\n\n'
    at = body.index(b"sk-") + cut
    redacted = b"".join(ink.redaction.redact_reads([body[:at], body[at:]], "sk-SECRET!"))
    assert redacted == body.replace(b"sk-SECRET!", b"***")


def test_an_escaped_key_within_one_read_is_redacted_in_the_bytes(ink: Any) -> None:
    """So that --record never saves it either (and ``ink-py demo --file`` never shows it)."""
    body = b'data: {"error": "bad key ' + json_escaped(KEY).encode() + b'"}\n\n'
    assert b"".join(ink.redaction.redact_reads([body], KEY)) == b'data: {"error": "bad key ***"}\n\n'


def error_event_in(dialect: str, message: str) -> bytes:
    """A server's error event in ``dialect``, its message written as JSON escapes may have it."""
    if dialect == "anthropic_messages":
        data = '{"type": "error", "error": {"type": "authentication_error", "message": "%s"}}'
        return b"event: error\ndata: " + (data % message).encode() + b"\n\n"
    if dialect == "openai_responses":
        return b'event: error\ndata: {"type": "error", "code": "bad_key", "message": "' + message.encode() + b'"}\n\n'
    return b'data: {"error": {"message": "' + message.encode() + b'"}}\n\n'


ESCAPED_ECHOES = {
    "u-escaped": "bad key " + json_escaped(KEY[:3]) + KEY[3:],
    "slash-escaped": "bad key " + KEY[:6] + "\\/" + KEY[6:],
}


@pytest.mark.parametrize("dialect", sorted(PROVIDER_CLASSES))
@pytest.mark.parametrize("echo", sorted(ESCAPED_ECHOES))
def test_an_escaped_echo_of_the_key_in_an_error_event_is_never_shown(ink: Any, dialect: str, echo: str) -> None:
    secret = KEY[:6] + "/" + KEY[6:] if echo == "slash-escaped" else KEY
    with sse_server(error_event_in(dialect, ESCAPED_ECHOES[echo])) as server:
        provider = provider_in(ink, dialect, server.base_url, secret)
        with pytest.raises(ink.types.ProviderError) as caught:
            list(provider.stream(REQUEST))
    assert "reported an error" in str(caught.value) and "***" in str(caught.value)
    assert secret[:9] not in str(caught.value)


def answer_pieces_in(dialect: str, pieces: list[str]) -> bytes:
    return WRITERS[dialect]([], [("text", piece) for piece in pieces])


@pytest.mark.parametrize("dialect", sorted(PROVIDER_CLASSES))
@pytest.mark.parametrize(
    "pieces",
    [
        pytest.param(["your key is \\u0073k-" + KEY[3:]], id="u-escaped-in-one-delta"),
        pytest.param(["your key is " + KEY[:6], KEY[6:14], KEY[14:] + "."], id="raw-over-three-deltas"),
        pytest.param(["your key is sk", "-", KEY[3:] + "."], id="one-character-deltas"),
    ],
)
def test_the_key_in_the_answer_is_never_shown_even_spread_over_deltas(
    ink: Any, dialect: str, pieces: list[str]
) -> None:
    """Bytes redaction misses a key JSON-escaped or cut between two events; the decoded text is redacted too."""
    wire_pieces = [piece.replace("\\u0073", "\\\\u0073") for piece in pieces]  # JSON-escaped on the wire
    body = answer_pieces_in(dialect, wire_pieces).replace(b"\\\\u0073", b"\\u0073")
    with sse_server(body) as server:
        provider = provider_in(ink, dialect, server.base_url, KEY)
        events = list(provider.stream(REQUEST))
    shown = "".join(e["text"] for e in events if e["type"] == "text_delta")
    [block] = events[-1]["message"]["blocks"]
    assert KEY_START not in shown and KEY_START not in block["text"] and "sk-" not in shown
    assert shown == block["text"] and shown.startswith("your key is ***")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["sk-", "sk-SEC", KEY, KEY[:-1], "x", " ", "s", "读"]), max_size=8),
    st.lists(st.integers(0, 200), max_size=12),
)
def test_any_cut_of_an_answer_into_deltas_shows_what_redacting_it_whole_shows(
    ink: Any, words: list[str], cuts: list[int]
) -> None:
    text = "".join(words)
    points = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    deltas = [{"type": "text_delta", "text": text[a:b]} for a, b in zip(points, points[1:], strict=False)]
    end = {"type": "message_end", "message": {"blocks": [{"type": "text", "text": text}]}}
    out = list(ink.redaction.redacted_events([*deltas, end], KEY))
    shown = "".join(e["text"] for e in out if e["type"] == "text_delta")
    assert shown == text.replace(KEY, "***") == out[-1]["message"]["blocks"][0]["text"]
    assert all(e["text"] for e in out if e["type"] == "text_delta")  # no empty deltas


def test_a_prefix_of_the_key_that_is_not_the_key_is_shown_in_order(ink: Any) -> None:
    """What was held back (it might have begun the key) is released before anything else."""
    calls = [{"id": "t1", "name": "read", "arguments": {"path": "a"}}]
    body = WRITERS["openai_completions"](calls, [("text", "asks"), (0, '{"path": "a"}')])
    with sse_server(body) as server:
        events = list(ink.openai_completions.OpenAICompletionsProvider(server.base_url, KEY).stream(REQUEST))
    assert [(e["type"], e.get("text")) for e in events[:2]] == [("text_delta", "ask"), ("text_delta", "s")]
    assert events[2]["type"] == "tool_call_start" and events[-1]["message"]["blocks"][0]["text"] == "asks"


def test_the_relay_never_shows_an_escaped_echo_either(workspace: Path) -> None:
    error = relay_error(error_event_in("openai_completions", ESCAPED_ECHOES["u-escaped"]), workspace)
    assert "bad key ***" in error and KEY_START not in error


def test_the_cli_error_line_and_trace_never_show_a_key_requests_would_quote(workspace: Path, tmp_path: Path) -> None:
    """The issue's own case, end to end: a key ending in CR, in the env — no key in the line, the trace."""
    trace = tmp_path / "trace.jsonl"
    with sse_server(error_event_in("openai_completions", ESCAPED_ECHOES["u-escaped"])) as server:
        argv = [*INK_PY, "--base-url", server.base_url, "--model", "m", "--trace", str(trace)]
        result = run_measured(argv, cwd=workspace, env={"OPENAI_API_KEY": KEY + "\r"})
    assert result.code == 1 and "bad key ***" in one_error_line(result.err)
    assert KEY_START not in result.err + trace.read_text() and len(server.requests) == 1
