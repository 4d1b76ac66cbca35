"""Everything the benchmarks time, behind one shape: ink_py, the article, the peers, the lower bound.

Two kinds of contender, each a plain dict::

    parser     bytes → one parsed JSON payload per SSE event (what ``parse_sse`` does)
               "events": reads -> iterator (timed by draining it), "payloads": reads -> list
    assembler  bytes → the finished reply (what ``assemble_stream`` does)
               "assemble": reads -> (text, [each tool call's arguments, raw string or parsed])

Peers whose package is missing are left out; ``missing()`` says which and how to install them.

- ``lower bound``: a ``bytearray`` buffer, ``find(b"\\n\\n", cursor)`` that never rescans, then
  ``json.loads`` of each payload. It knows the input has only ``data:`` lines and LF endings,
  handles nothing else, and is the fastest streaming parser we could write in pure Python
  (a ``str`` buffer and whole-read decoding were tried and were slower or equal).
- ``ink_py``: ``parse_sse`` alone, and ``assemble_stream`` (parse + assemble).
- ``article``: ``article_transcription.py``, the TypeScript transcribed literally.
- openai-python: its ``SSEDecoder.iter_bytes`` + ``json.loads`` (what its ``Stream`` does), and
  its ``ChatCompletionStreamState`` fed each chunk built the way ``Stream`` builds it
  (``construct_type``: no validation). Both are private/semi-private API of the installed version.
- httpx-sse: its ``SSELineDecoder`` + ``SSEDecoder`` on text decoded incrementally (what
  ``EventSource.iter_sse`` does over ``response.iter_text()``), + ``json.loads``.
- LangChain (langchain-core): each payload converted to an ``AIMessageChunk`` the way
  langchain-openai's ``_convert_delta_to_message_chunk`` does (content + ``tool_call_chunks``,
  usage-only chunks → ``usage_metadata``), then either the left fold ``acc = acc + chunk`` that
  ``stream()`` users write, or one variadic ``add_ai_message_chunks(first, *rest)``. Payloads
  come from ink_py's ``parse_sse``, so the difference to ink_py is the accumulation alone (the
  real integration also builds and dumps a pydantic chunk per payload: slower still).
"""

from __future__ import annotations

import codecs
import importlib.util
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import article_transcription

from ink_py.provider.openai_completions import assemble_stream
from ink_py.provider.shared import DONE, parse_sse

Contender = dict[str, Any]
Reply = tuple[str, list[Any]]  # the text, and each tool call's arguments in index order

PEERS = {  # import name → what to pip install
    "openai": "openai",
    "httpx_sse": "httpx-sse",
    "langchain_core": "langchain-core",
}


# ── the lower bound ─────────────────────────────────────────────────────────────────────


def lower_bound(body: Iterable[bytes]) -> Iterator[Any]:
    """Split on blank lines with a scan cursor, ``json.loads`` each payload — nothing else.

    >>> list(lower_bound([b'data: {"a": 1}\\n', b'\\ndata: {"b": "\\xe4\\xbd', b'\\xa0"}\\n\\ndata: [DONE]\\n\\n']))
    [{'a': 1}, {'b': '你'}]
    """
    loads = json.loads
    buffer = bytearray()
    scan = 0  # where the next search starts: the bytes before it hold no "\n\n"
    for read in body:
        buffer += read
        sep = buffer.find(b"\n\n", scan)
        if sep == -1:
            scan = len(buffer) - 1  # a "\n" at the very end may pair with the next read's
            continue
        start = 0
        while sep != -1:
            data = buffer[start + 6 : sep].decode()  # after "data: "
            if data == DONE:
                return
            yield loads(data)
            start = sep + 2
            sep = buffer.find(b"\n\n", start)
        del buffer[:start]  # cheap: bytearray drops a prefix without moving much
        scan = max(len(buffer) - 1, 0)


# ── ink_py and the article ──────────────────────────────────────────────────────────────


def ink_payloads(body: Iterable[bytes]) -> list[Any]:
    return [sse["data"] for sse in parse_sse(body) if sse["data"] != DONE]


def ink_assemble(body: Iterable[bytes]) -> Reply:
    end = last(assemble_stream(body))  # message_end
    return reply_from_blocks(end["message"]["blocks"])


def article_payloads(body: Iterable[bytes]) -> list[Any]:
    return [sse["data"] for sse in article_transcription.parse_sse(body)]


def article_assemble(body: Iterable[bytes]) -> Reply:
    end = last(article_transcription.provider_stream(body))
    return reply_from_blocks(end["message"]["blocks"])


def reply_from_blocks(blocks: list[dict[str, Any]]) -> Reply:
    text = "".join(block["text"] for block in blocks if block["type"] == "text")
    return text, [block["arguments"] for block in blocks if block["type"] == "toolCall"]


# ── openai-python ───────────────────────────────────────────────────────────────────────


def openai_events(body: Iterable[bytes]) -> Iterator[Any]:
    """openai's ``Stream.__stream__`` minus the HTTP: decode events, stop at [DONE], json.loads."""
    from openai._streaming import SSEDecoder

    for sse in SSEDecoder().iter_bytes(iter(body)):
        if sse.data.startswith("[DONE]"):
            break
        yield sse.json()


def openai_assemble(body: Iterable[bytes]) -> Reply:
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    try:
        from openai.lib.streaming.chat import ChatCompletionStreamState
    except ImportError:  # older releases (1.40 …) define it only in the private module
        from openai.lib.streaming.chat._completions import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState()
    for data in openai_events(body):
        chunk = construct_type(type_=ChatCompletionChunk, value=data)  # as the client's Stream does
        for _ in state.handle_chunk(chunk):  # the stream events a caller would see
            pass
    message = state.get_final_completion().choices[0].message
    return message.content or "", [call.function.arguments for call in message.tool_calls or []]


# ── httpx-sse ───────────────────────────────────────────────────────────────────────────


def httpx_sse_events(body: Iterable[bytes]) -> Iterator[Any]:
    """``EventSource.iter_sse`` over ``iter_text()``, without the HTTP, + json.loads."""
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    text_decoder = codecs.getincrementaldecoder("utf-8")("replace")  # httpx's iter_text does this
    lines, events = SSELineDecoder(), SSEDecoder()
    for read in body:
        text = text_decoder.decode(read)
        if not text:
            continue
        for line in lines.decode(text):
            sse = events.decode(line.rstrip("\n"))
            if sse is not None:
                if sse.data == DONE:
                    return
                yield sse.json()


# ── LangChain ───────────────────────────────────────────────────────────────────────────


def to_langchain(payload: dict[str, Any]) -> Any:
    """One chat.completion.chunk → ``AIMessageChunk``, as langchain-openai converts it."""
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    choices = payload.get("choices") or []
    if not choices:  # the usage-only chunk
        usage = payload.get("usage") or {}
        return AIMessageChunk(
            content="",
            usage_metadata={
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            },
        )
    delta = choices[0].get("delta") or {}
    tool_call_chunks = [
        tool_call_chunk(
            name=rtc["function"].get("name"),
            args=rtc["function"].get("arguments"),
            id=rtc.get("id"),
            index=rtc["index"],
        )
        for rtc in delta.get("tool_calls") or []
    ]
    metadata = {"finish_reason": choices[0]["finish_reason"]} if choices[0].get("finish_reason") else {}
    return AIMessageChunk(
        content=delta.get("content") or "",
        id=payload.get("id"),
        tool_call_chunks=tool_call_chunks,
        response_metadata=metadata,
    )


def langchain_fold(body: Iterable[bytes]) -> Reply:
    """``acc = acc + chunk`` for every chunk: what a ``for chunk in llm.stream(...)`` loop does."""
    acc = None
    for sse in parse_sse(body):
        if sse["data"] == DONE:
            break
        message = to_langchain(sse["data"])
        acc = message if acc is None else acc + message
    return langchain_reply(acc)


def langchain_sum(body: Iterable[bytes]) -> Reply:
    """Every chunk first, then one ``add_ai_message_chunks(first, *rest)`` call."""
    from langchain_core.messages.ai import add_ai_message_chunks

    messages = [to_langchain(sse["data"]) for sse in parse_sse(body) if sse["data"] != DONE]
    return langchain_reply(add_ai_message_chunks(messages[0], *messages[1:]))


def langchain_reply(message: Any) -> Reply:
    calls = sorted(message.tool_call_chunks, key=lambda call: call["index"])
    return message.content, [call["args"] for call in calls]


# ── the list ────────────────────────────────────────────────────────────────────────────


def drain(iterator: Iterator[Any]) -> None:
    deque(iterator, maxlen=0)  # the cheapest way to pull every item


def last(iterator: Iterator[Any]) -> Any:
    return deque(iterator, maxlen=1)[0]  # keeps nothing but the last item


def parser(key: str, label: str, events: Callable, payloads: Callable | None = None, **extra: Any) -> Contender:
    payloads = payloads or (lambda body: list(events(body)))
    return {"key": key, "label": label, "kind": "parser", "events": events, "payloads": payloads, **extra}


def assembler(key: str, label: str, assemble: Callable, **extra: Any) -> Contender:
    return {"key": key, "label": label, "kind": "assembler", "assemble": assemble, **extra}


def all_contenders() -> list[Contender]:
    """Every contender, the lower bound first; those needing a missing package are left out."""
    found = [
        parser("lower-bound", "lower bound (find with cursor + json.loads)", lower_bound),
        parser("ink-parse", "ink_py parse_sse", parse_sse, ink_payloads),
        assembler("ink-assemble", "ink_py assemble_stream", ink_assemble),
        parser("article-parse", "article parseSse (literal)", article_transcription.parse_sse, article_payloads),
        assembler("article-assemble", "article core loop (literal)", article_assemble),
    ]
    if installed("openai"):
        found.append(parser("openai-parse", "openai SSEDecoder", openai_events))
        found.append(assembler("openai-assemble", "openai SSEDecoder + ChatCompletionStreamState", openai_assemble))
    if installed("httpx_sse"):
        found.append(parser("httpx-sse-parse", "httpx-sse SSEDecoder", httpx_sse_events))
    if installed("langchain_core"):
        found.append(assembler("langchain-fold", "LangChain acc + chunk", langchain_fold))
        found.append(assembler("langchain-sum", "LangChain add_ai_message_chunks(*all)", langchain_sum))
    return found


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def missing() -> list[str]:
    """One line per peer that is not installed: what is skipped and how to get it."""
    return [
        f"skipped: {module} is not installed (pip install {package}, or pip install -e '.[bench]')"
        for module, package in PEERS.items()
        if not installed(module)
    ]
