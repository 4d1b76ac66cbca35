"""Running a reply's read-only tool calls side by side — Ink's ``executeToolBatch``, and the
second article's §八 ("可优化为 Promise.all 并行处理").

``loop.execute_tool_batch`` runs calls one after another. This drop-in replacement
(``run_agent_loop(..., execute_batch=execute_tool_batch_parallel)``) does what Ink does:

- calls to tools marked ``concurrencySafe`` (read is) that follow one another form runs;
  each run is cut into chunks of at most ``MAX_CONCURRENT_TOOLS``;
- per chunk: first, in call order, ``tool_start`` + argument checks + the permission gate
  (so the gate never sees calls racing); then the approved calls run on threads at once;
  then results and ``tool_end`` events are emitted in call order, whatever finished first;
- other tools run alone, in order; the abort signal is checked before every chunk.

A chunk holding a single call runs on the calling thread, so the README task (one read)
stays on the main thread and can be stepped through in a debugger.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .abort import AbortSignal
from .loop import OnEvent, OnToolCall, gate_tool_call, prepare_tool_call, run_tool, tool_start_event
from .messages import ToolCallBlock, ToolResult
from .tools.types import Tool

MAX_CONCURRENT_TOOLS = 5  # Ink's MAX_CONCURRENT_TASKS


def execute_tool_batch_parallel(
    tool_calls: list[ToolCallBlock],
    tool_map: dict[str, Tool],
    signal: AbortSignal | None,
    on_tool_call: OnToolCall | None,
    on_event: OnEvent | None,
    results: list[ToolResult],
) -> None:
    """Same contract as ``loop.execute_tool_batch``; safe calls run concurrently in chunks."""
    for chunk in plan_chunks(tool_calls, tool_map):
        if signal is not None and signal.aborted:
            return  # later chunks never start; the loop answers them as interrupted
        # Phase 1 — in call order: announce, check, ask the gate. None = approved to run.
        refusals: list[ToolResult | None] = []
        for call in chunk:
            if on_event is not None:
                on_event(tool_start_event(call))
            refusals.append(prepare_tool_call(call, tool_map) or gate_tool_call(call, on_tool_call))
        if signal is not None and signal.aborted:
            return
        # Phase 2 — the approved calls run at once (a lone call runs right here).
        approved = [call for call, refusal in zip(chunk, refusals, strict=True) if refusal is None]
        if len(approved) == 1:
            outcomes = {approved[0]["id"]: run_tool(approved[0], tool_map, signal)}
        else:
            with ThreadPoolExecutor(max_workers=MAX_CONCURRENT_TOOLS) as pool:
                futures = {call["id"]: pool.submit(run_tool, call, tool_map, signal) for call in approved}
                outcomes = {call_id: future.result() for call_id, future in futures.items()}
        # Phase 3 — results and tool_end in call order, however the threads finished.
        for call, refusal in zip(chunk, refusals, strict=True):
            result = refusal or outcomes[call["id"]]
            results.append(result)
            if on_event is not None:
                on_event({"type": "tool_end", "result": result})


def plan_chunks(tool_calls: list[ToolCallBlock], tool_map: dict[str, Tool]) -> list[list[ToolCallBlock]]:
    """Split calls into the groups that run together: safe runs in chunks of ≤5, others alone.

    >>> tools = {"read": {"concurrencySafe": True}, "write": {}}
    >>> calls = [{"id": str(i), "name": n} for i, n in enumerate(["read"] * 7 + ["write", "read"])]
    >>> [[c["id"] for c in chunk] for chunk in plan_chunks(calls, tools)]
    [['0', '1', '2', '3', '4'], ['5', '6'], ['7'], ['8']]
    """

    def safe(call: ToolCallBlock) -> bool:
        return bool(tool_map.get(call["name"], {}).get("concurrencySafe"))

    chunks: list[list[ToolCallBlock]] = []
    for call in tool_calls:
        previous = chunks[-1] if chunks else None
        if safe(call) and previous and safe(previous[-1]) and len(previous) < MAX_CONCURRENT_TOOLS:
            previous.append(call)  # joins the run of safe calls before it
        else:
            chunks.append([call])  # an unsafe call, or the first of a new chunk
    return chunks
