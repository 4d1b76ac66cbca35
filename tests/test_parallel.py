"""Tool calls side by side (second article §八, Ink's executeToolBatch in core/loop.py): order and abort."""

import functools
import threading

import pytest

from ink_py.core import loop

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def call(i, name="read", path=None):
    return {"type": "toolCall", "id": f"c{i}", "name": name, "arguments": {"path": path or f"f{i}"}}


def tool(name, execute, safe=True):
    return {"name": name, "description": name, "parameters": SCHEMA, "execute": execute, "concurrencySafe": safe}


def run_batch(calls, tools, signal=None, gate=None, batch=None):
    results, events = [], []
    (batch or loop.execute_tool_batch)(calls, {t["name"]: t for t in tools}, signal, gate, events.append, results)
    return results, events


def test_results_and_tool_end_come_in_call_order_while_calls_overlap():
    second_done = threading.Event()

    def execute(args, signal):
        if args["path"] == "f0":
            overlapped = second_done.wait(5)  # only returns True if c1 runs at the same time
            return {"output": f"f0 saw f1 finish: {overlapped}"}
        second_done.set()
        return {"output": "f1"}

    results, events = run_batch([call(0), call(1)], [tool("read", execute)])
    assert [r["content"] for r in results] == ["f0 saw f1 finish: True", "f1"]
    assert [(e["type"], e.get("toolCallId") or e["result"]["toolCallId"]) for e in events] == [
        ("tool_start", "c0"),
        ("tool_start", "c1"),
        ("tool_end", "c0"),
        ("tool_end", "c1"),
    ]


def test_safe_calls_run_in_chunks_of_five():
    first_five, last_two = threading.Barrier(5, timeout=5), threading.Barrier(2, timeout=5)

    def execute(args, signal):
        index = int(args["path"][1:])
        (first_five if index < 5 else last_two).wait()  # breaks unless exactly these run together
        return {"output": args["path"]}

    results, _ = run_batch([call(i) for i in range(7)], [tool("read", execute)])
    assert [r["content"] for r in results] == [f"f{i}" for i in range(7)]
    assert not any(r["isError"] for r in results)


def test_unsafe_tools_run_alone_in_order():
    log, lock = [], threading.Lock()

    def execute(args, signal):
        with lock:
            log.append(("start", args["path"]))
        with lock:
            log.append(("end", args["path"]))
        return {"output": "ok"}

    calls = [call(0, "write"), call(1, "write"), call(2, "write")]
    run_batch(calls, [tool("write", execute, safe=False)])
    assert log == [("start", "f0"), ("end", "f0"), ("start", "f1"), ("end", "f1"), ("start", "f2"), ("end", "f2")]


def test_abort_is_checked_before_each_chunk():
    from ink_py.core.abort import AbortController

    controller = AbortController()
    ran = []

    def execute(args, signal):
        ran.append(args["path"])
        controller.abort()
        return {"output": "ok"}

    calls = [call(i) for i in range(7)]
    results, _ = run_batch(calls, [tool("read", execute)], signal=controller.signal)
    assert sorted(ran) == [f"f{i}" for i in range(5)]  # the first chunk had started; the second never did
    assert [r["toolCallId"] for r in results] == [f"c{i}" for i in range(5)]


def test_refused_calls_and_the_gate_are_handled_in_call_order_before_anything_runs():
    seen = []
    calls = [call(0), {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": 3}}, call(2)]

    def gate(request):
        seen.append(request["toolCallId"])
        return {"block": True, "reason": "no"} if request["toolCallId"] == "c2" else None

    results, _ = run_batch(calls, [tool("read", lambda a, s: {"output": a["path"]})], gate=gate)
    assert seen == ["c0", "c2"]  # c1 failed its schema check before the gate
    assert [(r["toolCallId"], r["isError"]) for r in results] == [("c0", False), ("c1", True), ("c2", True)]


def test_a_single_call_runs_on_the_calling_thread():
    threads = []
    run_batch([call(0)], [tool("read", lambda a, s: threads.append(threading.current_thread()) or {"output": ""})])
    assert threads == [threading.current_thread()]


@pytest.mark.parametrize("batch", ["serial", "parallel"])
def test_both_batches_give_the_same_results(batch):
    run = functools.partial(loop.execute_tool_batch, max_concurrent=1) if batch == "serial" else loop.execute_tool_batch
    calls = [call(0), call(1, "write"), {"type": "toolCall", "id": "c2", "name": "nope", "arguments": {}}, call(3)]
    tools = [
        tool("read", lambda a, s: {"output": "r:" + a["path"]}),
        tool("write", lambda a, s: {"output": "w"}, False),
    ]
    results, events = run_batch(calls, tools, batch=run)
    assert [r["content"] for r in results] == [
        "r:f0",
        "w",
        'Error: unknown tool "nope". Available tools: read, write.',
        "r:f3",
    ]
    assert [e["type"] for e in events] == ["tool_start", "tool_end"] * 4
