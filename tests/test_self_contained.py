"""The repository stands on its own: no file points at documents outside it, and it speaks English.

A clone with nothing beside it must make sense and run its tests: the recordings the tests read are
vendored under tests/corpus/recordings, the rules are documented in docs/rules.md.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Other projects' recordings are kept byte-identical; lock files are written by npm.
SKIPPED = ("tests/corpus/recordings/", "tests/node/package-lock.json")

OUTSIDE = re.compile(r"\.\./shared|shared/(?:corpus|spec|seeds)|INVARIANTS\.md"
                     r"|\bseeds?[ _-]?0\d\d\b|/work/(?:shared|wt)\b",
                     re.IGNORECASE)
# The quotation marks the old Spanish quotations came in; non-ASCII test data (¿, ñ, emoji) is fine.
SPANISH = re.compile(r"[«»]")


def files() -> list[Path]:
    """The repository's own files: what `git ls-files` tracks (a clone is a git checkout)."""
    listed = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True, cwd=ROOT).stdout
    names = [name for name in listed.decode("utf-8").split("\0") if name and not name.startswith(SKIPPED)]
    assert names, "git ls-files listed nothing: run the tests from a git checkout"
    return [ROOT / name for name in names if (ROOT / name).is_file()]


def test_no_file_points_outside_the_repository_or_quotes_another_language() -> None:
    this = Path(__file__).resolve()
    problems = []
    for path in files():
        if path == this:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line) or SPANISH.search(line):
                problems.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert problems == [], "\n".join(problems)
