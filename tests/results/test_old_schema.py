"""A results file the previous schema wrote (trace schema 2: every wire body twice, raw and parsed)
is still read by every command that reads results: report, diff, merge, run --baseline, run --resume.

`results-trace-schema-2.jsonl` was written by `harness run` as it was before trace schema 3, on
three shipped scenarios (replays); it is kept as that version wrote it, not regenerated.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.results import read_results
from harness.trace._model import TRACE_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
OLD = Path(__file__).with_name("results-trace-schema-2.jsonl")
SCENARIOS = [str(ROOT / "scenarios" / f"{name}.yaml")
             for name in ("stop-end-turn", "support-refund", "buggy-keeps-only-text")]


def test_the_fixture_is_of_the_previous_schema() -> None:
    lines = [json.loads(line) for line in OLD.read_text(encoding="utf-8").splitlines()]
    assert {line["trace"]["schema"] for line in lines} == {2} and TRACE_SCHEMA == 3
    assert all("request_body" in e and "response_body" in e for line in lines for e in line["trace"]["exchanges"])


def test_old_lines_read_back_with_both_bodies() -> None:
    results = read_results(OLD)
    assert [r.run_id.split("[")[0] for r in results] == ["stop-end-turn", "support-refund", "buggy-keeps-only-text"]
    for result in results:
        assert result.trace is not None and result.trace.calls
        for exchange in result.trace.exchanges:
            assert exchange.request_body == json.loads(exchange.raw_request or "")
            assert isinstance(exchange.response_body, dict) and exchange.response_body["type"] == "message"
    assert [sorted({f.code for f in r.findings}) for r in results] == [[], [], ["H001", "T001"]]


def _new_results(tmp_path: Path) -> Path:
    new = tmp_path / "new.jsonl"
    assert main(["run", *SCENARIOS, "--results", str(new), "--no-report"]) == 0
    schemas = {json.loads(line)["trace"]["schema"] for line in new.read_text(encoding="utf-8").splitlines()}
    assert schemas == {TRACE_SCHEMA}
    return new


def test_report_of_an_old_file_and_of_old_and_new_together(tmp_path: Path) -> None:
    new = _new_results(tmp_path)
    assert main(["report", str(OLD), "-o", str(tmp_path / "old"), "--json", str(tmp_path / "old.json")]) == 0
    summary = json.loads((tmp_path / "old.json").read_text(encoding="utf-8"))
    assert summary["totals"] == {"passed": 3, "failed": 0, "error": 0, "runs": 3, "findings": 2, "expected_findings": 2}
    assert [run["steps"] for run in summary["runs"]] == [1, 4, 2]
    assert "support-refund[claude-sonnet-5-default-r0]" in (tmp_path / "old" / "index.html").read_text(encoding="utf-8")
    merged = tmp_path / "merged.jsonl"
    stop = tmp_path / "shard-new.jsonl"
    stop.write_text("".join(line for line in new.read_text(encoding="utf-8").splitlines(keepends=True)
                            if '"run_id":"stop-end-turn' not in line), encoding="utf-8")
    (tmp_path / "shard-old.jsonl").write_text("".join(
        line for line in OLD.read_text(encoding="utf-8").splitlines(keepends=True)
        if '"run_id":"stop-end-turn' in line), encoding="utf-8")
    assert main(["merge", str(tmp_path / "shard-old.jsonl"), str(stop), "-o", str(merged)]) == 0
    assert sorted(r.run_id for r in read_results(merged)) == sorted(r.run_id for r in read_results(OLD))
    assert main(["report", str(merged), "-o", str(tmp_path / "both")]) == 0


def test_diff_and_baseline_against_an_old_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = _new_results(tmp_path)
    capsys.readouterr()
    assert main(["diff", str(OLD), str(new), "--format", "json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert not diff["regressed"], diff
    assert main(["run", *SCENARIOS, "--results", str(tmp_path / "again.jsonl"), "--no-report",
                 "--baseline", str(OLD)]) == 0


def test_resume_continues_an_old_file(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    kept = OLD.read_text(encoding="utf-8").splitlines(keepends=True)[:2]
    results.write_text("".join(kept), encoding="utf-8")
    assert main(["run", *SCENARIOS, "--resume", "--results", str(results), "--no-report"]) == 0
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [line["trace"]["schema"] for line in lines] == [2, 2, TRACE_SCHEMA]
    assert [r.status for r in read_results(results)] == ["passed"] * 3
