"""What ``serve-model`` keeps of its Responses (ink_py/scripted/response_store.py), over real HTTP.

Turn 1 asks to read a file; turn 2 sends the tool's result back — every item whole, by
``previous_response_id`` alone, or with ``item_reference``s — and gets the same answer with the
same input count: the model saw the same history, and it summarises what turn 1's tool result
said. A third turn by ``previous_response_id`` answers from the whole chain. ``store: false``
keeps nothing (OpenAI's 400 and 404); the store is bounded (responses, bytes, one context) and
drops the oldest first, a dropped reference answered as an unknown one; what a client sends
back never replaces what the model said; threads share it safely. The store alone: a property
test against a list that keeps the newest.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from ink_py.scripted.response_store import keep, new_store, recall
from ink_py.scripted.server import ModelServer, start_model_server

READ = [{"type": "function", "name": "read", "parameters": {"type": "object"}, "strict": False}]
GUIDE = "# 指南\n\n```sh\nmake run\n```\n"
ANSWER = (
    "docs/guide.md 的标题是「指南」。它给出的命令:\n\n```sh\nmake run\n```\n\n以上命令按它们在文件里出现的顺序列出。"
)
SYSTEM = "You are a coding agent."


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with start_model_server(port=0, delay=0) as running:
        yield running


def ask(server: ModelServer, **body: Any) -> requests.Response:
    return requests.post(server.base_url + "/responses", json={"model": "m", "tools": READ, **body}, timeout=10)


def answer(server: ModelServer, **body: Any) -> dict[str, Any]:
    """A reply that must succeed: the whole response object."""
    response = ask(server, **body)
    assert response.status_code == 200, response.text
    return response.json()


def text(response: dict[str, Any]) -> str:
    return "".join(part["text"] for item in response["output"] if item["type"] == "message" for part in item["content"])


def first_turn(server: ModelServer, **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Turn 1 (a read of docs/guide.md) and the function_call_output turn 2 sends back."""
    one = answer(server, input="读取 docs/guide.md", instructions=SYSTEM, **extra)
    [call] = [item for item in one["output"] if item["type"] == "function_call"]
    assert json.loads(call["arguments"]) == {"path": "docs/guide.md"}
    return one, {"type": "function_call_output", "call_id": call["call_id"], "output": GUIDE}


def references(one: dict[str, Any], bare: bool = False) -> list[dict[str, Any]]:
    return [{"id": item["id"]} if bare else {"type": "item_reference", "id": item["id"]} for item in one["output"]]


# ── turn 2, however it refers to turn 1 ─────────────────────────────────────────────────

ASKED = {"role": "user", "content": "读取 docs/guide.md"}
SECOND_TURNS = {  # how turn 2 names turn 1 → its request (beside instructions and tools)
    "every item whole": lambda one, result: {"input": [ASKED, *one["output"], result]},
    "previous_response_id alone": lambda one, result: {"previous_response_id": one["id"], "input": [result]},
    "item_reference": lambda one, result: {"input": [ASKED, *references(one), result]},
    "bare id reference": lambda one, result: {"input": [ASKED, *references(one, bare=True), result]},
    "streamed turn 1": lambda one, result: {"previous_response_id": one["id"], "input": [result]},
}


@pytest.mark.parametrize("how", list(SECOND_TURNS))
def test_turn_two_sees_turn_ones_history_however_it_is_named(server, how):
    if how == "streamed turn 1":  # kept before the stream is sent: the terminal event carries the id
        with ask(server, input="读取 docs/guide.md", instructions=SYSTEM, stream=True) as streamed:
            last = [line for line in streamed.iter_lines() if line.startswith(b"data: ")][-1]
        one = json.loads(last[6:])["response"]
        call = one["output"][-1]
        result = {"type": "function_call_output", "call_id": call["call_id"], "output": GUIDE}
    else:
        one, result = first_turn(server)
    whole = answer(server, instructions=SYSTEM, **SECOND_TURNS["every item whole"](one, result))
    two = answer(server, instructions=SYSTEM, **SECOND_TURNS[how](one, result))
    assert text(two) == ANSWER == text(whole)  # the summary of what turn 1's tool result said
    assert two["usage"]["input_tokens"] == whole["usage"]["input_tokens"]  # the same history, counted whole
    assert two["previous_response_id"] == SECOND_TURNS[how](one, result).get("previous_response_id")


def test_a_third_turn_by_previous_response_id_answers_from_the_whole_chain(server):
    one, result = first_turn(server)
    two = answer(server, previous_response_id=one["id"], input=[result], instructions=SYSTEM)
    three = answer(server, previous_response_id=two["id"], input="docs/guide.md 的标题是什么?")
    assert (
        text(three) == "docs/guide.md 刚才已经读过,这个回答来自对话里那次读取的结果,没有再读一次。它的标题是「指南」。"
    )
    history = [
        ASKED,
        *one["output"],
        result,
        *two["output"],
        {"role": "user", "content": "docs/guide.md 的标题是什么?"},
    ]
    whole = answer(server, input=history)  # the chain's input and output, and no instructions: not carried over
    assert three["usage"]["input_tokens"] == whole["usage"]["input_tokens"] and text(three) == text(whole)


def test_the_ids_are_new_for_every_reply_even_for_the_same_request(server):
    replies = [answer(server, input="读取 docs/guide.md") for _ in range(3)]
    ids = [r["id"] for r in replies] + [item["id"] for r in replies for item in r["output"]]
    assert len(set(ids)) == len(ids) == 9


# ── what is not kept ────────────────────────────────────────────────────────────────────

NOT_KEPT = [  # (turn 2's store, how it names turn 1) → status, the error's words, its param and code
    (None, "previous", 400, "Previous response with id 'resp_", "previous_response_id", "previous_response_not_found"),
    (None, "item", 404, "' not found.", "input", None),
    (False, "item", 404, "Items are not persisted when `store` is set to false.", "input", None),
]


@pytest.mark.parametrize("store, how, status, words, param, code", NOT_KEPT)
def test_a_store_false_reply_is_not_kept(server, store, how, status, words, param, code):
    one, result = first_turn(server, store=False)
    assert one["store"] is False
    named = {"previous_response_id": one["id"], "input": [result]}
    if how == "item":
        named = {"input": [{"role": "user", "content": "hi"}, *references(one), result]}
    response = ask(server, **named, **({} if store is None else {"store": store}))
    error = response.json()["error"]
    assert response.status_code == status and words in error["message"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)


def test_a_request_with_store_false_still_reads_what_was_kept(server):
    one, result = first_turn(server)  # kept: store is on by default
    two = answer(server, previous_response_id=one["id"], input=[result], instructions=SYSTEM, store=False)
    assert text(two) == ANSWER
    assert ask(server, previous_response_id=two["id"], input="继续").status_code == 400  # two was not kept


@pytest.mark.parametrize(
    "named, status",
    [
        ({"previous_response_id": {"id": "resp_1"}}, 400),
        ({"previous_response_id": 7}, 400),
        ({"previous_response_id": "resp_" + "x" * 100_000}, 400),
        ({"input": [{"type": "item_reference", "id": ["msg_1"]}]}, 404),
        ({"input": [{"type": "item_reference"}]}, 404),
    ],
    ids=["an-object", "a-number", "a-long-string", "an-id-not-a-string", "no-id"],
)
def test_a_reference_of_the_wrong_shape_is_an_unknown_one_named_bounded(server, named, status):
    response = ask(server, **named)
    assert response.status_code == status and len(response.json()["error"]["message"]) < 400


def test_a_response_id_is_not_an_item_id_nor_the_other_way_round(server):
    one, _ = first_turn(server)
    assert ask(server, input=[{"type": "item_reference", "id": one["id"]}]).status_code == 404
    assert ask(server, previous_response_id=one["output"][0]["id"], input="hi").status_code == 400


def test_an_item_sent_back_changed_does_not_replace_what_the_model_said(server):
    one, result = first_turn(server)
    changed = [
        {**item, "arguments": '{"path":"evil.md"}'} if item["type"] == "function_call" else item
        for item in one["output"]
    ]
    answer(server, input=[{"role": "user", "content": "读取 docs/guide.md"}, *changed, result])  # kept, with its input
    two = answer(
        server, instructions=SYSTEM, input=[{"role": "user", "content": "读取 docs/guide.md"}, *references(one), result]
    )
    assert text(two) == ANSWER  # the reference is still the model's call: docs/guide.md, not evil.md


# ── bounded, oldest first ───────────────────────────────────────────────────────────────


def test_the_oldest_response_is_dropped_first_and_then_answered_as_unknown():
    with start_model_server(port=0, delay=0, kept=new_store(responses=2)) as server:
        turns = [first_turn(server) for _ in range(3)]
        (oldest, result), *kept = turns
        assert ask(server, previous_response_id=oldest["id"], input=[result]).status_code == 400
        assert ask(server, input=references(oldest)).status_code == 404  # its items went with it
        for one, result in kept:
            assert text(answer(server, previous_response_id=one["id"], input=[result], instructions=SYSTEM)) == ANSWER
        assert len(server.kept["responses"]) == 2


def test_the_bytes_kept_are_bounded_and_a_large_reply_pushes_out_the_old_ones():
    with start_model_server(port=0, delay=0, kept=new_store(size=10_000)) as server:
        small = [first_turn(server)[0] for _ in range(3)]
        big = "读取 docs/guide.md " + "x" * 9_000  # a large input: kept, but the store must make room
        large = answer(server, input=big)
        assert server.kept["size"] <= 10_000 and server.kept["size"] == sum(
            r["size"] for r in server.kept["responses"].values()
        )
        assert list(server.kept["responses"])[-1] == large["id"]
        gone = [r["id"] for r in small if r["id"] not in server.kept["responses"]]
        assert gone and gone == [r["id"] for r in small][: len(gone)]  # the oldest first
        assert ask(server, previous_response_id=gone[0], input="hi").status_code == 400
        huge = answer(server, input="读取 docs/guide.md " + "y" * 12_000)  # larger than the whole store
        assert ask(server, previous_response_id=huge["id"], input="hi").status_code == 400
        assert large["id"] in server.kept["responses"]  # and it pushed out nothing


def test_a_chain_grown_past_the_context_limit_is_refused_as_openai_refuses_it():
    with start_model_server(port=0, delay=0, kept=new_store(context=3_000)) as server:
        one, result = first_turn(server)
        long = answer(server, previous_response_id=one["id"], input=[{**result, "output": GUIDE + "z" * 2_000}])
        response = ask(server, previous_response_id=long["id"], input="x" * 1_000)
        error = response.json()["error"]
        assert response.status_code == 400 and (error["code"], error["param"]) == ("context_length_exceeded", "input")
        assert ask(server, previous_response_id=long["id"], input="hi").status_code == 200  # the chain itself stays
        assert ask(server, input="读取 a.md " + "w" * 4_000).status_code == 200  # sent whole: its body's limit


def test_threads_keep_and_recall_their_own_conversations(server):
    answers: dict[str, str] = {}

    def converse(worker: int) -> None:
        for number in range(6):
            path = f"docs/w{worker}n{number}.md"
            one = answer(server, input=f"读取 {path}")
            call = one["output"][-1]
            result = {
                "type": "function_call_output",
                "call_id": call["call_id"],
                "output": f"# 第{worker}-{number}篇\n",
            }
            answers[path] = text(answer(server, previous_response_id=one["id"], input=[result]))

    workers = [threading.Thread(target=converse, args=(n,)) for n in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(answers) == 48 and all(said.startswith(f"{path} 的标题是「第") for path, said in answers.items())
    assert all(f"「第{path[6:].replace('n', '-', 1).removesuffix('.md')}篇」" in said for path, said in answers.items())
    assert len(server.kept["responses"]) == 96 and len(server.kept["items"]) == 96 * 2 - 48  # turn 2: text only


# ── the store alone ─────────────────────────────────────────────────────────────────────


def test_an_output_item_takes_its_id_from_an_input_item_planted_before_it():
    kept = new_store(responses=3)
    model = {"id": "msg_x", "type": "message", "content": "the model's"}
    keep(kept, "resp_a", [{"id": "msg_x", "type": "message", "content": "planted"}], [])
    keep(kept, "resp_b", [], [model])
    keep(kept, "resp_c", [{"id": "msg_x", "type": "message", "content": "sent back, changed"}], [])
    assert recall(kept, {"input": [{"id": "msg_x"}]}) == [model]
    keep(kept, "resp_d", [], [])  # resp_a dropped: the id is resp_b's now, and stays
    assert recall(kept, {"input": [{"id": "msg_x"}]}) == [model]
    keep(kept, "resp_e", [], [])  # resp_b dropped: the id goes with it
    assert list(kept["responses"]) == ["resp_c", "resp_d", "resp_e"] and "msg_x" not in kept["items"]


@given(
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=200, max_value=2_000),
    st.lists(st.integers(min_value=0, max_value=900), max_size=12),
)
def test_the_store_keeps_the_newest_that_fit_and_forgets_the_rest(responses, size, lengths):
    kept = new_store(responses=responses, size=size)
    admitted = []  # the responses kept when they came: all but those larger than the whole store
    for number, length in enumerate(lengths):
        before = list(kept["responses"])
        said = [{"id": f"msg_{number}", "type": "message"}]
        keep(kept, f"resp_{number}", [{"role": "user", "content": "x" * length}], said)
        if f"resp_{number}" in kept["responses"]:
            admitted.append(number)
        else:  # too large to keep at all: nothing else was dropped for it
            assert length + 100 > size and list(kept["responses"]) == before
        assert len(kept["responses"]) <= responses and kept["size"] <= size
        assert kept["size"] == sum(r["size"] for r in kept["responses"].values())
        assert {owner for owner, _ in kept["items"].values()} == set(kept["responses"])
    survivors = [int(name.removeprefix("resp_")) for name in kept["responses"]]
    assert survivors == admitted[len(admitted) - len(survivors) :]  # the newest, in order: the oldest went first
    for number in range(len(lengths)):
        named = {"previous_response_id": f"resp_{number}", "input": [{"type": "item_reference", "id": f"msg_{number}"}]}
        assert isinstance(recall(kept, named), list) == (number in survivors)
