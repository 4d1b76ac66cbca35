"""What ``ink-py exercise check`` says about the natural wrong solutions (issue 13).

Each row is a mistake a student makes first — the article's own shape in Python, a
TODO taken literally, an exception swallowed — written into a fresh copy exactly as a
student would. Every one must fail its check, and the first lines must name the right
exercise and say what the test really expects. All checks run in two fresh
interpreters with the very arguments ``check`` uses (see ``test_exercises.run_sessions``).
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

# (id, exercise checked, {exercise: solution}, what the first line says, what else the check must say)
# A solution is None (the reference's code), (old, new) applied to it, a whole new body, or STUB (not written).
STUB = "stub"
WRONG = [
    ("ex1-ignores-event-line", 1, {1: ('event = value or "message"', 'event = "message"')},
     "exercise 1 · parse-frame — not yet", ["expected  {'event': 'delta'", "re-read walkthrough.md §2.1"]),
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
     "in exercise 5 · finish-reason's code (yours), not exercise 4's",
     ["KeyError: 'finish_reason'", "fix exercise 5 first", "walkthrough.md §4.1", "check 5"]),
    # Three exercises of one loop started, none written: each check says its own is not written — no circle.
    *[(f"ex3-4-5-started-check-{n}", n, {3: STUB, 4: STUB, 5: STUB},
       f"exercise {n} · {EXERCISES[n]['slug']} — not written yet", [f"hint {n}", "!finish exercise"])
      for n in (3, 4, 5)],
    ("ex4-written-ex5-not", 4, {4: None, 5: STUB},
     "exercise 4 · tool-calls — test_", ["also runs exercise 5", "finish exercise 5 first: ink-py exercise check 5"]),
    ("ex5-no-check-at-the-end", 5, {5: ("raise ProviderError(", "print(")},
     "exercise 5 · finish-reason — not yet", ["stream ended without finish_reason — response may be truncated"]),
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


def write_solution(copy: Path, number: int, solution) -> None:
    if solution == STUB:
        return
    if solution is None or isinstance(solution, tuple):
        put_back(copy, number, solution or ("", ""))
        return
    put_back(copy, number)  # the reference's code everywhere else; a new body for the exercise's function
    relative, _, function = EXERCISES[number]["functions"][0].partition(":")
    text = (copy / relative).read_text(encoding="utf-8")
    [region] = [r for r in function_regions(text) if r["number"] == number]
    body = textwrap.dedent(solution).strip("\n")
    lines = [region["indent"] + line if line else "" for line in body.split("\n")]
    (copy / relative).write_text(replace_body(text, region, lines), encoding="utf-8")


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, tuple[str, Path]]:
    """id → (what check said, the copy): every wrong solution checked in one batch."""
    base = tmp_path_factory.mktemp("wrong_solutions")
    jobs, copies = [], {}
    for name, number, solutions, _, _ in WRONG:
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
