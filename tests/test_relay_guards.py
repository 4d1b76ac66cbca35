"""What ``ink-py serve`` refuses before any model is asked, and what its page may do (second_article/guards.py).

Over real HTTP on 127.0.0.1 (port 0), the relay in front of the built-in scripted model or a
raw server: a missing, empty or too long question and a malformed session get a JSON error;
other sites (``Sec-Fetch-Site``, ``Origin``) and foreign host names get 403; traversal and
odd methods are refused; the page is served with a CSP that runs only its own script, never
in a frame, and model text reaches it only as JSON text; (issue 33) the prefix redirect stays on
this site whatever SCRIPT_NAME holds, as a browser's URL parser reads it (node's WHATWG URL),
host names compare in any case, and a store that failed is "unavailable" to the client while
the server's log (wsgi.errors) says why. Every wait is bounded.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.course.checks.helpers import text_reply
from ink_py.scripted.server import start_model_server
from ink_py.second_article.guards import MAX_QUERY_CHARS
from ink_py.second_article.relay import RelayApp, RelayServer, run_settings

from .raw_servers import raw_request, sse_server
from .redis_servers import NEEDS_REDIS, RedisServer
from .test_relay import WAIT_SECONDS, open_stream, read_all, start_relay


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[RelayServer]:
    """The relay in front of the built-in scripted model."""
    with start_model_server(port=0, delay=0) as model:
        server = start_relay(model.base_url, tmp_path)
        yield server
        server.close()


# ── the question and the session ────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("chat/stream", 400, "missing ?query="),
        ("chat/stream?query=", 400, "empty"),
        ("chat/stream?query=%20%0A%20", 400, "empty"),
        pytest.param("chat/stream?query=" + "%E5%AD%97" * 4001, 413, "4001 characters; at most 4000", id="too-long"),
        ("chat/stream?query=%ZZ%E5", 200, None),  # bad escapes are replaced, not a crash
        ("nowhere", 404, "not found: /nowhere"),
        ("chat/stream/more?query=hi", 404, "not found"),
    ],
)
def test_client_mistakes_get_a_json_error(relay: RelayServer, path: str, status: int, message: str | None) -> None:
    response = requests.get(relay.url + path, stream=True, timeout=WAIT_SECONDS)
    assert response.status_code == status
    if message is None:
        response.close()
        return
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert message in response.json()["error"]


def test_a_question_of_exactly_the_limit_is_accepted_and_post_is_refused(relay: RelayServer) -> None:
    response = open_stream(relay, "读" * MAX_QUERY_CHARS)
    response.close()
    refused = requests.post(f"{relay.url}chat/stream?query=hi", data=b"{}", timeout=WAIT_SECONDS)
    assert refused.status_code == 405 and "GET" in refused.json()["error"]


@pytest.mark.parametrize(
    "session, status, words",
    [("short", 400, "session must be 8 to 64"), ("x" * 65, 400, "8 to 64"), ("bad id!!", 400, "letters, digits")],
)
def test_a_malformed_session_is_refused(relay: RelayServer, session: str, status: int, words: str) -> None:
    response = requests.get(f"{relay.url}chat/stream", params={"query": "hi", "session": session}, timeout=WAIT_SECONDS)
    assert response.status_code == status and words in response.json()["error"]


def test_stop_takes_only_a_post_of_this_sites_page_naming_a_run(relay: RelayServer) -> None:
    stop = f"{relay.url}chat/stop"
    run = {"run": "0b6f2a4e-8d1c-4a57-9e3b-2f7c1d9a6b10", "session": "3f2a9c1e-0b7d"}
    got = requests.get(stop, params=run, timeout=WAIT_SECONDS)
    assert got.status_code == 405 and got.headers["Allow"] == "POST" and "use POST" in got.json()["error"]
    foreign = requests.post(stop, params=run, headers={"Origin": "http://evil.example"}, timeout=WAIT_SECONDS)
    assert foreign.status_code == 403  # a form on another site cannot stop your answer
    beacon = {"Origin": relay.url.rstrip("/"), "Sec-Fetch-Site": "same-origin", "Content-Type": "text/plain"}
    unknown = requests.post(stop, params=run, headers=beacon, data=b"", timeout=WAIT_SECONDS)
    assert unknown.status_code == 404 and "no answer" in unknown.json()["error"]  # sendBeacon's shape: passes
    nameless = requests.post(stop, params={"session": run["session"]}, timeout=WAIT_SECONDS)
    assert nameless.status_code == 400 and "missing ?run=" in nameless.json()["error"]
    bad = requests.post(stop, params={"run": "x!"}, timeout=WAIT_SECONDS)
    assert bad.status_code == 400 and "run must be 8 to 64" in bad.json()["error"]


# ── other sites and other host names ────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Sec-Fetch-Site": "same-origin"}, 200),  # the page's own EventSource
        ({"Sec-Fetch-Site": "none"}, 200),  # a URL typed into the address bar
        ({"Sec-Fetch-Site": "cross-site"}, 403),  # another site open in the same browser
        ({"Host": "evil.example"}, 403),  # a DNS name made to point at 127.0.0.1
    ],
)
def test_other_sites_cannot_start_runs(relay: RelayServer, headers: dict[str, str], status: int) -> None:
    response = requests.get(f"{relay.url}chat/stream?query=hi", headers=headers, stream=True, timeout=WAIT_SECONDS)
    assert response.status_code == status
    if status == 403:
        assert "refused" in response.json()["error"] or "only answers" in response.json()["error"]
    response.close()


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://evil.example", 403),
        ("null", 403),  # a sandboxed frame or a file:// page
        ("http://127.0.0.1:1", 403),  # another local port is another origin
        ("SAME", 200),
    ],
)
def test_a_foreign_origin_is_refused_even_without_sec_fetch_site(relay: RelayServer, origin: str, status: int) -> None:
    headers = {"Origin": relay.url.rstrip("/") if origin == "SAME" else origin}  # no Sec-Fetch-Site: an older browser
    response = requests.get(f"{relay.url}chat/stream?query=hi", headers=headers, timeout=WAIT_SECONDS)
    assert response.status_code == status
    if status == 403:
        assert "Origin" in response.json()["error"]


@pytest.mark.parametrize(
    ("request_line", "status"),
    [
        (b"GET /../../etc/passwd HTTP/1.1", b"404"),
        (b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1", b"404"),
        (b"GET /page.html/../../relay.py HTTP/1.1", b"404"),
        (b"PUT / HTTP/1.1", b"405"),  # every method reaches the application, which says what it takes
        (b"DELETE /chat/stream HTTP/1.1", b"405"),
        (b"TRACE / HTTP/1.1", b"405"),
        (b"BREW / HTTP/1.1", b"405"),
        (b"GET /chat/stop HTTP/1.1", b"405"),
    ],
)
def test_traversal_and_odd_methods_are_refused(relay: RelayServer, request_line: bytes, status: bytes) -> None:
    port = relay.server_address[1]
    head = b"\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % port
    reply = raw_request(port, request_line + head)
    assert reply.split(b" ")[1] == status, reply[:200]
    assert b"root:" not in reply and b"import " not in reply
    assert "error" in json.loads(reply.split(b"\r\n\r\n", 1)[1])
    if status == b"405":  # RFC 9110 §15.5.6: a 405 says which methods the resource takes
        assert (b"\r\nAllow: POST\r\n" if b"/chat/stop" in request_line else b"\r\nAllow: GET\r\n") in reply


# ── the page ────────────────────────────────────────────────────────────────────────────


def test_the_page_may_run_only_its_own_script_and_is_never_framed(relay: RelayServer) -> None:
    page = requests.get(relay.url, timeout=WAIT_SECONDS)
    missing = requests.get(relay.url + "nowhere", timeout=WAIT_SECONDS)
    policy = page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "'unsafe-inline'" not in policy and re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", policy)
    assert page.headers["X-Content-Type-Options"] == "nosniff" and page.headers["X-Frame-Options"] == "DENY"
    assert missing.headers["X-Content-Type-Options"] == "nosniff"


def test_xss_payloads_travel_as_json_text_and_the_page_never_parses_them(tmp_path: Path) -> None:
    payload = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'</textarea>"
    with sse_server(text_reply(payload)) as model:
        relay = start_relay(model.base_url, tmp_path)
        try:
            response = open_stream(relay, "hi")
            _, events = read_all(response)
            page = requests.get(relay.url, timeout=WAIT_SECONDS).text
        finally:
            relay.close()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert {"event": "text", "data": {"text": payload}} in events
    script = page.split("<script>")[1]
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script
    assert "createTextNode" in script or "textContent" in script


def test_a_path_that_is_not_found_is_quoted_as_it_was_asked(relay: RelayServer) -> None:
    missing = requests.get(f"{relay.url}读我", timeout=WAIT_SECONDS)  # sent as %E8%AF%BB%E6%88%91
    assert missing.status_code == 404 and missing.json()["error"].startswith("not found: /读我 (try ./")


PREFIXES = [  # SCRIPT_NAME, as a server (or, under gunicorn, a request header) may hand it on → Location
    ("/ink", "/ink/"),
    ("", "/"),
    ("/", "/"),
    ("//evil.example", "/evil.example/"),
    ("///evil.example", "/evil.example/"),
    ("/\\evil.example", "/%5Cevil.example/"),  # browsers read /\evil as //evil
    ("\\\\evil.example", "/%5C%5Cevil.example/"),
    ("/\t/evil.example", "/%09/evil.example/"),  # WHATWG URLs drop tabs and newlines
    ("/\n/evil.example", "/%0A/evil.example/"),
    ("/ /evil.example", "/%20/evil.example/"),
    ("http://evil.example", "/http:/evil.example/"),
    ("/http:evil.example", "/http:evil.example/"),
    ("/ink/../../evil", "/ink/../../evil/"),  # dot segments: resolved on this host all the same
    ("/ink?x=1#y", "/ink%3Fx=1%23y/"),
    ("/%2F%2Fevil.example", "/%252F%252Fevil.example/"),
    ("/\u00e9t\u00e9", "/%E9t%E9/"),  # PEP 3333: a byte per character
]


def redirect_for(script_name: str) -> str:
    """The Location the relay answers a request for its prefix without the slash."""
    app = RelayApp(run_settings(provider_factory=lambda: None, model="m", workspace="."))
    said: list[Any] = []
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "", "SCRIPT_NAME": script_name, "SERVER_NAME": "127.0.0.1"}
    app({**environ, "SERVER_PORT": "8000", "HTTP_HOST": "127.0.0.1:8000"}, lambda *args: said.append(args))
    assert said[0][0].startswith("308")
    return str(dict(said[0][1])["Location"])


@pytest.mark.parametrize(("script_name", "location"), PREFIXES)
def test_the_prefix_redirect_stays_on_this_site(script_name: str, location: str) -> None:
    assert redirect_for(script_name) == location


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="needs node for WHATWG URL parsing (apt-get install nodejs)")
def test_every_redirect_resolves_to_this_site_as_a_browser_reads_it() -> None:
    """Node's URL is the WHATWG parser browsers use: each Location, resolved against the page, stays here."""
    locations = [redirect_for(script_name) for script_name, _ in PREFIXES]
    script = "for (const l of JSON.parse(process.argv[1])) console.log(new URL(l, 'http://127.0.0.1:8000/ink').host)"
    done = subprocess.run([str(NODE), "-e", script, json.dumps(locations)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["127.0.0.1:8000"] * len(locations)


@pytest.mark.parametrize(
    "headers", [{"Host": "LOCALHOST:{port}"}, {"Host": "LocalHost:{port}", "Origin": "http://LOCALHOST:{port}"}]
)
def test_host_names_compare_in_any_case(relay: RelayServer, headers: dict[str, str]) -> None:
    port = relay.server_address[1]
    given = {name: value.format(port=port) for name, value in headers.items()}
    response = requests.get(relay.url, headers=given, timeout=WAIT_SECONDS)
    assert response.status_code == 200


@pytest.mark.skipif(NEEDS_REDIS is not None, reason=NEEDS_REDIS or "")
def test_a_client_is_told_the_store_is_unavailable_and_the_log_is_told_why(tmp_path: Path) -> None:
    from ink_py.second_article.redis_client import connect_redis
    from ink_py.second_article.stores import redis_stores

    doomed = RedisServer(tmp_path / "redis")
    conversations, runs = redis_stores(connect_redis(doomed.url), 600, 10.0)
    doomed.kill()  # Redis goes away after the relay started
    settings = run_settings(provider_factory=lambda: None, model="m", workspace=".")
    for store, run_log, what in [(conversations, None, "conversation"), (None, runs, "run")]:
        app, log, said = RelayApp(settings, store, run_log=run_log), io.StringIO(), []
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/chat/stream", "SERVER_NAME": "127.0.0.1"}
        environ |= {"QUERY_STRING": "query=hi&session=session-1", "SERVER_PORT": "8000", "wsgi.errors": log}
        body = b"".join(app(environ, lambda *args, said=said: said.append(args)))
        assert said[0][0] == "503 Service Unavailable" and dict(said[0][1])["Retry-After"] == "5"
        assert json.loads(body) == {"error": f"the {what} store is unavailable"}  # not Redis's address
        [line] = log.getvalue().splitlines()
        assert line.startswith("ink-py serve: ") and f"127.0.0.1:{doomed.port}" in line  # the log has it
