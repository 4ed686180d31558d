"""Results as a pandas DataFrame, one row per run: what a notebook compares models and efforts with,
and what the report's comparison is computed from.

A row is plain Python (`frame_row`), built while a run's trace is at hand; pandas is imported only
when the rows become a frame (`frame_of`), so `harness run` and the report's other outputs do not
pay for it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from ..cost import CallCost, PriceTable
from ..cost._cost import price_calls, total_cost
from ..trace._timing import attempt_latency
from ._model import RunResult
from ._store import iter_results

COLUMNS = (
    "run_id", "scenario", "case", "model", "effort", "repeat", "mode", "status", "outcome", "answer", "answered_by",
    "passed", "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "cost_usd", "latency_s",
    "latency_recorded", "steps", "findings", "harness_cost_usd",
)
"""The fixed columns, in order; one `score.<name>` column per score name follows them."""


def to_frame(results: str | os.PathLike[str] | Iterable[RunResult], *, prices: PriceTable | None = None) -> Any:
    """One row per run of a results file (or of RunResults): the columns of `COLUMNS`, then
    `score.<name>` for every score name met (NaN where a run has no such score or it has no value).

    `effort` is the label the run ids use (`default` for the API's default); `outcome` is how the
    agent said the run ended and `answer` its final answer (for a conversation of several turns, its
    last one: what `final_text` scorers and judges read), both None when the harness could not run it;
    `answered_by` is `scripted` when the answers were scripted (the same in every setting), `model`
    when a model gave them. `cost_usd` is NaN when unpriced, never 0; with `prices`, every run with a
    trace is priced again with that table, as `harness report --prices` does. `latency_s` is what the
    model took: the run's wall-clock time, but for a replayed run the answers' recorded time
    (`latency_recorded` is then True) and NaN when a cassette kept none. `findings` are the error rule
    codes, comma-separated; `harness_cost_usd` what the run's judges and simulated user cost (0
    without them, NaN when unpriced; priced again with `prices` too).
    """
    runs = iter_results(results) if isinstance(results, (str, os.PathLike)) else results
    return frame_of(frame_row(result, prices) for result in runs)


def frame_of(rows: Iterable[dict[str, Any]]) -> Any:
    """The frame of rows made by `frame_row`: columns in order, typed."""
    import pandas as pd

    rows = list(rows)
    score_names = frame_scores(rows)
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *score_names])
    for name in ("repeat", "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "steps"):
        frame[name] = frame[name].astype("int64")
    for name in ("cost_usd", "latency_s", "harness_cost_usd", *score_names):
        frame[name] = frame[name].astype("float64")
    for name in ("passed", "latency_recorded"):
        frame[name] = frame[name].astype("bool")
    return frame


def frame_scores(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The `score.<name>` columns of the frame of `rows` (made by `frame_row`), in the order first met."""
    # Each distinct set of keys looked at once (in the order first met, so the columns keep that
    # order): rows share their keys, and each key of each row is 230,000 names for 10,000 runs.
    keys = dict.fromkeys(tuple(row) for row in rows)
    return list(dict.fromkeys(name for names in keys for name in names if name.startswith("score.")))


def frame_row(result: RunResult, prices: PriceTable | None = None,
              call_costs: list[CallCost | None] | None = None,
              own_costs: list[CallCost | None] | None = None) -> dict[str, Any]:
    """One run's row of `to_frame`, as plain Python (cost and latency read from its trace when it has one).
    `call_costs` are the trace's calls priced with `prices` already, when the caller has them; `own_costs`
    likewise the calls of its `harness_trace`."""
    cost = result.cost_usd
    if prices is not None and result.trace is not None:
        costs = call_costs if call_costs is not None else price_calls(result.trace, prices)
        cost = total_cost(result.trace.calls, costs)
    if prices is not None and result.harness_trace is not None:
        own_trace = result.harness_trace
        own = total_cost(own_trace.calls, own_costs if own_costs is not None else price_calls(own_trace, prices))
    else:
        own = result.harness_cost_usd
    latency, recorded = run_latency(result)
    outcome = result.outcome
    row: dict[str, Any] = {
        "run_id": result.run_id,
        "scenario": result.scenario,
        "case": result.case,
        "model": result.model,
        "effort": result.effort or "default",
        "repeat": result.repeat,
        "mode": result.mode,
        "status": result.status,
        "outcome": outcome.status if outcome else None,
        "answer": outcome.final_text if outcome else None,
        "answered_by": result.answers,
        "passed": result.status == "passed",
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "cache_write_tokens": result.usage.cache_creation_input_tokens,
        "cache_read_tokens": result.usage.cache_read_input_tokens,
        "cost_usd": math.nan if cost is None else cost,
        "latency_s": math.nan if latency is None else latency,
        "latency_recorded": recorded,
        "steps": result.steps,
        "findings": ",".join(sorted({f.code for f in result.findings if f.severity == "error"})),
        "harness_cost_usd": math.nan if own is None else own,
    }
    for score in result.scores:
        row[f"score.{score.name}"] = math.nan if score.value is None else score.value
    return row


def run_latency(result: RunResult) -> tuple[float | None, bool]:
    """(seconds, recorded): what the model took in the run.

    A run that replayed any answer took the replay's milliseconds, which say nothing about the model:
    its latency is the model's recorded time summed over its attempts (tool time and back-offs are
    not in it), or None when a cassette kept no time for some answer. Any other run is its wall time.
    """
    trace = result.trace
    replayed = result.mode == "replay" or (trace is not None and any(e.replayed for e in trace.exchanges))
    if not replayed:
        return result.duration_s, False
    if trace is None or not trace.exchanges:
        return None, False
    latencies = [attempt_latency(e, result.mode == "replay") for e in trace.exchanges]
    if any(t is None for t in latencies):
        return None, False
    return sum(t for t in latencies if t is not None), True
