"""Fixtures of the report tests: the matrix of stored results from `report_data`, and pages as a
person sees them in Chromium with every run opened."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from report_browser import chromium, new_page, unavailable
from report_data import matrix, runs_data

from harness.results import RunResult

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture
def results() -> list[RunResult]:
    return matrix()


# A module's browser, not the session's: while Playwright's sync API is open the worker's main thread
# has a running event loop, and every later test of that worker calling asyncio.run() would fail.
@pytest.fixture(scope="module")
def report_chromium() -> Iterator[Browser]:
    why_not = unavailable()
    if why_not is not None:
        pytest.skip(why_not)
    with chromium() as browser:
        yield browser


@pytest.fixture
def with_bodies(report_chromium: Browser, tmp_path: Path) -> Callable[[str], str]:
    """The page as a person sees it once every run is opened: its script has drawn each run's steps
    from the page's data, and the document is read back as HTML."""

    def opened(page: str) -> str:
        path = tmp_path / "opened.html"
        path.write_text(page, encoding="utf-8")
        with new_page(report_chromium) as (browser, log):
            browser.goto(path.as_uri())
            numbers = [run["n"] for run in runs_data(page)]
            for n in numbers:
                browser.evaluate(f"location.hash = '#run-{n}'")
            for n in numbers:
                browser.wait_for_selector(f"#run-{n} .run-body[data-rendered]", state="attached")
            assert log.errors == [] and log.fetched() == []
            # What is on the page, not the script that put it there (its strings name every label).
            browser.evaluate("document.querySelectorAll('script:not([type])').forEach(s => s.remove())")
            return browser.content()

    return opened
