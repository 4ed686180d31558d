"""The report counts each run as it reads it, then keeps the run without its traces: the figures counted of
what it keeps are the ones counted of the whole run."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from report_data import exchange, matrix

from harness.cost import cost_of_trace
from harness.report._data import ReportData, prepare
from harness.results import RunResult
from harness.trace import build_trace


def with_own_calls(result: RunResult, judge_model: str) -> RunResult:
    """`result` with two calls of the harness's own: a judge's (billed as `judge_model`) and a simulated user's."""
    said = [{"role": "user", "content": "Did the agent refund the order?"}]
    calls = [replace(exchange(i, said, [{"type": "text", "text": "yes"}], model=model,
                              usage={"input_tokens": 100 * (i + 1), "output_tokens": 7}),
                     request_headers={"x-harness-role": role})
             for i, (role, model) in enumerate([("judge", judge_model), ("user", "claude-haiku-4-5")])]
    return replace(result, harness_trace=build_trace(calls, result.run_id, harness_calls=True))


def ledger(data: ReportData) -> list[tuple[str, int, int, int, int, float | None, set[str]]]:
    return [(row.name, row.runs, row.calls, row.input_tokens, row.output_tokens, row.cost_usd, row.unpriced_models)
            for row in data.harness_calls]


@pytest.mark.parametrize("judge_model", ["claude-opus-4-8", "claude-mystery-9"])
def test_the_harness_calls_of_runs_kept_without_traces_are_counted_as_of_whole_runs(judge_model: str) -> None:
    results = [with_own_calls(r, judge_model) if i % 3 == 0 else r for i, r in enumerate(matrix())]
    whole = prepare(results)  # no details: every run kept whole, its traces too
    drawn: list[int] = []
    kept = prepare(results, render=lambda run, costs: drawn.append(run.n))  # as the page's build keeps them

    assert drawn == list(range(1, len(results) + 1))
    assert ledger(kept) == ledger(whole)
    assert kept.rows == whole.rows and kept.by_model == whole.by_model and kept.prices_used == whole.prices_used
    judged = [r for r in results if r.harness_trace is not None]
    assert [row.name for row in kept.harness_calls] == [f"judge ({judge_model})", "simulated user (claude-haiku-4-5)"]
    assert {row.name: row.runs for row in kept.harness_calls} == {name: len(judged) for name, *_ in ledger(kept)}
    costs = [cost_of_trace(r.harness_trace) for r in judged if r.harness_trace is not None]
    if judge_model == "claude-mystery-9":
        assert kept.harness_cost is None and kept.harness_calls[0].unpriced_models == {"claude-mystery-9"}
    else:
        assert kept.harness_cost == pytest.approx(sum(c for c in costs if c is not None)) and kept.harness_cost > 0
    # Each row's cost of the harness's calls is the run's own (`harness_cost_usd`), NaN when unpriced.
    own = [math.nan if cost is None else cost for cost in (r.harness_cost_usd for r in results)]
    assert [row["harness_cost_usd"] for row in kept.rows] == pytest.approx(own, nan_ok=True)
    assert sum(math.isnan(cost) for cost in own) == (len(judged) if judge_model == "claude-mystery-9" else 0)
    # Kept without either trace; the runs given are left whole.
    assert all(run.result.trace is None and run.result.harness_trace is None for run in kept.runs)
    assert all(r.harness_trace is not None for r in judged) and all(r.trace is not None for r in results[:-2])
