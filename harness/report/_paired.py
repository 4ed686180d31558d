"""Paired comparison of two settings (model x effort) on the cases both ran: is one better, by how much?

Each case is its own control: the per-case difference of mean score (or pass rate, without scores)
over repeats is averaged with a seeded bootstrap 95% interval; pass/fail is tested with McNemar's
exact test on the (case, repeat) pairs; cost and latency differences get intervals the same way.
When the answers were scripted, identical in every setting by construction, only cost and latency
are compared and nothing is recommended on quality.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from typing import Any

from .._stats import bootstrap_mean_cis, mcnemar

ALPHA = 0.05
"""McNemar's p below which a pass/fail difference counts as detected (the intervals are 95%)."""
MIN_CASES = 5
"""Fewer shared cases than this and a bootstrap interval is too narrow to trust: no score verdict."""


@dataclass
class CaseDelta:
    """One case (a scenario, and its case id when it has cases), in both settings, over repeats."""

    scenario: str
    case: str | None
    a_value: float
    b_value: float
    a_passed: str
    """`passes/runs` of setting A on this case."""
    b_passed: str
    a_cost: float | None
    b_cost: float | None
    a_latency: float | None
    b_latency: float | None
    a_runs: list[int] = field(default_factory=list)
    """Report positions (`n`) of A's runs of this case, for links to them."""
    b_runs: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.scenario}[{self.case}]" if self.case is not None else self.scenario

    @property
    def delta(self) -> float:
        return self.b_value - self.a_value


@dataclass
class PairedComparison:
    """Setting B against setting A on their shared cases; every delta is B - A."""

    a: str
    b: str
    a_key: tuple[str, str]
    """(model, effort) of A."""
    b_key: tuple[str, str]
    measure: str
    """What is compared: `mean score` (the mean of a run's scores) or `pass rate`."""
    cases: list[CaseDelta]
    mean_delta: float
    ci: tuple[float, float] | None
    only_a: int
    """(case, repeat) pairs A passed and B failed."""
    only_b: int
    pairs: int
    mcnemar_p: float
    cost_a: float | None
    """Mean cost per run of A over the shared cases; None when any is unpriced."""
    cost_b: float | None
    cost_delta_ci: tuple[float, float] | None
    latency_a: float | None
    latency_b: float | None
    latency_delta_ci: tuple[float, float] | None
    cache_hit_a: float | None
    """Prompt-cache hit rate: cache reads over all input tokens (input, cache write, cache read)."""
    cache_hit_b: float | None
    scripted: bool
    """Some answers were scripted: quality is not compared."""

    @property
    def detected(self) -> bool:
        """A quality difference unlikely by chance: the score's interval excludes 0, or for pass
        rates McNemar's p is below ALPHA."""
        if self.scripted or not self.cases:
            return False
        if self.measure == "pass rate":
            return self.mcnemar_p < ALPHA and self.mean_delta != 0
        return len(self.cases) >= MIN_CASES and self.ci is not None and (self.ci[0] > 0 or self.ci[1] < 0)

    @property
    def cost_ratio(self) -> float | None:
        """B's mean cost over A's."""
        if self.cost_a is None or self.cost_b is None or self.cost_a == 0:
            return None
        return self.cost_b / self.cost_a

    def verdict(self) -> str:
        """The answer in one line."""
        n = len(self.cases)
        these = f"these {n} cases" if n != 1 else "this case"
        if not self.cases:
            return f"{self.a} and {self.b} share no case: nothing to compare."
        if self.scripted:
            return f"Answers are scripted: cost and latency only. {self.cost_sentence()}"
        if not self.detected:
            spread = f"{self.measure} {_signed(self.mean_delta)}{_ci(self.ci)}"
            if self.measure != "pass rate" and len(self.cases) < MIN_CASES:
                spread += f"; fewer than {MIN_CASES} cases cannot tell"
            if self.measure == "pass rate" or self.pairs:
                spread += f", McNemar p = {self.mcnemar_p:.2g}"
            return (f"No detectable difference between {self.b} and {self.a} on {these} ({spread}). "
                    f"{self.cost_sentence()}")
        better, worse, delta, ci = self.b, self.a, self.mean_delta, self.ci
        ratio = self.cost_ratio
        if delta < 0:
            better, worse, delta = self.a, self.b, -delta
            ci = (-ci[1], -ci[0]) if ci else None
            ratio = 1 / ratio if ratio else None
        cost = f", at {_times(ratio)} the cost" if ratio is not None else ", cost unpriced"
        return f"{better} is better than {worse} on {these} ({_signed(delta)} {self.measure}{_ci(ci)}){cost}."

    def cost_sentence(self) -> str:
        """B's cost against A's: `B costs 2.4x A.`"""
        ratio = self.cost_ratio
        if ratio is None:
            return "Cost: unpriced." if self.cost_a is None or self.cost_b is None else f"{self.a} cost nothing."
        return f"{self.b} costs {_times(ratio)} {self.a}."


def _times(ratio: float) -> str:
    return f"{ratio:.1f}x" if ratio >= 1 else f"{ratio:.2f}x"


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f", 95% CI {ci[0]:+.2f} to {ci[1]:+.2f}"


def _mean(values: list[float]) -> float | None:
    """The mean of `values`; None without any, or when one is NaN (unknown)."""
    # Summed first, the values looked at one by one only if the sum is NaN: a NaN value makes it NaN,
    # and so do infinities of both signs.
    total = sum(values)
    if not values or (math.isnan(total) and any(math.isnan(v) for v in values)):
        return None
    return total / len(values)


def run_value(row: dict[str, Any], score_columns: Sequence[str]) -> float:
    """What a run scores: the mean of its scores, or 1/0 for pass/fail when it has none."""
    # Summed as sum() sums the known scores (from 0, in order): each row's value is read once, not
    # three times, for every setting of every pair compared (20,000 rows for 10,000 runs).
    total: float = 0
    known = 0
    for column in score_columns:
        value = row.get(column)
        if value is not None:
            value = float(value)
            if not math.isnan(value):
                total += value
                known += 1
    return total / known if known else float(bool(row["passed"]))


class CaseRuns:
    """A setting's runs of one case, in their order, with what a paired comparison reads of each."""

    def __init__(self, runs: list[int], passed: list[bool], repeats: list[int], costs: list[float],
                 latencies: list[float], cache_read: int, other_input: int, scripted: bool,
                 run_values: Callable[[tuple[str, ...]], list[float]]) -> None:
        """Each run's figures, in the runs' order; `run_values(scored)`: each run's `run_value` on the score
        columns `scored`. `from_rows` reads them of the runs' rows; the report reads them of its columns."""
        self.runs = runs
        """The report positions (`n`) of the runs, of those that have one."""
        self.passed = passed
        self.repeats = repeats
        self.costs = costs
        """Each run's cost, NaN when unpriced."""
        self.latencies = latencies
        """Each run's latency, NaN when unknown."""
        self.cache_read = cache_read
        """Cache reads over the runs, and every other input token (uncached input, cache writes):
        integers, so a sum over cases is the sum over their runs (`cache_hit_rate`)."""
        self.other_input = other_input
        self.scripted = scripted
        """Some of the runs' answers were scripted."""
        self._run_values = run_values
        self._values: dict[tuple[str, ...], float] = {}

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]], runs: list[int]) -> CaseRuns:
        """The runs of `rows`; `runs`: their report positions (`n`), of those that have one."""
        return cls(runs, [bool(r["passed"]) for r in rows], [int(r["repeat"]) for r in rows],
                   [_float(r.get("cost_usd")) for r in rows], [_float(r.get("latency_s")) for r in rows],
                   sum(int(r.get("cache_read_tokens") or 0) for r in rows),
                   sum(int(r.get("input_tokens") or 0) + int(r.get("cache_write_tokens") or 0) for r in rows),
                   any(r.get("answered_by") == "scripted" for r in rows),
                   lambda scored: [run_value(row, scored) for row in rows])

    def value(self, scored: tuple[str, ...]) -> float:
        """The mean of the runs' values (`run_value`) on the score columns `scored`: read once for each
        set of columns, which is one for every pair a setting is in, unless some settings lack a score."""
        value = self._values.get(scored)
        if value is None:
            values = self._run_values(scored)
            value = self._values[scored] = sum(values) / len(values)
        return value

    @cached_property
    def passes(self) -> str:
        """`passes/runs`."""
        return f"{sum(self.passed)}/{len(self.passed)}"

    @cached_property
    def cost(self) -> float | None:
        """The mean cost of a run; None when one is unpriced."""
        return _mean(self.costs)

    @cached_property
    def latency(self) -> float | None:
        """The mean latency of a run; None when one is unknown."""
        return _mean(self.latencies)

    @cached_property
    def known_latencies(self) -> list[float]:
        """The latencies known, in the runs' order: picked once, not once for every pair the case is in."""
        return [v for v in self.latencies if not math.isnan(v)]

    @cached_property
    def passed_by_repeat(self) -> dict[int, bool]:
        """Whether the case's run of each repeat passed (the last run of a repeat given twice)."""
        return dict(zip(self.repeats, self.passed, strict=True))


CaseKey = tuple[str, str | None]
"""A case: its scenario, and its case id when it has one."""


class SettingRuns:
    """One setting's runs by case (scenario, case id, in the order first met), each read once however
    many settings it is compared with: the report compares its best setting with each of the others,
    then with the runner-up again, and read the best's runs anew for each (8 times in 8 settings)."""

    def __init__(self, cases: dict[CaseKey, CaseRuns], known_scores: set[str]) -> None:
        self.cases = cases
        """The setting's runs of each case, the cases in the order first met."""
        self.known_scores = known_scores
        """Score columns some run has a value of."""

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]], numbers: Sequence[int | None] | None = None) -> SettingRuns:
        """The runs of `rows`; `numbers`: each row's report position; without them, a row's `n` when it has one."""
        # The keys gathered by set.union first: rows share most keys, and naming each key of each row
        # cost a third of comparing two settings. A frame's rows have every score column (NaN where a
        # run has none): a column counts when some run has a value of it.
        score_columns = {k for k in set().union(*rows) if k.startswith("score.")}
        known_scores = {c for c in score_columns if any(_known(r.get(c)) for r in rows)}
        if numbers is None:
            numbers = [int(r["n"]) if "n" in r else None for r in rows]
        by_case: dict[CaseKey, tuple[list[dict[str, Any]], list[int]]] = {}
        for row, n in zip(rows, numbers, strict=True):
            key = case_key(row["scenario"], row.get("case"))
            case = by_case.get(key)
            if case is None:
                case = by_case[key] = ([], [])
            case[0].append(row)
            if n is not None:
                case[1].append(n)
        return cls({key: CaseRuns.from_rows(*case) for key, case in by_case.items()}, known_scores)


def compare_pair(rows: list[dict[str, Any]], a: tuple[str, str], b: tuple[str, str], *,
                 seed: int = 0) -> PairedComparison:
    """Setting `b` against setting `a` (each `(model, effort)`), from one row per run with the
    columns of `harness.results.to_frame` (`scenario`, `case`, `repeat`, `passed`, `score.*`,
    `cost_usd`, `latency_s`, tokens by kind, `answered_by`) plus the report's run number `n`."""
    return compare_runs(a, [r for r in rows if (r["model"], r["effort"]) == a],
                        b, [r for r in rows if (r["model"], r["effort"]) == b], seed=seed)


def compare_runs(a: tuple[str, str], rows_a: list[dict[str, Any]], b: tuple[str, str], rows_b: list[dict[str, Any]],
                 *, seed: int = 0) -> PairedComparison:
    """As `compare_pair`, given each setting's rows."""
    return compare_settings(a, SettingRuns.from_rows(rows_a), b, SettingRuns.from_rows(rows_b), seed=seed)


def compare_settings(a: tuple[str, str], runs_a: SettingRuns, b: tuple[str, str], runs_b: SettingRuns,
                     *, seed: int = 0) -> PairedComparison:
    """As `compare_pair`, given each setting's runs by case: the report compares many pairs of settings
    and reads each setting's runs once, not once per pair."""
    return compare_many([(a, runs_a, b, runs_b)], seed=seed)[0]


Pair = tuple[tuple[str, str], SettingRuns, tuple[str, str], SettingRuns]
"""Settings A and B, each `(model, effort)` and its runs by case."""


def compare_many(pairs: Sequence[Pair], *, seed: int = 0) -> list[PairedComparison]:
    """`compare_settings` of each of `pairs`, their bootstrap intervals drawn in one call: pairs with as
    many shared cases (every pair of a report whose settings ran the same cases) resample the same
    cases' positions, drawn once for them all, where each call drew the same ones anew (seeded alike)."""
    compared = [_compared(*pair) for pair in pairs]
    intervals = bootstrap_mean_cis([sample for _, samples in compared for sample in samples], seed=seed)
    for i, (pair, samples) in enumerate(compared):
        pair.ci, pair.cost_delta_ci, pair.latency_delta_ci = intervals[i * len(samples):(i + 1) * len(samples)]
    return [pair for pair, _ in compared]


def _compared(a: tuple[str, str], runs_a: SettingRuns, b: tuple[str, str],
              runs_b: SettingRuns) -> tuple[PairedComparison, list[list[float] | None]]:
    """B against A, its three intervals left None, and the samples they are of: the per-case deltas of
    value, of cost (None when a case is unpriced) and of latency."""
    # Scores only count when both settings have them on the cases compared; else pass rate. Sorted by
    # name: a run's value (`run_value`) adds its scores up in this order.
    scored = tuple(sorted(runs_a.known_scores & runs_b.known_scores))
    shared = [(key, case, runs_b.cases[key]) for key, case in runs_a.cases.items() if key in runs_b.cases]
    deltas: list[CaseDelta] = []
    only_a = only_b = pairs = 0
    cost_deltas: list[float] = []
    latency_deltas: list[float] = []
    for (scenario, case), ra, rb in shared:
        ca, cb = ra.cost, rb.cost
        la, lb = ra.latency, rb.latency
        deltas.append(CaseDelta(
            scenario=scenario, case=case, a_value=ra.value(scored), b_value=rb.value(scored),
            a_passed=ra.passes, b_passed=rb.passes, a_cost=ca, b_cost=cb, a_latency=la, b_latency=lb,
            a_runs=list(ra.runs), b_runs=list(rb.runs)))
        if ca is not None and cb is not None:
            cost_deltas.append(cb - ca)
        if la is not None and lb is not None:
            latency_deltas.append(lb - la)
        # McNemar pairs the same repeat of the case in both settings.
        passed_b = rb.passed_by_repeat
        if ra.repeats == rb.repeats and len(passed_b) == len(rb.repeats):
            # The same repeats in the same order, none given twice (every case of a finished matrix): each
            # run is paired with B's at its position. Passes are bools: A's only is A's True over B's False.
            pairs += len(ra.passed)
            only_a += sum(map(operator.gt, ra.passed, rb.passed))
            only_b += sum(map(operator.lt, ra.passed, rb.passed))
            continue
        for repeat, passed in zip(ra.repeats, ra.passed, strict=True):
            other = passed_b.get(repeat)
            if other is None:
                continue
            pairs += 1
            only_a += passed and not other
            only_b += other and not passed
    per_case = [d.delta for d in deltas]
    unpriced = len(cost_deltas) < len(deltas)
    # Means over the shared cases' runs, summed in the runs' order, case after case.
    pair = PairedComparison(
        a=f"{a[0]} / {a[1]}", b=f"{b[0]} / {b[1]}", a_key=a, b_key=b, measure="mean score" if scored else "pass rate",
        cases=deltas, mean_delta=sum(per_case) / len(per_case) if per_case else 0.0,
        ci=None, only_a=only_a, only_b=only_b, pairs=pairs,
        mcnemar_p=mcnemar(only_a, only_b),
        cost_a=None if unpriced else _mean(list(chain.from_iterable(ra.costs for _, ra, _ in shared))),
        cost_b=None if unpriced else _mean(list(chain.from_iterable(rb.costs for _, _, rb in shared))),
        cost_delta_ci=None,
        latency_a=_mean(list(chain.from_iterable(ra.known_latencies for _, ra, _ in shared))),
        latency_b=_mean(list(chain.from_iterable(rb.known_latencies for _, _, rb in shared))),
        latency_delta_ci=None,
        cache_hit_a=_hit_rate([ra for _, ra, _ in shared]), cache_hit_b=_hit_rate([rb for _, _, rb in shared]),
        scripted=any(ra.scripted or rb.scripted for _, ra, rb in shared),
    )
    return pair, [per_case, None if unpriced else cost_deltas, latency_deltas]


def _hit_rate(cases: list[CaseRuns]) -> float | None:
    """`cache_hit_rate` of the cases' runs."""
    read = sum(case.cache_read for case in cases)
    total = read + sum(case.other_input for case in cases)
    return read / total if total else None


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def case_key(scenario: Any, case: Any) -> CaseKey:
    """The case a run of `scenario` with case id `case` is of: None or NaN is no case id."""
    return str(scenario), None if case is None or (isinstance(case, float) and math.isnan(case)) else str(case)
