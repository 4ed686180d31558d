"""A report of results that hold no run says so: a CI summary must not show a pass for nothing tested."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_report_of_no_runs_warns_and_its_summary_shows_no_pass(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text("", encoding="utf-8")  # a shard that ran nothing, a run stopped before its first result
    summary = tmp_path / "summary.md"
    done = subprocess.run([sys.executable, "-m", "harness", "report", str(results), "-o", str(tmp_path / "page"),
                           "--markdown", str(summary)], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr  # the report is written whatever the runs did (docs/ci.md)
    assert f"harness: warning: no run in {results}: the report shows nothing tested" in done.stderr
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## ⚠️ Agent harness: no runs\n")
    assert "✅" not in text and "0/0" not in text
