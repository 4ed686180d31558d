"""`harness.results.to_frame`: one row per run, typed columns, a column per score, unpriced cost NaN."""

from __future__ import annotations

import math
from pathlib import Path

from harness.cli import main
from harness.results import COLUMNS, read_results, to_frame

SCENARIO = """name: sums
mode: scripted
prompt: "What is {{ a }} + {{ b }}?"
script:
  - text: "It is {{ a + b }}."
cases:
  - {id: small, vars: {a: 1, b: 2}}
  - {id: big, vars: {a: 1000, b: 2000}}
matrix: {models: [claude-sonnet-5, claude-unpriced-9], repeats: 2}
score:
  - final_text: {numeric: "{{ a + b }}"}
  - efficiency: {max_steps: 4, name: steps}
"""


def test_one_row_per_run_with_cases_scores_tokens_and_unpriced_cost(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    results = tmp_path / "results.jsonl"
    assert main(["run", str(tmp_path / "s.yaml"), "--results", str(results), "--no-report"]) == 0
    frame = to_frame(results)
    assert list(frame.columns) == [*COLUMNS, "score.final_text", "score.steps"]
    assert len(frame) == 8 and set(frame["case"]) == {"small", "big"}
    assert frame["passed"].all() and set(frame["outcome"]) == {"completed"} and set(frame["effort"]) == {"default"}
    assert frame["score.final_text"].tolist() == [1.0] * 8 and frame["score.steps"].tolist() == [0.75] * 8
    assert str(frame["input_tokens"].dtype) == "int64" and (frame["output_tokens"] > 0).all()
    unpriced = frame[frame["model"] == "claude-unpriced-9"]
    assert unpriced["cost_usd"].isna().all()  # unknown, never $0
    priced = frame[frame["model"] == "claude-sonnet-5"]
    assert (priced["cost_usd"] > 0).all()
    assert frame.groupby("model")["score.final_text"].mean().to_dict() == {"claude-sonnet-5": 1.0,
                                                                           "claude-unpriced-9": 1.0}
    # The same frame from results in memory, as a notebook holding them would build it.
    again = to_frame(read_results(results))
    assert again.drop(columns=["cost_usd"]).equals(frame.drop(columns=["cost_usd"]))


def test_a_run_without_scores_or_outcome_has_nan_there(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("prompt: hi\nmode: replay\n", encoding="utf-8")  # no cassette: an error run
    results = tmp_path / "results.jsonl"
    assert main(["run", str(tmp_path / "s.yaml"), "--results", str(results), "--no-report"]) == 2
    [row] = to_frame(results).to_dict("records")
    assert row["status"] == "error" and row["passed"] is False and row["case"] is None
    assert row["outcome"] is None or (isinstance(row["outcome"], float) and math.isnan(row["outcome"]))
    assert not [c for c in row if c.startswith("score.")]


def test_answer_is_the_final_answer_and_the_last_one_of_a_conversation(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "talk.yaml").write_text(
        "name: talk\nmode: scripted\nturns: [Hello, 'What is 2 + 2?']\n"
        "script:\n  - text: Hi, how can I help?\n  - text: It is 4.\n", encoding="utf-8")
    results = tmp_path / "results.jsonl"
    assert main(["run", str(tmp_path / "s.yaml"), str(tmp_path / "talk.yaml"), "--results", str(results),
                 "--no-report"]) == 0
    frame = to_frame(results).set_index("run_id")
    assert frame.loc["sums[big][claude-sonnet-5-default-r1]", "answer"] == "It is 3000."
    assert frame.loc["talk[claude-sonnet-5-default-r0]", "answer"] == "It is 4."  # the last turn's
    assert set(frame["answered_by"]) == {"scripted"}
    # Scripted runs: their wall-clock time, not a recording's.
    assert not frame["latency_recorded"].any() and (frame["latency_s"] > 0).all()
