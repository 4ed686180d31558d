"""The results file: one durable line per run, read back the same, torn last lines skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError
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


def test_a_line_that_is_not_a_result_names_the_key_never_our_classes(tmp_path: Path) -> None:
    good = {"run_id": "a[m-high-r0]", "scenario": "a", "scenario_path": "a.yaml", "model": "m", "effort": "high",
            "repeat": 0, "mode": "replay", "status": "passed", "outcome": None}
    cases = [({"run_id": 5}, "missing scenario, scenario_path, model, effort, repeat, mode, status, outcome"),
             ({**good, "zzz": 1}, "unknown key 'zzz'"),
             ({**good, "usage": 5}, "usage: expected an object, got a number (5)"),
             ({**good, "findings": {"code": "T001"}}, "findings: expected a list, got an object")]
    for record, why in cases:
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        with pytest.raises(InputError) as caught:
            read_results(path)
        message = str(caught.value)
        assert f"bad.jsonl:1: not a harness result record ({why})" in message
        assert "RunResult" not in message and "__init__" not in message and "_model" not in message
