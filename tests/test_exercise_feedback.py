"""What ``ink-py exercise check`` says about the natural wrong solutions (issues 13 and 21).

Each ``WRONG`` row is a mistake a student makes first — the article's own shape in Python, a
TODO taken literally, an exception swallowed, a debug print — written into a fresh copy exactly
as a student would. Every one must fail its check, and the first lines must name the right
exercise (never one whose own tests pass) and say what the test really expects. Each ``RIGHT``
row is a correct solution written differently from the reference (a class-based ``parse_sse``):
it must be green. All checks run in two fresh interpreters with the very arguments ``check``
uses (see ``test_exercises.run_sessions``); ``describe_failure`` runs another exercise's own
tests when the error passed through its code.
"""

import json
import textwrap
from pathlib import Path

import pytest

from ink_py.course.catalogue import EXERCISES
from ink_py.course.checker import REPORT_ENV, describe_failure, pytest_arguments
from ink_py.course.stubs import function_regions, replace_body
from ink_py.course.working_copy import start

from .test_exercises import put_back, run_sessions

QUADRATIC_PARSE_SSE = """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    buffer = ""  # the article's buffer string
    after_cr = False
    at_start = True
    for chunk in body:
        text = decoder.decode(chunk)
        if not text:
            continue
        if at_start:
            at_start = False
            text = text.removeprefix("\\ufeff")
        if after_cr and text.startswith("\\n"):
            text = text[1:]
        after_cr = text.endswith("\\r")
        buffer += text.replace("\\r\\n", "\\n").replace("\\r", "\\n")
        while "\\n\\n" in buffer:  # searches the whole buffer again on every read
            frame, buffer = buffer.split("\\n\\n", 1)
            parsed = parse_frame(frame)
            if parsed is not None:
                yield parsed
    rest = buffer + decoder.decode(b"", final=True)
    if rest.strip("\\n"):
        try:
            parsed = parse_frame(rest)
        except ProviderError:
            raise ProviderError(
                f"stream ended in the middle of an event — response may be truncated: {rest[:200]!r}"
            ) from None
        if parsed is not None:
            yield parsed
"""

ABORT_SAFE_WITHOUT_NONE = """
    try:
        yield from source
    except Exception:
        if signal.aborted:
            return
        raise
"""

ABORT_SAFE_SWALLOWS = """
    try:
        yield from source
    except Exception:
        return
"""

SAFE_PARSE_JSON_NONE = """
    try:
        return json.loads(raw)
    except ValueError:
        return None
"""

TRUNCATED_PARAPHRASED = """
    for call in tool_calls:
        result = error_result(call, f"Error: {call['name']} was cut off, please retry.")
        results.append(result)
        if on_event is not None:
            on_event(tool_start_event(call))
            on_event({"type": "tool_end", "result": result})
"""

ABORT_SAFE_READS_THE_SIGNAL_ONCE = """
    aborted = signal is not None and signal.aborted  # read once, before the loop
    try:
        yield from source
    except Exception:
        if aborted:
            return
        raise
"""

PARSE_SSE_ON_BYTES = """
    buffer = b""  # bytes: a character split across reads stays whole — but parse_frame wants text
    for chunk in body:
        buffer += chunk
        sep = buffer.find(b"\\n\\n")
        while sep != -1:
            frame, buffer = buffer[:sep], buffer[sep + 2 :]
            parsed = parse_frame(frame)
            if parsed is not None:
                yield parsed
            sep = buffer.find(b"\\n\\n")
"""

SAFE_PARSE_JSON_CATCHES_JSONDECODEERROR = """
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return {"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}
"""

TRUNCATED_CLEARS_THE_ARGUMENTS = """
    for call in tool_calls:
        call["arguments"] = {}  # they may be cut short: drop them
        result = error_result(
            call,
            f"Error: this reply hit the output token limit (finish_reason: length), so the arguments of "
            f"{clipped(call['name'])} may be truncated; the call was not run. "
            "Send the call again with complete arguments.",
        )
        results.append(result)
        if on_event is not None:
            on_event(tool_start_event(call))
            on_event({"type": "tool_end", "result": result})
"""

# (id, exercise checked, {exercise: solution}, what the first line says, what else the check must say)
# A solution is None (the reference's code), (old, new) applied to it, a whole new body, or STUB (not written).
STUB = "stub"
WRONG = [
    ("ex1-ignores-event-line", 1, {1: ('event = value or "message"', 'event = "message"')},
     "exercise 1 · parse-frame — not yet", ["expected  {'event': 'delta'", "walkthrough.md §2.1"]),
    ("ex2-rescans-the-buffer", 2, {1: None, 2: QUADRATIC_PARSE_SSE},
     "exercise 2 · parse-sse — not yet", ["expected  linear time", "quadratic time", "walkthrough.md §2.1"]),
    ("ex3-joins-for-every-piece", 3,
     {3: ("text_parts.append(content)",
          'text_parts.append(content)\n            text_block["text"] = "".join(text_parts)')},
     "exercise 3 · text-delta — not yet", ["expected  linear time", "quadratic time", "walkthrough.md §2 ①"]),
    ("ex3-plus-equals", 3, {3: ("text_parts.append(content)", 'text_block["text"] += content')},
     "exercise 3 · text-delta — not yet", ["got       [{'type': 'text', 'text': ''}]", "walkthrough.md §2 ①"]),
    ("ex4-forgets-the-late-name", 4,
     {4: ('elif name and block["name"] == "":\n                block["name"] = str(name)', "pass")},
     "exercise 4 · tool-calls — not yet", ["walkthrough.md §2.2"]),
    ("ex4-right-but-ex5-breaks", 4,
     {4: None, 5: ('if choice.get("finish_reason") is not None:', 'if choice["finish_reason"] is not None:')},
     "It broke in exercise 5 · finish-reason's code (yours), whose own tests fail too.",
     ["KeyError: 'finish_reason'", "fix exercise 5 first — its own test test_", "walkthrough.md §4.1", "check 5"]),
    # Issue 21 §1: never send the student to an exercise whose own tests pass.
    ("ex6-reads-the-signal-once", 6, {2: None, 6: ABORT_SAFE_READS_THE_SIGNAL_ONCE},
     "exercise 6 · abort-safe — not yet", ["passed through exercise 2 · parse-sse's code", "mistake is in exercise 6",
                                          "walkthrough.md §4.2", "!fix exercise 2", "!exercise 2 first"]),
    ("ex2-cuts-bytes-not-text", 2, {1: None, 2: PARSE_SSE_ON_BYTES},
     "exercise 2 · parse-sse — not yet", ["passed through exercise 1 · parse-frame's code", "mistake is in exercise 2",
                                         "expected  [{'event': 'message', 'data': {'a': 1}}]", "TypeError",
                                         "!fix exercise 1", "!exercise 1 first"]),
    # Issue 21 §2: what the stubs' TODO lines rule out.
    ("ex1-accepts-nan", 1, {1: ("FINITE_JSON.decode(data)", "json.loads(data)")},
     "exercise 1 · parse-frame — not yet", ["test_data_that_is_not_json_raises_and_quotes_the_frame[nan]",
                                           "expected  ProviderError to propagate",
                                           "fed       frame = 'data: {\"a\": NaN}'"]),
    ("ex3-debug-print", 3,
     {3: ("text_parts.append(content)", 'text_parts.append(content)\n            print("got", content)')},
     "exercise 3 · text-delta — not yet", ["test_assembly_writes_nothing_to_the_terminal", "got       'got "]),
    ("ex5-breaks-at-the-finish-reason", 5,
     {5: ('stop_reason = map_finish_reason(choice["finish_reason"])',
          'stop_reason = map_finish_reason(choice["finish_reason"])\n            break')},
     "exercise 5 · finish-reason — not yet", ["test_usage_sent_after_the_finish_reason_is_kept", "'inputTokens': 12"]),
    ("ex7-catches-only-jsondecodeerror", 7, {7: SAFE_PARSE_JSON_CATCHES_JSONDECODEERROR},
     "exercise 7 · safe-parse-json — not yet", ["test_safe_parse_json[nan]", "got       {'n': nan}"]),
    ("ex8-clears-the-refused-arguments", 8, {8: TRUNCATED_CLEARS_THE_ARGUMENTS},
     "exercise 8 · truncated-calls — not yet", ["test_a_refused_call_stays_in_the_history_as_the_model_sent_it"]),
    # Issue 21 §3: a failure only a property test finds is named, with Hypothesis's smallest example, shortly.
    ("ex9-waits-for-an-id-to-split", 9,
     {9: ('if piece["id"] is not None and piece["id"] != call["id"]:',
          'if piece["id"] is not None and call["id"] is not None and piece["id"] != call["id"]:')},
     "exercise 9 · chunk-concat — not yet",
     ["tests passed, then test_any_quirky_stream_gives_the_same_message_or_error_by_concat failed.\n",
      "fed       the smallest input Hypothesis found:\n            chunks=[{'choices':", "more lines)",
      "docs/second-article.md §6.1", "!reproduce_failure", "!Failing test case", "!data = b'", "!@seed"]),
    # Three exercises of one loop started, none written: each check says its own is not written — no circle.
    *[(f"ex3-4-5-started-check-{n}", n, {3: STUB, 4: STUB, 5: STUB},
       f"exercise {n} · {EXERCISES[n]['slug']} — not written yet", [f"hint {n}", "!finish exercise"])
      for n in (3, 4, 5)],
    ("ex4-written-ex5-not", 4, {4: None, 5: STUB},
     "exercise 4 · tool-calls — test_", ["also runs exercise 5", "finish exercise 5 first: ink-py exercise check 5"]),
    ("ex5-no-check-at-the-end", 5, {5: ("raise ProviderError(", "print(")},
     "exercise 5 · finish-reason — not yet", ["OpenAI stream ended without finish_reason — response may be truncated"]),
    ("ex6-signal-may-be-none", 6, {6: ABORT_SAFE_WITHOUT_NONE},
     "exercise 6 · abort-safe — not yet",
     ["expected  OSError to propagate", "AttributeError: 'NoneType' object has no attribute 'aborted'",
      "where     ", "walkthrough.md §4.2", "!expected  no error"]),
    ("ex6-swallows-every-error", 6, {6: ABORT_SAFE_SWALLOWS},
     "exercise 6 · abort-safe — not yet", ["expected  OSError (its message matching 'read failed') to propagate",
                                          "got       no error", "!expected  no error", "!from  with"]),
    ("ex7-returns-none", 7, {7: SAFE_PARSE_JSON_NONE},
     "exercise 7 · safe-parse-json — not yet", ["walkthrough.md §4.3"]),
    ("ex8-paraphrases-the-message", 8, {8: TRUNCATED_PARAPHRASED},
     "exercise 8 · truncated-calls — not yet", ["output token limit", "walkthrough.md §4.4"]),
]  # fmt: skip
NEVER = ["Traceback", "expected  None\n", "got       None\n"]  # a "!word" in a row: never that either
MAX_LINES = 40  # what check says fits on a screen: no dump

PARSE_SSE_AS_A_CLASS = """
    class Frames:
        \"\"\"Cuts the decoded text into frames; searches only what is new.\"\"\"

        def __init__(self) -> None:
            self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
            self.pending: list[str] = []  # the text of an unfinished frame
            self.tail = ""  # a "\\n" that may be half of a blank line

        def feed(self, chunk: bytes) -> list[str]:
            *done, last = (self.tail + self.decoder.decode(chunk)).split("\\n\\n")  # only the new text
            self.tail = "\\n" if last.endswith("\\n") else ""  # perhaps the first half of a blank line
            last = last[: len(last) - len(self.tail)]
            if not done:
                self.pending.append(last)
                return []
            frames = ["".join(self.pending) + done[0], *done[1:]]
            self.pending = [last]
            return frames

    frames = Frames()
    for chunk in body:
        for frame in frames.feed(chunk):
            event = parse_frame(frame)
            if event is not None:
                yield event
"""

PARSE_FRAME_BY_HAND = """
    name = "message"
    data: list[str] = []
    errors: list[str] = []
    for line in frame.split("\\n"):
        if not line or line.startswith(":"):
            continue  # a blank line or a comment
        key, colon, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if key == "event":
            name = value if value else "message"
        elif key == "data":
            data.append(value)
        elif key == "error":
            errors.append(value)
    if errors:
        name, data = "error", errors
    text = "\\n".join(data)
    if text == "":
        return None
    try:
        return {"event": name, "data": FINITE_JSON.decode(text)}
    except (ValueError, RecursionError) as err:
        return not_json(frame, name, text, err)
"""

ABORT_SAFE_BY_HAND = """
    items = iter(source)
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except Exception:
            if signal is not None and signal.aborted:
                return
            raise
        yield item
"""

MAP_FINISH_REASON_AS_IFS = """
    if reason == "tool_calls":
        return "tool_use"
    if reason == "stop":
        return "end_turn"
    if reason == "length":
        return "max_tokens"
    return None
"""

SAFE_PARSE_JSON_WITH_OWN_HOOKS = """
    def refuse(text: str) -> Any:
        raise ValueError(f"not a finite number: {text}")

    def finite(text: str) -> float:
        number = float(text)
        return number if math.isfinite(number) else refuse(text)

    try:
        value = json.loads(raw, parse_constant=refuse, parse_float=finite)
    except (ValueError, RecursionError):
        return {"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}
    if nesting_depth(value) > MAX_ARGUMENT_DEPTH:
        return {"_parseError": f"tool arguments were nested more than {MAX_ARGUMENT_DEPTH} deep", "raw": raw[:500]}
    return value
"""

TRUNCATED_EVENTS_AROUND_THE_RESULT = """
    for call in tool_calls:
        if on_event:
            on_event(tool_start_event(call))
        text = (
            "Error: this reply hit the output token limit (finish_reason: length), so the arguments of "
            + clipped(call["name"])
            + " may be truncated; the call was not run. Send the call again with complete arguments."
        )
        results.append(error_result(call, text))
        if on_event:
            on_event({"type": "tool_end", "result": results[-1]})
"""

ADD_TOOL_PIECE_WITH_NEXT = """
    latest = next((i for i in reversed(range(len(calls))) if calls[i]["index"] == piece["index"]), None)
    if latest is None or (piece["id"] is not None and piece["id"] != calls[latest]["id"]):
        calls.append(piece)
        return True
    call = calls[latest]
    calls[latest] = {**call, "name": call["name"] or piece["name"], "args": call["args"] + piece["args"]}
    return False
"""

# (id, exercise checked, {exercise: solution}): correct, but not the reference's code — green.
RIGHT = [
    ("right-ex1-by-hand", 1, {1: PARSE_FRAME_BY_HAND}),
    ("right-ex2-as-a-class", 2, {1: None, 2: PARSE_SSE_AS_A_CLASS}),
    ("right-ex5-ifs", 5, {5: MAP_FINISH_REASON_AS_IFS}),
    ("right-ex6-by-hand", 6, {2: None, 6: ABORT_SAFE_BY_HAND}),
    ("right-ex7-own-hooks", 7, {7: SAFE_PARSE_JSON_WITH_OWN_HOOKS}),
    ("right-ex8-events-around", 8, {8: TRUNCATED_EVENTS_AROUND_THE_RESULT}),
    ("right-ex9-with-next", 9, {9: ADD_TOOL_PIECE_WITH_NEXT}),
]


def write_solution(copy: Path, number: int, solution) -> None:
    if solution == STUB:
        return
    if solution is None or isinstance(solution, tuple):
        put_back(copy, number, solution or ("", ""))
        return
    put_back(copy, number)  # the reference's code everywhere else; a new body for the exercise's function
    relative, _, function = EXERCISES[number]["functions"][0].partition(":")
    text = (copy / relative).read_text(encoding="utf-8")
    region = [r for r in function_regions(text) if r["number"] == number][0]  # the first function's (in file order)
    body = textwrap.dedent(solution).strip("\n")
    lines = [region["indent"] + line if line else "" for line in body.split("\n")]
    (copy / relative).write_text(replace_body(text, region, lines), encoding="utf-8")


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, tuple[str, Path]]:
    """id → (what check said, the copy): every wrong solution checked in one batch."""
    base = tmp_path_factory.mktemp("wrong_solutions")
    jobs, copies = [], {}
    for name, number, solutions in [row[:3] for row in WRONG] + RIGHT:
        copy = base / name.replace("-", "_")
        for started in sorted(solutions):
            start(started, copy)
        for started, solution in solutions.items():
            write_solution(copy, started, solution)
        copies[name] = (number, copy)
        report = base / f"{copy.name}.json"
        jobs.append({"env": REPORT_ENV, "report": str(report), "args": pytest_arguments(copy, number)})
    run_sessions(jobs)
    said = {}
    for (name, (number, copy)), job in zip(copies.items(), jobs, strict=True):
        report = json.loads(Path(job["report"]).read_text(encoding="utf-8"))
        words = describe_failure(number, report, copy) if report["exitstatus"] == 1 else "passed"
        said[name] = (words, copy)
    return said


@pytest.mark.parametrize("name, number, solutions, first, words", WRONG, ids=[w[0] for w in WRONG])
def test_a_natural_wrong_solution_fails_with_the_right_words(checked, name, number, solutions, first, words):
    said, _ = checked[name]
    assert said != "passed", f"the wrong solution passed exercise {number}'s tests"
    assert first in said.split("\n")[0]
    for word in [w for w in words if not w.startswith("!")]:
        assert word in said, f"{word!r} missing from:\n{said}"
    for word in NEVER + [w[1:] for w in words if w.startswith("!")]:
        assert word not in said, f"{word!r} in:\n{said}"
    assert len(said.split("\n")) <= MAX_LINES, said


@pytest.mark.parametrize("name, number, solutions", RIGHT, ids=[row[0] for row in RIGHT])
def test_a_correct_solution_written_differently_is_green(checked, name, number, solutions):
    said, _ = checked[name]
    assert said == "passed", said


def test_the_course_page_lists_every_attempt_with_its_outcome():
    """docs/course.md's table of attempts is these rows: each wrong one red, naming the exercise the
    check sends the student to; each correct one green."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "course.md").read_text(encoding="utf-8")
    table = {m[1]: (int(m[2]), m[3]) for m in re.finditer(r"^\| `([\w-]+)` \| (\d) \| .*? \| ([^|]+) \|$", page, re.M)}
    wanted = {}
    for name, number, _, first, words in WRONG:
        said = [first, *[w for w in words if not w.startswith("!")]]
        sent = re.search(r"(?:broke in|fix|finish) exercise (\d)", " ".join(said))
        wanted[name] = (number, f"red · exercise {sent[1] if sent else number}")
    wanted.update({name: (number, "green") for name, number, _ in RIGHT})
    assert {name: (n, outcome.split(" (")[0].strip()) for name, (n, outcome) in table.items()} == wanted
