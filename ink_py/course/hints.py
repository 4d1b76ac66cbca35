"""The course's hints: for each exercise, in both languages, from a nudge to nearly the answer.

``ink-py exercise hint N`` gives one more each time; ``catalogue.hints_in_order`` puts first
the hints whose ``when`` names a piece of the failing test's name (a ``[DONE]`` failure gets
the ``not_json`` hint first). Identifiers stay in English in both languages. The table is
``EXERCISES``' ``hints`` column, kept here so that ``catalogue.py`` stays a table a reader can
take in at a glance.

    >>> sorted(HINTS) == list(range(1, 10))
    True
    >>> all(hint["zh"] and hint["en"] for hints in HINTS.values() for hint in hints)
    True
"""

from __future__ import annotations

from typing import TypedDict


class Hint(TypedDict):
    """One hint, in both languages; ``when``: pieces of a failing test's name (its parameters too)
    this hint answers — ``hint`` gives such hints first."""

    zh: str
    en: str
    when: tuple[str, ...]


HINTS: dict[int, list[Hint]] = {
    1: [
        {
            "zh": (
                '按 "\\n" 把 frame 拆成行,每行用 `line.partition(":")` 分成字段名和值(没有冒号的行,值是空串;以 ":" '
                '开头的注释行字段名是空串,自然被忽略)。值开头恰好去掉一个空格:`value.removeprefix(" ")`(WHATWG '
                "的规则;Ink 用 trimStart 去掉全部)。"
            ),
            "en": (
                'Split the frame into lines at "\\n"; `line.partition(":")` gives each line\'s field name and '
                'value (a line without a colon has an empty value; a comment line starting with ":" has an empty '
                "field name, so it is ignored by itself). Strip exactly one space from the start of the value: "
                '`value.removeprefix(" ")` (the WHATWG rule; Ink\'s trimStart strips them all).'
            ),
            "when": (
                "[no-space",
                "[value-whitespace",
                "[only-one-space",
                "[colon",
                "[comment",
                "[openrouter",
                "[leading-blank",
                "[unicode",
            ),
        },
        {
            "zh": (
                '`event` 字段改事件名(空值仍算 "message");`data` 行收进 `data_lines`;`error` 行(老版 '
                "llama.cpp)收进 `error_lines`;id、retry 和不认识的字段都忽略。有 error 行时,事件名改成 "
                '"error",数据用 error 行。'
            ),
            "en": (
                'An `event` field renames the event (an empty value still means "message"); `data` lines go into '
                "`data_lines`; `error` lines (older llama.cpp) into `error_lines`; id, retry and unknown fields "
                'are ignored. With error lines, the event is named "error" and its data is the error lines.'
            ),
            "when": (
                "[named-event",
                "[default-event",
                "[empty-event",
                "[data-lines",
                "[llamacpp",
                "[error-field",
                "[id-retry",
                "[unknown-field",
            ),
        },
        {
            "zh": (
                '`data = "\\n".join(data_lines)`;空串 → None(没有 data 行,或空的 `data:` 保活)。其余用 '
                "`FINITE_JSON.decode(data)` 解析 —— 它就是 `json.loads`,但拒绝 NaN、Infinity 和 1e999 "
                '这样溢出的数(§4.1:历史里要一直是合法的 JSON)—— 返回 `{"event": event, "data": ...}`。'
            ),
            "en": (
                '`data = "\\n".join(data_lines)`; an empty string → None (no data lines, or an empty `data:` '
                "keep-alive). Otherwise parse it with `FINITE_JSON.decode(data)` — `json.loads` that refuses NaN, "
                "Infinity and numbers that overflow like 1e999 (§4.1: the history stays valid JSON) — and return "
                '`{"event": event, "data": ...}`.'
            ),
            "when": ("[empty-data", "[blank-data", "[no-data", "[nan", "[infinity", "[too-large"),
        },
        {
            "zh": (
                "几乎是答案:解析失败(`ValueError`;嵌套太深时是 `RecursionError`)时不要像 Ink 那样悄悄返回 "
                "None(§4.1 承认它会丢事件),而是 `return not_json(frame, event, data, err)`:它认出 `[DONE]`,把 "
                'error 行的原文交回去,其余抛出 ProviderError,消息里有 "not JSON" 和 frame 的开头。'
            ),
            "en": (
                "Almost the answer: when parsing fails (`ValueError`; `RecursionError` when nested too deep), do "
                "not return None quietly as Ink does (§4.1 admits it loses events): `return not_json(frame, event, "
                "data, err)` — it recognises `[DONE]`, gives an error line's text back, and raises ProviderError "
                'for the rest, its message holding "not JSON" and the start of the frame.'
            ),
            "when": ("[done", "[truncated-json", "[plain-text", "[newline-inside", "[nested"),
        },
    ],
    2: [
        {
            "zh": (
                '`codecs.getincrementaldecoder("utf-8")("replace")` 就是文章里的 `TextDecoder` 加 `stream: '
                "true`:一个汉字的字节被拆在两次读取之间时,`decoder.decode(chunk)` "
                "先留住前半截,下一次再交出整个字。只处理 LF:CR、CRLF、BOM、32 MiB "
                "上限和没写完的最后一个事件,都由外面的 `guarded` 处理,不归你管。"
            ),
            "en": (
                '`codecs.getincrementaldecoder("utf-8")("replace")` is the article\'s `TextDecoder` with `stream: '
                "true`: when a character's bytes are split between two reads, `decoder.decode(chunk)` keeps the "
                "first part and gives the whole character next time. Handle LF only: CR, CRLF, a BOM, the 32 MiB "
                "cap and a last event left unfinished are handled outside by `guarded`, not by you."
            ),
            "when": ("utf8",),
        },
        {
            "zh": (
                "两次读取之间,`buffer` 保留还没凑成完整事件的文本。每次读取先 `buffer += "
                'decoder.decode(chunk)`,再找 `"\\n\\n"`:每找到一个,就把它前面的 frame 交给 `parse_frame`,结果不是 '
                "None 就立刻 yield —— 在完成它的那次读取里交出去,不要等下一次读取。"
            ),
            "en": (
                "`buffer` holds the text that has not formed a complete event yet. On each read, first `buffer += "
                'decoder.decode(chunk)`, then look for `"\\n\\n"`: for each one found, hand the frame before it to '
                "`parse_frame` and, unless the result is None, yield it at once — in the read that completed it, "
                "not the next one."
            ),
            "when": (
                "[one-read",
                "[event-split",
                "[comment-frame",
                "[empty",
                "[only-newlines",
                "[extra-blank",
                "2_1",
                "yielded_in_the_read",
                "one_byte_reads",
                "any_split",
            ),
        },
        {
            "zh": (
                '线性时间:只在新到的文本里找分隔符 —— 从 `len(buffer) - 1` 开始找(空行可能跨两次读取:"…\\n" | '
                '"\\n…");一次读取切完所有 frame 之后只复制一次剩余部分,不要每切一个 frame 就 `buffer = buffer[sep '
                "+ 2:]`,也不要每次从 buffer 开头重扫。"
            ),
            "en": (
                "Linear time: look for the separator only in the text that just arrived — start at `len(buffer) - "
                '1` (a blank line may straddle two reads: "…\\n" | "\\n…"); after cutting every frame of a read, '
                "copy the rest once. Do not `buffer = buffer[sep + 2:]` for each frame, nor rescan buffer from its "
                "start on every read."
            ),
            "when": ("linear", "[blank-line", "blank-line-opens"),
        },
        {
            "zh": (
                "几乎是答案:`searched = len(buffer) - 1`;`buffer += decoder.decode(chunk)`;`start = 0`;`sep = "
                'buffer.find("\\n\\n", max(searched, 0))`;`while sep != -1:` 里 `frame = '
                'buffer[start:sep]`、`start = sep + 2`、解析并 yield、`sep = buffer.find("\\n\\n", start)`;while '
                "之后 `buffer = buffer[start:]`。"
            ),
            "en": (
                "Almost the answer: `searched = len(buffer) - 1`; `buffer += decoder.decode(chunk)`; `start = 0`; "
                '`sep = buffer.find("\\n\\n", max(searched, 0))`; inside `while sep != -1:` `frame = '
                'buffer[start:sep]`, `start = sep + 2`, parse and yield, `sep = buffer.find("\\n\\n", start)`; '
                "after the while, `buffer = buffer[start:]`."
            ),
            "when": (),
        },
    ],
    3: [
        {
            "zh": ('文字在 `delta.get("content")`;只有非空字符串才处理 —— None、"" 和数字都跳过,什么也不产出。'),
            "en": (
                'The text is in `delta.get("content")`; only a non-empty string counts — None, "" and numbers are '
                "skipped and yield nothing."
            ),
            "when": ("empty_or_missing", "refusal", "writes_nothing"),
        },
        {
            "zh": (
                '第一次收到文字时才创建 `text_block = {"type": "text", "text": ""}` 并 '
                "`blocks.append(text_block)`;之后的文字都进这同一个块,哪怕中间夹着工具调用。"
            ),
            "en": (
                'Create `text_block = {"type": "text", "text": ""}` and `blocks.append(text_block)` only when the '
                "first text arrives; all later text goes into that same block, even with tool calls in between."
            ),
            "when": ("one_block",),
        },
        {
            "zh": (
                '不要每次 `text_block["text"] += content`(Python '
                '每次都复制整个字符串):`text_parts.append(content)`,第 ④ 步会一次 `"".join(text_parts)`。'
            ),
            "en": (
                'Do not `text_block["text"] += content` each time (Python copies the whole string each time): '
                '`text_parts.append(content)`; step ④ joins them once with `"".join(text_parts)`.'
            ),
            "when": ("linear", "joined"),
        },
        {
            "zh": (
                '几乎是答案:`if isinstance(content, str) and content != "":` 里,先按需创建块,再 '
                '`text_parts.append(content)`,然后 `yield {"type": "text_delta", "text": content}` —— '
                "先通知显示层,完整消息留到最后。"
            ),
            "en": (
                'Almost the answer: inside `if isinstance(content, str) and content != "":` create the block if '
                'needed, then `text_parts.append(content)`, then `yield {"type": "text_delta", "text": content}` — '
                "the display hears first, the whole message comes at the end."
            ),
            "when": (),
        },
    ],
    4: [
        {
            "zh": (
                '片段按 `tc["index"]` 归属,不按工具名(两个调用可能都叫 read)。`tool_by_index` '
                '存块,`tool_raw_by_index` 存这个调用的参数片段列表。Gemini 不给 index:用 `tc.get("index", '
                "position)`。"
            ),
            "en": (
                'Fragments belong by `tc["index"]`, not by the tool\'s name (two calls may both be read). '
                "`tool_by_index` holds the blocks, `tool_raw_by_index` each call's list of argument fragments. "
                'Gemini sends no index: use `tc.get("index", position)`.'
            ),
            "when": ("interleaved", "gemini"),
        },
        {
            "zh": (
                '第一次见到某个 index:创建 `{"type": "toolCall", "id": str(tc_id or f"call_{index}"), "name": '
                'str(name or ""), "arguments": {}}`,放进 `blocks` 和 `tool_by_index`,`tool_raw_by_index[index] = '
                '[]`,yield `tool_call_start`;没有 id 时把 index 记进 `invented_ids`。再次见到、而块的 name 还是 "" '
                "时,补上迟到的名字。"
            ),
            "en": (
                'The first time an index appears, create `{"type": "toolCall", "id": str(tc_id or '
                'f"call_{index}"), "name": str(name or ""), "arguments": {}}`, put it in `blocks` and '
                "`tool_by_index`, set `tool_raw_by_index[index] = []` and yield `tool_call_start`; without an id, "
                'note the index in `invented_ids`. When it appears again while the block\'s name is still "", fill '
                "in the late name."
            ),
            "when": ("readme", "missing_id", "name_arriving", "later_name", "fixture_stream", "reassembled"),
        },
        {
            "zh": (
                '参数片段 `function.get("arguments") or ""` 非空才追加到这个 index 的列表,并 yield `{"type": '
                '"tool_call_delta", "id": block["id"], "jsonDelta": fragment}`。参数留到第 ④ 步再解析。'
            ),
            "en": (
                'Append the fragment `function.get("arguments") or ""` to this index\'s list only when it is not '
                'empty, and yield `{"type": "tool_call_delta", "id": block["id"], "jsonDelta": fragment}`. The '
                "arguments are parsed later, at step ④."
            ),
            "when": ("empty_fragments", "nothing_reaches", "writes_nothing"),
        },
        {
            "zh": (
                "几乎是答案:已占用的 index 来了一个不同的非空 id,而且这个 index 的 id 不是我们编的(不在 "
                "`invented_ids` 里)—— Ollama 把并行调用都放在 index 0 —— 先 `finish_tool_arguments(block, "
                'tool_raw_by_index[index])` 给旧调用收尾,再把它当新调用创建块。DashScope 续传时发 `"id": '
                '""`,那不算新 id。'
            ),
            "en": (
                "Almost the answer: a different non-empty id at an occupied index whose id we did not make up (not "
                "in `invented_ids`) — Ollama puts parallel calls all at index 0 — first "
                "`finish_tool_arguments(block, tool_raw_by_index[index])` finishes the old call, then a block is "
                'created for the new one. DashScope sends `"id": ""` on continuation chunks: that is not a new id.'
            ),
            "when": ("new_id", "invented"),
        },
    ],
    5: [
        {
            "zh": (
                "`map_finish_reason` 就是 §4.4 的表:tool_calls → tool_use,stop → end_turn,length → "
                "max_tokens;表里没有的(content_filter、eos……)返回 None。"
            ),
            "en": (
                "`map_finish_reason` is §4.4's table: tool_calls → tool_use, stop → end_turn, length → max_tokens; "
                "anything not in it (content_filter, eos …) → None."
            ),
            "when": ("map_finish_reason", "stop_reasons", "unknown_finish"),
        },
        {
            "zh": (
                '循环里的 ③:`choice.get("finish_reason")` 不是 None,就记下 `saw_finish = True` 和 `stop_reason = '
                "map_finish_reason(...)`。不要 break —— 用量常在后面的块里。"
            ),
            "en": (
                'Step ③ in the loop: when `choice.get("finish_reason")` is not None, note `saw_finish = True` and '
                "`stop_reason = map_finish_reason(...)`. Do not break — usage often comes in a later chunk."
            ),
            "when": ("empty_finish", "usage_sent_after"),
        },
        {
            "zh": (
                "循环结束后(已经判断过中断):既没见过 finish_reason、也没见过 `[DONE]`(`saw_done`),就抛 "
                "ProviderError,不产出 message_end。参数恰好能解析也不能跳过这个检查。"
            ),
            "en": (
                "After the loop (the abort is checked already): with neither a finish_reason nor `[DONE]` "
                "(`saw_done`) seen, raise ProviderError and yield no message_end. Arguments that happen to parse "
                "do not excuse skipping the check."
            ),
            "when": ("missing_finish", "done_without", "placeholder"),
        },
        {
            "zh": (
                '几乎是答案:`if not saw_finish and not saw_done: raise ProviderError("OpenAI stream ended without '
                'finish_reason — response may be truncated")` —— 测试逐字比较这条消息。'
            ),
            "en": (
                'Almost the answer: `if not saw_finish and not saw_done: raise ProviderError("OpenAI stream ended '
                'without finish_reason — response may be truncated")` — the tests compare this message word for '
                "word."
            ),
            "when": (),
        },
    ],
    6: [
        {
            "zh": ("abort_safe 是一个生成器:把 source 的每一项原样交出去(`yield from source`)。"),
            "en": ("abort_safe is a generator: hand on every item of source as it is (`yield from source`)."),
            "when": ("passes_items",),
        },
        {
            "zh": ("把这次转交包在 try 里。读取出错时先问一句:用户已经中断了吗?signal 可能是 None。"),
            "en": (
                "Wrap that handing-on in try. When reading fails, first ask: has the user aborted? signal may be None."
            ),
            "when": ("listener", "wait_returns"),
        },
        {
            "zh": (
                "中断了:这个错误就是取消本身(中断会关掉连接,正在等待的读取随之失败),`return` "
                "安静结束;没有中断:`raise` 原样抛出,让调用方处理。"
            ),
            "en": (
                "Aborted: this error is the cancellation itself (an abort closes the connection, and the read "
                "waiting on it fails) — `return`, quietly. Not aborted: `raise` it as it is, for the caller to "
                "handle."
            ),
            "when": (
                "read_error",
                "propagates",
                "ends_quietly",
                "abort_mid",
                "blocked_read",
                "after_the_last",
                "between_tools",
            ),
        },
        {
            "zh": (
                "几乎是答案:`try: yield from source` / `except Exception: if signal is not None and "
                "signal.aborted: return` / `raise`。"
            ),
            "en": (
                "Almost the answer: `try: yield from source` / `except Exception: if signal is not None and "
                "signal.aborted: return` / `raise`."
            ),
            "when": (),
        },
    ],
    7: [
        {
            "zh": (
                "`safe_parse_json` 永不抛异常:用 `FINITE_JSON.decode(raw)` 解析(它就是 `json.loads`,但拒绝 "
                "NaN、Infinity 和 1e999),成功就返回结果 —— 可能是对象,也可能是数组。"
            ),
            "en": (
                "`safe_parse_json` never raises: parse with `FINITE_JSON.decode(raw)` (`json.loads` refusing NaN, "
                "Infinity and 1e999) and return what it gives — an object, or an array."
            ),
            "when": ("safe_parse_json[",),
        },
        {
            "zh": (
                '失败时 —— `ValueError`,或者嵌套太深时的 `RecursionError`(`"[" * 100000`)—— 返回 `{"_parseError": '
                '"tool arguments were not valid JSON", "raw": raw[:500]}`,只留前 500 个字符。解析成功但嵌套超过 '
                "`MAX_ARGUMENT_DEPTH` 层(`nesting_depth(value)`)的,也返回一条 _parseError 记录:之后对它 json.dumps "
                "会栈溢出。"
            ),
            "en": (
                'On failure — `ValueError`, or `RecursionError` when nested too deep (`"[" * 100000`) — return '
                '`{"_parseError": "tool arguments were not valid JSON", "raw": raw[:500]}`, the first 500 '
                "characters only. Parsed but nested deeper than `MAX_ARGUMENT_DEPTH` (`nesting_depth(value)`): a "
                "_parseError record too — json.dumps of it later would overflow the stack."
            ),
            "when": ("invalid_json", "[nan", "[nested", "[too-large", "[truncated", "[not-json"),
        },
        {
            "zh": (
                "`prepare_tool_call` 的 `_parseError` 分支(beyond §4.3:Ink "
                "把这条记录照样交出去):不让这个调用执行,把 `problem` 设成一句给模型看的话:参数不是合法 "
                'JSON、调用没有执行、参数开头是什么(`args["raw"]` 的前 200 个字符,用 `json.dumps` '
                "加上引号),并请它重新发送完整的调用。"
            ),
            "en": (
                "The `_parseError` branch of `prepare_tool_call` (beyond §4.3: Ink passes the record on): do not "
                "let the call run; set `problem` to a sentence for the model: the arguments were not valid JSON, "
                'the call was not run, how they began (the first 200 characters of `args["raw"]`, quoted with '
                "`json.dumps`), and a request to send the call again, complete."
            ),
            "when": ("blocked",),
        },
        {
            "zh": (
                '几乎是答案:`began = json.dumps(str(args.get("raw", ""))[:200], ensure_ascii=False)`;`problem = '
                "f\"the arguments for {call['name']} were not valid JSON, so the call was not run. They began: "
                '{began}. Send the call again with complete, valid JSON arguments."`'
            ),
            "en": (
                'Almost the answer: `began = json.dumps(str(args.get("raw", ""))[:200], ensure_ascii=False)`; '
                "`problem = f\"the arguments for {call['name']} were not valid JSON, so the call was not run. "
                'They began: {began}. Send the call again with complete, valid JSON arguments."`'
            ),
            "when": (),
        },
    ],
    8: [
        {
            "zh": (
                '回复因输出上限而停止(stopReason 是 "max_tokens"):其中的调用一个都不执行 —— '
                "参数能解析也可能只生成了一半。"
            ),
            "en": (
                'The reply stopped at the output limit (stopReason is "max_tokens"): none of its calls runs — '
                "arguments that parse may still be half generated."
            ),
            "when": ("runs_none", "completes_truncated"),
        },
        {
            "zh": (
                '每个调用往 `results` 追加一条 `{"toolCallId", "toolName", "content", "isError": True}`;content '
                "要说清:达到了 output token limit、参数 may be truncated、the call was not run,并请模型重发(Send "
                "the call again)。"
            ),
            "en": (
                'For each call append `{"toolCallId", "toolName", "content", "isError": True}` to `results`; the '
                "content says it plainly: the output token limit was hit, the arguments may be truncated, the call "
                "was not run, and asks the model to send the call again."
            ),
            "when": ("fail_tool_calls_from_truncated_message", "refused_call"),
        },
        {
            "zh": (
                '也要让界面知道:每个调用依次 `on_event` 一个 `{"type": "tool_start", "toolCallId", "name", '
                '"args"}` 和一个 `{"type": "tool_end", "result": result}`;on_event 可能是 None。'
            ),
            "en": (
                'Let the display know too: for each call in turn, `on_event` a `{"type": "tool_start", '
                '"toolCallId", "name", "args"}` and a `{"type": "tool_end", "result": result}`; on_event may be '
                "None."
            ),
            "when": ("on_event",),
        },
        {
            "zh": (
                '几乎是答案:content 写成 f"Error: this reply hit the output token limit (finish_reason: length), '
                "so the arguments of {call['name']} may be truncated; the call was not run. Send the call again "
                'with complete arguments."'
            ),
            "en": (
                'Almost the answer: the content is f"Error: this reply hit the output token limit (finish_reason: '
                "length), so the arguments of {call['name']} may be truncated; the call was not run. Send the call "
                'again with complete arguments."'
            ),
            "when": (),
        },
    ],
    9: [
        {
            "zh": (
                "concat(a, b) 不改动 a 和 b:先用 `as_message_chunk` 把两边都变成完整的 message chunk,再新建一个 "
                'dict;content 和 reasoning 是 Pieces,直接 `a["content"] + b["content"]`;finish_reason 取 b 的(b '
                "没有就留 a 的)。"
            ),
            "en": (
                "concat(a, b) changes neither a nor b: make both whole message chunks with `as_message_chunk`, "
                'then build a new dict; content and reasoning are Pieces, so `a["content"] + b["content"]`; '
                "finish_reason is b's (a's if b has none)."
            ),
            "when": ("text_and_reasoning", "changes_neither", "associative", "read_like_the_strings"),
        },
        {
            "zh": (
                "usage 会重复上报(Groq、OpenRouter):用 `larger_usage` 取每项的较大值,绝不相加。`order` "
                '记录块出现的先后:b 的 order 里每个 "tool" 对应 b 的下一个 tool_call_chunks 条目,交给 '
                '`add_tool_piece`,它说是新调用才追加 "tool";text/thinking 只在第一次出现时追加。'
            ),
            "en": (
                "Usage is reported more than once (Groq, OpenRouter): `larger_usage` keeps the larger of each "
                'count, never the sum. `order` records the order blocks appeared in: each "tool" in b\'s order '
                "stands for b's next tool_call_chunks entry, handed to `add_tool_piece`, which says whether it "
                'starts a new call (then "tool" is appended); text/thinking are appended only the first time they '
                "appear."
            ),
            "when": ("usage", "article_chunks", "three_chunks"),
        },
        {
            "zh": (
                "add_tool_piece:从后往前找同一 index 的最后一个调用。没有 → 追加这一片,返回 "
                "True。有,但这一片带着不同的非空 id → 是新调用(Ollama 把并行调用都放在 index 0),追加并返回 True。"
            ),
            "en": (
                "add_tool_piece: look from the end for the last call at the same index. None → append this piece, "
                "return True. One, but this piece carries a different non-empty id → a new call (Ollama puts "
                "parallel calls all at index 0): append, return True."
            ),
            "when": (
                "merges_tool_call_pieces",
                "invalid",
                "every_fixture",
                "quirky",
                "interleaved",
                "do_not_parse",
            ),
        },
        {
            "zh": (
                '几乎是答案:否则用一个新 dict 替换 `calls[latest]`:index 和 id 不变,`"name": call["name"] or '
                'piece["name"]`(只取一次,Fireworks 每块都重复 name),`"args": call["args"] + piece["args"]`,返回 '
                "False。不要原地修改 call——它可能属于调用者传进来的那个 chunk。"
            ),
            "en": (
                "Almost the answer: otherwise replace `calls[latest]` with a new dict: index and id unchanged, "
                '`"name": call["name"] or piece["name"]` (taken once: Fireworks repeats the name in every chunk), '
                '`"args": call["args"] + piece["args"]`, return False. Never change call in place — it may belong '
                "to the chunk the caller passed in."
            ),
            "when": ("long_argument", "reused"),
        },
    ],
}
