"""A request head read strictly (RFC 9112) — what ink-py's two servers take before http.server parses it.

Not in either article. http.server is lenient where leniency lets one request hide inside another
(request smuggling): it splits the request line on any whitespace, joins folded header lines,
takes the first of two ``Content-Length`` headers, ignores ``Transfer-Encoding``, stops at a
header line it cannot read, and ``int()`` takes ``²``. ``BoundedHandler`` reads the header
lines with ``read_fields`` and asks ``head_problem``; http.server then parses only a head that
means one thing. Each refusal is a status and one line (docs/relay-wsgi.md):

    request line    METHOD SP TARGET SP HTTP/1.x CRLF — a token, visible ASCII       400 (505: not 1.x)
    header lines    NAME ":" OWS VALUE OWS CRLF — a token name, no fold, no CTL       400 (431: too many)
    Host            exactly one in HTTP/1.1                                           400
    Content-Length  one, ASCII digits only                                            400
    Transfer-Encoding  with a length, or not ending in chunked: 400; chunked: 501 (not taken)

    >>> fields = [b"Host: x\\r\\n", "Content-Length: ²\\r\\n".encode("latin-1"), b"\\r\\n"]
    >>> head_problem(b"POST / HTTP/1.1\\r\\n", fields)
    (400, "Content-Length must be ASCII digits, not '²'")
"""

from __future__ import annotations

import re
from io import BufferedIOBase

MAX_FIELDS = 64  # header lines (http.server allows 100 lines with the blank one)
MAX_FIELDS_BYTES = 64 * 1024  # all header lines together (the request line has its own 64 KiB)
TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"  # RFC 9110 §5.6.2
REQUEST_LINE = re.compile(rb"(" + TOKEN + rb") ([\x21-\x7e]+) HTTP/([0-9])\.([0-9])\r\n")
FIELD_LINE = re.compile(rb"(" + TOKEN + rb"):[ \t]*(.*?)[ \t]*\r\n", re.DOTALL)
FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")  # field-vchar, SP, HTAB: no CR, LF, NUL or other CTL
ABSOLUTE_FORM = re.compile(rb"https?://[^/?#]+", re.IGNORECASE)
Problem = tuple[int, str]


class HeadError(Exception):
    """A head that cannot be read to its end: ``status`` and the reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_fields(rfile: BufferedIOBase) -> list[bytes]:
    """The header lines after the request line, up to and including the blank one, as sent.

    HeadError past ``MAX_FIELDS`` lines or ``MAX_FIELDS_BYTES`` bytes, or if the head ends early.
    """
    lines: list[bytes] = []
    size = 0
    while True:
        line = rfile.readline(MAX_FIELDS_BYTES + 1 - size)
        size += len(line)
        if size > MAX_FIELDS_BYTES:
            raise HeadError(431, f"the request's header lines are over {MAX_FIELDS_BYTES} bytes together")
        if not line.endswith(b"\n"):
            raise HeadError(400, "the request head ended before its blank line")
        lines.append(line)
        if line in (b"\r\n", b"\n"):
            return lines
        if len(lines) > MAX_FIELDS:
            raise HeadError(431, f"the request has over {MAX_FIELDS} header lines")


def request_line_problem(line: bytes) -> Problem | None:
    """Why the request line is refused, or None.

    >>> request_line_problem(b"GET  / HTTP/1.1\\r\\n")
    (400, "malformed request line 'GET  / HTTP/1.1' (METHOD SP /TARGET SP HTTP/1.1, then CRLF)")
    >>> request_line_problem(b"GET / HTTP/2.0\\r\\n"), request_line_problem(b"BREW /pot HTTP/1.1\\r\\n")
    ((505, 'only HTTP/1.0 and HTTP/1.1 are spoken here'), None)
    """
    if not line.endswith(b"\r\n"):
        return 400, "the request line must end with CRLF (a bare LF ends no line here)"
    found = REQUEST_LINE.fullmatch(line)
    if found is None:
        shown = line.rstrip(b"\r\n")[:80].decode("latin-1")
        return 400, f"malformed request line {shown!r} (METHOD SP /TARGET SP HTTP/1.1, then CRLF)"
    method, target, major = found[1], found[2], found[3]
    if major != b"1":
        return 505, "only HTTP/1.0 and HTTP/1.1 are spoken here"
    if not (target.startswith(b"/") or ABSOLUTE_FORM.match(target) or (target == b"*" and method == b"OPTIONS")):
        return 400, "the request target must be a path (/…), an http:// URL, or * with OPTIONS"
    return None


def head_problem(line: bytes, fields: list[bytes]) -> Problem | None:
    """Why the head (request line and ``read_fields``' lines) is refused, or None: one framing only."""
    problem = request_line_problem(line)
    if problem is not None:
        return problem
    values: dict[bytes, list[bytes]] = {}
    for raw in fields[:-1]:
        if raw.startswith((b" ", b"\t")):
            return 400, "a folded header line (obs-fold, RFC 9112 §5.2) is not accepted"
        field = FIELD_LINE.fullmatch(raw)
        if field is None or not FIELD_VALUE.fullmatch(field[2]):
            shown = raw.rstrip(b"\r\n")[:80].decode("latin-1")
            return 400, f"malformed header line {shown!r} (NAME: VALUE, no control characters, then CRLF)"
        values.setdefault(field[1].lower(), []).append(field[2])
    if fields[-1:] != [b"\r\n"]:
        return 400, "the head must end with CRLF CRLF (a bare LF ends no line here)"
    return framing_problem(values, line.endswith(b"HTTP/1.1\r\n"))


def framing_problem(values: dict[bytes, list[bytes]], http11: bool) -> Problem | None:
    """Where the body ends must be beyond doubt (RFC 9112 §6.3); ``values``: lower-case name → its values.

    >>> framing_problem({b"host": [b"x"], b"content-length": [b"5", b"5"]}, True)
    (400, 'two Content-Length headers: one length only (RFC 9110 §8.6)')
    """
    hosts, lengths, codings = (values.get(name, []) for name in (b"host", b"content-length", b"transfer-encoding"))
    if len(hosts) > 1 or (http11 and not hosts):
        return 400, "an HTTP/1.1 request needs exactly one Host header (RFC 9112 §3.2)"
    if codings and lengths:
        return 400, "Content-Length and Transfer-Encoding together: the body's end would be in doubt (RFC 9112 §6.1)"
    if codings:
        final = b",".join(codings).split(b",")[-1].strip().lower()
        if final != b"chunked" or not http11:
            return 400, "Transfer-Encoding must end in chunked, in HTTP/1.1 (RFC 9112 §6.3)"
        return 501, "this server takes no chunked request bodies: send Content-Length"
    if len(lengths) > 1:
        return 400, "two Content-Length headers: one length only (RFC 9110 §8.6)"
    if lengths and not lengths[0].isdigit():  # bytes.isdigit() is ASCII digits only (str's takes '²')
        return 400, f"Content-Length must be ASCII digits, not {lengths[0][:20].decode('latin-1')!r}"
    return None
