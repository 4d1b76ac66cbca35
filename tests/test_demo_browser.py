"""``ink-py demo --web`` in a real browser: headless Chromium through the system's chromedriver.

The page must show what the terminal demo shows — the same steps, recorded from the real
``assemble_stream`` — with 上一步/下一步 and the arrow keys, the code of the functions that
ran with those lines highlighted at their real line numbers, and the article's panels at
each of the six steps of "读取 README". A recording's bytes are untrusted: they reach the
page as text. Skips like tests/test_relay_browser.py when selenium or the browser is
missing; CI installs them. Screenshots go to ``$INK_SCREENSHOTS`` (or the test's tmp dir).
"""

from __future__ import annotations

import inspect
import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ink_py.course import demo, demo_panels, demo_steps
from ink_py.course.checks.helpers import text_reply
from ink_py.course.demo_web import DemoServer
from ink_py.provider import openai_completions
from ink_py.scripted.scenarios import SCENARIOS, fixture_path

from . import test_relay_browser as relay_browser
from .test_relay_browser import By, wait_for

browser = relay_browser.browser  # the same headless Chromium fixture (and the same skips)
pytestmark = relay_browser.pytestmark

HOSTILE = '<img src=x onerror="window.pwned=1">\x1b[31m红\x1b[0m</pre><script>window.pwned=2</script>'


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    recording = tmp_path_factory.mktemp("recorded") / "001-response.sse"
    recording.write_bytes(text_reply(HOSTILE))
    args = demo.build_parser().parse_args(["--web", "--file", str(recording)])
    server = DemoServer(demo.web_recordings(args), demo.code_view()).start()
    try:
        yield server
    finally:
        server.close()


def shoot(browser: Any, name: str, tmp_path: Path) -> Path:
    folder = Path(os.environ.get("INK_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"demo-web-{name}.png"
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 10_000  # a rendered page, not a blank one
    return path


def panels(browser: Any) -> dict[str, str]:
    return {key: browser.find_element(By.ID, key).text for key in ("counter", "title", "received", "state", "loop")}


def open_scenario(browser: Any, server: DemoServer, name: str) -> None:
    browser.get(server.url)
    wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, f"#scenario option[value='{name}']"), "the picker")
    browser.execute_script(
        "const s = document.getElementById('scenario'); s.value = arguments[0];s.dispatchEvent(new Event('change'));",
        name,
    )
    label = server.pages[name]["label"]  # the page shown before (the first in the picker) is at its step 1 too
    wait_for(
        browser,
        lambda: (
            browser.find_element(By.ID, "label").text == label
            and browser.find_element(By.ID, "counter").text.startswith("步骤 1 /")
        ),
        f"step 1 of {name}",
    )


def test_the_six_steps_of_reading_readme_forward_and_back(browser, page, tmp_path) -> None:
    steps = demo_steps.record_steps(demo_steps.split_frames(fixture_path("article/readme.sse").read_bytes()))
    open_scenario(browser, page, "readme")
    assert browser.find_element(By.ID, "prev").get_attribute("disabled") == "true"
    seen = []
    for number, step in enumerate(steps, 1):
        shown = panels(browser)
        assert shown["counter"] == f"步骤 {number} / 6" and shown["title"] == step["title"]
        # the panels hold exactly the terminal demo's words for this step
        assert shown["received"] == "\n".join(demo_panels.received_text(step))
        assert shown["state"] == "\n".join(demo_panels.state_text(step))
        assert shown["loop"] == "\n".join(demo_panels.loop_text(step))
        seen.append(shown)
        shoot(browser, f"readme-{number}", tmp_path)
        if number < len(steps):
            (
                browser.find_element(By.ID, "next").click()
                if number % 2
                else browser.find_element(By.TAG_NAME, "body").send_keys("\ue014")
            )  # 下一步, or the → key
            wait_for(browser, lambda n=number: panels(browser)["counter"] == f"步骤 {n + 1} / 6", "the next step")
    # the article's six steps, in its words
    assert seen[1]["received"].startswith('{"choices": [{"delta": {') and "我先读一下 README。" in seen[1]["received"]
    assert 'tool_raw_by_index[0] = [\'{"path":"REA\']' in seen[2]["state"]
    assert '参数拼起来: {"path":"README.md"}' in seen[3]["state"]
    assert "尚未产出 message_end" in seen[3]["loop"] and "saw_finish = True" in seen[4]["state"]
    assert seen[5]["loop"].startswith("message_end:") and '"stopReason": "tool_use"' in seen[5]["loop"]
    assert browser.find_element(By.ID, "next").get_attribute("disabled") == "true"

    browser.find_element(By.TAG_NAME, "body").send_keys("\ue012")  # ←
    wait_for(browser, lambda: panels(browser)["counter"] == "步骤 5 / 6", "back with the arrow key")
    browser.find_element(By.ID, "prev").click()
    wait_for(browser, lambda: panels(browser)["counter"] == "步骤 4 / 6", "back with 上一步")
    assert panels(browser) == seen[3]


def test_the_lines_that_ran_are_highlighted_in_the_real_source(browser, page, tmp_path) -> None:
    open_scenario(browser, page, "readme")
    browser.find_element(By.ID, "next").click()  # step 2: the text arrives
    wait_for(browser, lambda: panels(browser)["counter"] == "步骤 2 / 6", "step 2")
    source, first = inspect.getsourcelines(openai_completions.assemble_stream)
    append = first + next(i for i, line in enumerate(source) if "text_parts.append(content)" in line)
    ran = browser.find_elements(By.CSS_SELECTOR, "#code .line.ran[data-fn='assemble_stream']")
    numbers = {int(row.get_attribute("data-line")) for row in ran}
    assert append in numbers
    row = browser.find_element(By.CSS_SELECTOR, f"#code .line[data-fn='assemble_stream'][data-line='{append}']")
    assert row.text.split(None, 1) == [str(append), source[append - first].strip()]
    steps = demo_steps.record_steps(demo_steps.split_frames(fixture_path("article/readme.sse").read_bytes()))
    assert numbers == set(steps[1]["lines"]["assemble_stream"])  # exactly what the generator ran
    assert not browser.find_elements(By.XPATH, "//*[@id='code']//span[contains(., '# exercise 3 ▼')]")
    background = ran[0].value_of_css_property("background-color")
    plain = browser.find_element(By.CSS_SELECTOR, "#code .line:not(.ran)").value_of_css_property("background-color")
    assert background != plain
    shoot(browser, "readme-2-code", tmp_path)


def test_function_names_that_name_object_members_are_only_names(browser, page) -> None:
    open_scenario(browser, page, "readme")
    step = {"lines": {"constructor": [1], "__proto__": [2], "toString": [3], "assemble_stream": []}}
    # as the page gets a step: JSON.parse makes every name, "__proto__" too, an own key; none has code here
    browser.execute_script("renderCode(JSON.parse(arguments[0]))", json.dumps(step))
    rows = browser.find_elements(By.CSS_SELECTOR, "#code .fn")
    assert [row.text.rsplit(" · ", 1)[1] for row in rows] == ["assemble_stream()"]  # only the real function


def test_the_picker_offers_every_scenario_and_a_recording_shown_as_text(browser, page, tmp_path) -> None:
    browser.get(page.url)
    wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "#scenario option")) > 1, "the picker")
    values = [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#scenario option")]
    assert values == ["file-1", *SCENARIOS]
    open_scenario(browser, page, "abort")
    browser.find_element(By.ID, "next").click()
    browser.find_element(By.ID, "next").click()
    wait_for(browser, lambda: panels(browser)["counter"] == "步骤 3 / 3", "the abort")
    assert "abort_safe" in panels(browser)["loop"] and "用户中断" in panels(browser)["title"]
    assert browser.find_elements(By.CSS_SELECTOR, "#code .line.ran[data-fn='abort_safe']")

    open_scenario(browser, page, "file-1")
    browser.find_element(By.ID, "next").click()
    wait_for(browser, lambda: panels(browser)["counter"] == "步骤 2 / 4", "the recorded text")
    assert "<img src=x" in panels(browser)["received"] and "\\u001b[31m" in panels(browser)["received"]  # text…
    assert browser.find_elements(By.CSS_SELECTOR, "img, script:not(:first-of-type)") == []  # …never elements
    assert browser.execute_script("return window.pwned") is None
    shoot(browser, "recording", tmp_path)


def test_the_server_answers_only_its_own_address_and_serves_nothing_from_elsewhere(page) -> None:
    with urllib.request.urlopen(page.url) as response:
        html = response.read().decode()
        policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "http://" not in html and "https://" not in html and "//cdn" not in html  # no external assets
    with urllib.request.urlopen(page.url + "steps.json?name=readme") as response:
        body = json.loads(response.read())
    assert [s["title"] for s in body["steps"]][-1] == "解析参数,交出完整回复"
    assert body["code"]["assemble_stream"]["first"] == inspect.getsourcelines(openai_completions.assemble_stream)[1]
    for path, status in (("steps.json?name=nope", 404), ("etc/passwd", 404)):
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(page.url + path)
        assert caught.value.code == status
    rebinding = urllib.request.Request(page.url, headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(rebinding)
    assert caught.value.code == 403
