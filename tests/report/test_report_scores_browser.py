"""Scores as a person sees them in the report in headless Chromium: a judge whose repeated verdicts disagree
is flagged on the run's row of the summary, on its heading and on its score, in the warning colour (a judge
that agrees is not); a run below its minimum score says so on its row. Skipped only when Playwright or
Chromium could not be installed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from report_browser import new_page, unavailable

from harness.cli import main

if TYPE_CHECKING:
    from playwright.sync_api import Browser

UNAVAILABLE = unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
ROOT = Path(__file__).resolve().parents[2]
WARN = "rgb(178, 106, 0)"


def test_a_disagreeing_judge_is_flagged_on_its_runs_row_heading_and_score(
    tmp_path: Path, report_chromium: Browser
) -> None:
    shipped = (ROOT / "scenarios" / "support-judged.yaml").read_text(encoding="utf-8")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "agrees.yaml").write_text(shipped.replace("name: support-judged", "name: agrees"),
                                                         encoding="utf-8")
    # Verdicts 1, 0.2 and 1: on both sides of 0.5, so they disagree.
    split = shipped.replace("name: support-judged", "name: splits").replace("omits the amount.', score: 0.9",
                                                                             "omits the amount.', score: 0.2")
    assert split.count("score: 0.2") == 1
    (tmp_path / "scenarios" / "splits.yaml").write_text(split, encoding="utf-8")
    # The split judge's mean, 0.73, still meets min_score 0.7: only the flag says to look closer.
    assert main(["run", str(tmp_path / "scenarios"), "--mode", "scripted", "--results", str(tmp_path / "r.jsonl"),
                 "--report", str(tmp_path / "report")]) == 0
    with new_page(report_chromium) as (page, log):
        page.goto((tmp_path / "report" / "index.html").as_uri())
        row = page.locator('#runs-table tbody tr[data-scenario="splits"]')
        tag = row.locator(".tag.disagree")
        assert tag.inner_text() == "refund_judge: verdicts disagree"
        assert tag.evaluate("e => getComputedStyle(e).color") == WARN
        assert page.locator('#runs-table tbody tr[data-scenario="agrees"] .tag.disagree').count() == 0
        page.fill("#filter-text", "disagree")
        assert page.locator("#runs-table tbody tr:not([hidden])").count() == 1
        row.locator("a").first.click()
        opened = page.locator("details.run[open]")
        opened.locator(".run-body[data-rendered]").wait_for(state="attached")
        assert opened.locator("summary .tag.disagree").inner_text() == "refund_judge: verdicts disagree"
        flagged = opened.locator("table.scores tr.disagree")
        assert flagged.count() == 1 and "refund_judge" in flagged.inner_text() and "DISAGREE" in flagged.inner_text()
        assert flagged.locator("td").first.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
        # Kept for a person to look at when HARNESS_SCREENSHOTS names a folder, as the other browser tests do.
        page.screenshot(path=Path(os.environ.get("HARNESS_SCREENSHOTS") or tmp_path) / "disagree.png", full_page=True)
        assert log.errors == []


def test_a_run_below_its_minimum_score_says_so_on_its_row(tmp_path: Path, report_chromium: Browser) -> None:
    (tmp_path / "s.yaml").write_text(
        "name: sums\nmode: scripted\nprompt: 'What is {{ a }} + {{ b }}?'\nscript: [{text: 'It is 4.'}]\n"
        "cases: [{id: right, vars: {a: 2, b: 2}}, {id: wrong, vars: {a: 2, b: 3}}]\n"
        "score: [{final_text: {numeric: '{{ a + b }}'}}]\nexpect: {min_score: 1}\n", encoding="utf-8")
    assert main(["run", str(tmp_path / "s.yaml"), "--results", str(tmp_path / "r.jsonl"),
                 "--report", str(tmp_path / "report")]) == 1
    with new_page(report_chromium) as (page, log):
        page.goto((tmp_path / "report" / "index.html").as_uri())
        wrong = page.locator('#runs-table tbody tr[data-status="failed"]')
        assert wrong.count() == 1 and "sums[wrong]" in wrong.inner_text()
        assert wrong.locator(".unmet").inner_text() == (
            "expect min_score.mean: mean score 0 of 1, at least 1 expected")
        assert page.locator('#runs-table tbody tr[data-status="passed"] .unmet').count() == 0
        page.fill("#filter-text", "min_score")
        assert page.locator("#runs-table tbody tr:not([hidden])").count() == 1
        assert log.errors == []
