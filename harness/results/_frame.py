"""Results as a pandas DataFrame, one row per run: what a notebook compares models and efforts with.

pandas is imported when a frame is asked for, not with the results package: `harness run` and the
report's readers do not pay for it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from ._model import RunResult
from ._store import iter_results

COLUMNS = (
    "run_id", "scenario", "case", "model", "effort", "repeat", "mode", "status", "outcome", "passed",
    "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "cost_usd", "latency_s",
    "steps", "findings", "harness_cost_usd",
)
"""The fixed columns, in order; one `score.<name>` column per score name follows them."""


def to_frame(results: str | os.PathLike[str] | Iterable[RunResult]) -> Any:
    """One row per run of a results file (or of RunResults): the columns of `COLUMNS`, then
    `score.<name>` for every score name met (NaN where a run has no such score or it has no value).

    `effort` is the label the run ids use (`default` for the API's default); `outcome` is how the
    agent said the run ended (NaN when the harness could not run it); `cost_usd` is NaN when unpriced,
    never 0; `latency_s` is the run's wall-clock time; `findings` the error rule codes, comma-separated;
    `harness_cost_usd` what the run's judges and simulated user cost (0 without them, NaN when unpriced).
    """
    import pandas as pd

    rows = [_row(result) for result in (iter_results(results) if isinstance(results, (str, os.PathLike)) else results)]
    score_names = list(dict.fromkeys(name for row in rows for name in row if name.startswith("score.")))
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *score_names])
    for name in ("repeat", "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "steps"):
        frame[name] = frame[name].astype("int64")
    for name in ("cost_usd", "latency_s", "harness_cost_usd", *score_names):
        frame[name] = frame[name].astype("float64")
    frame["passed"] = frame["passed"].astype("bool")
    return frame


def _row(result: RunResult) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": result.run_id,
        "scenario": result.scenario,
        "case": result.case,
        "model": result.model,
        "effort": result.effort or "default",
        "repeat": result.repeat,
        "mode": result.mode,
        "status": result.status,
        "outcome": result.outcome.status if result.outcome else None,
        "passed": result.status == "passed",
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "cache_write_tokens": result.usage.cache_creation_input_tokens,
        "cache_read_tokens": result.usage.cache_read_input_tokens,
        "cost_usd": math.nan if result.cost_usd is None else result.cost_usd,
        "latency_s": result.duration_s,
        "steps": result.steps,
        "findings": ",".join(sorted({f.code for f in result.findings if f.severity == "error"})),
        "harness_cost_usd": math.nan if (own := result.harness_cost_usd) is None else own,
    }
    for score in result.scores:
        row[f"score.{score.name}"] = math.nan if score.value is None else score.value
    return row
