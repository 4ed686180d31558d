"""The comparison of settings: models x effort levels over their repeats, with pandas.

Pass rates carry a Wilson 95% interval (honest for the few repeats an eval runs); cost is None for a
cell with any unpriced run, so the cheapest setting that passes everything is picked among priced
cells only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

EFFORT_ORDER = ["low", "medium", "high", "xhigh", "max", "default"]
_Z = 1.959963984540054  # two-sided 95%


def wilson_interval(passed: int, n: int, z: float = _Z) -> tuple[float, float]:
    """Wilson score interval of a pass rate; (0, 1) when there is no run."""
    if n <= 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class CellStats:
    """One setting (model, effort), over all its runs in a scope (one scenario, or all)."""

    model: str
    effort: str
    runs: int
    passed: int
    pass_rate: float
    ci_low: float
    ci_high: float
    steps_mean: float
    tokens_mean: float
    tokens_per_step: float
    cost_mean: float | None
    cost_total: float | None
    latency_median: float
    latency_p90: float
    passes_everything: bool = False
    cheapest_passing: bool = False


@dataclass
class Comparison:
    overall: list[CellStats]
    by_scenario: dict[str, list[CellStats]] = field(default_factory=dict)
    cheapest: CellStats | None = None
    """The cheapest setting whose every run, in every scenario, passed."""


def runs_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run: scenario, model, effort, passed, steps, tokens, cost (NaN when unpriced), latency."""
    frame = pd.DataFrame(rows, columns=["scenario", "model", "effort", "passed", "steps", "tokens", "cost", "latency"])
    frame["effort"] = frame["effort"].fillna("default")
    frame["cost"] = pd.to_numeric(frame["cost"], errors="coerce")
    return frame


def _cells(frame: pd.DataFrame) -> list[CellStats]:
    cells: list[CellStats] = []
    for (model, effort), group in frame.groupby(["model", "effort"], sort=False):
        n = len(group)
        passed = int(group["passed"].sum())
        low, high = wilson_interval(passed, n)
        unpriced = bool(group["cost"].isna().any())
        steps_sum = float(group["steps"].sum())
        cells.append(CellStats(
            model=str(model),
            effort=str(effort),
            runs=n,
            passed=passed,
            pass_rate=passed / n,
            ci_low=low,
            ci_high=high,
            steps_mean=float(group["steps"].mean()),
            tokens_mean=float(group["tokens"].mean()),
            tokens_per_step=float(group["tokens"].sum()) / steps_sum if steps_sum else 0.0,
            cost_mean=None if unpriced else float(group["cost"].mean()),
            cost_total=None if unpriced else float(group["cost"].sum()),
            latency_median=float(group["latency"].median()),
            latency_p90=float(group["latency"].quantile(0.9)),
        ))
    rank = {e: i for i, e in enumerate(EFFORT_ORDER)}
    cells.sort(key=lambda c: (c.model, rank.get(c.effort, len(rank)), c.effort))
    return cells


def compare(frame: pd.DataFrame) -> Comparison:
    if frame.empty:
        return Comparison(overall=[])
    overall = _cells(frame)
    by_scenario = {str(s): _cells(g) for s, g in frame.groupby("scenario", sort=True)}
    for cell in overall:
        cell.passes_everything = cell.passed == cell.runs
    candidates = [c for c in overall if c.passes_everything and c.cost_mean is not None]
    cheapest = min(candidates, key=lambda c: (c.cost_mean, c.steps_mean)) if candidates else None
    if cheapest is not None:
        cheapest.cheapest_passing = True
        for cells in by_scenario.values():
            for cell in cells:
                if (cell.model, cell.effort) == (cheapest.model, cheapest.effort):
                    cell.cheapest_passing = True
    return Comparison(overall=overall, by_scenario=by_scenario, cheapest=cheapest)
