"""The API key: sent to the server it belongs to, and shown, recorded or listed nowhere else.

``--api-key-file`` keeps it out of the process list; a key the server echoes back (in an
error event, a frame that is not JSON, an HTTP error body, at any cut, split across reads)
is replaced by ``***`` in what is shown and in what ``--record`` saves, in every dialect and
in the relay's status line; a password in the base URL is never printed; a redirect to
another origin drops the Authorization header. Servers are raw sockets on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.provider.anthropic_messages import AnthropicMessagesProvider
from ink_py.provider.openai_responses import OpenAIResponsesProvider

from .helpers import ROOT, run_assembly, text_reply
from .raw_servers import INK_PY, SSE_HEAD, RawServer, one_error_line, run_measured, sse_server
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


def test_the_browser_status_line_never_shows_an_echoed_key(workspace: Path) -> None:
    with sse_server(b'data: {"error": {"message": "' + b"e" * 470 + KEY.encode() + b'"}}\n\n') as model:
        relay = start_relay(model.base_url, workspace, api_key=KEY)
        try:
            _, events = read_all(requests.get(f"{relay.url}chat/stream?query=hi", stream=True, timeout=10))
        finally:
            relay.close()
    [error] = [e["data"]["message"] for e in events if e["event"] == "error"]
    assert "the server reported an error" in error and KEY[:9] not in error


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
