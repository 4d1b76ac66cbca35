"""The scripted model's answers as OpenAI Chat Completions: ``chat.completion.chunk`` frames, or one object.

``build_reply`` is what the server sends for a ``POST /chat/completions`` body: the script's
``Answer`` (``script.plan_answer``) as a role chunk, text deltas of five characters, a tool
call whose first chunk carries its name and ``{"path":"REA`` and whose next brings
``DME.md"}`` (§2.1, §2.2), and a finish chunk — each a ``data:`` frame in a write of its own,
then ``data: [DONE]``; the call's first chunk comes in two reads, as §2.1's does (``wire``). With
``"stream": false`` it is one ``chat.completion`` object; ``stream_options.include_usage``
adds OpenAI's usage chunk; ``tool_choice`` and ``max_tokens`` are honoured (``controls``).
The article's scenarios replay ``fixtures/article/`` instead::

    >>> reply = build_reply({"messages": [{"role": "user", "content": "hi"}], "stream": True}, "readme", created=0)
    >>> reply["status"], reply["content_type"], b"".join(reply["writes"]).endswith(b"data: [DONE]\\n\\n")
    (200, 'text/event-stream', True)
"""

from __future__ import annotations

from typing import Any

from .controls import obey, request_problem
from .script import Answer, digest, plan_answer
from .wire import (
    SLOW_PIECE,
    TEXT_PIECE,
    Reply,
    argument_fragments,
    error_reply,
    estimate_usage,
    json_bytes,
    json_reply,
    pieces,
    replay_fixture,
    reply_model,
    sse_frame,
    sse_reply,
)

HALF_EVENT = b'"tool_calls":[{"index":0,'  # §2.1: the first read of the call's event ends here


def build_reply(body: Any, scenario: str, created: int) -> Reply:
    """Everything the server sends for one ``POST /chat/completions`` body."""
    if not isinstance(body, dict):
        return error_reply(400, "The request body must be a JSON object.")
    problem = request_problem(body)
    if problem:
        return error_reply(400, problem)
    answer = obey(plan_answer(body, scenario), body)  # tool_choice and max_tokens, as a real server
    stream = body.get("stream") is True
    if answer["fixture"] is not None:
        return replay_fixture(answer, scenario, stream)

    model = reply_model(body)
    completion_id = "chatcmpl-" + digest(body.get("messages"))[:24]
    usage = estimate_usage(body.get("messages"), answer)
    if not stream:
        whole = completion(answer, model=model, completion_id=completion_id, created=created, usage=usage)
        return json_reply(200, whole)

    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
    chunks = stream_chunks(answer, model=model, completion_id=completion_id, created=created)
    if include_usage:
        for chunk in chunks:
            chunk["usage"] = None  # as OpenAI does: every chunk but the last says "usage": null
        chunks.append({**_chunk_head(model, completion_id, created), "choices": [], "usage": usage})
    frames = [sse_frame(json_bytes(chunk)) for chunk in chunks] + [sse_frame(b"[DONE]")]
    return sse_reply(frames, answer["slow"], HALF_EVENT)


def stream_chunks(answer: Answer, *, model: str, completion_id: str, created: int) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of an answer: role, text, tool call, finish.

    >>> call = {"id": "call_1", "name": "read", "arguments": '{"path":"README.md"}'}
    >>> answer = {"text": "", "tool_call": call, "fixture": None, "hold": False, "slow": False, "cut": False}
    >>> [c["choices"][0]["delta"] for c in stream_chunks(answer, model="m", completion_id="c", created=0)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'assistant', 'content': ''},
     {'tool_calls': [{'index': 0, 'id': 'call_1', 'type': 'function',
                      'function': {'name': 'read', 'arguments': '{"path":"REA'}}]},
     {'tool_calls': [{'index': 0, 'function': {'arguments': 'DME.md"}'}}]},
     {}]
    """
    head = _chunk_head(model, completion_id, created)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]  # the first delta names the role
    piece = SLOW_PIECE if answer["slow"] else TEXT_PIECE
    chunks += [chunk({"content": text}) for text in pieces(answer["text"], piece)]
    call = answer["tool_call"]
    if call is not None:
        first, *rest = argument_fragments(call["arguments"])
        function = {"name": call["name"], "arguments": first}  # §2.1's event: the name and `{"path":"REA`
        chunks.append(chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function", "function": function}]}))
        for fragment in rest:  # §2.2: `DME.md"}` in the next event
            chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}))
    chunks.append(chunk({}, finish_reason(answer)))
    return chunks


def finish_reason(answer: Answer) -> str:
    """``length`` when cut at the request's limit, else ``tool_calls`` or ``stop``."""
    return "length" if answer["cut"] else "tool_calls" if answer["tool_call"] is not None else "stop"


def completion(
    answer: Answer, *, model: str, completion_id: str, created: int, usage: dict[str, int]
) -> dict[str, Any]:
    """The whole answer as one ``chat.completion`` object (``"stream": false``)."""
    message: dict[str, Any] = {"role": "assistant", "content": answer["text"] or None, "refusal": None}
    call = answer["tool_call"]
    if call is not None:
        function = {"name": call["name"], "arguments": call["arguments"]}
        message["tool_calls"] = [{"id": call["id"], "type": "function", "function": function}]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(answer)}
    head = {"id": completion_id, "object": "chat.completion", "created": created, "model": model}
    return {**head, "choices": [choice], "usage": usage}


def _chunk_head(model: str, completion_id: str, created: int) -> dict[str, Any]:
    return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}
