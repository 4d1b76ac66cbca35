"""The same reply in the three wire dialects: each dialect's ``assemble_stream`` against a lower bound.

``translate`` rewrites a ``chunks`` stream (``streams.py``) — its text tokens and its two tool
calls' argument fragments, in the same order, one event each — as Anthropic Messages or
OpenAI Responses events (``event: …`` + ``data: …`` frames, as those APIs send them). Each
dialect is timed against the lower bound for its own body, in interleaved rounds, so the
ratios are comparable: ``named_lower_bound`` is ``contenders.lower_bound`` for frames that
carry an ``event:`` line (it finds the ``data:`` field, ``json.loads`` it, nothing else).

    >>> stream = streams.make_stream("chunks", 20_000)
    >>> body = translate(stream, "anthropic-messages")
    >>> body.startswith(b"event: message_start\\ndata: ") and body.endswith(b'"type":"message_stop"}\\n\\n')
    True
    >>> assemble("anthropic-messages")([body]) == assemble("openai-completions")([stream["body"]])
    True
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import measure
import streams
from contenders import Reply, last, lower_bound, reply_from_blocks

from ink_py.provider import anthropic_messages, openai_completions, openai_responses

DIALECTS = {
    "openai-completions": openai_completions,
    "anthropic-messages": anthropic_messages,
    "openai-responses": openai_responses,
}


def frame(name: str, data: dict[str, Any]) -> bytes:
    return (
        f"event: {name}\n".encode()
        + b"data: "
        + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
        + b"\n\n"
    )


def translate(stream: streams.Stream, dialect: str) -> bytes:
    """The chunks stream's reply, event for event, in ``dialect``'s frames."""
    if dialect == "openai-completions":
        return stream["body"]
    messages = dialect == "anthropic-messages"
    out: list[bytes] = []
    seq = iter(range(1 << 30))

    def event(name: str, **data: Any) -> None:
        if messages:
            out.append(frame(name, {"type": name, **data}))
        else:
            out.append(frame(name, {"type": name, "sequence_number": next(seq), **data}))

    index = -1  # the open block (Messages) or output item (Responses)
    whole: list[str] = []  # the open call's fragments (Responses repeats them in .done)
    if messages:
        usage = {"input_tokens": 1200, "output_tokens": 1}
        event("message_start", message={"id": "msg_1", "type": "message", "role": "assistant", "usage": usage})
    else:
        event("response.created", response={"id": "resp_1", "object": "response", "status": "in_progress"})

    def close() -> None:
        if index < 0:
            return
        if messages:
            event("content_block_stop", index=index)
        elif whole:
            event(
                "response.function_call_arguments.done",
                item_id=f"fc_{index}",
                output_index=index,
                arguments="".join(whole),
            )

    for payload in streams.payloads(stream):
        choices = payload.get("choices") or []
        delta = (choices[0].get("delta") or {}) if choices else {}
        if delta.get("content"):
            if index < 0:
                index = 0
                if messages:
                    event("content_block_start", index=0, content_block={"type": "text", "text": ""})
                else:
                    item = {"id": "msg_0", "type": "message", "role": "assistant", "content": []}
                    event("response.output_item.added", output_index=0, item=item)
            if messages:
                event("content_block_delta", index=index, delta={"type": "text_delta", "text": delta["content"]})
            else:
                event(
                    "response.output_text.delta",
                    item_id="msg_0",
                    output_index=index,
                    content_index=0,
                    delta=delta["content"],
                )
        for call in delta.get("tool_calls") or []:
            fragment = call["function"].get("arguments") or ""
            if call.get("id"):
                close()
                index, whole = index + 1, []
                if messages:
                    block = {"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": {}}
                    event("content_block_start", index=index, content_block=block)
                else:
                    item = {
                        "id": f"fc_{index}",
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": "",
                    }
                    event("response.output_item.added", output_index=index, item=item)
            if fragment:
                whole.append(fragment)
                if messages:
                    event(
                        "content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": fragment}
                    )
                else:
                    event(
                        "response.function_call_arguments.delta",
                        item_id=f"fc_{index}",
                        output_index=index,
                        delta=fragment,
                    )
        if choices and choices[0].get("finish_reason"):
            close()
            if messages:
                event("message_delta", delta={"stop_reason": "tool_use"})
        if payload.get("usage"):
            usage = payload["usage"]
            if messages:
                event("message_delta", delta={}, usage={"output_tokens": usage["completion_tokens"]})
                event("message_stop")
            else:
                report = {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}
                event("response.completed", response={"id": "resp_1", "status": "completed", "usage": report})
    return b"".join(out)


def named_lower_bound(body: Iterable[bytes]) -> Iterator[Any]:
    """``lower_bound`` for frames with an ``event:`` line: find ``data: ``, ``json.loads`` the rest."""
    loads = json.loads
    buffer = bytearray()
    scan = 0
    for read in body:
        buffer += read
        sep = buffer.find(b"\n\n", scan)
        if sep == -1:
            scan = len(buffer) - 1
            continue
        start = 0
        while sep != -1:
            yield loads(buffer[buffer.find(b"data: ", start, sep) + 6 : sep].decode())
            start = sep + 2
            sep = buffer.find(b"\n\n", start)
        del buffer[:start]
        scan = max(len(buffer) - 1, 0)


def assemble(dialect: str) -> Callable[[Iterable[bytes]], Reply]:
    module = DIALECTS[dialect]
    return lambda body: reply_from_blocks(last(module.assemble_stream(body))["message"]["blocks"])


def time_dialects(
    mib_sizes: list[float],
    repeats: int,
    say: Callable[[str], None] = print,
    advance: Callable[[str], None] = lambda note: None,
) -> list[list[str]]:
    """One row per (dialect, size): events, median ms, MiB/s, ratio to that body's lower bound, growth.

    ``advance`` is called after each (dialect, size), with both."""
    rows: list[list[str]] = []
    previous: dict[str, tuple[int, float]] = {}
    for mib in mib_sizes:
        stream = streams.make_stream("chunks", max(1024, int(mib * streams.MiB)))
        for dialect in DIALECTS:
            body = translate(stream, dialect)
            reads = [body[i : i + 1024] for i in range(0, len(body), 1024)]  # 1 KiB reads, as the chunks shape
            bound = lower_bound if dialect == "openai-completions" else named_lower_bound
            contenders = [
                {"key": "lower", "label": "lower bound", "kind": "parser", "events": bound},
                {"key": dialect, "label": dialect, "kind": "assembler", "assemble": assemble(dialect)},
            ]
            measure.check_reply(contenders[1], stream, contenders[1]["assemble"](reads))  # right answer first
            times: dict[str, list[float]] = {"lower": [], dialect: []}
            for round_ in range(repeats):
                for c in contenders[round_ % 2 :] + contenders[: round_ % 2]:  # alternate who goes first
                    times[c["key"]].append(measure.run_once(c, reads)[0])
            median = statistics.median(times[dialect])
            ratio = statistics.median(t / low for t, low in zip(times[dialect], times["lower"], strict=True))
            growth = (
                measure.growth(previous[dialect][1], median, previous[dialect][0], len(body))
                if dialect in previous
                else None
            )
            previous[dialect] = (len(body), median)
            events = body.count(b"\n\n")
            rows.append(
                [
                    dialect,
                    streams.size_label(int(mib * streams.MiB)),
                    f"{len(body) / streams.MiB:.2f} MiB",
                    str(events),
                    f"{median * 1e3:.0f}",
                    f"{len(body) / streams.MiB / median:.1f}",
                    f"{ratio:.2f}",
                    "–" if growth is None else f"{growth:.2f}",
                ]
            )
            say(f"  {dialect:<19} {rows[-1][1]:>8}: {rows[-1][4]} ms, {ratio:.2f} × its lower bound")
            advance(f"{dialect} {rows[-1][1]}")
    return rows
