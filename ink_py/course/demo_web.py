"""``ink-py demo --web``: the article's §3 step-through as a page, the way the article shows it.

The same steps as the terminal demo (``record_steps`` in demo_steps.py), recorded once at
start-up on the main thread and served to a browser on 127.0.0.1: ``GET /`` is
``demo_page.html`` (no external assets), ``GET /scenarios.json`` the choices, ``GET
/steps.json?name=…`` one recording's steps. Sections: ``DemoServer``, the handler, ``serve``
(until Ctrl-C). What the page shows and what it refuses: docs/modules.md.

    >>> server = DemoServer({"x": {"label": "x", "steps": []}}, {})
    >>> server.url.startswith("http://127.0.0.1:")
    True
    >>> server.close()
"""

from __future__ import annotations

import json
import sys
import threading
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..bounded_server import BoundedHandler, BoundedServer


class DemoServer(BoundedServer):
    """The page and its JSON, on a loopback address; ``start`` serves from a thread (tests).

    Bounded like ``ink-py serve``: at most MAX_HANDLERS connections, a deadline for each request head."""

    def __init__(
        self, pages: dict[str, dict[str, Any]], code: dict[str, Any], host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.pages = pages
        self.code = code
        self.page = resources.files(__package__).joinpath("demo_page.html").read_bytes()
        super().__init__((host, port), _Handler)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.host_and_port
        return f"http://{host}:{port}/"

    def start(self) -> DemoServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self.shutdown()
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a browser that goes away mid-response is not an error worth a traceback


PAGE_HEADERS = {
    # Nothing from elsewhere: no scripts, styles, images or connections but this server's own.
    "Content-Security-Policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


class _Handler(BoundedHandler):
    server: DemoServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        host = self.headers.get("Host")
        if host is not None and host not in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            self._send(403, "text/plain; charset=utf-8", f"this demo only answers http://127.0.0.1:{port}/".encode())
            return
        url = urlsplit(self.path)
        if url.path == "/":
            self._send(200, "text/html; charset=utf-8", self.server.page)
        elif url.path == "/scenarios.json":
            choices = [{"name": name, "label": page["label"]} for name, page in self.server.pages.items()]
            self._json({"scenarios": choices})
        elif url.path == "/steps.json":
            name = (parse_qs(url.query).get("name") or [""])[0]
            page = self.server.pages.get(name)
            if page is None:
                self._json({"error": f"no recording named {name[:80]!r}"}, 404)
            else:
                self._json({"name": name, **page, "code": self.server.code})
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found")

    def _json(self, value: Any, status: int = 200) -> None:
        self._send(status, "application/json; charset=utf-8", json.dumps(value, ensure_ascii=False).encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in PAGE_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def serve(pages: dict[str, dict[str, Any]], code: dict[str, Any], port: int) -> int:
    """Serve until Ctrl-C: the URL is the first line printed."""
    try:
        server = DemoServer(pages, code, port=port)
    except OSError as err:
        print(f"error: cannot listen on 127.0.0.1:{port}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(server.url, flush=True)
    print(f"open {server.url} in a browser · ← → step · Ctrl-C stops", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
