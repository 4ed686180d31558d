"""The comparison of settings: models x effort levels over their repeats, computed from the columns of
the frame `harness.results.to_frame` gives (the report's and a notebook's numbers are one): numpy's
arithmetic on them, given the frame or the rows it is made of (the report's, which then never
imports pandas).

Pass rates carry a Wilson 95% interval (honest for the few repeats an eval runs); cost is None for a
cell with any unpriced run, so the cheapest setting that passes everything is picked among priced
cells only. "Everything" means every scenario of the scope: a setting that ran only the cheapest
scenario would otherwise win on a mean cost that measures a different workload.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .._stats import wilson_interval
from ..results._frame import frame_scores
from ._paired import PairedComparison, SettingRuns, compare_many, run_value

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

EFFORT_ORDER = ["low", "medium", "high", "xhigh", "max", "default"]


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
    latency_median: float | None
    """Over the runs whose latency is known (`latency_runs`); None when none is."""
    latency_p90: float | None
    scenarios: int = 1
    """How many distinct scenarios the cell's runs cover."""
    passes_everything: bool = False
    cheapest_passing: bool = False
    latency_runs: int = 0
    """Runs with a known latency: a replay of a cassette that kept no timing has none."""
    latency_recorded: bool = False
    """Some of the latencies are what the model took when cassettes were recorded (replayed runs)."""
    cache_hit_rate: float | None = None
    """Prompt-cache reads over all input tokens (uncached, cache writes, cache reads); None without input."""
    scripted_runs: int = 0
    """Runs whose answers were scripted: identical in every setting, they say nothing of quality."""


TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens")
"""A run's tokens, by kind: their sum is what `tokens_mean` and `tokens_per_step` count."""

MAX_PAIRED_SETTINGS = 6
"""Up to this many settings, every two are compared; beyond, each is compared with the best."""


@dataclass
class Comparison:
    overall: list[CellStats]
    by_scenario: dict[str, list[CellStats]] = field(default_factory=dict)
    cheapest: CellStats | None = None
    """The cheapest setting that ran every scenario and whose every run passed."""
    scenarios: int = 0
    """Distinct scenarios in the results: a setting must cover them all to pass "everything"."""
    paired: list[PairedComparison] = field(default_factory=list)
    """Settings compared two by two on the cases both ran."""
    headline: PairedComparison | None = None
    """The two best settings compared: the report's answer in one line."""
    scripted_runs: int = 0
    runs: int = 0

    @property
    def scripted(self) -> bool:
        """Every answer was scripted: a comparison of cost and latency only."""
        return self.runs > 0 and self.scripted_runs == self.runs


def _or_none(value: float) -> float | None:
    return None if math.isnan(value) else value


Table = dict[str, list[Any]]
"""Columns of the frame as lists of their values (what `Series.tolist()` gives)."""

_TYPES = {"passed": "bool", "cost_usd": "float64", "steps": "int64", "latency_s": "float64",
          "latency_recorded": "bool", "scenario": "object", "answered_by": "object"}
"""The columns the cells are figured from, typed as `frame_of` types them."""


class _Columns:
    """The columns the cells are figured from, as arrays, read once for every cell of every scope."""

    def __init__(self, table: Table) -> None:
        import numpy as np

        self.values = {name: np.array(table[name], dtype=kind) for name, kind in _TYPES.items()}
        # A row per run, a column per kind of token.
        self.counts = np.array([table[name] for name in TOKEN_COLUMNS], dtype=np.int64).T


def _cells_of(columns: _Columns, settings: Iterable[tuple[Any, Any]]) -> list[CellStats]:
    """Each setting's figures, given as ((model, effort), its rows' positions in the columns). Read from
    the columns' arrays by each setting's row positions: a report of 50 scenarios in 8 settings has
    400 cells, and a group's frame with a dozen Series operations on it cost about 1.5 ms a cell.
    Every figure is the arithmetic pandas does on the same values in the same order (sums in float64
    then divided by the count, the 90th percentile as its quantile asks numpy for it), so the numbers
    are its own."""
    import numpy as np  # loaded with pandas already: only a report that compares settings pays for either

    values, counts = columns.values, columns.counts
    read_at, input_at, write_at = (TOKEN_COLUMNS.index(name)
                                   for name in ("cache_read_tokens", "input_tokens", "cache_write_tokens"))
    cells: list[CellStats] = []
    for (model, effort), rows in settings:
        n = len(rows)
        passed = int(values["passed"][rows].sum())
        low, high = wilson_interval(passed, n)
        cost = values["cost_usd"][rows]
        unpriced = bool(np.isnan(cost).any())
        steps = values["steps"][rows]
        steps_sum = float(steps.sum())
        tokens = counts[rows].sum(axis=1)
        latency = values["latency_s"][rows]
        timed = ~np.isnan(latency)
        known = latency[timed]
        read = float(counts[rows, read_at].sum())
        every_input = read + float(counts[rows, input_at].sum()) + float(counts[rows, write_at].sum())
        cells.append(CellStats(
            model=str(model),
            effort=str(effort),
            runs=n,
            passed=passed,
            pass_rate=passed / n,
            ci_low=low,
            ci_high=high,
            steps_mean=float(steps.sum(dtype=np.float64) / n),
            tokens_mean=float(tokens.sum(dtype=np.float64) / n),
            tokens_per_step=float(tokens.sum()) / steps_sum if steps_sum else 0.0,
            cost_mean=None if unpriced else float(cost.sum() / n),
            cost_total=None if unpriced else float(cost.sum()),
            # Unknown latencies are left out, never counted as zero; latency_runs says how many are in.
            latency_median=_or_none(float(np.median(known))) if len(known) else None,
            latency_p90=_or_none(float(np.percentile(known, 0.9 * 100.0, method="linear"))) if len(known) else None,
            scenarios=len(set(values["scenario"][rows])),
            latency_runs=len(known),
            latency_recorded=bool(values["latency_recorded"][rows][timed].any()),
            # Prompt-cache reads over all input tokens (uncached, cache writes, cache reads).
            cache_hit_rate=read / every_input if every_input else None,
            scripted_runs=int((values["answered_by"][rows] == "scripted").sum()),
        ))
    rank = {e: i for i, e in enumerate(EFFORT_ORDER)}
    cells.sort(key=lambda c: (c.model, rank.get(c.effort, len(rank)), c.effort))
    return cells


def _mark_cheapest(cells: list[CellStats], scenarios: int) -> CellStats | None:
    """Flag, among cells that ran all `scenarios` and passed every run, the cheapest priced one.
    A cell with scripted answers is never picked: it passed because its script did."""
    for cell in cells:
        cell.passes_everything = cell.passed == cell.runs and cell.scenarios == scenarios
    candidates = [c for c in cells if c.passes_everything and c.cost_mean is not None and not c.scripted_runs]
    # Ties on cost (and steps) keep the table's order, which puts the lower effort first.
    cheapest = min(candidates, key=lambda c: (c.cost_mean, c.steps_mean)) if candidates else None
    if cheapest is not None:
        cheapest.cheapest_passing = True
    return cheapest


def compare(frame: pd.DataFrame, *, seed: int = 0) -> Comparison:
    """Settings compared over the runs of `frame`, a frame of `harness.results.to_frame`, whose row
    positions are the report's run numbers less one."""
    # A row is made from the columns' lists: the values `to_dict("records")` gives (`tolist()` boxes a
    # column's values as it does) at a third of its cost, since it boxes each value of a string column
    # on its own.
    names = list(frame.columns)
    columns = [frame[name].tolist() for name in names]
    rows = [dict(zip(names, record, strict=True)) for record in zip(*columns, strict=True)]
    return _compare(rows, [c for c in names if str(c).startswith("score.")], seed)


def compare_rows(rows: Sequence[dict[str, Any]], *, seed: int = 0) -> Comparison:
    """`compare(frame_of(rows))`, the same numbers, without the frame: the report's rows, made by
    `frame_row`, in its runs' order. The comparison needs of pandas only its frame and a grouping of
    rows by setting: importing it was a third of a second of every report (a tenth of the comparison
    itself for 10,000 runs), for what a dict does. A score a run has not is no key of its row (NaN
    in the frame): both are a missing score to every figure."""
    return _compare(rows, frame_scores(rows), seed)


def _groups(*keys: list[Any]) -> dict[tuple[Any, ...], np.ndarray]:
    """The row positions of each distinct tuple of `keys`' values (columns), in the order first met, as
    `groupby(...).indices` gives them: every key of ours (scenario, model, effort) is a string, never
    the missing value pandas would leave out."""
    import numpy as np

    positions: dict[tuple[Any, ...], list[int]] = {}
    for i, key in enumerate(zip(*keys, strict=True)):
        positions.setdefault(key, []).append(i)
    return {key: np.array(rows, dtype=np.intp) for key, rows in positions.items()}


def _compare(rows: Sequence[dict[str, Any]], scores: list[str], seed: int) -> Comparison:
    """The comparison of `rows`, each a run's row of the frame, the run numbered its position plus one;
    `scores`: the frame's score columns, in its order."""
    if not rows:
        return Comparison(overall=[])
    table = {name: list(map(itemgetter(name), rows)) for name in (*_TYPES, *TOKEN_COLUMNS, "model", "effort")}
    scenarios = len(set(table["scenario"]))
    columns = _Columns(table)
    settings_at = _groups(table["model"], table["effort"])
    overall = _cells_of(columns, settings_at.items())
    cheapest = _mark_cheapest(overall, scenarios)
    # Each scenario's settings, grouped once: a frame of each scenario's rows, grouped again, cost a
    # fifth of a second for 10,000 runs. A cell's rows are in the frame's order either way.
    settings: dict[str, list[tuple[tuple[Any, Any], Any]]] = {}
    for (scenario, model, effort), at in _groups(table["scenario"], table["model"], table["effort"]).items():
        settings.setdefault(scenario, []).append(((model, effort), at))
    by_scenario: dict[str, list[CellStats]] = {}
    for name in sorted(settings):
        cells = _cells_of(columns, settings[name])
        # Within one scenario every cell covers it, so this is the cheapest setting passing it.
        _mark_cheapest(cells, 1)
        by_scenario[str(name)] = cells
    paired, headline = _paired(rows, settings_at, scores, overall, seed)
    return Comparison(overall=overall, by_scenario=by_scenario, cheapest=cheapest, scenarios=scenarios,
                      paired=paired, headline=headline,
                      scripted_runs=sum(1 for by in table["answered_by"] if by == "scripted"), runs=len(rows))


def _paired(rows: Sequence[dict[str, Any]], settings_at: dict[tuple[Any, ...], np.ndarray], scores: list[str],
            cells: list[CellStats], seed: int) -> tuple[list[PairedComparison], PairedComparison | None]:
    """Settings two by two on their shared cases, and the two best compared (best on score or pass
    rate over all their runs, then the cheaper). `settings_at`: each setting's row positions."""
    if len(cells) < 2:
        return [], None
    # Each setting's rows, and its runs by case, sorted out once: every pair below reads two settings'.
    by_setting: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    runs: dict[tuple[Any, ...], SettingRuns] = {}
    for setting, at in settings_at.items():
        positions = at.tolist()
        by_setting[setting] = [rows[i] for i in positions]
        runs[setting] = SettingRuns.from_rows(by_setting[setting], [i + 1 for i in positions])
    mean: dict[tuple[str, str], float] = {}
    for cell in cells:
        values = [run_value(r, scores) for r in by_setting[(cell.model, cell.effort)]]
        mean[(cell.model, cell.effort)] = sum(values) / len(values)
    ranked = sorted(cells,
                    key=lambda c: (-mean[(c.model, c.effort)], c.cost_mean if c.cost_mean is not None else math.inf))
    keys = [(c.model, c.effort) for c in cells]
    if len(cells) <= MAX_PAIRED_SETTINGS:
        pairs = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1:]]
    else:
        best = (ranked[0].model, ranked[0].effort)
        pairs = [(best, k) for k in keys if k != best]
    # The best setting as B, so the line reads "best is better than runner-up" or names its cost.
    pairs.append(((ranked[1].model, ranked[1].effort), (ranked[0].model, ranked[0].effort)))
    compared = compare_many([(a, runs[a], b, runs[b]) for a, b in pairs], seed=seed)
    headline = compared.pop()
    return [p for p in compared if p.cases], headline if headline.cases else None


def no_cheapest_reason(cmp: Comparison) -> str:
    """Why no setting is named the cheapest that passes everything, in the reader's terms."""
    if cmp.scripted_runs:
        scope = "every answer" if cmp.scripted else f"{cmp.scripted_runs} of {cmp.runs} runs' answers"
        return (f"Answers are scripted ({scope}): they are the same whatever the setting, so no setting "
                "is recommended on quality; compare cost and latency only.")
    n = cmp.scenarios
    everything = f"all {n} scenarios" if n != 1 else "the scenario"
    if not any(c.scenarios == n for c in cmp.overall):
        return (f"No setting ran {everything}, so none is the cheapest that passes everything; "
                "each scenario's table marks its own cheapest passing setting.")
    if not any(c.passes_everything for c in cmp.overall):
        return f"No setting passed every run of {everything}."
    return "The settings that passed everything are unpriced (add their prices with --prices FILE)."
