"""The report in a real headless Chromium: a finding leads to its step, filters work, nothing hostile runs.

Skipped only when no Chromium is installed (scripts/install-test-deps installs Debian's).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_browser import Browser, find_chromium
from report_data import matrix

from harness.report import build_report

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (run scripts/install-test-deps)")

SCREENSHOTS = Path(os.environ.get("HARNESS_SCREENSHOTS", "reports/screenshots"))


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(matrix(), tmp_path_factory.mktemp("report"))


@pytest.fixture
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None
    b = Browser(CHROMIUM)
    try:
        yield b
    finally:
        b.close()


def test_clicking_a_finding_opens_its_run_and_shows_its_step(browser: Browser, page: Path) -> None:
    browser.open(page.as_uri())
    assert browser.evaluate("document.getElementById('run-9').open") is False
    # Run 9 failed with T001 at thread 1 step 3, the trace's call 3.
    browser.click('#runs-table tr[data-run="run-9"] a[href="#run-9-call-3"]')
    assert browser.evaluate("location.hash") == "#run-9-call-3"
    assert browser.evaluate("document.getElementById('run-9').open") is True
    step = browser.evaluate(
        "(() => { const r = document.getElementById('run-9-call-3').getBoundingClientRect();"
        " return {top: r.top, height: r.height, flash: document.getElementById('run-9-call-3').classList.contains('flash')}; })()"
    )
    assert step["height"] > 0 and 0 <= step["top"] < 900 and step["flash"]
    assert "T001" in browser.evaluate("document.getElementById('run-9-call-3').innerText")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    assert browser.screenshot(SCREENSHOTS / "finding-step.png").stat().st_size > 10_000


def test_filters_hide_runs_by_status_scenario_and_text(browser: Browser, page: Path) -> None:
    browser.open(page.as_uri())
    visible = "document.querySelectorAll('#runs-table tbody tr:not([hidden])').length"
    assert browser.evaluate(visible) == 26
    browser.evaluate("(() => { const s = document.getElementById('filter-status'); s.value = 'failed';"
                     " s.dispatchEvent(new Event('change')); })()")
    assert browser.evaluate(visible) == 5
    assert browser.evaluate("document.getElementById('filter-count').textContent") == "5 of 26 runs"
    assert browser.evaluate("document.getElementById('run-1').hidden") is True
    browser.evaluate("(() => { const s = document.getElementById('filter-scenario'); s.value = 'lookup';"
                     " s.dispatchEvent(new Event('change')); })()")
    assert browser.evaluate(visible) == 2
    browser.evaluate("(() => { for (const id of ['filter-status', 'filter-scenario']) { const s = document.getElementById(id);"
                     " s.value = ''; s.dispatchEvent(new Event('change')); } })()")
    browser.type_text("#filter-text", "mystery")
    assert browser.evaluate(visible) == 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(SCREENSHOTS / "filtered.png")


def test_hostile_content_never_runs_and_the_page_fetches_nothing(browser: Browser, page: Path) -> None:
    browser.open(page.as_uri())
    # Open every run so every payload is in the live DOM, then click the hostile markdown link text.
    browser.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    browser.click("#run-1-call-1 .response .text pre")
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.title") == "Agent harness report"
    assert browser.evaluate("document.querySelectorAll('script').length") == 1
    assert browser.evaluate("document.querySelectorAll('[onerror], [onload], a[href^=\"javascript:\"]').length") == 0
    assert browser.network_requests() == []


def test_the_csp_blocks_a_handler_even_if_one_were_injected(browser: Browser, page: Path) -> None:
    browser.open(page.as_uri())
    # If escaping ever failed, the policy is the second wall: an inline handler must not run.
    browser.evaluate("(() => { const img = document.createElement('img');"
                     " img.setAttribute('onerror', \"window.__pwned = 'csp'\"); img.src = 'data:,x';"
                     " document.body.appendChild(img); })()")
    browser.evaluate("new Promise(r => setTimeout(r, 300))")
    assert browser.evaluate("typeof window.__pwned") == "undefined"


def test_a_mangled_hash_does_not_break_the_page_script(browser: Browser, page: Path) -> None:
    # "#%E0" is not valid percent-encoding: decodeURIComponent throws. The page's script must go on
    # (filters wired), not die on load.
    browser.open(page.as_uri() + "#%E0")
    assert not [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
    browser.type_text("#filter-text", "mystery")
    assert browser.evaluate("document.getElementById('filter-count').textContent") == "1 of 26 runs"
