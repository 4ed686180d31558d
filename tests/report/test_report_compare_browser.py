"""The comparison as a person sees it in headless Chromium: chart labels apart, the summary inside an
800 px window, a filter of several words. Skipped only when no Chromium is installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from report_browser import new_page, unavailable
from report_data import matrix

from harness.report import build_report
from harness.results import RunResult, Usage

UNAVAILABLE = unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

VISIBLE_ROWS = "document.querySelectorAll('#runs-table tbody tr').length"
OVERLAPS = """(() => {
  const boxes = Array.from(document.querySelectorAll(SELECTOR), e => [e.textContent, e.getBoundingClientRect()]);
  const hits = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [ta, a] = boxes[i], [tb, b] = boxes[j];
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) hits.push(ta + ' / ' + tb);
  }
  return {count: boxes.length, hits: hits};
})()"""


@pytest.fixture
def browser(report_chromium: Browser) -> Iterator[Page]:
    with new_page(report_chromium) as (page, _):
        yield page


def run(model: str, effort: str, cost: float, passed: bool = True, repeat: int = 0) -> RunResult:
    return RunResult(run_id=f"refund[{model}-{effort}-r{repeat}]", scenario="refund", scenario_path="s.yaml",
                     model=model, effort=effort, repeat=repeat, mode="live", status="passed" if passed else "failed",
                     outcome=None, steps=3, usage=Usage(1000, 100), cost_usd=cost, duration_s=2.0, answers="model")


def test_labels_of_settings_that_cost_almost_the_same_never_overlap(browser: Page, tmp_path: Path) -> None:
    # Effort barely changes cost here: "default", "high", "low" and "max" sit a pixel or two apart.
    results = [run("claude-sonnet-5", effort, cost) for effort, cost in
               (("default", 0.0273), ("high", 0.0274), ("low", 0.0272), ("max", 0.0275))]
    results += [run("claude-opus-4-8", "high", 0.0524), run("claude-opus-4-8", "default", 0.0523),
                run("claude-haiku-4-5", "low", 0.0190, passed=False), run("claude-haiku-4-5", "high", 0.0191)]
    page = build_report(results, tmp_path)
    browser.goto(page.as_uri())
    labels = browser.evaluate(OVERLAPS.replace("SELECTOR", "'svg text'"))
    assert labels["count"] >= 10 and labels["hits"] == [], labels["hits"]
    # Every setting is named on the chart, each label once.
    names = browser.evaluate(
        "Array.from(document.querySelectorAll('svg text.point-label'), e => e.textContent).join(', ')")
    assert sorted(names.split(", ")) == sorted(["default", "high", "low", "max", "high", "default", "low", "high"])


@pytest.mark.parametrize("width", [800, 1280])
def test_the_summary_fits_the_window(browser: Page, tmp_path: Path, width: int) -> None:
    results = matrix()
    for result in results:  # names as long as the shipped scenarios' (buggy-continues-after-end-turn)
        result.scenario = f"{result.scenario}-continues-after-end-turn"
        result.run_id = result.run_id.replace(result.scenario.split("-continues")[0], result.scenario, 1)
    page = build_report(results, tmp_path)
    browser.set_viewport_size({"width": width, "height": 900})
    browser.goto(page.as_uri())
    edges = browser.evaluate("""(() => {
      const table = document.getElementById('runs-table');
      const where = Array.from(table.querySelectorAll('tr > :last-child'), c => c.getBoundingClientRect().right);
      return {page: document.documentElement.scrollWidth, table: table.getBoundingClientRect().right,
              where: Math.max(...where), header: table.querySelector('th:last-child').textContent};
    })()""")
    assert edges["header"] == "where"
    assert edges["page"] <= width and edges["table"] <= width and edges["where"] <= width, edges


def test_the_text_filter_matches_every_word_in_any_order(browser: Page, tmp_path: Path) -> None:
    page = build_report(matrix(), tmp_path)
    browser.goto(page.as_uri())
    browser.type("#filter-text", "opus-4-8-high refund")
    ids = browser.evaluate(
        "Array.from(document.querySelectorAll('#runs-table tbody tr td:nth-child(2)'), c => c.textContent)")
    assert ids == ["refund[claude-opus-4-8-high-r0]", "refund[claude-opus-4-8-high-r1]"]
    assert browser.evaluate("document.getElementById('filter-count').textContent") == "2 of 26 runs"
    browser.evaluate("(() => { const t = document.getElementById('filter-text'); t.value = '  refund   r1 haiku ';"
                     " t.dispatchEvent(new Event('input')); })()")
    assert browser.evaluate(VISIBLE_ROWS) == 2  # haiku low and high, repeat 1 of refund
    browser.evaluate("(() => { const t = document.getElementById('filter-text'); t.value = 'refund nosuchword';"
                     " t.dispatchEvent(new Event('input')); })()")
    assert browser.evaluate(VISIBLE_ROWS) == 0


def test_a_case_opens_side_by_side_in_two_settings_step_by_step(browser: Page, tmp_path: Path) -> None:
    page = build_report(matrix(), tmp_path)
    browser.goto(page.as_uri())
    link = browser.evaluate("document.querySelector('table.paired a[href^=\"#pair-\"]').getAttribute('href')")
    a, b = (int(n) for n in link.removeprefix("#pair-").split("-"))
    browser.evaluate(f"location.hash = '{link}'")
    browser.wait_for_selector("#pair-view:not([hidden]) article.step", state="attached")
    view = browser.evaluate("""(() => {
      const box = document.getElementById('pair-view');
      const rows = Array.from(box.querySelectorAll(':scope > div.cols')).slice(1);
      const steps = Array.from(box.querySelectorAll('article.step'), s => s.id);
      const links = Array.from(box.querySelectorAll('a[href^="#"]'), x => x.getAttribute('href').slice(1));
      return {title: box.querySelector('h3').textContent, rows: rows.map(r => r.children.length), steps: steps,
              dangling: links.filter(id => !document.getElementById(id)),
              ids: Array.from(document.querySelectorAll('[id]'), e => e.id)};
    })()""")
    left = browser.evaluate(f"document.querySelectorAll('#run-{a} article.step').length")
    right = browser.evaluate(f"document.querySelectorAll('#run-{b} article.step').length")
    assert view["rows"] == [2] * max(left, right) and len(view["steps"]) == left + right
    assert all(s.startswith(("pair-run-", )) for s in view["steps"])
    assert view["dangling"] == [] and len(view["ids"]) == len(set(view["ids"]))  # copies, no id twice
    # The steps come in call order on each side: row i is call i of both runs.
    calls = [int(s.rsplit("-", 1)[1]) for s in view["steps"]]
    assert calls[:left] == sorted(calls[:left])
    assert view["title"].startswith("Side by side: ")
