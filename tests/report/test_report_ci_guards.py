"""What `harness report` says or refuses so that CI is not misled: a summary showing a pass for nothing
tested, a CI output written over the results it reads."""

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


def test_a_ci_output_naming_the_results_file_read_is_refused_and_the_runs_kept(tmp_path: Path) -> None:
    # A results file begins as a JSON summary does ('{'): only its being the report's own input tells them apart.
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "coordinator.yaml"
    results = tmp_path / "results.jsonl"
    made = subprocess.run([sys.executable, "-m", "harness", "run", str(scenario), "--results", str(results),
                           "--no-report"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert made.returncode == 0, made.stderr
    kept = results.read_bytes()
    for option in ("--json", "--junit", "--markdown"):
        done = subprocess.run([sys.executable, "-m", "harness", "report", str(results), "-o", str(tmp_path / "page"),
                               option, str(results)], capture_output=True, text=True, cwd=tmp_path, check=False)
        assert done.returncode == 2
        assert f"{option} {results} is the results file {results} this report reads" in done.stderr
        assert results.read_bytes() == kept
    assert not (tmp_path / "page").exists()  # refused before anything was written
