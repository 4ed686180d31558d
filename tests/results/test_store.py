"""The results file: one durable line per run, read back the same, torn last lines skipped."""

from __future__ import annotations

from pathlib import Path

from harness.results import ResultsWriter, RunResult, read_results
from harness.trace import Outcome


def result(run_id: str, text: str) -> RunResult:
    return RunResult(run_id=run_id, scenario="s", scenario_path="s.yaml", model="claude-sonnet-5", effort=None,
                     repeat=0, mode="scripted", status="passed", outcome=Outcome("completed", final_text=text))


def test_non_ascii_is_kept_and_a_lone_surrogate_is_escaped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result("a", "¿Dónde está? 🦜"))
        writer.write(result("b", "cut emoji \ud83d"))  # valid JSON, not encodable as UTF-8
    assert "¿Dónde está? 🦜" in path.read_text(encoding="utf-8")
    texts = [r.outcome.final_text for r in read_results(path) if r.outcome]
    assert texts == ["¿Dónde está? 🦜", "cut emoji \ud83d"]


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result("a", "done"))
    with path.open("a", encoding="utf-8") as out:
        out.write('{"run_id": "b", "scen')  # the run was killed mid-write
    warnings: list[str] = []
    assert [r.run_id for r in read_results(path, warnings=warnings)] == ["a"]
    assert warnings and "incomplete" in warnings[0]
