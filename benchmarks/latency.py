"""How long an event waits between the server's socket and the caller — over real HTTP.

A server in its own process (``python benchmarks/latency.py serve``, started by ``measure``)
streams ``frames`` chat.completion.chunk frames with ``pause`` seconds between them and
notes, with ``time.perf_counter()``, the moment each frame's last byte was handed to the
kernel. The client notes when the matching event reaches it. Both read the same monotonic
clock, so the difference is the delivery latency. The server sets TCP_NODELAY, as real
servers do, so the kernel sends each frame at once.

Two ways a server can delimit the body:

    chunked   ``Transfer-Encoding: chunked`` — each write arrives as a chunk
    close     no length at all; the body ends when the server closes the connection
              (HTTP/1.0 style — some proxies and small servers do this)

Clients measured:

    ink_py provider.stream     OpenAICompletionsProvider(base_url).stream(request): the whole
                               real stack (requests, read_body's read1, parse_sse, assemble_stream)
    requests iter_content(None) + parse_sse, and requests iter_lines(): what a reader built on
                               requests' own iterators gets — they hold data back on a
                               close-delimited body (iter_content(None) until the close,
                               iter_lines until 512 bytes have arrived)

Each frame's text is ``<i>``, so the client knows which frame an event came from.
"""

from __future__ import annotations

import json
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests
from streams import chunk, frame

MODES = ("chunked", "close")


# ── the server (a separate process) ─────────────────────────────────────────────────────


def serve(frames: int, pause: float) -> None:
    """Listen on 127.0.0.1, print the port, stream on ``POST /<mode>/v1/chat/completions``.

    ``GET /times`` answers the send times of the last stream, as a JSON list.
    """
    sent: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            body = json.dumps(sent).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            mode = self.path.strip("/").split("/")[0]
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if mode == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")  # no length: the close ends the body
                self.close_connection = True
            self.end_headers()
            sent.clear()
            pieces = [frame(chunk({"content": f"<{i}>"})) for i in range(frames)]
            pieces += [frame(chunk({}, "stop")), b"data: [DONE]\n\n"]
            for i, data in enumerate(pieces):
                if mode == "chunked":
                    data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
                self.wfile.write(data)  # unbuffered: one sendall
                if i < frames:
                    sent.append(time.perf_counter())
                    time.sleep(pause)
            if mode == "chunked":
                self.wfile.write(b"0\r\n\r\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]  # a client hanging up is fine
    print(server.server_address[1], flush=True)
    server.serve_forever()


# ── the clients ─────────────────────────────────────────────────────────────────────────


def via_provider(url: str) -> Iterator[tuple[int, float]]:
    from ink_py.provider.openai_completions import OpenAICompletionsProvider

    request = {"model": "bench", "system": "", "messages": [{"role": "user", "content": "go"}]}
    for event in OpenAICompletionsProvider(url).stream(request):  # type: ignore[arg-type]
        if event["type"] == "text_delta":
            yield frame_number(event["text"]), time.perf_counter()


def via_iter_content(url: str) -> Iterator[tuple[int, float]]:
    from ink_py.provider.shared import parse_sse

    with requests.post(f"{url}/chat/completions", json={"stream": True}, stream=True, timeout=30) as response:
        for sse in parse_sse(response.iter_content(None)):
            content = (sse["data"]["choices"][0]["delta"].get("content") or "") if isinstance(sse["data"], dict) else ""
            if content:
                yield frame_number(content), time.perf_counter()


def via_iter_lines(url: str) -> Iterator[tuple[int, float]]:
    with requests.post(f"{url}/chat/completions", json={"stream": True}, stream=True, timeout=30) as response:
        for line in response.iter_lines():
            if b'"content":"<' in line:
                yield frame_number(json.loads(line[6:])["choices"][0]["delta"]["content"]), time.perf_counter()


def frame_number(text: str) -> int:
    return int(text.strip("<>"))


CLIENTS: dict[str, Callable[[str], Iterator[tuple[int, float]]]] = {
    "ink_py provider.stream": via_provider,
    "requests iter_content(None) + parse_sse": via_iter_content,
    "requests iter_lines()": via_iter_lines,
}


def measure(
    frames: int = 200, pause: float = 0.005, advance: Callable[[str], None] = lambda note: None
) -> list[dict[str, Any]]:
    """One row per (client, body mode): median and worst latency, and events held back.

    ``advance`` is called after each (client, mode), with both."""
    server = subprocess.Popen(
        [sys.executable, __file__, "serve", str(frames), str(pause)], stdout=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline()  # type: ignore[union-attr]
        if not line.strip().isdigit():
            raise RuntimeError(f"the latency server did not start (it printed {line!r})")
        port = int(line)
        rows = []
        for client_name, client in CLIENTS.items():
            for mode in MODES:
                url = f"http://127.0.0.1:{port}/{mode}/v1"
                received = dict(client(url))
                sent = requests.get(f"http://127.0.0.1:{port}/times", timeout=10).json()
                assert sorted(received) == list(range(frames)), f"{client_name} lost frames"
                waits = [received[i] - sent[i] for i in range(frames)]
                rows.append(
                    {
                        "client": client_name,
                        "body": mode,
                        "frames": frames,
                        "pause_ms": pause * 1e3,
                        "median_ms": statistics.median(waits) * 1e3,
                        "worst_ms": max(waits) * 1e3,
                        "late": sum(wait > pause for wait in waits),  # arrived after the next frame was sent
                    }
                )
                advance(f"{client_name}, {mode}")
        return rows
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C at the terminal is run.py's: it ends this server
    serve(int(sys.argv[2]), float(sys.argv[3]))
