"""What the relay refuses before any model is asked, and what its page may do — beyond the second article.

The article's relay answers whoever asks. This one listens on 127.0.0.1 unless told
otherwise (``is_loopback``), refuses runs started by other sites (``Sec-Fetch-Site``,
``Origin``) or reached through a foreign host name (``Host``, DNS rebinding), unless
bound beyond this machine or the name is in ``INK_ALLOWED_HOSTS`` (``answers_any_host``):
see ``foreign_request``. It reads the query string once (``parameters``: 414 over 64 KiB,
before any parsing), answers a question over 4000 characters with 413, a malformed session or
run id and a resume point that is not an event id with 400 (``question_from``, ``session_from``,
``run_from``, ``resume_point``: a ``BadRequest`` each), redirects only within the site
(``prefix_location``), and serves its page with a CSP that lets only the page's own inline
script and style run (``page_headers``).

    >>> question_from(parameters("query=%E8%AF%BB%E5%8F%96+README.md"))
    '读取 README.md'
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from collections.abc import Collection, Mapping
from typing import Protocol
from urllib.parse import parse_qsl, quote

MAX_QUERY_CHARS = 4000  # a longer question gets 413, before any model is asked
MAX_QUERY_STRING = 64 * 1024  # a longer query string gets 414, unparsed (4000 Chinese characters: about 36 KB)
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")  # a UUID from crypto.randomUUID() fits; so do older forms
_EVENT_ID = re.compile(r"[0-9]{1,9}")  # ASCII digits only ([0-9], not \d: "١٢" is no event id)
Parameters = Mapping[str, str]  # a query string's parameters: the first value of each name


# ── the question and the session of /chat/stream ────────────────────────────────────────


class BadRequest(Exception):
    """A client's mistake, or a refusal: answered with ``status`` and a JSON ``{"error": message}``;
    ``retry_after`` seconds as that header (429, 503); ``detail`` for the server's log only."""

    def __init__(self, status: int, message: str, retry_after: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status, self.retry_after, self.detail = status, retry_after, detail


def parameters(query_string: str) -> Parameters:
    """Beyond the article: the query string read once, bounded before it is parsed; BadRequest(414) beyond.

    >>> parameters("query=hi&run=a&run=b&flag")
    {'query': 'hi', 'run': 'a', 'flag': ''}
    >>> try:
    ...     parameters("query=" + "%E5" * 30_000)
    ... except BadRequest as bad:
    ...     print(bad.status, bad)
    414 the query string is 90006 characters; at most 65536 are accepted
    """
    if len(query_string) > MAX_QUERY_STRING:
        message = f"the query string is {len(query_string)} characters; at most {MAX_QUERY_STRING} are accepted"
        raise BadRequest(414, message)
    found: dict[str, str] = {}
    for name, value in parse_qsl(query_string, keep_blank_values=True, errors="replace"):
        found.setdefault(name, value)  # the first of a repeated name, as parse_qs(...)[name][0]
    return found


def question_from(params: Parameters) -> str:
    """The ``query`` parameter of ``/chat/stream``, checked; BadRequest if unusable.

    >>> for qs in ("", "query=%20", "query=" + "x" * 4001):
    ...     try:
    ...         question_from(parameters(qs))
    ...     except BadRequest as bad:
    ...         print(bad.status, bad)
    400 missing ?query=… (the question to ask)
    400 the query is empty: ask a question
    413 the query is 4001 characters; at most 4000 are accepted
    """
    if "query" not in params:
        raise BadRequest(400, "missing ?query=… (the question to ask)")
    query = params["query"].strip()
    if not query:
        raise BadRequest(400, "the query is empty: ask a question")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(413, f"the query is {len(query)} characters; at most {MAX_QUERY_CHARS} are accepted")
    return query


def session_from(params: Parameters) -> str | None:
    """The optional ``session`` parameter: the conversation to continue; BadRequest if malformed.

    >>> session_from({"query": "hi"}), session_from({"query": "hi", "session": "3f2a9c1e-0b7d"})
    (None, '3f2a9c1e-0b7d')
    """
    return _id_from(params, "session")


def run_from(params: Parameters) -> str | None:
    """Beyond the article: the optional ``run`` parameter, the answer's own id (the page makes one
    per question with ``crypto.randomUUID()``); BadRequest if malformed.

    >>> run_from({"run": "0b6f2a4e-8d1c-4a57-9e3b-2f7c1d9a6b10"})
    '0b6f2a4e-8d1c-4a57-9e3b-2f7c1d9a6b10'
    """
    return _id_from(params, "run")


def _id_from(params: Parameters, name: str) -> str | None:
    value = params.get(name)
    if value is not None and not _SESSION_ID.fullmatch(value):
        raise BadRequest(400, f"{name} must be 8 to 64 letters, digits, - or _ (a UUID)")
    return value


def resume_point(params: Parameters, last_event_id: str | None) -> int | None:
    """Beyond the article: the id of the last event a client has, or None (it has none).
    EventSource's ``Last-Event-ID`` header (sent when it reconnects) wins over ``after=``
    (a reloaded page's): it is the newer of the two. BadRequest unless a whole number.

    >>> resume_point({"after": "12"}, None), resume_point({"after": "12"}, "40"), resume_point({}, None)
    (12, 40, None)
    >>> try:
    ...     resume_point({"after": "-1"}, None)
    ... except BadRequest as bad:
    ...     print(bad.status, bad)
    400 after must be an event id, a whole number from 0 to 999999999 (got '-1')
    """
    if last_event_id:  # an empty header is no id: EventSource sends none until it has one
        source, value = "Last-Event-ID", last_event_id
    elif "after" in params:
        source, value = "after", params["after"]
    else:
        return None
    if not _EVENT_ID.fullmatch(value):
        shown = ascii(value[:20]) + ("…" if len(value) > 20 else "")  # a header may be long, or latin-1 bytes
        raise BadRequest(400, f"{source} must be an event id, a whole number from 0 to 999999999 (got {shown})")
    return int(value)


def prefix_location(script_name: str) -> str:
    """Beyond the article: where ``/prefix`` redirects — ``/prefix/``, always a path on this site.
    Whatever ``SCRIPT_NAME`` holds (a request header under some servers), the location is one
    ``/`` and then segments percent-encoded, so no browser reads it as another host
    (``//evil``, ``/\\evil``, a tab or newline that WHATWG URLs drop).

    >>> prefix_location("/ink"), prefix_location("//evil.example"), prefix_location("/\\\\evil.example")
    ('/ink/', '/evil.example/', '/%5Cevil.example/')
    """
    raw = script_name.encode("latin-1", "replace")  # PEP 3333: the path's bytes, one character each
    segments = [quote(segment, safe="!$&'()*+,;=:@~") for segment in raw.split(b"/") if segment]
    return "/" + "".join(f"{segment}/" for segment in segments)


# ── who may ask: other sites, foreign host names ────────────────────────────────────────


class Headers(Protocol):
    """A request's headers: a Mapping."""

    def get(self, name: str, default: None = None, /) -> str | None: ...


def foreign_request(
    headers: Headers, port: int, loopback: bool, scheme: str = "http", hosts: Collection[str] = ()
) -> str | None:
    """Why a request must be refused, or None. Bound to this machine, the relay answers
    only its own page, a typed URL and tools like curl: another site open in the same
    browser may not start runs (``Sec-Fetch-Site``), nor may a DNS name that was made to
    point at 127.0.0.1 read them (``Host``) — unless it is one of ``hosts``
    (``INK_ALLOWED_HOSTS``: the names a proxy in front passes on).

    >>> foreign_request({"Host": "127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}, 8000, True) is None
    True
    >>> foreign_request({"Host": "127.0.0.1:8000", "Sec-Fetch-Site": "cross-site"}, 8000, True)
    'requests from other sites are refused (Sec-Fetch-Site: cross-site)'
    >>> print(foreign_request({"Host": "evil.example:8000"}, 8000, True).replace(" (", "\\n("))
    this relay only answers http://127.0.0.1:8000/ or http://localhost:8000/
    (Host: evil.example:8000; INK_ALLOWED_HOSTS names others)
    >>> foreign_request({"Host": "ink.example", "Origin": "https://ink.example"}, 8000, True, "https", ["ink.example"])
    >>> foreign_request({"Host": "LOCALHOST:8000", "Origin": "http://LocalHost:8000"}, 8000, True)  # any case
    """
    site = headers.get("Sec-Fetch-Site")  # sent by browsers only; curl and requests send none
    if site is not None and site not in ("same-origin", "none"):  # "none": typed in the address bar
        return f"requests from other sites are refused (Sec-Fetch-Site: {site[:100]})"
    host = headers.get("Host")
    origin = headers.get("Origin")  # beyond the article: older browsers send Origin but no Sec-Fetch-Site
    if origin is not None and origin.lower() not in own_origins(host, port, loopback, scheme, hosts):
        return f"requests from other sites are refused (Origin: {origin[:200]})"
    names = {name.lower() for name in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", *hosts)}
    if loopback and host is not None and host.lower() not in names:  # host names are case-insensitive
        return (
            f"this relay only answers http://127.0.0.1:{port}/ or http://localhost:{port}/ (Host: {host[:200]}; "
            "INK_ALLOWED_HOSTS names others)"
        )
    return None


def own_origins(
    host: str | None, port: int, loopback: bool, scheme: str = "http", hosts: Collection[str] = ()
) -> set[str]:
    """The origins of this relay's own page, in lower case: the loopback names, or the Host it was
    reached by, and the allowed ``hosts`` (by http or https: a proxy in front may add TLS).

    >>> sorted(own_origins("127.0.0.1:8000", 8000, True))[0]
    'http://127.0.0.1:8000'
    """
    allowed = {f"{either}://{name.lower()}" for name in hosts for either in ("http", "https")}
    if loopback:
        return allowed | {f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"}
    return allowed | ({f"{scheme}://{host.lower()}"} if host else set())


def answers_any_host(server_name: str, hosts: Collection[str] = ()) -> bool:
    """Whether any Host may reach the relay: ``INK_ALLOWED_HOSTS=*``, or a server bound to an
    address beyond this machine (``--host 0.0.0.0``, ``gunicorn -b 0.0.0.0:8000``: ``SERVER_NAME``
    is that address). Otherwise — loopback, or a name that does not say (waitress answers
    ``waitress.invalid``) — only the loopback names and ``hosts`` (DNS rebinding).

    >>> answers_any_host("0.0.0.0"), answers_any_host("127.0.0.1"), answers_any_host("waitress.invalid", ["*"])
    (True, False, True)
    """
    if "*" in hosts:
        return True
    try:
        return not ipaddress.ip_address(server_name.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    """
    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# ── what the page may do ────────────────────────────────────────────────────────────────


def page_headers(page: str) -> dict[str, str]:
    """Beyond the article: the page may run only its own inline script and style, talk only to
    this server, and never be framed (clickjacking).

    >>> page_headers("<script>x</script>")["Content-Security-Policy"].split("; ")[1]
    "script-src 'sha256-LXEWQrcmsEQBYnyp+6wy9chTD7GQPMTbAiWHF5IaSIE='"
    """
    scripts = " ".join(_hashes(page, "script")) or "'none'"
    styles = " ".join(_hashes(page, "style")) or "'none'"
    policy = (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; img-src data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return {"Content-Security-Policy": policy, "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}


def _hashes(page: str, tag: str) -> list[str]:
    """CSP hash sources for each inline ``<tag>…</tag>`` of the page."""
    bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.DOTALL)
    return [f"'sha256-{base64.b64encode(hashlib.sha256(b.encode('utf-8')).digest()).decode()}'" for b in bodies]
