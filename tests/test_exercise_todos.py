"""Every TODO clause of every stub is checked by a test with that exercise's mark — in both languages.

A stub's TODO lines are the reference's comments in its regions, then the words its tests
compare (catalogue ``messages``). ``TODO_TESTS`` maps each of them to the tests that fail when
a solution breaks it: a green ``check N`` then means every clause holds. When a comment in a
region changes, this table (and its Chinese in ``ink_py/course/language.py``) must change with
it — the tests below say which. The exercise tests' ``about`` lines have a Chinese paragraph
(``中文:``) too. The table, as prose: docs/course.md.
"""

import ast
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from ink_py.course.catalogue import EXERCISES
from ink_py.course.checker import REPORT_ENV
from ink_py.course.language import TODOS_ZH
from ink_py.course.places import CHECKS_DIR, CHECKS_INI
from ink_py.course.stubs import PACKAGE_DIR, package_regions, region_comments

ROOT = Path(__file__).resolve().parent.parent
A = "test_assemble.py::"  # node ids of the checks (ink_py/course/checks/), as check runs them
SSE = "test_parse_sse.py::"
FRAME = "test_parse_frame.py::"
LOOP = "test_loop.py::"
CHUNKS = "test_chunks.py::"
SERVER = "test_fixtures.py::test_a_fixture_stream_assembles_into_the_expected_message[servers/"
MERGE = CHUNKS + "test_concat_merges_tool_call_pieces["

# exercise → {TODO clause: the tests (node ids, or their start) that check it}
TODO_TESTS: dict[int, dict[str, list[str]]] = {
    1: {
        "the default SSE event name when there is no `event:` line": [FRAME + "test_parse_frame[default-event-name]"],
        "one field per line": [FRAME + "test_parse_frame[named-event]", FRAME + "test_parse_frame[comments-between]"],
        'beyond §2.1: WHATWG\'s fields; a ": …" line is a comment': [
            FRAME + "test_parse_frame[comment-only]", FRAME + "test_parse_frame[colon-in-value]",
            FRAME + "test_parse_frame[no-space-after-colon]",
        ],
        "exactly one space is stripped (WHATWG; Ink trims them all)": [
            FRAME + "test_parse_frame[only-one-space-stripped]", FRAME + "test_parse_frame[value-whitespace-kept]",
        ],
        "an empty `event:` names no event": [FRAME + "test_parse_frame[empty-event-name]"],
        "collect every data: line": [FRAME + "test_parse_frame[data-lines-joined]"],
        "beyond §2.1: older llama.cpp sends `error: {...}` this way": [
            FRAME + "test_parse_frame[llamacpp-error-field]",
        ],
        "id:, retry: and unknown fields are ignored": [
            FRAME + "test_parse_frame[id-retry-ignored]", FRAME + "test_parse_frame[unknown-field-ignored]",
        ],
        'error: lines make an "error" event of their text': [
            FRAME + "test_parse_frame[llamacpp-error-field]", FRAME + "test_parse_frame[error-field-text]",
        ],
        'several data: lines are joined with "\\n"': [FRAME + "test_parse_frame[data-lines-joined]"],
        "beyond §2.1: no data, or an empty `data:` (a keep-alive)": [
            FRAME + "test_parse_frame[empty-data-is-keep-alive]", FRAME + "test_parse_frame[no-data-lines]",
        ],
        "beyond §4.1: FINITE_JSON refuses NaN, Infinity": [
            FRAME + "test_data_that_is_not_json_raises_and_quotes_the_frame[nan]",
            FRAME + "test_data_that_is_not_json_raises_and_quotes_the_frame[infinity]",
            FRAME + "test_data_that_is_not_json_raises_and_quotes_the_frame[too-large-for-a-float]",
        ],
        "beyond §4.1: Ink skips what is not JSON; not_json says why": [
            FRAME + "test_data_that_is_not_json_raises_and_quotes_the_frame",
        ],
        "[DONE] and an error: line's text come back; the rest raises": [
            FRAME + "test_parse_frame[done-marker]", FRAME + "test_parse_frame[error-field-text]",
            FRAME + "test_data_that_is_not_json_raises_and_quotes_the_frame[nested-too-deep]",
        ],
    },
    2: {
        "TextDecoder with stream: true: bytes → text": [SSE + "test_parse_sse[one-read-one-event]"],
        "between reads: the text that has not yet formed a complete event": [
            SSE + "test_parse_sse[event-split-across-reads]", SSE + "test_article_2_1_event_arrives_in_two_reads",
        ],
        'beyond §2.1: the old text holds no "\\n\\n", so only the new is searched': [
            SSE + "test_a_long_event_in_small_reads_takes_linear_time_like_the_reference",
            SSE + "test_parse_sse[blank-line-split]",
        ],
        "a character split across reads waits for its rest": [
            SSE + "test_parse_sse[utf8-char-split]", SSE + "test_parse_sse[utf8-char-split-late]",
        ],
        "a blank line ends an event": [
            SSE + "test_parse_sse[one-read-two-events]", SSE + "test_parse_sse[only-newlines]",
        ],
        "one event's lines, without the blank line": [SSE + "test_parse_sse[extra-blank-lines]"],
        "from here on: what has not yet formed a complete event": [
            SSE + "test_parse_sse[event-split-across-reads]", SSE + "test_one_byte_reads_of_a_fixture_equal_one_read",
        ],
        "parse_frame gives None for a comment or a keep-alive": [SSE + "test_parse_sse[comment-frame-skipped]"],
        "at once, in the read that completed it": [
            SSE + "test_each_event_is_yielded_in_the_read_that_completes_it",
            SSE + "test_article_2_1_event_arrives_in_two_reads",
        ],
        "keep the rest: one copy per read, not one per frame, so linear time": [
            SSE + "test_a_long_event_in_small_reads_takes_linear_time_like_the_reference",
            "test_properties.py::test_any_split_of_any_fixture_parses_the_same",
        ],
    },
    3: {
        "beyond §2: a refusal is the reply's words too": [A + "test_a_refusal_is_the_replys_text"],
        'only real text: None, "" or a number yields nothing': [A + "test_empty_or_missing_content_yields_nothing"],
        "the first text opens the reply's one text block, kept in blocks": [
            A + "test_text_is_one_block_even_when_tool_calls_arrive_between",
        ],
        '④ overwrites text_block["text"] with "".join(text_parts): not Ink\'s +=': [
            A + "test_text_deltas_are_yielded_as_they_arrive_and_joined_in_the_message",
            A + "test_long_text_in_many_pieces_takes_linear_time_like_the_reference",
        ],
        "the display gets each piece at once": [
            A + "test_text_deltas_are_yielded_as_they_arrive_and_joined_in_the_message",
            A + "test_assembly_writes_nothing_to_the_terminal",
        ],
        '{"type": "text_delta", "text": content}': [
            A + "test_text_deltas_are_yielded_as_they_arrive_and_joined_in_the_message",
        ],
    },
    4: {
        "beyond §2.2: Gemini sends no index": [SERVER + "gemini_no_index]"],
        '"" on DashScope\'s continuation chunks: not a new id': [SERVER + "dashscope_empty_id]"],
        "Beyond §2.2: a new id at an occupied index is a new call (Ollama sends parallel calls all at index 0); "
        "the previous one is complete.": [
            A + "test_a_new_id_at_an_occupied_index_is_a_new_call", SERVER + "ollama_parallel]",
            A + "test_an_id_arriving_after_an_invented_one_does_not_split_the_call",
        ],
        "the block exists now; its arguments arrive later": [
            A + "test_article_readme_scenario", A + "test_empty_fragments_yield_no_delta_and_blank_arguments",
        ],
        "the name may arrive a chunk after the id": [
            A + "test_name_arriving_after_the_id_is_filled_in", A + "test_a_later_name_never_replaces_the_first",
        ],
        "only this index's string grows": [
            A + "test_article_interleaved_scenario_keeps_each_index_apart",
            "test_properties.py::test_any_fragmented_interleaved_reply_is_reassembled_exactly",
        ],
        '{"type": "tool_call_start", "id": block["id"], "name": block["name"]}': [A + "test_article_readme_scenario"],
        '{"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}': [A + "test_article_readme_scenario"],
    },
    5: {
        'any reason counts as seen, even "" or one not in §4.4': [
            A + "test_an_empty_finish_reason_still_counts_as_seen",
            A + "test_unknown_finish_reason_with_tool_calls_is_tool_use",
        ],
        "no break: usage often comes later": [A + "test_usage_sent_after_the_finish_reason_is_kept"],
        "beyond §4.1: a stream ending in [DONE] did complete": [
            A + "test_done_without_finish_reason_counts_as_complete",
        ],
        "§4.4's table: tool_calls → tool_use, stop → end_turn, length → max_tokens; any other reason → None": [
            A + "test_map_finish_reason", A + "test_article_stop_reasons",
        ],
        'ProviderError("OpenAI stream ended without finish_reason — response may be truncated")': [
            A + "test_article_missing_finish_reason_raises_and_yields_no_message[openai_completions]",
        ],
    },
    6: {
        "signal may be None: TypeScript's `signal?.`": [A + "test_abort_safe_passes_items_and_swallows_errors_only"],
        "`for await (const item of source) yield item`": [
            A + "test_abort_safe_passes_items_and_swallows_errors_only_when_aborted",
            A + "test_article_abort_scenario_ends_quietly_without_message_end[openai_completions]",
        ],
        "aborted: end the event stream": [
            A + "test_article_abort_scenario_ends_quietly_without_message_end[openai_completions]",
            "test_transport.py::test_abort_from_another_thread_ends_a_blocked_read_quietly",
        ],
        "any other read error goes up to the caller": [
            A + "test_a_read_error_without_abort_propagates_through_assembly[openai_completions]",
            A + "test_abort_safe_passes_items_and_swallows_errors_only_when_aborted",
        ],
    },
    7: {
        "Beyond §4.3: Ink passes this record to the tool; here the call is blocked outright.": [
            LOOP + "test_arguments_that_are_not_json_are_blocked_with_the_reason",
        ],
        "beyond §4.3: FINITE_JSON refuses NaN/Infinity: the history stays valid JSON": [
            A + "test_safe_parse_json[nan]", A + "test_safe_parse_json[too-large-for-a-float]",
        ],
        "RecursionError: nested too deep to parse": [A + "test_safe_parse_json[nested-too-deep-to-parse]"],
        "beyond §4.3: json.dumps of it would overflow the stack": [
            A + "test_safe_parse_json[nested-too-deep-to-send-back]",
        ],
        '{"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}': [
            A + "test_safe_parse_json[missing-brace]", A + "test_safe_parse_json[long-raw-cut-to-500]",
            A + "test_article_invalid_json_scenario_still_reaches_message_end_with_parse_error",
        ],
        '{"_parseError": f"tool arguments were nested more than {MAX_ARGUMENT_DEPTH} deep", "raw": raw[:500]}': [
            A + "test_safe_parse_json[nested-too-deep-to-send-back]",
        ],
        "f\"the arguments for {call['name']} were not valid JSON, so the call was not run. "
        'They began: {began}. Send the call again with complete, valid JSON arguments."': [
            LOOP + "test_arguments_that_are_not_json_are_blocked_with_the_reason",
        ],
    },
    8: {
        "none of them runs, not even one whose arguments parse": [
            LOOP + "test_max_tokens_with_tool_calls_runs_none_and_asks_for_them_again",
        ],
        "an isError result in `results`, for the model to read": [LOOP + "test_fail_tool_calls_from_truncated_message"],
        "the call itself is left as the model sent it: the history keeps its request": [
            LOOP + "test_a_refused_call_stays_in_the_history_as_the_model_sent_it",
        ],
        "the display sees each call start and end, as if it had run": [
            LOOP + "test_fail_tool_calls_from_truncated_message",
            LOOP + "test_max_tokens_with_tool_calls_runs_none_and_asks_for_them_again",
        ],
        'f"Error: this reply hit the output token limit (finish_reason: length), so the arguments of '
        "{call['name']} may be truncated; the call was not run. Send the call again with complete arguments.\"": [
            LOOP + "test_fail_tool_calls_from_truncated_message",
        ],
    },
    9: {
        "the latest call at this index": [
            MERGE + "a piece without id after a split joins the latest call at that index]",
        ],
        "A new id at an occupied index is a new call (Ollama). When the latest call has no id, whether this piece "
        "belongs to it is decided at the end (see finished_calls): that call may continue one from an earlier chunk, "
        "which concat will join it to.": [
            MERGE + "ollama sends parallel calls all at index 0: a new id is a new call]",
            MERGE + "a call that opened without an id keeps every later piece at its index, as assemble_stream]",
        ],
        "a new dict: `call` may belong to the chunk concat was given": [
            CHUNKS + "test_concat_changes_neither_argument_even_when_a_chunk_is_reused",
            CHUNKS + "test_concat_is_associative",
        ],
        "taken once, never concatenated": [MERGE + "fireworks repeats id and name on every chunk: taken once]"],
        "one entry per call: short, however long the stream": [CHUNKS + "test_a_long_argument_stays_one_list_of"],
        "the text (or reasoning) block opened in b": [
            CHUNKS + "test_text_and_reasoning_are_joined_and_the_last_finish_reason_kept",
        ],
    },
}  # fmt: skip


def comments(number: int) -> list[str]:
    """The comments in exercise ``number``'s regions, as its stubs list them."""
    return [
        comment
        for relative, region in package_regions()[number]
        for comment in region_comments((PACKAGE_DIR / relative).read_text(encoding="utf-8"), region)
    ]


def todo_clauses(number: int) -> list[str]:
    """What exercise ``number``'s stubs list as TODOs: its regions' comments, then its messages."""
    return [*comments(number), *EXERCISES[number]["messages"]]


@pytest.fixture(scope="module")
def selected(tmp_path_factory) -> dict[str, list[int]]:
    """node id → its exercise marks, for every test marked ex1 … ex9 (one collection, as check makes it)."""
    report = tmp_path_factory.mktemp("collected") / "report.json"
    everything = " or ".join(f"ex{n}" for n in EXERCISES)
    command = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "-p",
               "ink_py.course.check_plugin", "-c", str(CHECKS_INI), "-m", everything, str(CHECKS_DIR)]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, REPORT_ENV: str(report)}, capture_output=True)
    assert report.exists(), done.stderr
    return json.loads(report.read_text(encoding="utf-8"))["selected"]


@pytest.mark.parametrize("number", sorted(EXERCISES))
def test_every_todo_clause_has_a_test_with_the_exercise_mark(selected, number):
    clauses = todo_clauses(number)
    assert sorted(TODO_TESTS[number]) == sorted(clauses), "a TODO clause was added, changed or removed"
    for clause, tests in TODO_TESTS[number].items():
        assert tests, clause
        for test in tests:
            marked = [node for node, marks in selected.items() if node.startswith(test) and number in marks]
            assert marked, f"exercise {number}: no test marked ex{number} is {test!r} (for {clause!r})"


def test_every_todo_clause_has_its_chinese():
    every = {comment for number in EXERCISES for comment in comments(number)}
    assert sorted(every - set(TODOS_ZH)) == []
    assert sorted(set(TODOS_ZH) - every) == [], "translations of comments no region has any more"


@cache
def docstrings(path: str) -> dict[str, str]:
    tree = ast.parse((CHECKS_DIR / path).read_text(encoding="utf-8"))
    return {n.name: ast.get_docstring(n) or "" for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_every_exercise_test_that_explains_itself_does_so_in_chinese_too(selected):
    untranslated = set()
    for node in selected:
        path, _, name = node.partition("::")
        doc = docstrings(path).get(name.split("[")[0], "")
        if doc and "\n中文:" not in "\n" + doc:
            untranslated.add(f"{path}::{name.split('[')[0]}")
    assert untranslated == set()


def test_an_about_line_is_whole_sentences(selected):
    """``check``'s about line is the docstring's first paragraph, joined — never cut at a line's end."""
    from ink_py.course.check_plugin import about

    for node in selected:
        path, _, name = node.partition("::")
        doc = docstrings(path).get(name.split("[")[0], "")
        for language in ("en", "zh") if doc else ():
            line = about(doc, language)
            assert line and line[-1] in ".。)!?", (node, language, line)
            assert "\n" not in line and "  " not in line


def test_the_course_page_lists_every_todo_clause_and_its_tests():
    """docs/course.md ends with ``TODO_TESTS`` as tables, one per exercise, exactly."""
    lines = []
    for number, clauses in TODO_TESTS.items():
        exercise = EXERCISES[number]
        lines += [f"### Exercise {number} · {exercise['slug']} (marker `ex{number}`)", "", "| TODO clause | tests |"]
        lines.append("|---|---|")
        for clause, tests in clauses.items():
            lines.append(f"| {clause} | " + "<br>".join(f"`{t}`" for t in tests) + " |")
        lines.append("")
    page = (ROOT / "docs" / "course.md").read_text(encoding="utf-8")
    assert page[page.index("### Exercise 1 ") :].rstrip("\n") == "\n".join(lines).rstrip("\n")
