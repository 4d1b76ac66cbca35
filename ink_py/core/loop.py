"""The agent loop — mirrors Ink's ``src/core/loop.ts``.

Sections: §2.3 ``stream_assistant`` (events in, one assistant message out), part 01's
``run_agent_loop`` (ask the model; tool calls → run them, append the results, ask again;
none → done), §4.4 ``fail_tool_calls_from_truncated_message``, then ``execute_tool_batch``
and the checks every call passes. Whatever the model gets wrong — an unknown tool, bad
arguments, a tool that raises, a reply cut at the output limit — goes back to it as an
``isError`` tool result; the process never crashes on it. Differences from the TypeScript
are tagged ``beyond §`` where they happen; walkthrough.md explains them (the bounds: docs/hardening.md).

    >>> error_result({"id": "t1", "name": "read"}, "Error: no such file")["isError"]
    True
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypedDict

from ..provider.types import LLMEvent, LLMProvider, LLMRequest, ProviderError
from .abort import NEVER_ABORTED, AbortSignal
from .messages import AgentMessage, AssistantMessage, ToolCallBlock, ToolResult, Usage, add_usage, empty_usage
from .tools.schema import check_arguments
from .tools.types import Tool

DEFAULT_MAX_TOKENS = 8192
DEFAULT_MAX_TURNS = 40  # beyond part 01: a safety valve against runaway tool loops (second article §六)
MAX_CONCURRENT_TOOLS = 5  # Ink's MAX_CONCURRENT_TASKS: read-only calls run side by side
MAX_TOOL_CALLS_PER_REPLY = 64  # beyond §2.3: calls past this many in one reply are answered, not run


class ToolStart(TypedDict):
    type: Literal["tool_start"]
    toolCallId: str
    name: str
    args: Any


class ToolEnd(TypedDict):
    type: Literal["tool_end"]
    result: ToolResult


AgentEvent = LLMEvent | ToolStart | ToolEnd
OnEvent = Callable[[AgentEvent], Any]
# The permission gate: sees {"toolCallId", "name", "args"} before a call runs; may return
# {"block": True, "reason": "..."} to refuse it.
OnToolCall = Callable[[dict[str, Any]], "dict[str, Any] | None"]


class RunResult(TypedDict):
    stopReason: Literal["completed", "max_iterations", "aborted"]
    turns: int  # assistant replies produced in this run
    usage: Usage  # summed over every reply
    truncated: bool  # the final answer stopped at the output limit (§4.4)


# ── §2.3 stream_assistant: events in, one assistant message out ─────────────────────────


def stream_assistant(
    provider: LLMProvider, request: LLMRequest, on_event: OnEvent | None = None
) -> AssistantMessage | None:
    """Forward every event to ``on_event``; return the ``message_end`` message, or None if aborted."""
    signal = request.get("signal") or NEVER_ABORTED
    events = provider.stream(request)
    try:
        for event in events:
            if signal.aborted:
                return None
            if on_event is not None:
                on_event(event)  # text and tool fragments can be shown at once
            if event["type"] == "message_end":
                return {**event["message"], "model": request["model"]}
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()  # returning early: release the provider's connection now
    if signal.aborted:
        return None  # an abort ended the stream early (abort_safe): a clean stop, not an error
    raise ProviderError("Provider stream ended without a message_end event")


# ── run_agent_loop ──────────────────────────────────────────────────────────────────────


def run_agent_loop(
    *,
    provider: LLMProvider,
    model: str,
    system: str,
    tools: list[Tool],
    history: list[AgentMessage],
    user_message: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_turns: int = DEFAULT_MAX_TURNS,
    on_event: OnEvent | None = None,
    on_message: Callable[[AgentMessage], Any] | None = None,
    on_tool_call: OnToolCall | None = None,
    signal: AbortSignal | None = None,
    max_concurrent: int = MAX_CONCURRENT_TOOLS,
) -> RunResult:
    """Run the conversation in ``history`` (appended in place) until the model stops calling tools."""
    signal = signal or NEVER_ABORTED
    usage = empty_usage()
    turns = 0

    def finish(stop_reason: Any, truncated: bool = False) -> RunResult:
        return {"stopReason": stop_reason, "turns": turns, "usage": usage, "truncated": truncated}

    def push(message: AgentMessage) -> None:
        history.append(message)
        if on_message is not None:
            on_message(message)

    if user_message:
        push({"role": "user", "content": user_message})
    tool_map = {tool["name"]: tool for tool in tools}

    while True:
        if signal.aborted:
            return finish("aborted")

        request: LLMRequest = {
            "model": model,
            "system": system,
            "messages": history,
            "tools": tools,  # type: ignore[typeddict-item]  # a Tool is a ToolSpec plus execute
            "maxTokens": max_tokens,
            "signal": signal,
        }
        assistant = stream_assistant(provider, request, on_event)
        if assistant is None:
            return finish("aborted")
        add_usage(usage, assistant["usage"])
        push(assistant)
        turns += 1

        tool_calls: list[ToolCallBlock] = [b for b in assistant["blocks"] if b["type"] == "toolCall"]
        if not tool_calls:
            # §4.4: an answer cut at the output limit still ends the run, but says so.
            return finish("completed", truncated=assistant["stopReason"] == "max_tokens")

        results: list[ToolResult] = []
        if turns >= max_turns:
            # Never run: close each call with a result so the history stays valid to resume.
            fill_missing_tool_results(tool_calls, results, "(not executed: reached max turns)")
            push({"role": "toolResult", "results": results})
            return finish("max_iterations")

        if assistant["stopReason"] == "max_tokens":
            fail_tool_calls_from_truncated_message(tool_calls, results, on_event)  # §4.4: run none
        else:
            runnable = tool_calls[:MAX_TOOL_CALLS_PER_REPLY]
            execute_tool_batch(runnable, tool_map, signal, on_tool_call, on_event, results, max_concurrent)
            if len(tool_calls) > MAX_TOOL_CALLS_PER_REPLY:  # beyond §2.3: a flood of calls is not run
                fill_missing_tool_results(
                    tool_calls[MAX_TOOL_CALLS_PER_REPLY:],
                    results,
                    f"Error: this reply made {len(tool_calls)} tool calls; at most {MAX_TOOL_CALLS_PER_REPLY} "
                    "run per reply, so this one was not run. Make fewer calls at a time.",
                )
        # An abort can stop the batch midway: answer the calls that never ran.
        fill_missing_tool_results(tool_calls, results, "(interrupted before this tool ran)")
        push({"role": "toolResult", "results": results})


# ── §4.4 fail_tool_calls_from_truncated_message ─────────────────────────────────────────


def fail_tool_calls_from_truncated_message(
    tool_calls: list[ToolCallBlock], results: list[ToolResult], on_event: OnEvent | None = None
) -> None:
    """The reply stopped at the output limit: none of its calls can be trusted to be whole.

    Even arguments that parse may be cut short, so no call runs; each gets an error
    result asking the model to send it again, complete.
    """
    for call in tool_calls:  # none of them runs, not even one whose arguments parse
        result = error_result(  # an isError result in `results`, for the model to read
            call,
            f"Error: this reply hit the output token limit (finish_reason: length), so the arguments of "
            f"{clipped(call['name'])} may be truncated; the call was not run. "
            "Send the call again with complete arguments.",
        )
        results.append(result)  # the call itself is left as the model sent it: the history keeps its request
        if on_event is not None:  # the display sees each call start and end, as if it had run
            on_event(tool_start_event(call))
            on_event({"type": "tool_end", "result": result})


def fill_missing_tool_results(tool_calls: Iterable[ToolCallBlock], results: list[ToolResult], reason: str) -> None:
    """Give every call that has no result yet an error result saying why it never ran.

    Counted, not looked up: a server may give two calls one id (beyond §2.3), and each is
    answered once.
    """
    answered = Counter(result["toolCallId"] for result in results)
    for call in tool_calls:
        if answered[call["id"]] > 0:
            answered[call["id"]] -= 1
        else:
            results.append(error_result(call, reason))


# ── running the tools ───────────────────────────────────────────────────────────────────


def clipped(text: str, limit: int = 200) -> str:
    """What a message quotes of the model's input: its start (beyond §4.3: never all 50 MB of it).

    >>> clipped("x" * 300, 5)
    'xxxxx… (300 characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def error_result(call: ToolCallBlock, content: str) -> ToolResult:
    """The result of a call that failed or never ran: ``content`` says why, for the model."""
    return {"toolCallId": call["id"], "toolName": call["name"], "content": content, "isError": True}


def tool_start_event(call: ToolCallBlock) -> ToolStart:
    return {"type": "tool_start", "toolCallId": call["id"], "name": call["name"], "args": call["arguments"]}


def execute_tool_batch(
    tool_calls: list[ToolCallBlock],
    tool_map: dict[str, Tool],
    signal: AbortSignal | None,
    on_tool_call: OnToolCall | None,
    on_event: OnEvent | None,
    results: list[ToolResult],
    max_concurrent: int = MAX_CONCURRENT_TOOLS,
) -> None:
    """Run one reply's calls, appending a result for each in call order; stop early on abort.

    Calls to ``concurrencySafe`` tools (read is) that follow one another run side by side,
    at most ``max_concurrent`` at a time (Ink's executeToolBatch, the second article's §八);
    any other call runs alone. A chunk of one call runs right here, on the calling thread.
    """
    signal = signal or NEVER_ABORTED
    for chunk in plan_chunks(tool_calls, tool_map, max_concurrent):
        if signal.aborted:
            return  # the rest never start; fill_missing_tool_results answers them
        # In call order: announce, check, ask the gate. None = approved to run.
        refusals: list[ToolResult | None] = []
        for call in chunk:
            if on_event is not None:
                on_event(tool_start_event(call))
            refusals.append(prepare_tool_call(call, tool_map) or gate_tool_call(call, on_tool_call))
        approved = [call for call, refusal in zip(chunk, refusals, strict=True) if refusal is None]
        if len(approved) <= 1:
            outcomes = [run_tool(call, tool_map, signal) for call in approved]
        else:  # beyond part 01: the approved calls of a chunk run at once
            with ThreadPoolExecutor(max_workers=len(approved)) as pool:
                futures = [pool.submit(run_tool, call, tool_map, signal) for call in approved]
                outcomes = [future.result() for future in futures]
        # Results and tool_end in call order, however the threads finished: matched by place,
        # not by id — beyond §2.3, two calls a server gave one id each get their own result.
        ran = iter(outcomes)
        for refusal in refusals:
            result = refusal or next(ran)
            results.append(result)
            if on_event is not None:
                on_event({"type": "tool_end", "result": result})


def plan_chunks(
    tool_calls: list[ToolCallBlock], tool_map: dict[str, Tool], max_concurrent: int = MAX_CONCURRENT_TOOLS
) -> list[list[ToolCallBlock]]:
    """Split calls into the groups that run together: safe runs in chunks, others alone.

    >>> tools = {"read": {"concurrencySafe": True}, "write": {}}
    >>> calls = [{"id": str(i), "name": n} for i, n in enumerate(["read"] * 7 + ["write", "read"])]
    >>> [[c["id"] for c in chunk] for chunk in plan_chunks(calls, tools)]
    [['0', '1', '2', '3', '4'], ['5', '6'], ['7'], ['8']]
    """

    def safe(call: ToolCallBlock) -> bool:
        tool = tool_map.get(call["name"])
        return tool is not None and bool(tool.get("concurrencySafe"))

    chunks: list[list[ToolCallBlock]] = []
    for call in tool_calls:
        previous = chunks[-1] if chunks else None
        if safe(call) and previous and safe(previous[-1]) and len(previous) < max_concurrent:
            previous.append(call)  # joins the run of safe calls before it
        else:
            chunks.append([call])  # an unsafe call, or the first of a new chunk
    return chunks


def prepare_tool_call(call: ToolCallBlock, tool_map: dict[str, Tool]) -> ToolResult | None:
    """An error result if the call must not run (unknown tool, bad arguments); None if it may."""
    tool = tool_map.get(call["name"])
    args = call["arguments"]
    if tool is None:
        problem = f'unknown tool "{clipped(call["name"])}". Available tools: {", ".join(tool_map) or "none"}.'
    elif not isinstance(args, dict):
        problem = f"tool arguments must be a JSON object, got: {clipped(json.dumps(args, ensure_ascii=False))}"
    elif "_parseError" in args:
        # Beyond §4.3: Ink passes this record to the tool; here the call is blocked outright.
        began = json.dumps(str(args.get("raw", ""))[:200], ensure_ascii=False)
        problem = (
            f"the arguments for {clipped(call['name'])} were not valid JSON, so the call was not run. "
            f"They began: {began}. Send the call again with complete, valid JSON arguments."
        )
    else:
        issues = check_arguments(tool["parameters"], args)
        if not issues:
            return None
        problem = (
            f"invalid arguments for {clipped(call['name'])} — {'; '.join(issues[:5])}. Fix the arguments and retry."
        )
    return error_result(call, f"Error: {problem}")


def gate_tool_call(call: ToolCallBlock, on_tool_call: OnToolCall | None) -> ToolResult | None:
    """Ask the permission gate (if any); an error result if it blocks the call."""
    if on_tool_call is None:
        return None
    decision = on_tool_call({"toolCallId": call["id"], "name": call["name"], "args": call["arguments"]})
    if not decision or not decision.get("block"):
        return None
    return error_result(call, f'Tool "{clipped(call["name"])}" blocked: {decision.get("reason") or "no reason given"}')


def run_tool(call: ToolCallBlock, tool_map: dict[str, Tool], signal: AbortSignal | None) -> ToolResult:
    """Execute a prepared call; an exception becomes an error result the model can read."""
    try:
        output = tool_map[call["name"]]["execute"](call["arguments"], signal)
        return {
            "toolCallId": call["id"],
            "toolName": call["name"],
            "content": output["output"],
            "isError": bool(output.get("isError", False)),
        }
    except Exception as err:  # a tool's bug must not end the run: the model is told instead
        return error_result(call, f"Error: tool {clipped(call['name'])} threw: {clipped(str(err), 500)}")
