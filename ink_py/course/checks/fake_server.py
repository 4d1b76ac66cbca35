"""A scripted HTTP server on 127.0.0.1 (port 0) for transport tests.

Each POST takes the next ``Reply`` from the script. A reply says what status and headers
to send, how to frame the body (chunked, or ended by closing the connection) and where
to pause: a ``Pause`` waits for a ``threading.Event`` the test sets (with a time limit),
so tests can prove an event reached the client *before* the server went on.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Pause:
    """Wait here until ``event`` is set (at most ``limit`` seconds); records whether it was."""

    event: threading.Event = field(default_factory=threading.Event)
    limit: float = 10.0
    released_in_time: bool | None = None
    client_gone: bool = False


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    parts: list[bytes | Pause] = field(default_factory=list)  # body pieces, pauses between them
    framing: str = "chunked"  # "chunked" | "close" | "length"
    cut: bool = False  # end a chunked body without its final 0-length chunk (a broken connection)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


class FakeModelServer:
    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.requests: list[Recorded] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                owner.requests.append(Recorded(self.path, dict(self.headers), json.loads(raw or b"null")))
                reply = owner.script.pop(0) if owner.script else Reply(500, parts=[b'{"error":"script ended"}'])
                owner._send(self, reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def _send(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        handler.send_response(reply.status)
        headers = {"Content-Type": "text/event-stream" if reply.status == 200 else "application/json", **reply.headers}
        if reply.framing == "chunked":
            headers["Transfer-Encoding"] = "chunked"
        elif reply.framing == "close":
            headers["Connection"] = "close"
            handler.close_connection = True
        else:
            headers["Content-Length"] = str(sum(len(p) for p in reply.parts if isinstance(p, bytes)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        try:
            for part in reply.parts:
                if isinstance(part, Pause):
                    part.released_in_time = part.event.wait(part.limit)
                    continue
                if reply.framing == "chunked":
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                else:
                    handler.wfile.write(part)
                handler.wfile.flush()
            if reply.framing == "chunked" and not reply.cut:
                handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except OSError:
            for part in reply.parts:
                if isinstance(part, Pause):
                    part.client_gone = True
        if reply.framing != "length":
            handler.close_connection = True

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
