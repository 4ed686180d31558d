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

import functools
import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar

from .._stats import wilson_interval
from ..results._frame import frame_scores
from ._paired import CaseKey, CaseRuns, PairedComparison, SettingRuns, case_key, compare_many

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

EFFORT_ORDER = ["low", "medium", "high", "xhigh", "max", "default"]

_K = TypeVar("_K", bound=Hashable)


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


Table = dict[str, Sequence[Any]]
"""Columns of the frame as sequences of their values (what `Series.tolist()` gives)."""

_TYPES = {"passed": "bool", "cost_usd": "float64", "steps": "int64", "latency_s": "float64",
          "latency_recorded": "bool", "answered_by": "object"}
"""The columns the cells are figured from, typed as `frame_of` types them."""

_KEYS = ("scenario", "model", "effort", "case", "repeat")
"""The columns that say which run a row is: its cell, its case and its repeat."""


def _table(rows: Sequence[dict[str, Any]]) -> Table:
    """The columns the comparison reads of `rows`."""
    names = (*_TYPES, *TOKEN_COLUMNS, *_KEYS)
    # A tuple of each row's values, then turned into columns: about a third less than a pass over the rows
    # for each column.
    return dict(zip(names, zip(*map(itemgetter(*names), rows), strict=True), strict=True))


class _Columns:
    """The columns the cells are figured from, as arrays, read once for every cell of every scope."""

    def __init__(self, table: Table) -> None:
        import numpy as np

        self.values = {name: np.array(table[name], dtype=kind) for name, kind in _TYPES.items()}
        # A row per run, a column per kind of token.
        self.counts = np.array([table[name] for name in TOKEN_COLUMNS], dtype=np.int64).T


def _numbered(keys: Iterable[_K]) -> tuple[list[int], list[_K]]:
    """Each of `keys` numbered, the distinct keys in the order first met (as `groupby(...).indices`
    orders its groups: every key of ours is made of strings, never the missing value pandas would
    leave out), and the distinct keys in that order."""
    numbers: dict[_K, int] = {}
    return [numbers.setdefault(key, len(numbers)) for key in keys], list(numbers)


class _Grouped:
    """A column's values group after group (`of_row`: each row's group, numbered 0, 1, ...), each
    group's in the rows' order: each group's values are a slice, read for every group at once."""

    def __init__(self, of_row: np.ndarray, groups: int) -> None:
        import numpy as np

        self.of_row = of_row
        self.order = np.argsort(of_row, kind="stable")
        self.sizes = np.bincount(of_row, minlength=groups)
        self.starts = np.concatenate(([0], np.cumsum(self.sizes)[:-1]))
        self.bounds = [0, *np.cumsum(self.sizes).tolist()]
        """Group i's values are `bounds[i]:bounds[i + 1]` of `of(column)`."""

    def of(self, column: np.ndarray) -> np.ndarray:
        return column[self.order]

    def sums(self, column: np.ndarray) -> np.ndarray:
        """Each group's sum of an integer column: integers, whose sum is the same in any order (int64
        wraps alike), so one `reduceat` gives what each group's own `sum()` does."""
        import numpy as np

        return np.add.reduceat(self.of(column), self.starts)

    def count(self, where: np.ndarray) -> list[int]:
        """How many of each group's rows are `where`."""
        import numpy as np

        counts: list[int] = np.bincount(self.of_row[where], minlength=len(self.sizes)).tolist()
        return counts


def _cells_of(columns: _Columns, groups: _Grouped, settings: Sequence[tuple[Any, Any]],
              scenarios: Sequence[int]) -> list[CellStats]:
    """Each group's figures: the cell of setting `settings[i]` over `scenarios[i]` scenarios, for group i.
    A report of 50 scenarios in 8 settings has 400 cells, and a group's frame with a dozen Series
    operations on it cost about 1.5 ms a cell: the cells are read from the columns' arrays, every cell
    at once where a figure is an integer (a count, a sum of integers), and each cell's own slice of a
    column for the others. Every figure is the arithmetic pandas does on the same values in the same
    order (sums in float64 then divided by the count, the 90th percentile as its quantile asks numpy for
    it), so the numbers are its own."""
    import numpy as np  # loaded with pandas already: only a report that compares settings pays for either

    values, counts = columns.values, columns.counts
    read_at, input_at, write_at = (TOKEN_COLUMNS.index(name)
                                   for name in ("cache_read_tokens", "input_tokens", "cache_write_tokens"))
    tokens = counts.sum(axis=1)
    passed = groups.count(values["passed"])
    unpriced = groups.count(np.isnan(values["cost_usd"]))
    timed = ~np.isnan(values["latency_s"])
    latency_runs = groups.count(timed)
    recorded = groups.count(values["latency_recorded"] & timed)
    scripted = groups.count(values["answered_by"] == "scripted")
    steps_sum, tokens_sum, read, uncached, write = (
        groups.sums(column).tolist()
        for column in (values["steps"], tokens, counts[:, read_at], counts[:, input_at], counts[:, write_at]))
    median, p90 = _latency_quantiles(groups, values["latency_s"], timed, latency_runs)
    # Float sums are numpy's pairwise summation, whose rounding depends on how the values are split:
    # each cell's sum is its own slice's, as it was its own array's.
    costs, steps, tokens = groups.of(values["cost_usd"]), groups.of(values["steps"]), groups.of(tokens)
    cells: list[CellStats] = []
    for i, (model, effort) in enumerate(settings):
        start, stop = groups.bounds[i], groups.bounds[i + 1]
        n = stop - start
        low, high = wilson_interval(passed[i], n)
        cost = costs[start:stop]
        every_input = float(read[i]) + float(uncached[i]) + float(write[i])
        cells.append(CellStats(
            model=str(model),
            effort=str(effort),
            runs=n,
            passed=passed[i],
            pass_rate=passed[i] / n,
            ci_low=low,
            ci_high=high,
            steps_mean=float(steps[start:stop].sum(dtype=np.float64) / n),
            tokens_mean=float(tokens[start:stop].sum(dtype=np.float64) / n),
            tokens_per_step=float(tokens_sum[i]) / float(steps_sum[i]) if steps_sum[i] else 0.0,
            cost_mean=None if unpriced[i] else float(cost.sum() / n),
            cost_total=None if unpriced[i] else float(cost.sum()),
            # Unknown latencies are left out, never counted as zero; latency_runs says how many are in.
            latency_median=median[i],
            latency_p90=p90[i],
            scenarios=scenarios[i],
            latency_runs=latency_runs[i],
            latency_recorded=recorded[i] > 0,
            # Prompt-cache reads over all input tokens (uncached, cache writes, cache reads).
            cache_hit_rate=float(read[i]) / every_input if every_input else None,
            scripted_runs=scripted[i],
        ))
    return cells


def _latency_quantiles(groups: _Grouped, latency: np.ndarray, timed: np.ndarray,
                       known: list[int]) -> tuple[list[float | None], list[float | None]]:
    """Each group's median and 90th percentile of its `known` latencies (those `timed`), None without
    any. The groups with as many known latencies are a matrix, a row per group: numpy's median and
    percentile along its rows are each row's own (one partition of each row, the same interpolation
    of the same two values), for a call per distinct count rather than two per group."""
    import numpy as np

    median: list[float | None] = [None] * len(known)
    p90: list[float | None] = [None] * len(known)
    ordered = groups.of(latency)[groups.of(timed)]  # each group's known latencies, in the rows' order
    starts = np.concatenate(([0], np.cumsum(known)[:-1]))
    for count in set(known) - {0}:
        which = np.flatnonzero(np.array(known) == count)
        matrix = ordered[starts[which][:, None] + np.arange(count)]
        for i, m, p in zip(which.tolist(), np.median(matrix, axis=1).tolist(),
                           np.percentile(matrix, 0.9 * 100.0, axis=1, method="linear").tolist(), strict=True):
            median[i], p90[i] = _or_none(m), _or_none(p)
    return median, p90


def _in_order(cells: list[CellStats]) -> list[CellStats]:
    """The cells by model, then effort from low to max."""
    rank = {e: i for i, e in enumerate(EFFORT_ORDER)}
    return sorted(cells, key=lambda c: (c.model, rank.get(c.effort, len(rank)), c.effort))


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


def load_comparison() -> None:
    """Import what comparing settings loads: numpy, with the parts of it loaded only when first used
    (`numpy.ma` by the median's check for NaN, `numpy.random` by the bootstrap's intervals), about
    0.06 s. A two-process report loads them while the worker reads, not after both have read every run."""
    import numpy.ma  # noqa: F401
    import numpy.random  # noqa: F401


def compare_rows(rows: Sequence[dict[str, Any]], *, seed: int = 0) -> Comparison:
    """`compare(frame_of(rows))`, the same numbers, without the frame: the report's rows, made by
    `frame_row`, in its runs' order. The comparison needs of pandas only its frame and a grouping of
    rows by setting: importing it was a third of a second of every report (a tenth of the comparison
    itself for 10,000 runs), for what a dict does. A score a run has not is no key of its row (NaN
    in the frame): both are a missing score to every figure."""
    return _compare(rows, frame_scores(rows), seed)


def _compare(rows: Sequence[dict[str, Any]], scores: list[str], seed: int) -> Comparison:
    """The comparison of `rows`, each a run's row of the frame, the run numbered its position plus one;
    `scores`: the frame's score columns, in its order."""
    if not rows:
        return Comparison(overall=[])
    import numpy as np

    table = _table(rows)
    columns = _Columns(table)
    # Each run's case of its setting numbered once; its cell (a setting in a scenario) and its setting
    # are numbered from its case's, the cases and cells each in the order first met.
    of_run, cases = _numbered(zip(table["scenario"], table["model"], table["effort"], table["case"], strict=True))
    of_case, cells = _numbered((scenario, model, effort) for scenario, model, effort, _ in cases)
    of_cell, settings = _numbered((model, effort) for _, model, effort in cells)
    run_case = np.array(of_run, dtype=np.intp)
    run_cell = np.array(of_case, dtype=np.intp)[run_case]
    run_setting = np.array(of_cell, dtype=np.intp)[run_cell]
    scenarios = len({scenario for scenario, _, _ in cells})
    by_setting = _Grouped(run_setting, len(settings))
    # A setting covers as many scenarios as it has cells.
    overall = _in_order(_cells_of(columns, by_setting, settings, np.bincount(of_cell).tolist()))
    cheapest = _mark_cheapest(overall, scenarios)
    # Each scenario's settings, figured at once: a frame of each scenario's rows, grouped again, cost a
    # fifth of a second for 10,000 runs. A cell's rows are in the frame's order either way.
    in_scenario: dict[str, list[CellStats]] = {}
    figured = _cells_of(columns, _Grouped(run_cell, len(cells)), [(m, e) for _, m, e in cells], [1] * len(cells))
    for (scenario, _, _), cell in zip(cells, figured, strict=True):
        in_scenario.setdefault(scenario, []).append(cell)
    by_scenario: dict[str, list[CellStats]] = {}
    for name in sorted(in_scenario):
        # Within one scenario every cell covers it, so this is the cheapest setting passing it.
        _mark_cheapest(by_scenario.setdefault(str(name), _in_order(in_scenario[name])), 1)
    paired: list[PairedComparison] = []
    headline = None
    if len(settings) >= 2:
        runs = _Runs(rows, table, columns, run_case, run_setting, cases, of_case, of_cell, scores)
        paired, headline = _paired(runs, settings, by_setting, overall, seed)
    return Comparison(overall=overall, by_scenario=by_scenario, cheapest=cheapest, scenarios=scenarios,
                      paired=paired, headline=headline, scripted_runs=sum(c.scripted_runs for c in overall),
                      runs=len(rows))


class _Runs:
    """Each setting's runs by case (`SettingRuns`), read of the columns, and each run's value (`run_value`)."""

    def __init__(self, rows: Sequence[dict[str, Any]], table: Table, columns: _Columns, run_case: np.ndarray,
                 run_setting: np.ndarray, cases: list[tuple[Any, Any, Any, Any]], of_case: list[int],
                 of_cell: list[int], scores: list[str]) -> None:
        import numpy as np

        values, counts = columns.values, columns.counts
        self.passed = values["passed"]
        # Each score column, NaN where a run has no value of it (no key, None or NaN), as run_value reads it,
        # read only of the rows with a score: most runs of a report have none, and a column of None,
        # converted, cost twice what reading it did.
        names = set(scores)
        scored = [i for i, row in enumerate(rows) if not row.keys().isdisjoint(names)]
        self.scores: dict[str, np.ndarray] = {}
        for name in scores:
            column = self.scores[name] = np.full(len(rows), np.nan)
            column[scored] = np.array([rows[i].get(name) for i in scored], dtype=np.float64)
        self._values: dict[tuple[str, ...], np.ndarray] = {}
        self._by_case: dict[tuple[str, ...], list[float]] = {}
        settings = max(of_cell) + 1
        known = {name: np.bincount(run_setting[~np.isnan(score)], minlength=settings) > 0
                 for name, score in self.scores.items()}
        # The cases of one setting whose keys are alike once read as SettingRuns reads them (a case id of
        # None or NaN is none) are one.
        of_key, keys = _numbered((of_cell[of_case[i]], case_key(scenario, case))
                                 for i, (scenario, _, _, case) in enumerate(cases))
        self.groups = _Grouped(np.array(of_key, dtype=np.intp)[run_case], len(keys))
        groups, bounds = self.groups, self.groups.bounds
        numbers = (groups.order + 1).tolist()
        passed = groups.of(self.passed).tolist()
        repeats = groups.of(np.array(table["repeat"], dtype=np.int64)).tolist()
        costs = groups.of(values["cost_usd"]).tolist()
        latencies = groups.of(values["latency_s"]).tolist()
        read_at, input_at, write_at = (TOKEN_COLUMNS.index(name)
                                       for name in ("cache_read_tokens", "input_tokens", "cache_write_tokens"))
        # Token counts summed as Python integers, as CaseRuns sums them of rows.
        read, uncached, write = (groups.of(counts[:, at]).tolist() for at in (read_at, input_at, write_at))
        scripted = groups.count(values["answered_by"] == "scripted")
        by_setting: list[dict[CaseKey, CaseRuns]] = [{} for _ in range(settings)]
        for i, (setting, key) in enumerate(keys):
            start, stop = bounds[i], bounds[i + 1]
            by_setting[setting][key] = CaseRuns(
                numbers[start:stop], passed[start:stop], repeats[start:stop], costs[start:stop],
                latencies[start:stop], sum(read[start:stop]), sum(uncached[start:stop]) + sum(write[start:stop]),
                scripted[i] > 0, functools.partial(self._case_values, start, stop))
        self.settings = [SettingRuns(cases, {name for name, has in known.items() if has[i]})
                         for i, cases in enumerate(by_setting)]

    def values(self, scored: tuple[str, ...]) -> np.ndarray:
        """Each run's `run_value` on the score columns `scored`, in the runs' order: the same float
        operations as it does, in the same order, on every run at once."""
        import numpy as np

        values = self._values.get(scored)
        if values is None:
            total = np.zeros(len(self.passed))
            known = np.zeros(len(self.passed), dtype=np.int64)
            # Python's float arithmetic warns of nothing (an infinity, inf - inf): neither does this.
            with np.errstate(all="ignore"):
                for name in scored:
                    score = self.scores[name]
                    has = ~np.isnan(score)
                    # From 0, the known scores added in the columns' order; an unknown one leaves the sum as is.
                    total = np.where(has, total + score, total)
                    known += has
                # Divided by the count of known scores, where there is one (else 0/0, left out).
                values = np.where(known > 0, total / known, self.passed.astype(np.float64))
            self._values[scored] = values
        return values

    def _case_values(self, start: int, stop: int, scored: tuple[str, ...]) -> list[float]:
        """The values on `scored` of the case whose runs are `start:stop` of `groups`: every case's
        read once for each set of columns."""
        by_case = self._by_case.get(scored)
        if by_case is None:
            by_case = self._by_case[scored] = self.groups.of(self.values(scored)).tolist()
        return by_case[start:stop]


def _paired(runs: _Runs, settings: list[tuple[Any, Any]], by_setting: _Grouped, cells: list[CellStats],
            seed: int) -> tuple[list[PairedComparison], PairedComparison | None]:
    """Settings two by two on their shared cases, and the two best compared (best on score or pass
    rate over all their runs, then the cheaper). `by_setting`: the runs setting by setting."""
    number = {setting: i for i, setting in enumerate(settings)}
    # A setting's mean value over its runs, summed as sum() sums them, in the runs' order.
    values = by_setting.of(runs.values(tuple(runs.scores))).tolist()
    bounds = by_setting.bounds
    mean = {setting: sum(values[bounds[i]:bounds[i + 1]]) / (bounds[i + 1] - bounds[i])
            for setting, i in number.items()}
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
    compared = compare_many([(a, runs.settings[number[a]], b, runs.settings[number[b]]) for a, b in pairs], seed=seed)
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
