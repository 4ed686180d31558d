"""docs/evaluation.md's notebook session runs as written, on the shipped example and its cassettes."""

from __future__ import annotations

import doctest
import shlex
import shutil
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "evaluation.md"
PINNED = """models:
  claude-sonnet-5: {input: 2.00, output: 10.00, cache_write_5m: 2.50, cache_write_1h: 4.00, cache_read: 0.20}
  claude-haiku-4-5: {input: 1.00, output: 5.00, cache_write_5m: 1.25, cache_write_1h: 2.00, cache_read: 0.10}
"""


def test_the_notebook_session_of_the_evaluation_doc_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scenarios").mkdir()
    for name in ("eval-refunds.yaml", "eval-refunds.csv"):
        shutil.copy(ROOT / "scenarios" / name, tmp_path / "scenarios" / name)
    shutil.copytree(ROOT / "cassettes" / "eval-refunds", tmp_path / "cassettes" / "eval-refunds")
    monkeypatch.chdir(tmp_path)
    # The session shows dollars: priced with the prices it was written with, it keeps checking them
    # when the shipped table moves (a price the table drops fails here, as it should).
    (tmp_path / "pinned.yaml").write_text(PINNED, encoding="utf-8")
    text = DOC.read_text(encoding="utf-8")
    [command] = [line.strip()
                 for line in text.splitlines() if line.strip().startswith("harness run scenarios/eval-refunds")]
    argv = ["run", "scenarios/eval-refunds.yaml", "--results", "results/eval.jsonl", "--no-report"]
    assert shlex.split(command)[1:] == argv, "the doc's command changed: change it here too"
    # The doc's relative paths, under tmp_path (the current folder here).
    assert main(["run", "scenarios/eval-refunds.yaml", "--results", str(tmp_path / "results" / "eval.jsonl"),
                 "--no-report", "--prices", str(tmp_path / "pinned.yaml")]) == 0
    session = text.split("```pycon\n", 1)[1].split("```", 1)[0]
    parser = doctest.DocTestParser()
    test = parser.get_doctest(session, {}, "docs/evaluation.md", str(DOC), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: list[str] = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
    assert runner.tries >= 5
