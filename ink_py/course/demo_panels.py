"""The words of ``ink-py demo``'s panels: what arrived, what the access layer holds, what went on.

The terminal (``demo_screens``) and the page (``--web``) show the same lines for a step:
``received_text`` (本次收到), ``state_text`` (接入层暂存: the assembler's state locals —
friendly lines for the ones it knows, ``name = value`` for any other), ``loop_text``
(交给 Agent 循环) and ``event_line`` (交给显示层). A recording's bytes are untrusted:
``visible`` writes control characters as escapes.

- the panels: ``received_text``, ``state_text``, ``loop_text``, ``event_line``;
- text helpers: ``visible``, ``fragments``, ``clip``, ``pretty_json``, ``display_width``.

    >>> state_text({"state": {"text_parts": ["我先", "读一下"], "saw_finish": False, "retries": 2}})
    ["text_parts = ['我先', '读一下']", '  文本拼起来: 我先读一下', 'retries = 2', 'saw_finish = False']
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sized
from typing import Any

from ..provider.shared import DONE
from .demo_steps import Step, complete, end_flags


def received_text(step: Step) -> list[str]:
    kind = step["received"]
    if kind == "nothing":
        return ["尚未收到事件(HTTP 请求已成功;从完整的 SSE 事件开始,不模拟网络字节拆分)"]
    if kind == "end":
        return ["响应流读取结束(body 没有更多字节)"]
    if kind == "abort":
        return ["AbortSignal: aborted = true", "(正在等待的读取因连接被关闭而抛出 ConnectionResetError)"]
    if kind == "frame":
        if not complete(step["frame"]):
            why = "还不是完整事件(没有结尾的空行):parse_sse 把它留在 buffer 里,等下一次读取"
        elif step["outcome"] == "error":
            why = "parse_frame 无法解析这一帧(见下方错误)"
        else:
            why = "parse_frame 没有产出事件(注释或保活)"
        return [repr(step["frame"]), why]
    event = step["event"] or {}
    name = "" if event.get("event") == "message" else f"event: {event.get('event')}\n"
    lines = [name + ("[DONE]" if event.get("data") == DONE else pretty_json(event.get("data")))]
    if not step["frame"]:  # no new bytes: the event was the unterminated rest of the buffer
        lines.append("(响应流读取结束;parse_sse 解析了 buffer 里剩下的、没有空行结尾的事件)")
    return lines


# The state locals state_text words in its own way; any other holding something gets `name = value`.
KNOWN_STATE = {
    *("text_parts", "thinking_parts", "tool_by_index", "tool_raw_by_index", "blocks", "stop_reason", "usage"),
    *("block_by_index", "parts_by_index", "index_by_item"),  # the Messages and Responses readers
    # shown through other lines: the text and thinking blocks are among `blocks`; the made-up ids
    # (call_0 …) in tool_by_index; a finished block's parsed arguments in block_by_index
    *("text_block", "thinking_block", "invented_ids", "finished"),
}


def state_text(step: Step) -> list[str]:
    """What the access layer holds: the assembler's state locals in the article's terms. A known one
    that is missing is left out; one it does not know (renamed, added) is shown as it is."""
    state = step["state"]
    lines: list[str] = []
    for label, name in (("文本", "text_parts"), ("思考", "thinking_parts")):
        if state.get(name):
            lines.append(f"{name} = {fragments(state[name])}")
            if len(state[name]) > 1:
                lines.append(f"  {label}拼起来: {clip(''.join(state[name]))}")
    for index, block in (state.get("tool_by_index") or {}).items():
        raw = (state.get("tool_raw_by_index") or {}).get(index, [])
        lines.append(f"tool_by_index[{index}]: id {block['id']} · name {block['name']}")
        lines.append(f"  tool_raw_by_index[{index}] = {fragments(raw)}")
        if len(raw) > 1:
            lines.append(f"  参数拼起来: {clip(''.join(raw))}")
        if block["arguments"]:  # set at ④, after the stream ended
            lines.append(f"  arguments(④ 解析后)= {json.dumps(block['arguments'], ensure_ascii=False)}")
            lines += parse_error_note(block["arguments"])
    for index, block in (state.get("block_by_index") or {}).items():  # the other dialects: one block per index
        raw = (state.get("parts_by_index") or {}).get(index, [])
        call = block["type"] == "toolCall"
        lines.append(f"block_by_index[{index}]: " + (f"toolCall id {block['id']} · name {block['name']}" if call
                     else block["type"]))  # fmt: skip
        lines.append(f"  parts_by_index[{index}] = {fragments(raw)}")
        if len(raw) > 1:
            lines.append(f"  拼起来: {clip(''.join(raw))}")
        if call and block["arguments"]:  # set at the block's end (Messages) or at ④
            lines.append(f"  arguments(解析后)= {json.dumps(block['arguments'], ensure_ascii=False)}")
            lines += parse_error_note(block["arguments"])
    if state.get("index_by_item"):
        lines.append(f"index_by_item = {json.dumps(state['index_by_item'])}  (item_id → output_index)")
    lines += other_state(state)
    if not lines:
        lines.append("尚无文本或工具参数")
    if state.get("blocks"):  # the reply's blocks in order; tool_by_index holds the same objects (§2.2)
        kinds = [f"toolCall {b['id']}" if b["type"] == "toolCall" else b["type"] for b in state["blocks"]]
        lines.append(f"blocks: {' · '.join(kinds)}")
    flags = end_flags(state)  # the first always (has the end come?), the others once set
    ends = [f"{flags[0]} = {state[flags[0]]}"] if flags else []
    ends += [f"stop_reason = {state['stop_reason']!r}"] if "stop_reason" in state else []
    ends += [f"{flag} = True" for flag in flags[1:] if state[flag]]
    if ends:
        lines.append(" · ".join(ends))
    usage = state.get("usage") or {}
    if any(usage.values()):
        lines.append(f"usage = {json.dumps(usage)}")
    return lines


def other_state(state: dict[str, Any]) -> list[str]:
    """The state locals ``state_text`` has no words for, as Python shows them, once they hold something."""
    lines = []
    for name, value in state.items():
        if name in KNOWN_STATE or isinstance(value, bool) or value is None:  # a bool is an end flag: shown apart
            continue
        if isinstance(value, Sized) and not value:
            continue  # nothing in it yet
        parts = isinstance(value, list) and all(isinstance(part, str) for part in value)  # fragments, like text_parts
        lines.append(f"{name} = {fragments(value) if parts else clip(repr(value))}")
    return lines


def parse_error_note(arguments: Any) -> list[str]:
    """A word under arguments that did not parse: what ``_parseError`` is (§4.3)."""
    if not isinstance(arguments, dict) or "_parseError" not in arguments:
        return []
    return ["  ↑ 拼好的参数不是合法 JSON:safe_parse_json 不抛异常,把原因和开头记成这条 _parseError 记录(§4.3)"]


def loop_text(step: Step) -> list[str]:
    calls = [b for b in step["state"].get("blocks") or [] if isinstance(b, dict) and b.get("type") == "toolCall"]
    broken = any(isinstance(b["arguments"], dict) and "_parseError" in b["arguments"] for b in calls)
    if step["outcome"] == "pending":
        return ["尚未产出 message_end;片段不会作为完整消息写入 history。"]
    if step["outcome"] == "aborted":
        lines = ["不产出 message_end(已中断):abort_safe 把读取失败当作取消,回复不交给循环,循环随之停止。"]
        if broken:
            lines.append(
                "④ 在检查中断之前就运行了:半截的参数解析不了,才有上面的 _parseError;这条回复随后被丢弃,不交给循环。"
            )
        return lines
    if step["outcome"] == "error":
        lines = [visible(f"{step['error']}"), "不产出 message_end;错误向上交给调用方,这条回复不写入 history。"]
        if calls and step["received"] not in ("event", "frame"):  # the check after ④: §4.1's
            lines.append("④ 照样运行了,但参数能不能解析都不算数:没有结束原因,这条回复就不交出去(§4.1)。")
        return lines
    if step["outcome"] == "ended":
        return ["流结束了,却没有产出 message_end。"]
    message = next(e["message"] for e in step["emitted"] if e["type"] == "message_end")
    lines = ["message_end:", pretty_json(message)]
    calls = [b for b in message["blocks"] if b["type"] == "toolCall"]
    if message["stopReason"] == "max_tokens" and calls:
        lines.append("注意:stopReason = max_tokens,参数可能不完整:循环不执行其中任何调用,逐个回报错误(§4.4)。")
    elif message["stopReason"] == "max_tokens":
        lines.append("注意:stopReason = max_tokens,回答达到输出上限:循环结束时标记 truncated(§4.4)。")
    elif any("_parseError" in b["arguments"] for b in calls):
        lines.append(
            "注意:参数解析失败(_parseError)。文章里 Ink 照样把这条记录交给工具,read 的参数校验因为缺少 path 拒绝它"
            "(§4.3);ink_py 多走一步(beyond §4.3):循环的 prepare_tool_call 直接拦下这个调用,把原因交回模型。"
        )
    return lines


def event_line(event: dict[str, Any]) -> str:
    details = {k: v for k, v in event.items() if k != "type"}
    return f"{event['type']:<16} " + "  ".join(f"{k}={visible(str(v))}" for k, v in details.items())


def visible(text: str) -> str:
    """``text`` with control characters (ESC, CR, newlines …) written as escapes: a recording's bytes
    are untrusted, and must not move a terminal's cursor or colour it.

    >>> print(visible("红" + chr(27) + "[31m" + chr(10)))
    红\\x1b[31m\\n
    """
    return "".join(
        char if not unicodedata.category(char).startswith("C") or char == "\u200d" else repr(char)[1:-1]
        for char in text
    )


def fragments(parts: list[str], keep: int = 4) -> str:
    """A fragment list as Python shows it, shortened when long.

    >>> fragments(["a", "b", "c", "d", "e", "f"])
    "[… 2 段 …, 'c', 'd', 'e', 'f'](共 6 段)"
    """
    if len(parts) <= keep:
        return repr(parts)
    return f"[… {len(parts) - keep} 段 …, {', '.join(map(repr, parts[-keep:]))}](共 {len(parts)} 段)"


def clip(text: str, limit: int = 240) -> str:
    return visible(text if len(text) <= limit else "…" + text[-limit:])


def pretty_json(value: Any, width: int = 76) -> str:
    """JSON with small parts kept on one line, and single-item wrappers opened in place.

    >>> print(pretty_json({"choices": [{"delta": {"content": "我先读一下", "role": "assistant"}}]}, width=40))
    {"choices": [{"delta": {
      "content": "我先读一下",
      "role": "assistant"
    }}]}
    """

    def show(item: Any, column: int, pad: str) -> str:
        flat = json.dumps(item, ensure_ascii=False)
        if not isinstance(item, dict | list) or not item or column + display_width(flat) <= width:
            return flat
        if len(item) == 1:  # {"choices": [ … ]}: open the only child on this line, keep the indent
            if isinstance(item, dict):
                [(key, child)] = item.items()
                head = "{" + json.dumps(key, ensure_ascii=False) + ": "
                return head + show(child, column + display_width(head), pad) + "}"
            return "[" + show(item[0], column + 1, pad) + "]"
        inner = pad + "  "
        if isinstance(item, dict):
            rows = [f"{inner}{json.dumps(k, ensure_ascii=False)}: " for k in item]
            rows = [row + show(v, display_width(row), inner) for row, v in zip(rows, item.values(), strict=True)]
            return "{\n" + ",\n".join(rows) + f"\n{pad}}}"
        return "[\n" + ",\n".join(inner + show(v, len(inner), inner) for v in item) + f"\n{pad}]"

    return show(value, 0, "")


def display_width(text: str) -> int:
    """Terminal columns: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
