"""The report in a real headless Chromium: a finding leads to its step, filters work, nothing hostile runs.

Two reports are opened: the one `harness run scenarios/` makes of the shipped scenarios (replayed
from their cassettes, offline, in-process), and one of hand-built results that hide hostile strings
everywhere a page could execute them.

Driven by Playwright for Python on the system's Chromium; skipped, with the reason, only when
Playwright or Chromium could not be installed (scripts/test and scripts/install-test-deps install them).
Everything is written under pytest's tmp_path; screenshots too, unless HARNESS_SCREENSHOTS names a
folder to keep them in for a person to look at. Waits are `wait_for_selector`, never
`wait_for_function`: that one polls by evaluating a string in the page, which the page's CSP refuses.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from report_browser import PageLog, new_page, unavailable
from report_data import HOSTILE_FINDING, HOSTILE_JSON, HOSTILE_LINK, HOSTILE_TEXT, matrix, run_details

from harness.cli import main
from harness.report import build_report
from harness.results import RunResult, read_results

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VISIBLE_ROWS = "document.querySelectorAll('#runs-table tbody tr:not([hidden])').length"


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    # Opt-in keeping place: the default stays inside tmp_path so the suite never writes into the checkout.
    kept = os.environ.get("HARNESS_SCREENSHOTS")
    folder = Path(kept) if kept else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(matrix(), tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunResult]]:
    """The report of the shipped scenarios as a user gets it, and the results it was made from."""
    out = tmp_path_factory.mktemp("shipped")
    with pytest.MonkeyPatch.context() as mp:
        # replay must not need (or find) a key: no run of this module may reach the API
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        mp.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        mp.chdir(ROOT)
        status = main(["run", "scenarios/", "--mode", "replay", "--results", str(out / "results.jsonl"),
                       "--report", str(out / "report")])
    results = read_results(out / "results.jsonl")
    assert status == 0 and results and all(r.mode == "replay" for r in results), [r.run_id for r in results]
    return out / "report" / "index.html", results


def select(browser: Page, element_id: str, value: str) -> None:
    browser.evaluate(f"(() => {{ const s = document.getElementById('{element_id}'); s.value = '{value}';"
                     " s.dispatchEvent(new Event('change')); })()")


@pytest.fixture
def opened(report_chromium: Browser) -> Iterator[tuple[Page, PageLog]]:
    with new_page(report_chromium) as page_and_log:
        yield page_and_log


@pytest.fixture
def browser(opened: tuple[Page, PageLog]) -> Page:
    return opened[0]


@pytest.fixture
def page_log(opened: tuple[Page, PageLog]) -> PageLog:
    return opened[1]


def test_clicking_a_finding_opens_its_run_and_shows_its_step(browser: Page, page: Path, screenshots: Path) -> None:
    browser.goto(page.as_uri())
    assert browser.evaluate("document.getElementById('run-9')") is None  # not on the page until asked for
    # Run 9 failed with T001 at thread 1, step 3, the trace's call 3.
    browser.click('#runs-table tr[data-run="run-9"] a[href="#run-9-call-3"]')
    browser.wait_for_selector("#run-9-call-3.flash", state="attached")
    assert browser.evaluate("location.hash") == "#run-9-call-3"
    assert browser.evaluate("document.getElementById('run-9').open") is True
    step = browser.evaluate(
        "(() => { const r = document.getElementById('run-9-call-3').getBoundingClientRect();"
        " return {top: r.top, height: r.height,"
        " flash: document.getElementById('run-9-call-3').classList.contains('flash')}; })()"
    )
    assert step["height"] > 0 and 0 <= step["top"] < 900 and step["flash"]
    assert "T001" in browser.evaluate("document.getElementById('run-9-call-3').innerText")
    assert len(browser.screenshot(path=screenshots / "finding-step.png")) > 10_000


def test_a_run_is_rendered_when_opened_from_the_data_in_the_page(browser: Page, page: Path) -> None:
    browser.goto(page.as_uri())
    # Nothing of any run's body is on the page until it is opened: that is what keeps a big page fast.
    assert browser.evaluate("document.querySelectorAll('.run-body *, article.step').length") == 0
    details = run_details(page.read_text(encoding="utf-8"))[3]
    browser.click('#runs-table tr[data-run="run-3"] a[href="#run-3"]')
    browser.wait_for_selector("#run-3 .run-body[data-rendered]", state="attached")
    assert browser.evaluate("document.querySelectorAll('.run-body[data-rendered]').length") == 1
    body = browser.evaluate("document.querySelector('#run-3 .run-body').innerText")
    assert "subagent of thread 1" in body and "stop_reason" in body and "thread 1" in body
    # Drawn from the run's data in the page: every thread and step it holds, under its anchor.
    ids = browser.evaluate("Array.from(document.querySelectorAll('#run-3 .run-body [id]'), e => e.id)")
    anchors = [a for t in details["threads"] for a in [t["a"], *(s["a"] for s in t["steps"])]]
    assert [i for i in ids if "-tu-" not in i] == anchors
    # Closing and opening again renders nothing twice.
    browser.click("#run-3 > summary")
    browser.click("#run-3 > summary")
    assert browser.evaluate("document.querySelectorAll('#run-3 .run-body > .muted:first-child').length") == 1


def test_filters_hide_runs_by_status_scenario_and_text(browser: Page, page: Path, screenshots: Path) -> None:
    browser.goto(page.as_uri())
    visible = "document.querySelectorAll('#runs-table tbody tr:not([hidden])').length"
    assert browser.evaluate(visible) == 26
    browser.evaluate("(() => { const s = document.getElementById('filter-status'); s.value = 'failed';"
                     " s.dispatchEvent(new Event('change')); })()")
    assert browser.evaluate(visible) == 5
    assert browser.evaluate("document.getElementById('filter-count').textContent") == "5 of 26 runs"
    assert browser.evaluate("document.querySelector('#runs-table tr[data-run=\"run-1\"]')") is None
    browser.evaluate("(() => { const s = document.getElementById('filter-scenario'); s.value = 'lookup';"
                     " s.dispatchEvent(new Event('change')); })()")
    assert browser.evaluate(visible) == 2
    browser.evaluate("(() => { for (const id of ['filter-status', 'filter-scenario']) {"
                     " const s = document.getElementById(id);"
                     " s.value = ''; s.dispatchEvent(new Event('change')); } })()")
    browser.fill("#filter-text", "mystery")
    assert browser.evaluate(visible) == 1
    assert browser.screenshot(path=screenshots / "filtered.png").startswith(PNG_SIGNATURE)


def test_hostile_content_never_runs_and_the_page_fetches_nothing(browser: Page, page_log: PageLog, page: Path) -> None:
    browser.goto(page.as_uri())
    # Open every run so every payload is in the live DOM, then click the hostile markdown link text.
    for n in range(1, 27):
        browser.evaluate(f"location.hash = '#run-{n}'")
    for n in range(1, 27):
        browser.wait_for_selector(f"#run-{n} .run-body[data-rendered]", state="attached")
    browser.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    browser.click("#run-1-call-1 .response .text pre")
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.title") == "Agent harness report"
    # Ours last; before it the runs' data, which the browser never runs (JSON, gzip: no script type).
    types = browser.evaluate("Array.from(document.scripts, s => s.type)")
    assert types[-1] == "" and set(types[:-1]) == {"application/json", "application/gzip"}
    assert browser.evaluate("document.querySelectorAll('[onerror], [onload], a[href^=\"javascript:\"]').length") == 0
    assert page_log.fetched() == []


def test_the_script_draws_hostile_text_as_text(browser: Page, page: Path) -> None:
    # The page's script draws a run from its data: every hostile string must come out as the very
    # characters the model or the tool sent, and not one element may be made of them.
    browser.goto(page.as_uri() + "#run-1")
    browser.wait_for_selector("#run-1 .run-body[data-rendered]", state="attached")
    shown = browser.evaluate("document.querySelector('#run-1 .run-body').textContent")
    for hostile in (HOSTILE_TEXT, HOSTILE_LINK, HOSTILE_FINDING, HOSTILE_JSON):
        assert hostile in shown
    made = browser.evaluate("Array.from(document.querySelectorAll('#run-1 .run-body *'), e => e.tagName.toLowerCase())")
    assert set(made) <= {"div", "span", "pre", "b", "code", "a", "details", "summary", "section", "h4", "h5", "article",
                         "header", "ul", "li", "p", "table", "tr", "th", "td"}
    links = browser.evaluate("Array.from(document.querySelectorAll('#run-1 .run-body a'), a => a.getAttribute('href'))")
    assert links and all(href.startswith("#run-1") for href in links)
    assert browser.evaluate("typeof window.__pwned") == "undefined"


def test_the_csp_blocks_a_handler_even_if_one_were_injected(browser: Page, page: Path) -> None:
    browser.goto(page.as_uri())
    # If escaping ever failed, the policy is the second wall: an inline handler must not run.
    browser.evaluate("(() => { const img = document.createElement('img');"
                     " img.setAttribute('onerror', \"window.__pwned = 'csp'\"); img.src = 'data:,x';"
                     " document.body.appendChild(img); })()")
    browser.evaluate("new Promise(r => setTimeout(r, 300))")
    assert browser.evaluate("typeof window.__pwned") == "undefined"


def test_a_mangled_hash_does_not_break_the_page_script(browser: Page, page_log: PageLog, page: Path) -> None:
    # "#%E0" is not valid percent-encoding: decodeURIComponent throws. The page's script must go on
    # (filters wired), not die on load.
    browser.goto(page.as_uri() + "#%E0")
    assert page_log.errors == []
    browser.fill("#filter-text", "mystery")
    assert browser.evaluate("document.getElementById('filter-count').textContent") == "1 of 26 runs"


def test_shipped_report_a_finding_leads_to_its_step(
    browser: Page, shipped: tuple[Path, list[RunResult]], screenshots: Path
) -> None:
    report, results = shipped
    buggy = next(r for r in results if r.scenario == "buggy-drops-parallel-results")
    finding = next(f for f in buggy.findings if f.code == "T001")
    assert finding.call is not None
    browser.goto(report.as_uri())
    run = browser.evaluate(
        "document.querySelector('#runs-table tr[data-scenario=\"buggy-drops-parallel-results\"]').dataset.run")
    # the anchor comes from the stored result (its trace call), not from the page under test
    step = f"{run}-call-{finding.call}"
    assert browser.evaluate(f"document.getElementById('{run}')") is None
    browser.click(f'#runs-table tr[data-run="{run}"] .findings-cell a[href="#{step}"]')
    browser.wait_for_selector(f"[id=\"{step}\"].flash", state="attached")
    assert browser.evaluate("location.hash") == f"#{step}"
    assert browser.evaluate(f"document.getElementById('{run}').open") is True
    shown = browser.evaluate(
        f"(() => {{ const el = document.getElementById('{step}'); const r = el.getBoundingClientRect();"
        " return {top: r.top, height: r.height, flash: el.classList.contains('flash'),"
        " flashed: document.querySelectorAll('.flash').length, text: el.innerText}; })()"
    )
    assert shown["height"] > 0 and 0 <= shown["top"] < 900  # scrolled into the 900px viewport
    assert shown["flash"] and shown["flashed"] == 1  # highlighted, and only it
    assert f"step {finding.step}" in shown["text"] and "T001" in shown["text"]
    shot = browser.screenshot(path=screenshots / "shipped-finding-step.png")
    assert shot.startswith(PNG_SIGNATURE) and len(shot) > 10_000


def test_shipped_report_filters_runs(
    browser: Page, shipped: tuple[Path, list[RunResult]], screenshots: Path
) -> None:
    report, results = shipped
    total = len(results)
    browser.goto(report.as_uri())
    assert browser.evaluate(VISIBLE_ROWS) == total
    for status in ("passed", "failed"):
        select(browser, "filter-status", status)
        expected = sum(r.status == status for r in results)
        assert browser.evaluate(VISIBLE_ROWS) == expected, status
        assert browser.evaluate("document.getElementById('filter-count').textContent") == f"{expected} of {total} runs"
    select(browser, "filter-status", "passed")
    select(browser, "filter-scenario", "support-escalation")  # the one scenario with two matrix cells
    expected = sum(r.status == "passed" and r.scenario == "support-escalation" for r in results)
    assert expected == 2 and browser.evaluate(VISIBLE_ROWS) == expected
    hidden = next(r for r in results if r.scenario != "support-escalation")
    assert browser.evaluate(
        f"document.querySelector('#runs-table tr[data-scenario=\"{hidden.scenario}\"]')") is None
    select(browser, "filter-status", "")
    select(browser, "filter-scenario", "")
    browser.fill("#filter-text", "T001")  # a finding code, matched case-insensitively
    with_t001 = sum(any(f.code == "T001" for f in r.findings) for r in results)
    assert with_t001 >= 1 and browser.evaluate(VISIBLE_ROWS) == with_t001
    shot = browser.screenshot(path=screenshots / "shipped-filtered.png")
    assert shot.startswith(PNG_SIGNATURE)


def test_a_big_report_lists_a_page_of_runs_and_filters_them_all(
    browser: Page, tmp_path_factory: pytest.TempPathFactory
) -> None:
    runs = matrix() * 18  # 468 runs: more than one page of rows
    page = build_report(runs, tmp_path_factory.mktemp("big"))
    browser.goto(page.as_uri())
    assert browser.evaluate(VISIBLE_ROWS) == 200
    assert browser.evaluate("document.getElementById('runs-more').textContent") == "show 200 more of 268"
    browser.click("#runs-more")
    assert browser.evaluate(VISIBLE_ROWS) == 400
    # A filter looks at every run, not only the rows shown, and the last run is reachable by its link.
    browser.fill("#filter-text", "mystery")
    assert browser.evaluate(VISIBLE_ROWS) == 18
    assert browser.evaluate("document.getElementById('filter-count').textContent") == "18 of 468 runs"
    assert browser.evaluate("document.getElementById('runs-more').hidden") is True
    browser.click('#runs-table tr[data-run="run-468"] a[href="#run-468"]')
    browser.wait_for_selector("#run-468 .run-body[data-rendered]", state="attached")
    assert "mystery" in browser.evaluate("document.querySelector('#run-468 summary').innerText")
