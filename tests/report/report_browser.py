"""Headless Chromium for the report's browser tests and its benchmark: Playwright for Python driving
the system's Chromium (`executable_path`), never a browser Playwright downloads.

Playwright comes with the `browser` extra and Chromium from scripts/install-test-deps; `unavailable()`
says why the browser tests cannot run when either is missing, so they skip with that reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1280, "height": 900}


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def unavailable() -> str | None:
    """Why no browser test can run here, or None when Playwright and a Chromium are both installed."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (scripts/test installs it with pip install -e '.[browser]')"
    if find_chromium() is None:
        return "chromium is not installed (run scripts/install-test-deps)"
    return None


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """The system's Chromium, headless, for as long as the block lasts."""
    from playwright.sync_api import sync_playwright

    binary = find_chromium()
    assert binary is not None, unavailable()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=binary, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageLog:
    """What a page did beyond its own document: the requests it made and the errors its script threw."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def fetched(self) -> list[str]:
        """URLs asked for beyond the page itself (file: and data: are the page and its inline parts)."""
        return [u for u in self.requests if not u.startswith(("file:", "data:", "about:"))]


@contextlib.contextmanager
def new_page(browser: Browser) -> Iterator[tuple[Page, PageLog]]:
    """A fresh page (its own context: no state shared with other tests) of 1280x900, and its log."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    log = PageLog()
    page.on("request", lambda request: log.requests.append(request.url))
    page.on("pageerror", lambda error: log.errors.append(str(error)))
    try:
        yield page, log
    finally:
        context.close()
