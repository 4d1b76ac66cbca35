"""What ``serve-model`` keeps of its Responses, so that ``previous_response_id`` and ``item_reference`` work.

OpenAI keeps a response unless its request said ``"store": false`` (the default is true): its
id, its input items and its output items. A later request names them: ``previous_response_id``
brings that response's input and output — and so its whole chain — into context (its
``instructions`` stay behind), an ``item_reference`` one item. The built-in model does the same
while it runs, in memory and bounded (``ResponseStore``): at most ``RESPONSES_KEPT`` responses
and ``BYTES_KEPT`` bytes of JSON, the oldest dropped first; a reference to a dropped one is
answered as one never kept (OpenAI's 400 and 404). Sections: the store; ``recall`` (a request's
input with its references filled in); ``keep``.

    >>> kept = new_store()
    >>> keep(kept, "resp_1", [{"role": "user", "content": "hi"}], [{"id": "msg_1", "type": "message"}])
    >>> recall(kept, {"previous_response_id": "resp_1", "input": [{"type": "item_reference", "id": "msg_1"}]})
    [{'role': 'user', 'content': 'hi'}, {'id': 'msg_1', 'type': 'message'}, {'id': 'msg_1', 'type': 'message'}]
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, TypedDict

from ..bounded_server import MAX_BODY_BYTES
from .wire import RESPONSES, Reply, error_reply, json_bytes

RESPONSES_KEPT = 256  # responses remembered; the oldest is forgotten first ...
BYTES_KEPT = 32 * 1024 * 1024  # ... and at most this much of their context and items, as compact JSON
CONTEXT_BYTES = MAX_BODY_BYTES  # a conversation by reference reads no more than one whole request could send
NOT_STORED = (
    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. "
    "Try again with `store` set to true, or remove this item from your input."
)  # OpenAI's words (404) for a reference to an item it does not have, when the request said store: false
NOT_FOUND = "Item with id '{id}' not found."  # … and otherwise
NO_PREVIOUS = "Previous response with id '{id}' not found."  # (400, previous_response_not_found)
TOO_LONG = "Your input exceeds the context window of this model. Please adjust your input and try again."
ECHOED_ID_CHARS = 200  # an unknown id is named in the error, cut to this length
Item = dict[str, Any]  # one Responses input or output item, as JSON


class KeptResponse(TypedDict):
    context: bytes  # what previous_response_id brings: the input it was given (its chain first), then its output
    items: list[str]  # the item ids it introduced: an item lives as long as the response that first carried it
    size: int  # bytes it holds: its context and those items


class ResponseStore(TypedDict):
    """The responses kept, oldest first, and the items they introduced; one lock for every thread."""

    lock: threading.Lock
    responses: OrderedDict[str, KeptResponse]
    items: dict[str, tuple[str, bytes]]  # item id → (the response keeping it, the item as JSON)
    size: int  # bytes held, all responses together
    numbered: int  # responses numbered so far: each reply id is new (``fresh_number``)
    limits: tuple[int, int, int]  # (responses, bytes, context bytes)


def new_store(responses: int = RESPONSES_KEPT, size: int = BYTES_KEPT, context: int = CONTEXT_BYTES) -> ResponseStore:
    """An empty store keeping at most ``responses`` responses and ``size`` bytes; a request whose
    context (with what it names) is over ``context`` bytes is refused."""
    limits = (responses, size, context)
    return {
        "lock": threading.Lock(),
        "responses": OrderedDict(),
        "items": {},
        "size": 0,
        "numbered": 0,
        "limits": limits,
    }


def fresh_number(kept: ResponseStore) -> int:
    """A number no earlier reply of this server had: the reply ids (and their items' ids) are new
    each time, as OpenAI's are, so no id ever names two different replies."""
    with kept["lock"]:
        kept["numbered"] += 1
        return kept["numbered"]


# ── recall: the input a request means ───────────────────────────────────────────────────


def recall(kept: ResponseStore | None, body: dict[str, Any]) -> list[Item] | Reply:
    """The request's input items with what it names filled in — the previous response's context
    first, each ``item_reference`` replaced by the item — or OpenAI's error for what is not kept
    (``kept`` None: a store that keeps nothing).

    >>> recall(None, {"store": False, "input": [{"type": "item_reference", "id": "fc_1"}]})["status"]
    404
    """
    previous = body.get("previous_response_id")
    context: list[Item] = []
    if previous is not None:
        found = _kept_context(kept, previous)
        if found is None:
            return error_reply(
                400,
                NO_PREVIOUS.format(id=_echo(previous)),
                RESPONSES,
                "previous_response_id",
                "previous_response_not_found",
            )
        context = json.loads(found)
    for item in input_items(body.get("input")):
        if _is_reference(item):
            whole = _kept_item(kept, item.get("id"))
            if whole is None:
                words = NOT_STORED if body.get("store") is False else NOT_FOUND
                return error_reply(404, words.format(id=_echo(item.get("id"))), RESPONSES, param="input")
            item = json.loads(whole)
        context.append(item)
    named = previous is not None or any(_is_reference(item) for item in input_items(body.get("input")))
    limit = kept["limits"][2] if kept is not None else CONTEXT_BYTES
    if named and len(json_bytes(context)) > limit:  # (a request naming nothing is bounded by its body's size)
        return error_reply(400, TOO_LONG, RESPONSES, param="input", code="context_length_exceeded")
    return context


def input_items(value: Any) -> list[Item]:
    """A request's ``input`` as items: a string is one user message; what is not an object is left out.

    >>> input_items("hi"), input_items([{"type": "message"}, 3, "x"]), input_items(None)
    ([{'role': 'user', 'content': 'hi'}], [{'type': 'message'}], [])
    """
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _is_reference(item: Item) -> bool:
    """``{"type": "item_reference", "id": …}``, or a bare ``{"id": …}`` (the type is optional in OpenAI's schema)."""
    return item.get("type") == "item_reference" or ("type" not in item and set(item) == {"id"})


def _echo(value: Any) -> str:
    return str(value)[:ECHOED_ID_CHARS]  # an id from the client: named back, bounded


def _kept_context(kept: ResponseStore | None, response_id: Any) -> bytes | None:
    if kept is None or not isinstance(response_id, str):
        return None
    with kept["lock"]:
        found = kept["responses"].get(response_id)
        return found["context"] if found is not None else None


def _kept_item(kept: ResponseStore | None, item_id: Any) -> bytes | None:
    if kept is None or not isinstance(item_id, str):
        return None
    with kept["lock"]:
        found = kept["items"].get(item_id)
        return found[1] if found is not None else None


# ── keep: a response the server answered ────────────────────────────────────────────────


def keep(kept: ResponseStore, response_id: str, context: list[Item], output: list[Item]) -> None:
    """Keep a finished response: ``context`` (its input, references filled in) and ``output`` (the
    items the model sent), so that a later request can name it or any of those items. An input
    item under an id already kept does not replace it (a client sending the model's item back,
    changed or not); an output item always takes its id. The oldest responses go first to make room."""
    whole = json_bytes([*context, *output])
    items = {item["id"]: json_bytes(item) for item in context if isinstance(item.get("id"), str)}
    said = {item["id"]: json_bytes(item) for item in output if isinstance(item.get("id"), str)}
    responses, size, _ = kept["limits"]
    most = len(whole) + sum(len(item_id) + len(data) for item_id, data in (items | said).items())  # all new
    if most > size or responses < 1:
        return  # larger than the whole store: not kept (naming it is an error), and nothing else dropped
    with kept["lock"]:
        _drop(kept, response_id)
        while kept["responses"] and (len(kept["responses"]) >= responses or kept["size"] + most > size):
            _drop(kept, next(iter(kept["responses"])))  # the oldest first
        new = {item_id: data for item_id, data in items.items() if item_id not in kept["items"]} | said
        cost = len(whole) + sum(len(item_id) + len(data) for item_id, data in new.items())
        kept["responses"][response_id] = {"context": whole, "items": list(new), "size": cost}
        kept["items"] |= {item_id: (response_id, data) for item_id, data in new.items()}
        kept["size"] += cost


def _drop(kept: ResponseStore, response_id: str) -> None:
    """Forget a response and the items it introduced (the caller holds the lock)."""
    dropped = kept["responses"].pop(response_id, None)
    if dropped is None:
        return
    for item_id in dropped["items"]:
        if kept["items"].get(item_id, ("",))[0] == response_id:  # still its own: no later reply took the id
            del kept["items"][item_id]
    kept["size"] -= dropped["size"]
