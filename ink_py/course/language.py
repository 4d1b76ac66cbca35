"""The course's two languages: English, or Chinese (like the article) when the student's locale says so.

``course_language`` reads, in the order gettext does, ``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``
and ``LANG`` — the first that is set decides (``zh_CN.UTF-8``, ``zh_TW``, ``zh`` → Chinese) —
unless ``INK_COURSE_LANG=zh`` or ``=en`` (the documented switch) says otherwise. ``say`` gives a
sentence of ``check`` in that language; ``todo_words`` a stub's TODO line. Identifiers, code and
the values a test expects are never translated: they are filled in, as they are, where ``{…}``
stands. ``label`` pads a line's label to its column, a Chinese character taking two.

    >>> course_language({"LANG": "zh_CN.UTF-8"}), course_language({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"})
    ('zh', 'en')
    >>> say("reread", "zh", reading="walkthrough.md §2.1")
    '重读 walkthrough.md §2.1'
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping

from .words import COMMAND_WORDS

LANGUAGE_ENV = "INK_COURSE_LANG"  # zh or en: the switch, above the locale


def course_language(environ: Mapping[str, str] | None = None) -> str:
    """``"zh"`` or ``"en"``: the switch if set, else the first locale variable that is set."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(LANGUAGE_ENV, "").strip().lower()
    if chosen in ("zh", "en"):
        return chosen
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name, "")
        if value:
            return "zh" if value.split(":")[0].lower().startswith("zh") else "en"
    return "en"


def say(key: str, language: str | None = None, **values: object) -> str:
    """The sentence ``key`` in ``language`` (the student's, if not given), ``values`` filled in:
    ``check``'s own (``WORDS``) or the other commands' (words.py)."""
    english, chinese = WORDS[key] if key in WORDS else COMMAND_WORDS[key]
    template = chinese if (language or course_language()) == "zh" else english
    return template.format(**values)


def in_language(pair: tuple[str, str], language: str | None = None) -> str:
    """The English or the Chinese of a pair such as an exercise's title."""
    return pair[1] if (language or course_language()) == "zh" else pair[0]


def label(key: str, language: str | None = None, width: int = 9) -> str:
    """A line's label (``expected``, ``期望``) padded to ``width`` terminal columns."""
    words = say(key, language)
    return words + " " * max(1, width - columns(words))


def columns(text: str) -> int:
    """How many terminal columns ``text`` takes: a Chinese character two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def todo_words(comment: str, language: str | None = None) -> str:
    """A stub's TODO line: the reference's comment, or its Chinese (KeyError if it has none:
    tests/test_exercise_todos.py keeps every comment of every region translated)."""
    return TODOS_ZH[comment] if (language or course_language()) == "zh" else comment


# ── what check says: key → (English, Chinese) ───────────────────────────────────────────

WORDS: dict[str, tuple[str, str]] = {
    # labels of the failure's lines
    "test": ("test", "测试"),
    "about": ("about", "说明"),
    "fed": ("fed", "输入"),
    "expected": ("expected", "期望"),
    "got": ("got", "实际"),
    "where": ("where", "位置"),
    # green
    "green": (
        "exercise {n} · {slug} — all {passed} tests pass. Well done!",
        "练习 {n} · {slug} —— {passed} 个测试全部通过。做得好!",
    ),
    "watch": (
        "see your code at work: {demo} · beside the reference: ink-py exercise diff {n}{dir}",
        "看你的代码运行:{demo} · 和参考实现并排:ink-py exercise diff {n}{dir}",
    ),
    # red
    "reread": ("re-read {reading}", "重读 {reading}"),
    "no_report": (
        "exercise {n} · {slug} — the tests failed without a report; {reread}",
        "练习 {n} · {slug} —— 测试失败了,但没有留下报告;{reread}",
    ),
    "not_written": (
        "exercise {n} · {slug} — not written yet: the stub at {where} still raises NotImplementedError.",
        "练习 {n} · {slug} —— 还没写:{where} 的桩仍在抛出 NotImplementedError。",
    ),
    "not_written_many": (
        "exercise {n} · {slug} — not written yet: {count} stubs still raise NotImplementedError:",
        "练习 {n} · {slug} —— 还没写:{count} 个桩仍在抛出 NotImplementedError:",
    ),
    "write_here": (
        "Write your code in its place (the TODO lines say what it does, and the messages the tests expect).",
        "在桩的位置写你的代码(TODO 行说明它要做什么,以及测试期望的原话)。",
    ),
    "also_runs_stub": (
        "Its test {test} also runs exercise {other} · {other_slug}, whose stub is still in place{at}: "
        "write that one too (ink-py exercise check {other}{dir}).",
        "它的测试 {test} 也会运行练习 {other} · {other_slug},那里的桩还在{at}:那个也要写"
        "(ink-py exercise check {other}{dir})。",
    ),
    "at": (" at {where}", "({where})"),
    "stuck": ("{reread} · stuck? ink-py exercise hint {n}{dir}", "{reread} · 卡住了?ink-py exercise hint {n}{dir}"),
    "stub_in_the_way": (
        "exercise {n} · {slug} — {test} also runs exercise {other} ({other_title}), whose stub is still in place{at}.",
        "练习 {n} · {slug} —— {test} 也会运行练习 {other}({other_title}),那里的桩还在{at}。",
    ),
    "finish_first": (
        "finish exercise {other} first: ink-py exercise check {other}{dir}",
        "先完成练习 {other}:ink-py exercise check {other}{dir}",
    ),
    "first_failed": ("the first test, {test}, failed.", "第一个测试 {test} 就失败了。"),
    "then_failed": ("{passed} tests passed, then {test} failed.", "{passed} 个测试通过,然后 {test} 失败了。"),
    "then_failed_one": ("1 test passed, then {test} failed.", "1 个测试通过,然后 {test} 失败了。"),
    "not_yet": ("exercise {n} · {slug} — not yet: {after}", "练习 {n} · {slug} —— 还不对:{after}"),
    "not_yet_elsewhere": (
        "exercise {n} · {slug} — not yet: {after} It broke in exercise {other} · {other_slug}'s code (yours), "
        "whose own tests fail too.",
        "练习 {n} · {slug} —— 还不对:{after}出错的地方在练习 {other} · {other_slug} 的代码(你写的)里,"
        "它自己的测试也失败了。",
    ),
    "fix_other_first": (
        "fix exercise {other} first — its own test {test} fails too: re-read {reading}, "
        "then ink-py exercise check {other}{dir}",
        "先改练习 {other} —— 它自己的测试 {test} 也失败了:重读 {reading},然后 ink-py exercise check {other}{dir}",
    ),
    "passed_through": (
        "it passed through exercise {other} · {other_slug}'s code on the way, but that exercise's own tests "
        "pass: the mistake is in exercise {n}'s code.",
        "出错时经过了练习 {other} · {other_slug} 的代码,但那个练习自己的测试都通过了:错在练习 {n} 的代码里。",
    ),
    "again": ("{reread}, then run the check again.", "{reread},然后再检查一次。"),
    "debug": ("debug it:  {command}", "调试:  {command}"),
    # the fed / expected / got lines
    "test_builds": ("what the test builds — see {file}:{line}", "测试自己构造的输入 —— 见 {file}:{line}"),
    "in_it": ("{left} to be in it", "{left} 在其中"),
    "not_in_it": ("{left} not to be in it", "{left} 不在其中"),
    "anything_but": ("anything but {right}", "不是 {right} 的任何值"),
    "propagate": ("{raised} to propagate{call}", "{raised} 传到调用方{call}"),
    "from_line": (" from  {line}", ",来自  {line}"),
    "swallowed": (
        "no error: it never reached the caller (swallowed, or never raised)",
        "没有错误:它没有传到调用方(被吞掉了,或者根本没抛出)",
    ),
    "different_error": ("a different error — {message}", "另一个错误 —— {message}"),
    "no_error_from": ("no error from  {line}", "这一行不出错  {line}"),
    "no_error": ("no error", "不出错"),
    "an_error": ("an error — {message}", "出错了 —— {message}"),
    "nothing_came_back": ("None (nothing: no value came back)", "None(什么都没有:没有返回值)"),
    "falsifying": ("the smallest input Hypothesis found:", "Hypothesis 找到的最小输入:"),
    # what comes next
    "next": (
        "next: exercise {n} · {slug} — ink-py exercise {verb} {n}{dir}",
        "下一步:练习 {n} · {slug} —— ink-py exercise {verb} {n}{dir}",
    ),
    "suite_red": (
        "every exercise's own tests pass, but the whole suite does not — see ink-py exercise check --all "
        "--whole-suite{dir}",
        "每个练习自己的测试都通过了,但整套测试没有 —— 见 ink-py exercise check --all --whole-suite{dir}",
    ),
    "all_green": (
        "every exercise green: each one's checks pass on your copy. Well done.",
        "所有练习都通过了:每个练习的检查在你的副本上都通过了。做得好。",
    ),
    "all_green_suite": (
        "every exercise green — and the whole suite passes on your copy. Well done.",
        "所有练习都通过了 —— 整套测试在你的副本上也全部通过。做得好。",
    ),
    "suite_running": (
        "every exercise is green; running the project's whole suite on your copy (several minutes) …",
        "所有练习都通过了;正在你的副本上跑项目的整套测试(要好几分钟)……",
    ),
    "suite_blames": (
        "it ran exercise {other} · {other_slug}'s code (yours): its own tests pass, but this test of the "
        "whole suite does not — re-read {reading}, then ink-py exercise check --all --whole-suite",
        "它运行了练习 {other} · {other_slug} 的代码(你写的):那个练习自己的测试都通过了,整套测试里的这个却没有 —— "
        "重读 {reading},然后 ink-py exercise check --all --whole-suite",
    ),
    "suite_no_exercise": (
        "it ran none of the exercises' code: the reference should pass it — tell your teacher",
        "它没有运行任何练习的代码:参考实现应当通过它 —— 请告诉老师",
    ),
    "exact_words": (
        "the tests compare these words exactly; use them as they are:",
        "测试逐字比较下面这些话,照原样使用:",
    ),
    "suite_passed": (
        "the whole suite on your copy: all {passed} tests pass.",
        "你的副本上的整套测试:{passed} 个测试全部通过。",
    ),
    "suite_failed": (
        "the whole suite on your copy: {after}",
        "你的副本上的整套测试:{after}",
    ),
}

# ── the stubs' TODO lines: the reference's comment (joined, as region_comments gives it) → Chinese ──

TODOS_ZH: dict[str, str] = {
    # 1 parse_frame
    "the default SSE event name when there is no `event:` line": "没有 `event:` 行时,SSE 默认的事件名",
    "one field per line": "每行一个字段",
    'beyond §2.1: WHATWG\'s fields; a ": …" line is a comment': 'beyond §2.1:WHATWG 的字段;": …" 开头的行是注释',
    "exactly one space is stripped (WHATWG; Ink trims them all)": "恰好去掉一个空格(WHATWG;Ink 全部去掉)",
    "an empty `event:` names no event": "空的 `event:` 不算事件名",
    "collect every data: line": "收集每一行 data:",
    "beyond §2.1: older llama.cpp sends `error: {...}` this way": "beyond §2.1:老版 llama.cpp 这样发 `error: {...}`",
    "id:, retry: and unknown fields are ignored": "id:、retry: 和不认识的字段都忽略",
    'error: lines make an "error" event of their text': 'error: 行让这个事件成为 "error" 事件,数据是它们的文本',
    'several data: lines are joined with "\\n"': '多行 data: 用 "\\n" 连接',
    "beyond §2.1: no data, or an empty `data:` (a keep-alive)": "beyond §2.1:没有 data,或者空的 `data:`(保活)",
    "beyond §4.1: FINITE_JSON refuses NaN, Infinity": "beyond §4.1:FINITE_JSON 拒绝 NaN、Infinity",
    "beyond §4.1: Ink skips what is not JSON; not_json says why": (
        "beyond §4.1:Ink 跳过不是 JSON 的数据;not_json 说明原因"
    ),
    "[DONE] and an error: line's text come back; the rest raises": "[DONE] 和 error: 行的文本原样交回;其余的抛出异常",
    # 2 parse_sse
    "TextDecoder with stream: true: bytes → text": "相当于 TextDecoder 加 stream: true:字节 → 文本",
    "between reads: the text that has not yet formed a complete event": (
        "两次读取之间:已经收到、但还没凑成完整事件的文本"
    ),
    'beyond §2.1: the old text holds no "\\n\\n", so only the new is searched': (
        'beyond §2.1:旧文本里没有 "\\n\\n",所以只在新到的文本里找'
    ),
    "a character split across reads waits for its rest": "被拆在两次读取之间的字符,等它的后半截到了再交出",
    "a blank line ends an event": "一个空行结束一个事件",
    "one event's lines, without the blank line": "一个事件的各行,不含空行",
    "from here on: what has not yet formed a complete event": "从这里往后:还没凑成完整事件的部分",
    "parse_frame gives None for a comment or a keep-alive": "注释或保活帧,parse_frame 返回 None",
    "at once, in the read that completed it": "立刻交出,就在让它完整的那次读取里",
    "keep the rest: one copy per read, not one per frame, so linear time": (
        "留下剩余部分:每次读取复制一次,而不是每个 frame 复制一次,所以是线性时间"
    ),
    # 3 text
    "beyond §2: a refusal is the reply's words too": "超出 §2:拒绝回答(refusal)也是回复的文字",
    'only real text: None, "" or a number yields nothing': '只处理真正的文本:None、"" 或数字什么也不产出',
    "the first text opens the reply's one text block, kept in blocks": (
        "第一段文本才创建这条回复唯一的文本块,放进 blocks"
    ),
    '④ overwrites text_block["text"] with "".join(text_parts): not Ink\'s +=': (
        '第 ④ 步用 "".join(text_parts) 覆盖 text_block["text"]:不用 Ink 的 +='
    ),
    "the display gets each piece at once": "每一段都立刻交给显示层",
    # 4 tool calls
    "beyond §2.2: Gemini sends no index": "beyond §2.2:Gemini 不发 index",
    '"" on DashScope\'s continuation chunks: not a new id': 'DashScope 的续传块里是 "":不是新 id',
    "Beyond §2.2: a new id at an occupied index is a new call (Ollama sends parallel calls all at index 0); "
    "the previous one is complete.": (
        "Beyond §2.2:已占用的 index 上来了新 id,就是一个新调用(Ollama 把并行调用都放在 index 0);前一个调用已经完整。"
    ),
    "the block exists now; its arguments arrive later": "块现在就建立;它的参数稍后才到",
    "the name may arrive a chunk after the id": "名字可能比 id 晚一个块到达",
    "only this index's string grows": "只有这个 index 的参数在增长",
    # 5 finish reason
    'any reason counts as seen, even "" or one not in §4.4': '任何结束原因都算见到了,哪怕是 "" 或 §4.4 表里没有的',
    "no break: usage often comes later": "不要 break:用量常在后面才到",
    "beyond §4.1: a stream ending in [DONE] did complete": "beyond §4.1:以 [DONE] 结束的流是完整的",
    "§4.4's table: tool_calls → tool_use, stop → end_turn, length → max_tokens; any other reason → None": (
        "§4.4 的表:tool_calls → tool_use,stop → end_turn,length → max_tokens;其他原因 → None"
    ),
    # 6 abort_safe
    "signal may be None: TypeScript's `signal?.`": "signal 可能是 None:TypeScript 的 `signal?.`",
    "`for await (const item of source) yield item`": "`for await (const item of source) yield item`",
    "aborted: end the event stream": "已中断:结束事件流",
    "any other read error goes up to the caller": "其他读取错误都交给调用方",
    # 7 safe_parse_json and blocking
    "Beyond §4.3: Ink passes this record to the tool; here the call is blocked outright.": (
        "Beyond §4.3:Ink 把这条记录交给工具;这里直接拦下这个调用。"
    ),
    "beyond §4.3: FINITE_JSON refuses NaN/Infinity: the history stays valid JSON": (
        "beyond §4.3:FINITE_JSON 拒绝 NaN/Infinity:历史记录一直是合法的 JSON"
    ),
    "RecursionError: nested too deep to parse": "RecursionError:嵌套太深,解析不了",
    "beyond §4.3: json.dumps of it would overflow the stack": "beyond §4.3:对它做 json.dumps 会栈溢出",
    # 8 truncated calls
    "none of them runs, not even one whose arguments parse": "一个都不执行,参数能解析的也不执行",
    "an isError result in `results`, for the model to read": "在 `results` 里放一条 isError 结果,给模型看",
    "the display sees each call start and end, as if it had run": "显示层看到每个调用开始和结束,就像它运行过一样",
    "the call itself is left as the model sent it: the history keeps its request": (
        "调用本身保持模型发来的样子:历史里留着它的请求"
    ),
    # 9 add_tool_piece and concat
    "the latest call at this index": "这个 index 上最近的一个调用",
    "A new id at an occupied index is a new call (Ollama). When the latest call has no id, whether this piece "
    "belongs to it is decided at the end (see finished_calls): that call may continue one from an earlier chunk, "
    "which concat will join it to.": (
        "已占用的 index 上来了新 id,就是新调用(Ollama)。最近的调用没有 id 时,这一片是否属于它留到最后再定"
        "(见 finished_calls):那个调用可能是更早一个块里某个调用的延续,concat 会把它们接起来。"
    ),
    "a new dict: `call` may belong to the chunk concat was given": "新建一个 dict:`call` 可能属于传给 concat 的那个块",
    "taken once, never concatenated": "只取一次,从不拼接",
    "one entry per call: short, however long the stream": "每个调用一项:无论流多长,列表都很短",
    "the text (or reasoning) block opened in b": "在 b 里开始的文本(或推理)块",
}
