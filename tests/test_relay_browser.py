"""The page of ``ink-py serve`` in a real browser (second article §七): headless Chromium,
driven by Selenium through the system's chromedriver — never a driver download.

Skips, saying why, when ``selenium`` (pip), ``chromium`` or ``chromedriver`` (Debian:
``apt-get install chromium chromium-driver``) is missing; CI installs all three. Covers:
the README question asked from the page — the answer streamed into #output, the tool
call on its own line in #tools, the button disabled while streaming and enabled again
by ``done`` — a tab that navigates away mid-answer stopping the run on the server, and
(issue 27) a connection a proxy drops mid-answer: the page reconnects by itself and shows
the whole answer exactly once; the stop button; a reloaded page offering the rest; (issue 33)
an answer gone while the network slept past INK_RUN_TTL offered again as a new run, and a
question refused for too many runs at once.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ink_py.course.checks.fake_server import FakeModelServer, Reply
from ink_py.course.checks.helpers import text_reply, tool_reply
from ink_py.provider.openai_completions import OpenAICompletionsProvider
from ink_py.scripted.server import start_model_server
from ink_py.second_article.quotas import Quotas
from ink_py.second_article.relay import RelayApp, RelayServer, make_relay_server, run_settings
from ink_py.second_article.runs import MemoryRuns

from .redis_servers import SlowProxy, read_events

try:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    webdriver = By = WebDriverWait = None  # type: ignore[assignment,misc]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
MISSING = (
    "the browser test needs selenium (pip install selenium)" if webdriver is None
    else "the browser test needs chromium and chromedriver (apt-get install chromium chromium-driver)"
    if CHROMIUM is None or CHROMEDRIVER is None else None
)  # fmt: skip
# A mark, not a module-level skip: a run that deselects these tests (pytest -m ex1) does not report them.
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

README = "# demo\n\nA tiny project.\n\n```sh\npip install -e .\ndemo --help\n```\n"
HOSTILE = "# <b>bold</b>\n\n```sh\n<img src=x onerror=alert(1)>\necho `id`\n```\n"  # HTML and backticks in a file
WAIT_SECONDS = 20.0  # an upper bound on waiting for the page, never a speed check
CHROMIUM_FLAGS = [  # what headless Chromium needs on a CI machine running as root, with no network
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1000,800",
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM  # with both paths given, Selenium looks nothing up online
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def relay_on(tmp_path: Path) -> Iterator[Callable[[str], RelayServer]]:
    """A relay in front of the built-in scripted model playing ``scenario``."""
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    started: list[Any] = []

    def start(scenario: str) -> RelayServer:
        model = start_model_server(port=0, scenario=scenario, delay=0.002)  # slow enough to watch it stream
        relay = make_relay_server(
            provider_factory=lambda: OpenAICompletionsProvider(model.base_url), model="ink-scripted", workspace=tmp_path
        )
        started.extend([relay.start(), model])
        return relay

    yield start
    for server in started:
        server.close()


def text_of(browser: Any, element_id: str) -> str:
    return browser.find_element(By.ID, element_id).text


def wait_for(browser: Any, condition: Callable[[], Any], what: str) -> None:
    WebDriverWait(browser, WAIT_SECONDS, poll_frequency=0.05).until(lambda _: condition(), message=what)


def test_the_readme_question_streams_into_the_page(browser, relay_on) -> None:
    relay = relay_on("readme")
    browser.get(relay.url)
    send = browser.find_element(By.ID, "send")
    assert send.text == "发送" and send.is_enabled()
    assert browser.find_element(By.ID, "query").get_attribute("value") == "读取 README.md,告诉我项目怎样启动"

    send.click()
    wait_for(browser, lambda: text_of(browser, "status").startswith("状态：完成"), "the done event")
    assert send.is_enabled()  # closeEventSource() gave the button back
    assert browser.execute_script("return es") is None  # the one-shot stream is closed: no reconnect

    output = text_of(browser, "output")
    assert output.startswith("我先读一下 README.md。")
    assert "README.md 的标题是「demo」" in output and "pip install -e .\ndemo --help" in output
    [line] = browser.find_elements(By.CSS_SELECTOR, "#tools li")
    assert line.get_attribute("class") == "ok"
    assert line.text == '✓ read {"path":"README.md"} · ok · 63 B'
    assert "2 轮" in text_of(browser, "status")
    assert list(relay.runs) == [{"query": "读取 README.md,告诉我项目怎样启动", "stopReason": "completed"}]


def test_a_server_error_event_shows_its_message_and_does_not_reconnect(browser, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("ink_py.provider.transport.backoff_seconds", lambda attempt: 0.0)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # nothing listens here: the model is unreachable
        dead_model = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
        relay = make_relay_server(
            provider_factory=lambda: OpenAICompletionsProvider(dead_model), model="m", workspace=tmp_path
        ).start()
        try:
            browser.get(relay.url)
            browser.find_element(By.ID, "send").click()
            wait_for(browser, lambda: "出错" in text_of(browser, "status"), "the error event")
            # Chinese for the reader, the server's own words after it for the search engine
            assert text_of(browser, "status").startswith(
                f"状态：出错：连不上模型服务器,它在运行吗? — could not connect to {dead_model}/chat/completions"
            )
            assert browser.find_element(By.ID, "send").is_enabled()
            assert browser.execute_script("return es") is None  # closed in onerror: it never reconnects
            wait_for(browser, lambda: relay.runs, "the run's record")
            assert [run["error"][:20] for run in relay.runs] == ["could not connect to"]
        finally:
            relay.close()


def test_leaving_the_page_mid_answer_aborts_the_run(browser, relay_on) -> None:
    relay = relay_on("slow")  # a long answer, two characters at a time
    browser.get(relay.url)
    query = browser.find_element(By.ID, "query")
    query.clear()
    query.send_keys("讲一段慢慢的回答")
    browser.find_element(By.ID, "send").click()
    wait_for(browser, lambda: len(text_of(browser, "output")) >= 4, "the first words")
    assert not browser.find_element(By.ID, "send").is_enabled()  # one question at a time
    assert list(relay.runs) == []  # still answering

    browser.get("about:blank")  # beforeunload → closeEventSource() → the server notices
    deadline = time.monotonic() + WAIT_SECONDS
    while not relay.runs and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(relay.runs) == [{"query": "讲一段慢慢的回答", "stopReason": "aborted"}]


def ask(browser: Any, question: str) -> None:
    query = browser.find_element(By.ID, "query")
    query.clear()
    query.send_keys(question)
    browser.find_element(By.ID, "send").click()


def wait_done(browser: Any) -> None:
    wait_for(browser, lambda: text_of(browser, "status").startswith("状态：完成"), "the done event")


def test_the_page_keeps_a_conversation_and_new_conversation_starts_over(browser, relay_on) -> None:
    relay = relay_on("readme")
    browser.get(relay.url)
    ask(browser, "读取 README.md")
    wait_done(browser)
    ask(browser, "它的标题是什么?")  # the session id makes the server answer after the first turn
    wait_done(browser)
    assert "没有再读一次" in text_of(browser, "output")
    assert browser.find_elements(By.CSS_SELECTOR, "#tools li") == []  # answered from the history
    [earlier] = browser.find_elements(By.CSS_SELECTOR, "#earlier .turn")
    assert earlier.text.startswith("问:读取 README.md") and "README.md 的标题是「demo」" in earlier.text
    assert text_of(browser, "question") == "问:它的标题是什么?"
    [session] = list(relay.sessions)
    assert len(relay.sessions[session]) == 6

    browser.find_element(By.ID, "new").click()
    assert text_of(browser, "earlier") == "" and text_of(browser, "output") == ""
    ask(browser, "它的标题是什么?")
    wait_done(browser)
    assert "没有再读一次" not in text_of(browser, "output")  # a new session: nothing read yet
    assert len(browser.find_elements(By.CSS_SELECTOR, "#tools li")) == 1
    assert len(relay.sessions) == 2


def test_code_fences_render_as_code_blocks_and_stay_text(browser, relay_on, tmp_path) -> None:
    (tmp_path / "HOSTILE.md").write_text(HOSTILE, encoding="utf-8")
    relay = relay_on("readme")
    browser.get(relay.url)
    ask(browser, "读取 HOSTILE.md")
    wait_done(browser)
    [block] = browser.find_elements(By.CSS_SELECTOR, "#output pre > code")
    assert block.text == "<img src=x onerror=alert(1)>\necho `id`"  # a code block, its text as written
    assert browser.find_elements(By.CSS_SELECTOR, "#output img, #output b") == []  # never parsed as HTML
    assert "```" not in text_of(browser, "output")
    assert "「<b>bold</b>」" in text_of(browser, "output")
    family = browser.execute_script("return getComputedStyle(arguments[0]).fontFamily", block)
    assert "mono" in family.lower()


def test_inline_code_becomes_a_code_element(browser, relay_on) -> None:
    relay = relay_on("readme")
    browser.get(relay.url)
    browser.execute_script("renderAnswer(outputEl, [{kind: 'text', text: 'run `make test` <i>now</i>'}])")
    assert [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#output code")] == ["make test"]
    assert text_of(browser, "output") == "run make test <i>now</i>"


def test_after_an_error_no_tool_line_stays_in_progress_and_the_error_is_chinese(browser, relay_on) -> None:
    relay = relay_on("missing-finish")  # a read call starts, then the stream ends without finish_reason
    browser.get(relay.url)
    browser.find_element(By.ID, "send").click()
    wait_for(browser, lambda: "出错" in text_of(browser, "status"), "the error event")
    status = text_of(browser, "status")
    assert status.startswith("状态：出错：回答的流没有结束原因就断了,回答可能不完整 — OpenAI stream ended")
    [line] = browser.find_elements(By.CSS_SELECTOR, "#tools li")
    assert line.get_attribute("class") == "error" and line.text == "✗ read · 未完成(出错)"


def test_a_server_shutting_down_is_not_blamed_on_the_user(browser, relay_on) -> None:
    relay = relay_on("slow")
    browser.get(relay.url)
    ask(browser, "讲一段慢慢的回答")
    wait_for(browser, lambda: len(text_of(browser, "output")) >= 4, "the first words")
    relay.close()  # Ctrl-C on ink-py serve: every run in flight is aborted
    wait_for(browser, lambda: "中止" in text_of(browser, "status"), "the done event")
    assert text_of(browser, "status").startswith("状态：服务器正在关闭,这次回答被它中止")


def test_long_error_text_wraps_without_breaking_words(browser, relay_on) -> None:
    relay = relay_on("readme")
    browser.get(relay.url)
    for selector in ("#status", "#tools"):
        element = browser.find_element(By.CSS_SELECTOR, selector)
        style = browser.execute_script(
            "const s = getComputedStyle(arguments[0].tagName === 'UL' ? arguments[0].appendChild("
            "document.createElement('li')) : arguments[0]); return [s.wordBreak, s.overflowWrap]",
            element,
        )
        assert style == ["normal", "anywhere"]  # words wrap whole; only an over-long one is split


@pytest.mark.parametrize("ids", [("__proto__", "constructor"), ("toString", "hasOwnProperty")])
def test_tool_call_ids_that_name_object_members_get_their_lines(browser, tmp_path, ids) -> None:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    calls = [(call_id, "read", '{"path": "README.md"}') for call_id in ids]  # ids are the model's to choose
    with FakeModelServer([Reply(parts=[tool_reply(*calls)]), Reply(parts=[text_reply("读完了。")])]) as model:
        relay = make_relay_server(
            provider_factory=lambda: OpenAICompletionsProvider(model.base_url), model="m", workspace=tmp_path
        ).start()
        try:
            browser.get(relay.url)
            browser.find_element(By.ID, "send").click()
            wait_for(browser, lambda: text_of(browser, "status").startswith("状态：完成"), "the done event")
            lines = [line.text for line in browser.find_elements(By.CSS_SELECTOR, "#tools li.ok")]
            assert lines == ['✓ read {"path":"README.md"} · ok · 63 B'] * 2  # one line each, both finished
            assert text_of(browser, "output") == "读完了。"
        finally:
            relay.close()


# ── issue 27: a dropped connection, the stop button, a reload ───────────────────────────


class DroppingProxy(SlowProxy):
    """Between the page and the relay: the first event stream it carries is cut after ``texts``
    text events (both sockets closed, as a network that drops); everything else passes."""

    def __init__(self, texts: int) -> None:
        self.texts, self.dropped = texts, 0
        super().__init__(target=0)  # the relay's port, set once it listens

    def down(self, upstream: socket.socket, client: socket.socket) -> None:
        seen = b""
        try:
            while piece := upstream.recv(65536):
                client.sendall(piece)
                seen += piece
                if not self.dropped and b"text/event-stream" in seen and seen.count(b"event: text") >= self.texts:
                    self.dropped += 1
                    break  # the network drops, mid-answer
        except OSError:
            pass
        for end in (client, upstream):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def watch_status(browser: Any) -> None:
    """Record every status line the page shows (window.statusSeen)."""
    browser.execute_script(
        "window.statusSeen = [];"
        "new MutationObserver(() => statusSeen.push(statusEl.textContent))"
        ".observe(statusEl, {childList: true, characterData: true, subtree: true});"
    )


def log_text(relay_url: str, browser: Any) -> str:
    """The text of the page's current answer as the server's log has it, start to end, as the page
    lays it out (a blank line between the replies before and after a tool call)."""
    session, run = browser.execute_script("return [session, run.id]")
    response = requests.get(f"{relay_url}chat/stream", params={"session": session, "run": run}, timeout=30)
    text, new_paragraph = "", False
    for event in read_events(response):
        if event["event"] == "tool_start":
            new_paragraph = True
        elif event["event"] == "text":
            text += ("\n\n" if new_paragraph and text else "") + event["data"]["text"]
            new_paragraph = False
    return text


def test_a_connection_dropped_mid_answer_reconnects_by_itself_and_shows_the_answer_once(browser, tmp_path) -> None:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    proxy = DroppingProxy(texts=6)
    with start_model_server(port=0, delay=0.03) as model:  # slow enough to be cut in the middle
        settings = run_settings(
            provider_factory=lambda: OpenAICompletionsProvider(model.base_url), model="ink-scripted", workspace=tmp_path
        )
        relay = RelayServer(("127.0.0.1", 0), RelayApp(settings, hosts=[f"127.0.0.1:{proxy.port}"])).start()
        proxy.target = relay.server_address[1]
        try:
            browser.get(f"http://127.0.0.1:{proxy.port}/")
            watch_status(browser)
            browser.find_element(By.ID, "send").click()
            wait_done(browser)
            assert proxy.dropped == 1
            seen = browser.execute_script("return statusSeen")
            assert "状态：重新连接中…" in seen and "状态：已恢复" in seen
            assert seen.index("状态：重新连接中…") < seen.index("状态：已恢复")
            resumed = text_of(browser, "output")
            shown = browser.execute_script("return segments.map((part) => part.text).join('')")
            assert shown == log_text(relay.url, browser)  # every text event once: no gap, no repeat
            assert len(relay.runs) == 1 and len(model.requests) == 2  # the reconnect resumed the run, not a new one
            [line] = browser.find_elements(By.CSS_SELECTOR, "#tools li")
            assert line.text == '✓ read {"path":"README.md"} · ok · 63 B'

            browser.get(relay.url)  # the same question, uninterrupted
            ask(browser, "读取 README.md,告诉我项目怎样启动")
            wait_done(browser)
            assert text_of(browser, "output") == resumed
        finally:
            relay.close()
            proxy.close()


def test_the_stop_button_stops_the_run_on_the_server(browser, relay_on) -> None:
    relay = relay_on("slow")
    browser.get(relay.url)
    stop = browser.find_element(By.ID, "stop")
    assert not stop.is_displayed()
    ask(browser, "讲一段慢慢的回答")
    wait_for(browser, lambda: len(text_of(browser, "output")) >= 4, "the first words")
    assert stop.is_displayed()
    stop.click()
    wait_for(browser, lambda: "已停止" in text_of(browser, "status"), "the stopped done event")
    assert text_of(browser, "status").startswith("状态：已停止 · ")  # the aborted turn counts no tokens
    assert list(relay.runs) == [{"query": "讲一段慢慢的回答", "stopReason": "aborted"}]
    assert browser.find_element(By.ID, "send").is_enabled() and not stop.is_displayed()
    assert browser.execute_script("return es") is None


def test_a_reloaded_page_offers_the_rest_of_its_unfinished_answer(browser, relay_on) -> None:
    relay = relay_on("slow")
    browser.get(relay.url)
    ask(browser, "讲一段慢慢的回答")
    wait_for(browser, lambda: len(text_of(browser, "output")) >= 6, "the first words")
    browser.refresh()  # beforeunload: the answer so far is kept in sessionStorage, and the run stopped
    resume = browser.find_element(By.ID, "resume")
    wait_for(browser, resume.is_displayed, "the offer")
    assert text_of(browser, "status") == "状态：上次的回答没有显示完"
    assert text_of(browser, "question") == "问:讲一段慢慢的回答"
    before = text_of(browser, "output")
    assert len(before) >= 6  # what was shown, shown again
    resume.click()  # after=: only what the page had not shown
    wait_for(browser, lambda: "已停止" in text_of(browser, "status"), "the rest and its end")
    shown = browser.execute_script("return segments.map((part) => part.text).join('')")
    assert shown.startswith(before) and shown == log_text(relay.url, browser)
    assert list(relay.runs) == [{"query": "讲一段慢慢的回答", "stopReason": "aborted"}]
    browser.refresh()
    time.sleep(0.3)
    assert not browser.find_element(By.ID, "resume").is_displayed()  # a finished answer is not offered again


# ── issue 33: an answer gone while the laptop slept; a question refused ─────────────────


class SleepingProxy(DroppingProxy):
    """A DroppingProxy whose network goes to sleep with the cut: every connection it holds is closed
    and, while ``asleep`` is set, every new one at once — EventSource retrying in vain."""

    def __init__(self, texts: int) -> None:
        self.asleep, self.clients, self.slept = threading.Event(), [], False
        super().__init__(texts)

    def admit(self, client: socket.socket) -> bool:
        self.clients.append(client)
        return not self.asleep.is_set()

    def down(self, upstream: socket.socket, client: socket.socket) -> None:
        super().down(upstream, client)
        if self.dropped and not self.slept:  # the cut: the laptop sleeps, its idle connections die too
            self.slept = True
            self.asleep.set()
            for other in self.clients:
                try:
                    other.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def test_an_answer_gone_while_the_laptop_slept_is_asked_again_as_a_new_run(browser, tmp_path) -> None:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    proxy = SleepingProxy(texts=6)
    with start_model_server(port=0, delay=0.03) as model:
        settings = run_settings(
            provider_factory=lambda: OpenAICompletionsProvider(model.base_url), model="ink-scripted", workspace=tmp_path
        )
        runs = MemoryRuns(ttl=1.0, grace=0.3)  # INK_RUN_TTL and INK_RESUME_GRACE, short for the test
        relay = RelayServer(("127.0.0.1", 0), RelayApp(settings, run_log=runs, hosts=[f"127.0.0.1:{proxy.port}"]))
        relay.start()
        proxy.target = relay.server_address[1]
        try:
            browser.get(f"http://127.0.0.1:{proxy.port}/")
            browser.find_element(By.ID, "send").click()
            wait_for(browser, proxy.asleep.is_set, "the cut")
            session, old = browser.execute_script("return [session, run.id]")
            wait_for(browser, lambda: runs.status((session, old)).state == "unknown", "the answer to expire")
            proxy.asleep.clear()  # the laptop wakes: EventSource reconnects with Last-Event-ID
            again = browser.find_element(By.ID, "again")
            wait_for(browser, again.is_displayed, "the offer to ask again")
            assert text_of(browser, "status").startswith("状态：出错：这个回答已经不在服务器上了")
            asked = len(model.requests)
            again.click()
            wait_done(browser)
            assert browser.execute_script("return run.id") != old  # a new run, never the old id again
            assert len(model.requests) > asked and not again.is_displayed()  # asked anew
            # The old run ran once: aborted when no one came back within the grace, or completed when the model's
            # last events came within that grace (a busy machine: the relay sees the reader gone only at a later
            # write). Either way the question asked again is one more run, never the old one resumed.
            stops = [record["stopReason"] for record in relay.runs]
            assert len(stops) == 2 and stops[0] in ("aborted", "completed") and stops[1] == "completed", stops
        finally:
            relay.close()
            proxy.close()


def test_a_question_refused_for_too_many_runs_says_to_try_later(browser, tmp_path) -> None:
    with start_model_server(port=0, scenario="slow", delay=0) as model:
        relay = make_relay_server(
            provider_factory=lambda: OpenAICompletionsProvider(model.base_url), model="m", workspace=tmp_path,
            quotas=Quotas(runs_per_client=1),
        ).start()  # fmt: skip
        try:
            other = requests.get(
                f"{relay.url}chat/stream", params={"query": "讲一段慢慢的回答"}, stream=True, timeout=30
            )
            next(other.iter_content(chunk_size=None))  # this address already has its one run going
            browser.get(relay.url)
            browser.find_element(By.ID, "send").click()
            wait_for(browser, lambda: "稍后再试" in text_of(browser, "status"), "the refusal")
            assert (
                text_of(browser, "status") == "状态：服务器现在不接受这个问题(这个地址的请求太多,或服务器繁忙),稍后再试"
            )
            assert browser.find_element(By.ID, "send").is_enabled() and browser.execute_script("return es") is None
            other.close()
        finally:
            relay.close()
