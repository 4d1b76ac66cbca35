"""Pointed at the wrong server, ``ink-py`` says so in one line, with a next step, and never retries what cannot work.

A plain web server (``python -m http.server`` answers a POST with 501 and an HTML page) gave
the whole page as the error; ``https://`` to a plain-http port printed urllib3's
``Max retries exceeded … SSLError`` after three tries; a URL that can never work (port 99999,
a host name with a space) was tried three times too. A server that accepts and never answers
showed nothing for 90 s; now a line says, after a few seconds, what ink-py is waiting for.
Real servers on 127.0.0.1 (the standard library's http.server itself), the CLI as a subprocess.
"""

from __future__ import annotations

import http.server
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ink_py.course.checks.helpers import provider_in

from .raw_servers import INK_PY, one_error_line, run_measured, silent_server


class PlainWebServer:
    """``python -m http.server`` on 127.0.0.1, counting the connections and requests it got."""

    def __init__(self, folder: Path) -> None:
        counts = self.counts = {"connections": 0, "POST": 0}

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(folder), **kwargs)

            def handle(self) -> None:
                counts["connections"] += 1
                super().handle()

            def parse_request(self) -> bool:
                parsed = super().parse_request()
                counts["POST"] += self.command == "POST"
                return parsed

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[PlainWebServer]:
    (tmp_path / "index.html").write_text("<html><title>My blog</title></html>")
    server = PlainWebServer(tmp_path)
    yield server
    server.close()


@pytest.fixture
def sleeps(ink: Any, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(ink.transport, "abortable_sleep", lambda seconds, signal: recorded.append(seconds))
    return recorded


def run_ink_py(base_url: str, *extra: str, **kwargs: Any) -> Any:
    argv = [*INK_PY, "--base-url", base_url, "--model", "m", *extra]
    return run_measured(argv, env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}, **kwargs)


# ── a plain web server ──────────────────────────────────────────────────────────────────


def test_a_plain_web_server_is_named_as_one_not_quoted(web_server: PlainWebServer, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{web_server.port}/v1"
    result = run_ink_py(url, "--workspace", str(tmp_path))
    line = one_error_line(result.err)
    assert line == (
        'error: API error 501: the server answered with an HTML page ("Error response"), not an '
        f"OpenAI-compatible Chat Completions endpoint; tried POST {url}/chat/completions"
    )
    assert web_server.counts["POST"] == 1  # 501 Not Implemented: no retry can mend it


@pytest.mark.parametrize(
    ("dialect", "kind"),
    [
        ("openai_completions", "not an OpenAI-compatible Chat Completions endpoint"),
        ("anthropic_messages", "not an Anthropic Messages endpoint (--api anthropic-messages)"),
        ("openai_responses", "not an OpenAI Responses endpoint (--api openai-responses)"),
    ],
)
def test_each_dialect_names_the_endpoint_it_expected(
    ink: Any, web_server: PlainWebServer, sleeps: list[float], dialect: str, kind: str
) -> None:
    provider = provider_in(ink, dialect, f"http://127.0.0.1:{web_server.port}")
    with pytest.raises(ink.types.ProviderError) as caught:
        list(provider.stream({"model": "m", "system": "", "messages": []}))
    message = str(caught.value)
    assert kind in message and f"tried POST {provider.url()}" in message and "<html" not in message.lower()
    if "/v1" not in provider.url():  # Messages adds its own /v1
        assert "most servers want the base URL to end in /v1" in message
    assert sleeps == [] and web_server.counts["POST"] == 1


def test_an_html_page_with_200_says_the_base_url_is_a_web_page(ink: Any) -> None:
    with pytest.raises(ink.types.ProviderError, match="HTML page, not an event stream .* not a web page's"):
        list(ink.shared.sniffed(iter([b"<!DOCTYPE html><html>"]), "text/html", bytes))


@pytest.mark.parametrize(("status", "retried"), [(500, True), (502, True), (503, True), (501, False), (505, False)])
def test_only_a_5xx_that_may_pass_is_retried(ink: Any, status: int, retried: bool) -> None:
    assert ink.transport.is_retryable_status(status) is retried


# ── https:// to a plain-http port ───────────────────────────────────────────────────────


def test_https_to_a_plain_http_port_says_try_http_and_is_not_retried(
    web_server: PlainWebServer, tmp_path: Path
) -> None:
    url = f"https://127.0.0.1:{web_server.port}/v1"
    result = run_ink_py(url, "--workspace", str(tmp_path))
    line = one_error_line(result.err)
    assert line.startswith(f"error: {url}/chat/completions does not answer in TLS") and "Try http://" in line
    assert "Max retries" not in line and "HTTPSConnectionPool" not in line
    assert web_server.counts["connections"] == 1


# ── a URL that can never work ───────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:99999/v1", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:0/v1", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:8x/v1", "the port must be a number from 1 to 65535"),
        ("http://exa mple.com/v1", 'the host name "exa mple.com" holds a character no host name has'),
        ("http://user:pw@/v1", "the URL names no host"),
    ],
)
def test_a_url_that_can_never_work_is_refused_at_once(tmp_path: Path, url: str, words: str) -> None:
    result = run_ink_py(url, "--workspace", str(tmp_path))
    line = one_error_line(result.err)
    assert result.code == 1 and line.startswith("error: --base-url ") and line.endswith(words)
    assert "pw@" not in line and "attempts" not in line


def test_the_provider_never_retries_a_url_that_cannot_be_sent(ink: Any, sleeps: list[float]) -> None:
    """Beyond the command line (a library user, the relay): one line at once, no back-off."""
    provider = ink.openai_completions.OpenAICompletionsProvider("http://127.0.0.1:99999/v1")
    with pytest.raises(ink.types.ProviderError, match="cannot be sent") as caught:
        list(provider.stream({"model": "m", "system": "", "messages": []}))
    assert sleeps == [] and "attempts" not in str(caught.value)


# ── a server that accepts and never answers ─────────────────────────────────────────────


def test_a_silent_server_is_said_once_after_a_few_seconds(ink: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run_prompt = ink.runner.run_prompt  # the copy's own: its ContextVar is the one its transport reads

    monkeypatch.setattr(ink.transport, "WAITING_NOTICE_SECONDS", 0.3)
    monkeypatch.setattr(ink.transport, "HEADERS_TIMEOUT_SECONDS", 1.5)
    out, err = io.StringIO(), io.StringIO()
    with silent_server() as server:
        provider = ink.openai_completions.OpenAICompletionsProvider(server.base_url)
        with pytest.raises(ink.types.ProviderError, match="sent no response headers"):
            run_prompt(provider=provider, model="m", system="", prompt="hi", tools=[], out=out, err=err)
    lines = err.getvalue().splitlines()
    waiting = [line for line in lines if "still waiting" in line]
    assert waiting == [
        f"(still waiting for the response headers from {server.base_url}/chat/completions "
        "(0 s so far; given up after 2 s))"
    ]


def test_a_server_that_answers_in_time_gets_no_notice(ink: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run_prompt = ink.runner.run_prompt  # the copy's own: its ContextVar is the one its transport reads

    from ink_py.course.checks.helpers import text_reply

    from .raw_servers import sse_server

    monkeypatch.setattr(ink.transport, "WAITING_NOTICE_SECONDS", 5.0)
    out, err = io.StringIO(), io.StringIO()
    with sse_server(text_reply("hi")) as server:
        provider = ink.openai_completions.OpenAICompletionsProvider(server.base_url)
        assert run_prompt(provider=provider, model="m", system="", prompt="hi", tools=[], out=out, err=err) == 0
    assert out.getvalue() == "hi\n" and "waiting" not in err.getvalue()


def test_ink_py_says_it_is_still_waiting_and_for_what(tmp_path: Path) -> None:
    with silent_server() as server:
        notice_shown = b"given up after 90 s))\n"  # its line's end: Ctrl-C once it is there
        result = run_ink_py(server.base_url, "--workspace", str(tmp_path), sigint_on=notice_shown, timeout=30)
    waiting = [line for line in result.err.splitlines() if "still waiting" in line]
    assert waiting == [
        f"(still waiting for the response headers from {server.base_url}/chat/completions "
        "(5 s so far; given up after 90 s))"
    ]
    assert result.code == 130
