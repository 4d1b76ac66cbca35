"""A reply as OpenAI Chat Completions sends it: ``chat.completion.chunk`` frames, or one object.

``build_reply`` is what the server sends for a ``POST /chat/completions`` body: the reply
(``turn.reply_turn``: the script's answer, or the scenario's fixture decoded) as chunks with
every field OpenAI sends — ``id``, ``object``, ``created``, the model asked for,
``system_fingerprint``, ``service_tier``, ``obfuscation``, ``choices[].index`` — a role chunk,
text deltas of five characters, each call's first chunk with its id, ``type`` and name and
``{"path":"REA`` (§2.1), later fragments by index in the Turn's order (interleaved for §2.2),
the finish chunk, OpenAI's usage chunk when ``stream_options.include_usage`` asks, then
``data: [DONE]``; a reply that breaks off (missing-finish, abort) has no finish, usage or
``[DONE]``. Each frame is a write of its own, the call's first in §2.1's two reads (``wire``).
``"stream": false`` gets one ``chat.completion``; ``tool_choice`` and ``max_tokens`` are
honoured (``controls``)::

    >>> reply = build_reply({"messages": [{"role": "user", "content": "hi"}], "stream": True}, "readme", created=0)
    >>> reply["status"], reply["content_type"], b"".join(reply["writes"]).endswith(b"data: [DONE]\\n\\n")
    (200, 'text/event-stream', True)
"""

from __future__ import annotations

from typing import Any

from .controls import obey, request_problem
from .script import digest, plan_answer
from .turn import Turn, Usage, reply_turn, text_deltas, usage
from .wire import (
    CHAT,
    Reply,
    error_reply,
    json_bytes,
    json_reply,
    padding,
    reply_model,
    sse_frame,
    sse_reply,
)

HALF_EVENT = b'"tool_calls":[{"index":0,'  # §2.1: the first read of the call's event ends here
FINGERPRINT = "fp_ink_scripted"  # system_fingerprint: the backend configuration (one, here)


def build_reply(body: Any, scenario: str, created: int) -> Reply:
    """Everything the server sends for one ``POST /chat/completions`` body."""
    if not isinstance(body, dict):
        return error_reply(400, "The request body must be a JSON object.")
    problem = request_problem(body)
    if problem:
        return error_reply(400, problem)
    answer = obey(plan_answer(body, scenario), body)  # tool_choice and max_tokens, as a real server
    turn = reply_turn(answer, scenario, CHAT)
    stream = body.get("stream") is True
    if not stream and turn["ending"] is None:
        return error_reply(400, f'The scenario {scenario!r} is a stream that breaks off: send "stream": true.')
    model = reply_model(body)
    completion_id = "chatcmpl-" + digest(body.get("messages"))[:24]
    counts = usage(body.get("messages"), turn)
    if not stream:
        return json_reply(
            200, completion(turn, model=model, completion_id=completion_id, created=created, counts=counts)
        )

    options = body.get("stream_options")
    options = options if isinstance(options, dict) else {}
    head = _chunk_head(model, completion_id, created)
    chunks = stream_chunks(turn, head)
    if options.get("include_usage") is True:  # every chunk says "usage": null, then OpenAI's usage chunk
        chunks = [{**chunk, "usage": None} for chunk in chunks]
        if turn["ending"] is not None:  # (a body that breaks off never gets to it)
            chunks.append({**head, "choices": [], "usage": usage_report(counts)})
    if options.get("include_obfuscation") is not False:  # OpenAI pads each chunk against length side channels
        chunks = [{**chunk, "obfuscation": padding(completion_id, n)} for n, chunk in enumerate(chunks)]
    frames = [sse_frame(json_bytes(chunk)) for chunk in chunks]
    if turn["ending"] is not None:
        frames.append(sse_frame(b"[DONE]"))  # the end marker; a body that breaks off has none
    scripted = answer["fixture"] is not None
    return sse_reply(frames, slow=turn["slow"], hold=turn["hold"], scenario=scripted, half_event=HALF_EVENT)


def stream_chunks(turn: Turn, head: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a reply: role, text, the calls' fragments in the
    Turn's order (interleaved for §2.2), then the finish chunk — none when the body breaks off.

    >>> from .turn import fixture_turn
    >>> [c["choices"][0]["delta"] for c in stream_chunks(fixture_turn("readme", CHAT), {})][2:]
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'content': ' READ'}, {'content': 'ME。'},
     {'tool_calls': [{'index': 0, 'id': 't1', 'type': 'function',
                      'function': {'name': 'read', 'arguments': '{"path":"REA'}}]},
     {'tool_calls': [{'index': 0, 'function': {'arguments': 'DME.md"}'}}]},
     {}]
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    # the first delta names the role (content null when the reply opens with a call, as OpenAI's)
    chunks = [chunk({"role": "assistant", "content": "" if turn["text"] else None, "refusal": None})]
    chunks += [chunk({"content": text}) for text in text_deltas(turn)]
    sent = [0] * len(turn["calls"])  # fragments sent so far, per call
    for number in turn["order"]:
        call, fragment = turn["calls"][number], turn["calls"][number]["fragments"][sent[number]]
        if sent[number] == 0:  # §2.1's event: the call's first chunk brings its id, name and first fragment
            function = {"name": call["name"], "arguments": fragment}
            chunks.append(
                chunk({"tool_calls": [{"index": number, "id": call["id"], "type": "function", "function": function}]})
            )
        else:  # §2.2: later fragments name only the index
            chunks.append(chunk({"tool_calls": [{"index": number, "function": {"arguments": fragment}}]}))
        sent[number] += 1
    if turn["ending"] is not None:
        chunks.append(chunk({}, turn["ending"]))
    return chunks


def _chunk_head(model: str, completion_id: str, created: int) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def usage_report(counts: Usage) -> dict[str, Any]:
    """OpenAI's usage object: the counts, their sum and the details it always adds."""
    return {
        "prompt_tokens": counts["input"],
        "completion_tokens": counts["output"],
        "total_tokens": counts["input"] + counts["output"],
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def completion(turn: Turn, *, model: str, completion_id: str, created: int, counts: Usage) -> dict[str, Any]:
    """The whole reply as one ``chat.completion`` object (``"stream": false``)."""
    message: dict[str, Any] = {"role": "assistant", "content": turn["text"] or None, "refusal": None, "annotations": []}
    if turn["calls"]:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "".join(c["fragments"])}}
            for c in turn["calls"]
        ]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": turn["ending"]}
    head = {**_chunk_head(model, completion_id, created), "object": "chat.completion"}
    return {**head, "choices": [choice], "usage": usage_report(counts)}
