"""The page in a real headless Chromium (Debian's): what a person sees and clicks, no errors, no network at all.

Every test opens the page from file:// and ends with ``assert_clean``: nothing
logged as an error or warning (a blocked inline script would be), no exception,
and no request but the page itself. Screenshots go to the session's
``view-screenshots`` folder (the test artifacts).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, expect
from view_big_run import claude_code_run
from view_browser import Browser, Loaded
from view_runs import INJECTIONS, injection_trace, make_runs, overlapping_trace, replay_report, save, weather_trace

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.diff import first_divergence
from blackbox_mitm.view import write_page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium, headless; the test fails (never skips) saying what to install when it is missing."""
    try:
        b = Browser()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield b
    b.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go (the test artifacts): printed at the end of the module's run."""
    return tmp_path_factory.mktemp("view-screenshots")


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return make_runs(tmp_path)


def _open(browser: Browser, page: Path) -> Loaded:
    return browser.open(page)


def _shot(loaded: Loaded, screenshots: Path, name: str) -> None:
    path = screenshots / f"{name}.png"
    loaded.page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 10_000


def _step(loaded: Loaded, index: int) -> Locator:
    step: Locator = loaded.page.locator(f'#steps .step[data-index="{index}"]')  # Loaded.page is untyped (playwright is imported lazily)
    return step


def test_the_header_shows_the_runs_figures(browser: Browser, runs: Path, screenshots: Path) -> None:
    loaded = _open(browser, write_page(runs / "sunny.json"))
    page = loaded.page
    assert page.inner_text("#run-id") == "sunny-1"
    assert page.inner_text("#model-calls") == "2"
    assert page.inner_text("#tool-calls") == "1"
    assert page.inner_text("#ended") == "run completed"
    assert page.inner_text("#chain") == "verifies"
    assert page.inner_text("#lineage") == "fork of weather-1"
    assert "cut at step 3 (weather-1:3)" in page.inner_text("#head")
    assert page.inner_text("#duration") == "1m00s"  # from the copied prefix's first step to the fork's end
    assert "forked here" in page.inner_text("#steps")
    assert page.locator("#chart .bar").count() == 2  # one bar per model call
    assert page.title() == "blackbox · sunny-1"
    _shot(loaded, screenshots, "header-fork")
    loaded.assert_clean()
    page.close()


def test_a_broken_chain_is_shown_as_failing(browser: Browser, runs: Path) -> None:
    raw = json.loads((runs / "weather.json").read_text())
    raw["steps"][5]["payload"]["text"] = "It is sunny."
    (runs / "weather.json").write_text(json.dumps(raw))
    loaded = _open(browser, write_page(runs / "weather.json"))
    assert loaded.page.inner_text("#chain") == "FAILS (1 problem)"
    assert "step 5" in loaded.page.inner_text("#head")
    loaded.assert_clean()
    loaded.page.close()


def test_overlapping_calls_overlap_on_the_time_axis(browser: Browser, tmp_path: Path, screenshots: Path) -> None:
    loaded = _open(browser, write_page(save(overlapping_trace(), tmp_path / "overlap.json")))
    page = loaded.page
    main, side = (page.locator(f'#chart .bar[data-step="{i}"]').bounding_box() for i in (2, 0))
    assert main is not None and side is not None
    assert main["x"] < side["x"] and side["x"] + side["width"] < main["x"] + main["width"]  # the side call lies within the main one
    assert side["y"] != main["y"]  # in a lane of its own, so both are seen
    assert abs(main["width"] / side["width"] - 1000 / 400) < 0.02  # lengths are latencies: 1000 ms against 400 ms
    chart, end = page.locator("#chart").bounding_box(), page.locator("#chart .tick").last.bounding_box()
    assert chart is not None and end is not None
    assert end["x"] + end["width"] <= chart["x"] + chart["width"]  # the run's last step, at the very end, is still in view
    _shot(loaded, screenshots, "overlap")
    loaded.assert_clean()
    page.close()


def test_opening_a_step_shows_its_content(browser: Browser, runs: Path, screenshots: Path) -> None:
    loaded = _open(browser, write_page(runs / "weather.json"))
    page = loaded.page
    assert page.locator("#steps .step .body").count() == 0  # nothing is built before it is opened
    _step(loaded, 4).locator(".head").click()
    body = _step(loaded, 4).locator(".body")
    text = body.inner_text()
    assert "new turn" in text.lower() and "tool result from get_weather (call-0)" in text
    assert '"forecast": "rain"' in text
    # The tool definitions are folded, with their size; opening them shows the schema's owner.
    tools = body.locator("details", has_text="1 tool definition")
    assert "(127 B)" in tools.inner_text() and not tools.evaluate("d => d.open")
    tools.locator("summary").click()
    expect(tools).to_contain_text("Weather by city.")  # built when opened (the toggle event)
    # A tool call opens beside its result.
    _step(loaded, 2).locator(".head").click()
    pair = _step(loaded, 2).locator(".pair").inner_text()
    assert "TOOL CALL · STEP 2" in pair.upper() and "TOOL RESULT · STEP 3" in pair.upper() and '"city": "Paris"' in pair
    # The keyboard opens a step too (Enter on a focused row), and says so to assistive technology.
    _step(loaded, 1).locator(".head").focus()
    page.keyboard.press("Enter")
    expect(_step(loaded, 1).locator(".body")).to_contain_text("1 TOOL CALL", ignore_case=True)
    assert _step(loaded, 1).locator(".head").get_attribute("aria-expanded") == "true"
    # The terminal event.
    _step(loaded, 6).locator(".head").click()
    assert "run_completed" in _step(loaded, 6).locator(".body").inner_text()
    # A bar of the time axis opens its call.
    page.locator('#chart .bar[data-step="0"]').click()
    assert "What's the weather in Paris?" in _step(loaded, 0).locator(".body").inner_text()
    _shot(loaded, screenshots, "opened-steps")
    loaded.assert_clean()
    page.close()


def test_long_texts_are_folded_with_their_size(browser: Browser, tmp_path: Path) -> None:
    long = "weather " * 2000  # 16,000 characters
    path = save(weather_trace("long-1", answer=long), tmp_path / "long.json")
    loaded = _open(browser, write_page(path))
    _step(loaded, 5).locator(".head").click()
    body = _step(loaded, 5).locator(".body")
    button = body.locator("button.fold")
    assert button.inner_text() == "show all 15.6 KB (16,000 characters)"
    assert len(body.locator("pre").inner_text()) < 4100
    button.click()
    assert len(body.locator("pre").inner_text()) >= 15_999
    loaded.assert_clean()
    loaded.page.close()


def test_search_lists_the_matching_steps_and_marks_the_text(browser: Browser, runs: Path, screenshots: Path) -> None:
    loaded = _open(browser, write_page(runs / "weather.json"))
    page = loaded.page
    page.fill("#search", "raining")
    expect(page.locator("#search-count")).to_have_text("2 of 7 steps match")
    assert [int(x) for x in page.locator("#steps .step").evaluate_all("els => els.map(e => e.dataset.index)")] == [5, 6]
    assert page.locator("#steps .summary mark").first.inner_text().lower() == "raining"
    page.fill("#search", "Paris")
    expect(page.locator("#search-count")).to_have_text("6 of 7 steps match")
    # Paris is in the question (0), the call (1, 2), the answer (5, 6) and the request that first carried the tool round (4).
    assert [int(x) for x in page.locator("#steps .step").evaluate_all("els => els.map(e => e.dataset.index)")] == [0, 1, 2, 4, 5, 6]
    _shot(loaded, screenshots, "search")
    page.fill("#search", "")
    expect(page.locator("#search-count")).to_have_text("7 steps")
    loaded.assert_clean()
    page.close()


def test_markup_in_a_run_is_shown_never_run(browser: Browser, tmp_path: Path, screenshots: Path) -> None:
    path = save(injection_trace("inject-1"), tmp_path / "inject.json")
    loaded = _open(browser, write_page(path))
    page = loaded.page
    page.click("#expand-all")
    for details in page.locator("details").all():
        details.locator("summary").click()
    expect(page.locator("details", has_text="system prompt")).to_contain_text(INJECTIONS[0])  # the folded text, built when opened
    text = page.inner_text("#steps")
    for attempt in INJECTIONS:
        assert attempt in text  # shown, character for character
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2  # the data and the page's own script
    _shot(loaded, screenshots, "injection")
    loaded.assert_clean()
    page.close()


def test_the_diff_marks_the_first_divergence_to_the_character(browser: Browser, tmp_path: Path, screenshots: Path) -> None:
    a = save(weather_trace("a-1", answer="It is raining in Paris, 12 °C."), tmp_path / "a.json")
    b = save(weather_trace("b-1", answer="It is raining in Paris, 14 °C."), tmp_path / "b.json")
    d = first_divergence(load_trace(a), load_trace(b))
    assert d is not None
    loaded = _open(browser, write_page(a, tmp_path / "diff.html", other=b))
    page = loaded.page
    assert page.inner_text("#diff-explanation") == f"first divergence at step 5 (decision): {d.explanation}"
    assert page.inner_text("#diff-field code.path") == "payload.text"
    marks = page.locator("#diff-field mark.hl").all_inner_texts()
    assert marks == ["2", "4"]  # "12" against "14": the character where they part, on each side
    assert page.locator("#diff-grid .divergent").first.inner_text() == "5"
    assert "steps 0–4 are the same in both runs" in page.inner_text("#diff-grid")
    assert _step(loaded, 5).locator(".badge.bad").inner_text() == "first divergence (diff)"
    _shot(loaded, screenshots, "diff")
    loaded.assert_clean()
    page.close()


def test_a_failed_replay_is_shown_at_its_step(browser: Browser, runs: Path, tmp_path: Path, screenshots: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(replay_report(load_trace(runs / "weather.json"))))
    loaded = _open(browser, write_page(runs / "weather.json", report=report))
    page = loaded.page
    assert page.inner_text("#report h2") == "Replay report: diverged"
    assert "never asked for" in page.inner_text("#report") and "model_input step 0, 4" in page.inner_text("#report")
    assert _step(loaded, 0).locator(".badge.bad").inner_text() == "replay diverged here"
    page.click("#report-step")
    here = _step(loaded, 0).locator(".report-at")
    assert "message 0 (user): content differs at character 22" in here.inner_text()
    assert here.locator("mark.hl").all_inner_texts() == ["P", "L"]  # Paris / Lyon
    _shot(loaded, screenshots, "report")
    loaded.assert_clean()
    page.close()


def test_the_fork_tree_opens_a_fork(browser: Browser, runs: Path, screenshots: Path) -> None:
    loaded = _open(browser, write_page(runs / "weather.json"))
    page = loaded.page
    forks = page.inner_text("#forks")
    assert "Forks of weather-1 (1)" in forks
    assert "cut at step 3 · completed · 7 steps" in forks
    assert "first divergence: step 3 (input): step 3 (tool_result get_weather): different input" in forks
    page.click("#forks a.fork[data-run]")
    expect(page.locator("#run-id")).to_have_text("sunny-1")
    assert "a fork: sunny-1" in page.inner_text("#banner")
    assert "forked here" in page.inner_text("#steps")
    _step(loaded, 3).locator(".head").click()
    assert '"forecast": "sun"' in _step(loaded, 3).locator(".body").inner_text()
    page.go_back()
    expect(page.locator("#run-id")).to_have_text("weather-1")
    loaded.assert_clean()
    page.close()


def test_a_claude_code_sized_run_opens_lazily(browser: Browser, tmp_path: Path, screenshots: Path) -> None:
    path = claude_code_run(tmp_path / "big.json")
    loaded = _open(browser, write_page(path))
    page = loaded.page
    assert page.inner_text("#model-calls") == "208"
    rows = page.locator("#steps .step").count()
    assert rows == 150  # the first batch only; the rest are built on demand
    assert page.locator("#chart .bar").count() == 208
    assert page.locator("#chart .lane").count() >= 3  # the side calls overlap the main ones: their own lane
    page.click("#more-button")
    assert page.locator("#steps .step").count() == 300
    far = max(int(x) for x in page.locator("#chart .bar").evaluate_all("bars => bars.map(b => b.dataset.step)"))
    assert far > 700
    page.locator(f'#chart .bar[data-step="{far}"]').click()  # far down: its rows are built on the way
    assert "NEW TURN" in _step(loaded, far).locator(".body").inner_text().upper()
    assert _step(loaded, far).is_visible()
    _shot(loaded, screenshots, "big-run")
    loaded.assert_clean()
    page.close()


def test_the_runs_other_http_exchanges_are_listed_apart_from_the_steps(browser: Browser, tmp_path: Path, screenshots: Path) -> None:
    from blackbox_mitm.cassette import save_trace
    from blackbox_mitm.cassette.exchanges import exchanges_ref, write_exchanges
    from blackbox_mitm.cassette.trace import Trace
    from blackbox_mitm.session.exchanges import ExchangeBook

    cassette = tmp_path / "fetch.json"
    book = ExchangeBook(exchange_max_bytes=100)
    book.add(
        method="GET",
        url="https://docs.example.com/page.html",
        request_body=b"",
        status=200,
        headers={},
        body=b"<h1>page</h1>",
        started_ms=1_700_000_000_100,
    )
    book.add(
        method="GET",
        url="https://docs.example.com/big",
        request_body=b"",
        status=200,
        headers={},
        body=None,
        body_size=5_000_000,
        started_ms=1_700_000_000_200,
    )
    document = book.document("fetch-1")
    write_exchanges(cassette, document)
    trace = Trace.new("fetch-1", created_at=1_700_000_000_000)
    trace.append(
        "metadata",
        {"event": "run_completed", "status": "success", "result": "", "exchanges": exchanges_ref(cassette, document)},
        timestamp=1_700_000_000_300,
    )
    save_trace(trace, cassette)
    loaded = _open(browser, write_page(cassette))
    panel = loaded.page.inner_text("#exchanges")
    assert "Other HTTP exchanges (2)" in panel
    assert "docs.example.com/page.html" in panel and "docs.example.com/big" in panel and "body not kept" in panel
    assert "not kept: GET https://docs.example.com/big: the response body (5,000,000 bytes) was not kept" in panel
    loaded.assert_clean()
    _shot(loaded, screenshots, "exchanges")
    loaded.page.close()


def test_the_runs_media_are_listed_by_type_size_and_digest_with_images_shown(browser: Browser, tmp_path: Path, screenshots: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "session"))
    from test_media_store import PDF, PNG, _record_turns, _sha

    cassette = tmp_path / "shots.json"
    _record_turns(cassette, 2)
    loaded = _open(browser, write_page(cassette))
    panel = loaded.page.inner_text("#media")
    assert "Media (2 stored once each)" in panel
    assert "image/png" in panel and _sha(PNG) in panel and "application/pdf" in panel and _sha(PDF) in panel
    img = loaded.page.locator("#media img.media")
    expect(img).to_have_count(1)  # the PNG is shown; the PDF is listed by digest
    assert loaded.page.evaluate("document.querySelector('#media img.media').naturalWidth") == 1  # the 1x1 PNG decoded
    loaded.assert_clean()
    _shot(loaded, screenshots, "media")
    loaded.page.close()
