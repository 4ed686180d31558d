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


def test_the_notebook_session_of_the_evaluation_doc_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scenarios").mkdir()
    for name in ("eval-refunds.yaml", "eval-refunds.csv"):
        shutil.copy(ROOT / "scenarios" / name, tmp_path / "scenarios" / name)
    shutil.copytree(ROOT / "cassettes" / "eval-refunds", tmp_path / "cassettes" / "eval-refunds")
    monkeypatch.chdir(tmp_path)
    text = DOC.read_text(encoding="utf-8")
    [command] = [line.strip() for line in text.splitlines() if line.strip().startswith("harness run scenarios/eval-refunds")]
    argv = ["run", "scenarios/eval-refunds.yaml", "--results", "results/eval.jsonl", "--no-report"]
    assert shlex.split(command)[1:] == argv, "the doc's command changed: change it here too"
    # The doc's relative paths, under tmp_path (the current folder here).
    assert main(["run", "scenarios/eval-refunds.yaml", "--results", str(tmp_path / "results" / "eval.jsonl"), "--no-report"]) == 0
    session = text.split("```pycon\n", 1)[1].split("```", 1)[0]
    parser = doctest.DocTestParser()
    test = parser.get_doctest(session, {}, "docs/evaluation.md", str(DOC), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: list[str] = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
    assert runner.tries >= 5
