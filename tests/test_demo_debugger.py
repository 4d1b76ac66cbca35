"""A debugger still works while ``ink-py demo`` traces assemble_stream: pdb's engine, and debugpy over DAP.

The demo records each step with a trace function; a breakpoint set in assemble_stream must
still stop there — with ``bdb`` (what pdb runs on) in this process, and with debugpy driven
over the Debug Adapter Protocol the way .vscode/launch.json's demo entry runs it, no VS Code
needed. Every wait on debugpy has a time limit.
"""

import bdb
import inspect
import json
import socket
import subprocess
import sys
import time

import pytest

from ink_py.course import demo
from ink_py.provider import openai_completions

from .helpers import ROOT
from .test_demo import command, source_line


class BreakOnce(bdb.Bdb):
    """pdb's engine, with one breakpoint: records the locals it sees there, then continues."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def user_line(self, frame):
        if self.break_here(frame):
            self.seen.append(list(frame.f_locals["text_parts"]))
        self.set_continue()


def test_a_debuggers_breakpoint_in_assemble_stream_still_stops_during_the_demo(capsys):
    number, _ = source_line(openai_completions.assemble_stream, "text_parts.append(content)")
    debugger = BreakOnce()
    debugger.set_break(inspect.getsourcefile(openai_completions.assemble_stream), number + 1)
    previous = sys.gettrace()
    try:
        debugger.runcall(demo.main, ["readme", "--no-pause"])
    finally:
        sys.settrace(previous)
    assert debugger.seen == [["我先读一下 README。"]]  # stopped on the line after the append, once
    assert "步骤 6 / 6" in capsys.readouterr().out


def test_a_debugpy_breakpoint_in_assemble_stream_stops_the_launch_json_demo():
    """What .vscode/launch.json's "ink-py demo readme (no pause)" does, driven over DAP without VS Code."""
    pytest.importorskip("debugpy", reason="needs debugpy, the VS Code debugger (pip install -r .ci/requirements.txt)")
    number, _ = source_line(openai_completions.assemble_stream, "text_parts.append(content)")
    with socket.socket() as probe:  # a free port for debugpy to listen on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv, env = command("readme", "--no-pause")
    debuggee = [sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client", *argv[1:]]
    process = subprocess.Popen(debuggee, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        dap = Dap(port)
        dap.request("initialize", adapterID="debugpy", pathFormat="path", linesStartAt1=True)
        dap.request("attach", wait=False, justMyCode=True)
        dap.wait_event("initialized")
        source = {"path": inspect.getsourcefile(openai_completions.assemble_stream)}
        dap.request("setBreakpoints", source=source, breakpoints=[{"line": number}])
        dap.request("configurationDone")
        thread = dap.wait_event("stopped")["threadId"]
        [top, *_] = dap.request("stackTrace", threadId=thread)["stackFrames"]
        [local_scope, *_] = dap.request("scopes", frameId=top["id"])["scopes"]
        variables = dap.request("variables", variablesReference=local_scope["variablesReference"])["variables"]
        seen = {v["name"]: v["value"] for v in variables}
        dap.request("continue", threadId=thread)
        dap.wait_event("terminated")
        dap.request("disconnect", wait=False)
        dap.close()
        stdout, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert (top["name"], top["line"]) == ("assemble_stream", number)
    assert seen["content"] == "'我先读一下 README。'" and seen["text_parts"] == "[]"  # about to append
    assert process.returncode == 0 and stdout.decode().count("━━ 步骤") == 6


class Dap:
    """Just enough of the Debug Adapter Protocol to drive debugpy from a test."""

    def __init__(self, port, limit=60.0):
        deadline = time.monotonic() + limit
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=limit)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)  # debugpy is still starting
        self.reader = self.sock.makefile("rb")
        self.seq = 0

    def request(self, command, wait=True, **arguments):
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        if wait:
            sent = self.seq
            reply = self.next(lambda m: m.get("type") == "response" and m.get("request_seq") == sent)
            assert reply["success"], reply
            return reply.get("body") or {}

    def wait_event(self, name):
        return self.next(lambda m: m.get("type") == "event" and m.get("event") == name).get("body") or {}

    def next(self, wanted):
        while True:
            length = None
            for header in iter(self.reader.readline, b"\r\n"):
                assert header, "debugpy closed the connection"
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            message = json.loads(self.reader.read(length))
            if wanted(message):
                return message

    def close(self):
        self.reader.close()
        self.sock.close()
