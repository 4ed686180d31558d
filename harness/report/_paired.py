"""Paired comparison of two settings (model x effort) on the cases both ran: is one better, by how much?

Each case is its own control: the per-case difference of mean score (or pass rate, without scores)
over repeats is averaged with a seeded bootstrap 95% interval; pass/fail is tested with McNemar's
exact test on the (case, repeat) pairs; cost and latency differences get intervals the same way.
When the answers were scripted, identical in every setting by construction, only cost and latency
are compared and nothing is recommended on quality.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .._stats import bootstrap_mean_ci, mcnemar

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
    known = [v for v in values if not math.isnan(v)]
    return sum(known) / len(known) if known and len(known) == len(values) else None


def run_value(row: dict[str, Any], score_columns: list[str]) -> float:
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


def cache_hit_rate(rows: list[dict[str, Any]]) -> float | None:
    """Cache reads over every input token (uncached input, cache writes, cache reads); None without input."""
    read = sum(int(r.get("cache_read_tokens") or 0) for r in rows)
    total = read + sum(int(r.get("input_tokens") or 0) + int(r.get("cache_write_tokens") or 0) for r in rows)
    return read / total if total else None


def compare_pair(rows: list[dict[str, Any]], a: tuple[str, str], b: tuple[str, str], *,
                 seed: int = 0) -> PairedComparison:
    """Setting `b` against setting `a` (each `(model, effort)`), from one row per run with the
    columns of `harness.results.to_frame` (`scenario`, `case`, `repeat`, `passed`, `score.*`,
    `cost_usd`, `latency_s`, tokens by kind, `answered_by`) plus the report's run number `n`."""
    return compare_runs(a, [r for r in rows if (r["model"], r["effort"]) == a],
                        b, [r for r in rows if (r["model"], r["effort"]) == b], seed=seed)


def compare_runs(a: tuple[str, str], rows_a: list[dict[str, Any]], b: tuple[str, str], rows_b: list[dict[str, Any]],
                 *, seed: int = 0) -> PairedComparison:
    """As `compare_pair`, given each setting's rows: the report compares many pairs of settings and
    sorts its rows by setting once, not once per pair."""
    # Only the two settings' score columns: one that neither has could never be compared.
    # The keys gathered by set.union first: rows share most keys, and naming each key of each row
    # (two settings' runs, for every pair of settings) cost a third of comparing them.
    score_columns = sorted(k for k in set().union(*rows_a, *rows_b) if k.startswith("score."))
    mine = {a: rows_a, b: rows_b}
    # Scores only count when both settings have them on the cases compared; else pass rate.
    scored = [c for c in score_columns if any(_known(r.get(c)) for r in mine[a])
              and any(_known(r.get(c)) for r in mine[b])]

    def by_case(side: list[dict[str, Any]]) -> dict[tuple[str, str | None], list[dict[str, Any]]]:
        out: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
        for r in side:
            out.setdefault((str(r["scenario"]), _case(r.get("case"))), []).append(r)
        return out

    cases_a, cases_b = by_case(mine[a]), by_case(mine[b])
    shared = [k for k in cases_a if k in cases_b]
    deltas: list[CaseDelta] = []
    only_a = only_b = pairs = 0
    cost_deltas: list[float] = []
    latency_deltas: list[float] = []
    for key in shared:
        ra, rb = cases_a[key], cases_b[key]
        va, vb = [run_value(r, scored) for r in ra], [run_value(r, scored) for r in rb]
        ca, cb = _mean([_float(r.get("cost_usd")) for r in ra]), _mean([_float(r.get("cost_usd")) for r in rb])
        la, lb = _mean([_float(r.get("latency_s")) for r in ra]), _mean([_float(r.get("latency_s")) for r in rb])
        deltas.append(CaseDelta(
            scenario=key[0], case=key[1], a_value=sum(va) / len(va), b_value=sum(vb) / len(vb),
            a_passed=f"{sum(bool(r['passed']) for r in ra)}/{len(ra)}",
            b_passed=f"{sum(bool(r['passed']) for r in rb)}/{len(rb)}",
            a_cost=ca, b_cost=cb, a_latency=la, b_latency=lb,
            a_runs=[int(r["n"]) for r in ra if "n" in r], b_runs=[int(r["n"]) for r in rb if "n" in r]))
        if ca is not None and cb is not None:
            cost_deltas.append(cb - ca)
        if la is not None and lb is not None:
            latency_deltas.append(lb - la)
        # McNemar pairs the same repeat of the case in both settings.
        passed_b = {int(r["repeat"]): bool(r["passed"]) for r in rb}
        for r in ra:
            other = passed_b.get(int(r["repeat"]))
            if other is None:
                continue
            pairs += 1
            only_a += bool(r["passed"]) and not other
            only_b += other and not bool(r["passed"])
    shared_a = [r for k in shared for r in cases_a[k]]
    shared_b = [r for k in shared for r in cases_b[k]]
    per_case = [d.delta for d in deltas]
    unpriced = len(cost_deltas) < len(deltas)
    return PairedComparison(
        a=f"{a[0]} / {a[1]}", b=f"{b[0]} / {b[1]}", a_key=a, b_key=b, measure="mean score" if scored else "pass rate",
        cases=deltas, mean_delta=sum(per_case) / len(per_case) if per_case else 0.0,
        ci=bootstrap_mean_ci(per_case, seed=seed), only_a=only_a, only_b=only_b, pairs=pairs,
        mcnemar_p=mcnemar(only_a, only_b),
        cost_a=None if unpriced else _mean([_float(r.get("cost_usd")) for r in shared_a]),
        cost_b=None if unpriced else _mean([_float(r.get("cost_usd")) for r in shared_b]),
        cost_delta_ci=None if unpriced else bootstrap_mean_ci(cost_deltas, seed=seed),
        latency_a=_mean([v for v in (_float(r.get("latency_s")) for r in shared_a) if not math.isnan(v)]),
        latency_b=_mean([v for v in (_float(r.get("latency_s")) for r in shared_b) if not math.isnan(v)]),
        latency_delta_ci=bootstrap_mean_ci(latency_deltas, seed=seed),
        cache_hit_a=cache_hit_rate(shared_a), cache_hit_b=cache_hit_rate(shared_b),
        scripted=any(r.get("answered_by") == "scripted" for r in (*shared_a, *shared_b)),
    )


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def _case(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
