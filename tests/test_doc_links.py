"""Every link between the docs (and from the README) reaches a file of the repository, and a link to a
section reaches a heading of that file: a renamed heading otherwise leaves readers at the top of a page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def _anchors(text: str) -> set[str]:
    """GitHub's heading ids (lower case, punctuation dropped, spaces as hyphens) and `<a id>`s."""
    text = FENCE.sub("", text)
    headings = re.findall(r"^#+\s+(.+?)\s*$", text, re.M)
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    return slugs | set(re.findall(r'<a id="([^"]+)"', text))


def test_every_relative_link_of_the_docs_reaches_its_file_and_section() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(FENCE.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue  # a URL: test_self_contained keeps those in check
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file.read_text(encoding="utf-8")):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_evaluation_doc_sends_readers_to_the_judges() -> None:
    text = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    assert "(judges-and-users.md#judges)" in text
