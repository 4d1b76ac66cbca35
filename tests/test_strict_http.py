"""``ink-py serve`` and ``serve-model`` read a request head strictly (ink_py/strict_http.py, RFC 9112).

A head that could mean two things is refused with one JSON error line and the connection
closed, so that nothing hidden in a body is ever answered as a second request: a
``Content-Length`` that is not ASCII digits (``²``: ``str.isdigit`` takes it, ``int`` does
not), two lengths, a length with ``Transfer-Encoding``, chunked request bodies (501), folded
or malformed header lines, a loose request line. Every method reaches the relay's application,
which answers 405 with ``Allow`` (a HEAD without the body). Tables first (the rule), then the
same heads over real sockets on 127.0.0.1 against both servers. Random heads:
tests/test_http_fuzz.py.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import pytest

from ink_py.scripted.server import ModelServer, start_model_server
from ink_py.second_article.relay import RelayServer
from ink_py.strict_http import MAX_FIELDS, head_problem

from .raw_servers import raw_request
from .test_bounded_servers import port_of
from .test_relay import start_relay

WAIT = 10.0  # an upper bound on waiting for a reply, never a speed check
STATUS_LINE = re.compile(rb"^HTTP/1\.1 (\d{3}) ", re.MULTILINE)


def head(line: bytes = b"POST / HTTP/1.1", *fields: bytes, host: bool = True) -> tuple[bytes, list[bytes]]:
    """A request line and its header lines as ``read_fields`` returns them (blank line last)."""
    return line + b"\r\n", [*([b"Host: x\r\n"] if host else []), *(field + b"\r\n" for field in fields), b"\r\n"]


LENGTHS = [  # Content-Length values that are not 1*DIGIT: each is 400, never an internal error
    "²".encode("latin-1"),  # str.isdigit() is true for it, int() raises: the internal error
    "¹".encode("latin-1"),
    "1²".encode("latin-1"),
    "١".encode(),  # ARABIC-INDIC DIGIT ONE (UTF-8 bytes)
    b"+1",
    b"-1",
    b"0x1",
    b"1e3",
    b"1.0",
    b"1 1",
    b"\xa01",  # NBSP before it: Python's str.strip() would remove it, RFC 9110's OWS is SP and HTAB only
    b"",
    b"5, 5",  # RFC 9110 §8.6 allows folding equal values; refused here (MAY reject)
]


@pytest.mark.parametrize("value", LENGTHS, ids=repr)
def test_a_length_that_is_not_ascii_digits_is_400(value: bytes) -> None:
    status, message = head_problem(*head(b"POST / HTTP/1.1", b"Content-Length: " + value))
    assert status == 400 and "Content-Length must be ASCII digits" in message


FRAMING = [
    # (request line, header lines, status): one framing only, RFC 9112 §6
    (b"POST / HTTP/1.1", [b"Content-Length: 5", b"Content-Length: 5"], 400),  # even equal: one length only
    (b"POST / HTTP/1.1", [b"Content-Length: 0", b"Content-Length: 28"], 400),
    (b"POST / HTTP/1.1", [b"Content-Length: 5", b"Transfer-Encoding: chunked"], 400),
    (b"POST / HTTP/1.1", [b"Transfer-Encoding: chunked"], 501),  # no chunked request bodies taken
    (b"POST / HTTP/1.1", [b"Transfer-Encoding: gzip, chunked"], 501),
    (b"POST / HTTP/1.1", [b"Transfer-Encoding: gzip"], 400),  # not ending in chunked: no end at all
    (b"POST / HTTP/1.1", [b"Transfer-Encoding: chunked, gzip"], 400),
    (b"POST / HTTP/1.0", [b"Transfer-Encoding: chunked"], 400),  # HTTP/1.0 has no chunked
    (b"GET / HTTP/1.1", [b"Host: y"], 400),  # two Host headers
    (b"GET / HTTP/1.1", [b"X-A: 1", b" folded"], 400),  # obs-fold
    (b"GET / HTTP/1.1", [b"Content-Length : 5"], 400),  # space before the colon
    (b"GET / HTTP/1.1", [b"No colon"], 400),
    (b"GET / HTTP/1.1", [b": no name"], 400),
    (b"GET / HTTP/1.1", ["Nämé: x".encode()], 400),
    (b"GET / HTTP/1.1", [b"X-A: a\x00b"], 400),  # NUL
    (b"GET / HTTP/1.1", [b"X-A: a\rb"], 400),  # bare CR
    (b"GET / HTTP/1.1", [b"X-A: a\x7fb"], 400),  # DEL
    (b"POST / HTTP/1.1", [b"Content-Length: \x0b1"], 400),  # VT: a control character, not whitespace
    (b"GET  / HTTP/1.1", [], 400),
    (b"GET\t/ HTTP/1.1", [], 400),
    (b"GET / HTTP/1.1 ", [], 400),
    (b"GET /", [], 400),  # HTTP/0.9
    (b"GET / http/1.1", [], 400),
    (b"G@T / HTTP/1.1", [], 400),
    (b"GET foo HTTP/1.1", [], 400),
    (b"GET /\xe5\xad\x97 HTTP/1.1", [], 400),
    (b"GET / HTTP/2.0", [], 505),
    (b"GET / HTTP/1.1", [b"X-A:\t 1 \t", b"Content-Length:  12  "], None),  # OWS around values: fine
    (b"GET http://127.0.0.1:8000/ HTTP/1.1", [], None),  # absolute-form
    (b"OPTIONS * HTTP/1.1", [], None),
    (b"BREW /pot HTTP/1.1", [b"X-A: \xe5\xad\x97"], None),  # any method token; obs-text in a value
]


@pytest.mark.parametrize(("line", "fields", "status"), FRAMING, ids=repr)
def test_the_head_has_one_framing_or_is_refused(line: bytes, fields: list[bytes], status: int | None) -> None:
    problem = head_problem(*head(line, *fields))
    assert (problem and problem[0]) == status, problem


def test_host_is_required_in_http_1_1_only_and_the_head_ends_with_crlf() -> None:
    assert head_problem(*head(b"GET / HTTP/1.1", host=False))[0] == 400  # type: ignore[index]
    assert head_problem(*head(b"GET / HTTP/1.0", host=False)) is None
    assert head_problem(b"GET / HTTP/1.1\n", [b"Host: x\r\n", b"\r\n"])[0] == 400  # type: ignore[index]
    assert head_problem(b"GET / HTTP/1.1\r\n", [b"Host: x\n", b"\n"])[0] == 400  # type: ignore[index]


# ── over the wire: ink-py serve and serve-model ────────────────────────────────────────


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as server:
        yield server


@pytest.fixture(scope="module")
def relay(model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RelayServer]:
    server = start_relay(model.base_url, tmp_path_factory.mktemp("workspace"))
    yield server
    server.close()


def port(server: RelayServer | ModelServer) -> int:
    return server.host_and_port[1] if isinstance(server, RelayServer) else port_of(server.base_url)


def replies(server: RelayServer | ModelServer, data: bytes) -> list[int]:
    """The statuses of every response ``data`` gets on one connection, until the server closes it."""
    reply = raw_request(port(server), data.replace(b"{host}", b"127.0.0.1:%d" % port(server)), WAIT)
    assert reply, "no reply"
    return [int(status) for status in STATUS_LINE.findall(reply)]


HIDDEN = b"GET /v1/models HTTP/1.1\r\nHost: {host}\r\n\r\n"  # a second request smuggled in a body
SMUGGLING = [
    (b"POST /chat/stop?run=abcdefgh HTTP/1.1\r\nHost: {host}\r\nContent-Length: \xb2\r\n\r\n" + HIDDEN, 400),
    (b"GET / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nContent-Length: 39\r\n\r\n" + HIDDEN, 400),
    (b"GET / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 39\r\nContent-Length: 39\r\n\r\n" + HIDDEN, 400),
    (
        b"GET / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + HIDDEN,
        400,
    ),
    (b"POST /chat/stop HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + HIDDEN, 501),
    (b"GET / HTTP/1.1\r\nHost: {host}\r\nX-A: 1\r\n Content-Length: 39\r\n\r\n" + HIDDEN, 400),
    (b"GET / HTTP/1.1\r\nHost: {host}\r\nNo colon\r\nContent-Length: 39\r\n\r\n" + HIDDEN, 400),
]


@pytest.mark.parametrize("which", ["serve", "serve-model"])
@pytest.mark.parametrize(("data", "status"), SMUGGLING, ids=range(len(SMUGGLING)))
def test_an_ambiguous_head_is_refused_and_no_hidden_request_is_answered(
    which: str, data: bytes, status: int, relay: RelayServer, model: ModelServer
) -> None:
    server = relay if which == "serve" else model
    reply = raw_request(port(server), data.replace(b"{host}", b"127.0.0.1:%d" % port(server)), WAIT)
    assert STATUS_LINE.findall(reply) == [b"%d" % status], reply[:300]  # one answer, then the connection closed
    assert b"\r\nConnection: close\r\n" in reply
    error = json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]
    assert isinstance(error, str) if which == "serve" else set(error) >= {"message", "type"}  # OpenAI's shape


def test_the_request_head_has_bounds_and_an_internal_error_never_shows(relay: RelayServer, model: ModelServer) -> None:
    many = b"".join(b"X-%d: 1\r\n" % n for n in range(MAX_FIELDS + 1))
    for server in (relay, model):
        assert replies(server, b"GET / HTTP/1.1\r\nHost: {host}\r\n" + many + b"\r\n") == [431]
        assert replies(server, b"GET / HTTP/1.1\r\nHost: {host}\r\nX-A: " + b"a" * 70_000 + b"\r\n\r\n") == [431]
        assert replies(server, b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: {host}\r\n\r\n") == [414]
        huge = b"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"
        assert replies(server, huge) == [413]  # 5000 digits: int() would raise, the length is never built


@pytest.mark.parametrize("method", [b"HEAD", b"PUT", b"DELETE", b"OPTIONS", b"PATCH", b"TRACE", b"BREW"])
def test_every_method_reaches_the_application_which_answers_405_with_allow(method: bytes, relay: RelayServer) -> None:
    with socket.create_connection(("127.0.0.1", port(relay)), timeout=WAIT) as conn:
        host = b"Host: 127.0.0.1:%d\r\n" % port(relay)
        request = method + b" /chat/stream?query=hi HTTP/1.1\r\n" + host + b"Content-Length: 0\r\n\r\n"
        conn.sendall(request + b"GET /nowhere HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n")
        reply = b""
        while piece := conn.recv(65536):
            reply += piece
    first, second = reply.split(b"HTTP/1.1 404", 1)  # the connection stays in step: the next request is answered
    assert first.startswith(b"HTTP/1.1 405 ") and b"\r\nAllow: GET\r\n" in first
    body = first.split(b"\r\n\r\n", 1)[1]
    length = int(re.search(rb"\r\nContent-Length: (\d+)\r\n", first)[1])  # type: ignore[index]
    if method == b"HEAD":
        assert body == b"" and length > 0  # the head alone: the length of the body a GET would get
    else:
        assert len(body) == length and "use GET" in json.loads(body)["error"]
    assert b"not found: /nowhere" in second


def test_absolute_form_targets_are_held_to_their_own_host(relay: RelayServer) -> None:
    """RFC 9112 §3.2.2: the host in ``GET http://host/…`` is the Host, whatever the header says."""
    good = b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n" % port(relay)
    assert replies(relay, good) == [200]
    bad = b"GET http://evil.example/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port(relay)
    assert replies(relay, bad) == [403]


def test_a_chunked_upload_to_serve_model_gets_501_and_a_length_is_still_read(model: ModelServer) -> None:
    body = b'{"messages": [{"role": "user", "content": "hi"}]}'
    chunked = b"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert replies(model, chunked + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)) == [501]
    plain = b"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
    assert replies(model, plain % len(body) + body) == [200]
