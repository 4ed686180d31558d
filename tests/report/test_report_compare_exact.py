"""The comparison the report computes of its rows, figure by figure and bit for bit, against what computes
each figure plainly: pandas on each group's rows for the cells, `compare_pair` on the rows themselves for
each pair of settings, and `run_value` row by row for which settings are the best. Seeded random reports
of every shape: scores present, absent or NaN, unpriced runs, unknown latencies, scripted answers, cases,
repeats (one given twice), one setting, more settings than are compared two by two, no run at all."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

import pytest

from harness._stats import bootstrap_mean_ci
from harness.report._compare import EFFORT_ORDER, MAX_PAIRED_SETTINGS, Comparison, compare, compare_rows
from harness.report._paired import compare_pair, run_value
from harness.results._frame import COLUMNS, frame_of, frame_scores

# Infinities among the values: inf - inf is NaN, and numpy and pandas say so, as they did before.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

SETTINGS = [(model, effort) for model in ("claude-haiku-4-5", "claude-opus-4-8", "claude-sonnet-5")
            for effort in ("low", "high", "max", "default")]


def exact(value: Any) -> Any:
    """`value` with every float spelled out in hex, so that equal means equal to the last bit, NaN equals
    NaN and -0.0 differs from 0.0."""
    if isinstance(value, float):
        return value.hex()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, {f.name: exact(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, (list, tuple)):
        return [exact(v) for v in value]
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    return value


def report_rows(rng: random.Random) -> list[dict[str, Any]]:
    """A report's rows as `frame_row` makes them (a score a run has not is no key of its row), in a
    random shape with random values: ties, zeros, infinities, tiny and huge numbers among them."""
    settings = rng.sample(SETTINGS, rng.choice([1, 2, 3, MAX_PAIRED_SETTINGS, MAX_PAIRED_SETTINGS + 1, 9]))
    # Up to four scores: a run's mean of three or more depends on the order they are added in.
    scores = [f"score.{name}" for name in rng.sample(["f1", "judge", "tone", "steps"], rng.choice([0, 1, 2, 3, 4, 4]))]
    # The settings that never have a given score: a pair is then compared on the scores both have.
    lacking = {score: set(rng.sample(settings, rng.randint(0, len(settings) // 2))) for score in scores}

    def pick(*choices: Any) -> Any:
        return rng.choice(choices)

    rows = []
    for scenario in [f"scenario-{i}" for i in range(rng.randint(1, 5))]:
        cases = [None] if rng.random() < 0.5 else [None, *rng.sample(["a", "b", "c"], rng.randint(1, 3))]
        for case in cases:
            for model, effort in settings:
                if rng.random() < 0.1:
                    continue  # a setting that did not run this case
                for repeat in range(rng.randint(1, 5)):
                    if rng.random() < 0.05:
                        continue
                    repeat = 0 if rng.random() < 0.03 else repeat  # a repeat given twice
                    row: dict[str, Any] = dict.fromkeys(COLUMNS, "")
                    row.update(
                        run_id=f"{scenario}[{case}-{model}-{effort}-r{repeat}]", scenario=scenario, case=case,
                        model=model, effort=effort, repeat=repeat, passed=rng.random() < 0.7,
                        answered_by="scripted" if rng.random() < 0.15 else "model",
                        input_tokens=rng.randint(0, 10**12 if rng.random() < 0.05 else 5000),
                        output_tokens=rng.randint(0, 3000), cache_write_tokens=pick(0, rng.randint(0, 2000)),
                        cache_read_tokens=pick(0, 0, rng.randint(0, 9000)),
                        cost_usd=rng.random() / 10 if rng.random() < 0.8 else pick(
                            math.nan, 0.0, 0.25, 1e-300, math.inf, round(rng.random(), 2)),
                        latency_s=pick(rng.random() * 5, rng.random() * 5, round(rng.random(), 1), 0.0, -0.0, 1e300,
                                       math.inf, math.nan, math.nan),
                        latency_recorded=rng.random() < 0.3, steps=rng.randint(0, 9), harness_cost_usd=0.0)
                    for score in scores:
                        if (model, effort) not in lacking[score] and rng.random() < 0.8:
                            # Values whose sum's last bit depends on the order they are added in among them.
                            row[score] = pick(rng.random(), 1.0, 3e-16, 0.1, 0.2, 0.3, 0.7) if rng.random() < 0.9 \
                                else pick(0.0, -0.0, math.nan, -math.inf, 1e300)
                    rows.append(row)
    if rng.random() < 0.5:
        rng.shuffle(rows)
    return rows


def expected_cells(frame: Any) -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[Any, ...]]]]:
    """Each setting's figures over all its runs and within each scenario, as pandas computes them of
    the group's rows (the cheapest flags aside), in the report's order."""
    tokens = frame[["input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens"]].sum(axis=1)
    frame = frame.assign(tokens=tokens)
    rank = {e: i for i, e in enumerate(EFFORT_ORDER)}

    def figures(group: Any) -> tuple[Any, ...]:
        known = group["latency_s"].dropna()
        priced = not group["cost_usd"].isna().any()
        read = float(group["cache_read_tokens"].sum())
        every_input = read + float(group["input_tokens"].sum()) + float(group["cache_write_tokens"].sum())
        steps = float(group["steps"].sum())
        median, p90 = (float(known.median()), float(known.quantile(0.9))) if len(known) else (math.nan, math.nan)
        return (len(group), int(group["passed"].sum()), float(group["steps"].mean()), float(group["tokens"].mean()),
                float(group["tokens"].sum()) / steps if steps else 0.0,
                float(group["cost_usd"].mean()) if priced else None, float(group["cost_usd"].sum()) if priced else None,
                None if math.isnan(median) else median, None if math.isnan(p90) else p90,
                int(group["scenario"].nunique()), len(known), bool(group.loc[known.index, "latency_recorded"].any()),
                read / every_input if every_input else None, int((group["answered_by"] == "scripted").sum()))

    def in_order(groups: Any) -> list[tuple[Any, ...]]:
        cells = sorted(((model, effort), figures(group)) for (model, effort), group in groups)
        cells.sort(key=lambda cell: (cell[0][0], rank.get(cell[0][1], len(rank)), cell[0][1]))
        return [(*setting, *exact(list(numbers))) for setting, numbers in cells]

    by_scenario = {name: in_order(group.groupby(["model", "effort"])) for name, group in frame.groupby("scenario")}
    return in_order(frame.groupby(["model", "effort"])), by_scenario


def cells_of(cmp: Comparison) -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[Any, ...]]]]:
    def figures(c: Any) -> tuple[Any, ...]:
        return (c.model, c.effort, *exact([c.runs, c.passed, c.steps_mean, c.tokens_mean, c.tokens_per_step,
                                           c.cost_mean, c.cost_total, c.latency_median, c.latency_p90, c.scenarios,
                                           c.latency_runs, c.latency_recorded, c.cache_hit_rate, c.scripted_runs]))

    by_scenario = {name: [figures(c) for c in cells] for name, cells in cmp.by_scenario.items()}
    return [figures(c) for c in cmp.overall], by_scenario


def expected_pairs(rows: list[dict[str, Any]], cmp: Comparison) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Which settings the report compares, the headline last: every two of few settings, else the best with
    each other, the best being the one with the highest mean `run_value` over its runs, then the cheaper."""
    scores = frame_scores(rows)
    values: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        values.setdefault((row["model"], row["effort"]), []).append(run_value(row, scores))
    keys = [(c.model, c.effort) for c in cmp.overall]
    cost = {(c.model, c.effort): c.cost_mean if c.cost_mean is not None else math.inf for c in cmp.overall}
    ranked = sorted(keys, key=lambda k: (-sum(values[k]) / len(values[k]), cost[k]))
    if len(keys) < 2:
        return []
    if len(keys) <= MAX_PAIRED_SETTINGS:
        pairs = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1:]]
    else:
        pairs = [(ranked[0], k) for k in keys if k != ranked[0]]
    return [*pairs, (ranked[1], ranked[0])]


@pytest.mark.parametrize("seed", range(48))
def test_the_comparison_of_a_reports_rows_is_each_figure_computed_plainly(seed: int) -> None:
    rng = random.Random(seed)
    rows = report_rows(rng)
    cmp = compare_rows(rows, seed=seed % 3)
    frame = frame_of(rows)
    assert cells_of(cmp) == expected_cells(frame)
    # Every run once, the scripted among them, and the scenarios a setting must all pass.
    scripted = sum(r["answered_by"] == "scripted" for r in rows)
    assert (cmp.runs, cmp.scripted_runs, cmp.scenarios) == (len(rows), scripted, len({r["scenario"] for r in rows}))
    # Each pair of settings is what comparing the two among the rows says, numbered as the report numbers them.
    numbered = [{**row, "n": n} for n, row in enumerate(rows, start=1)]
    expected = [compare_pair(numbered, a, b, seed=seed % 3) for a, b in expected_pairs(rows, cmp)]
    headline = expected.pop() if expected else None
    assert exact(cmp.paired) == exact([pair for pair in expected if pair.cases])
    assert exact(cmp.headline) == exact(headline if headline is not None and headline.cases else None)
    # Each interval is the bootstrap's of its per-case deltas, B - A: of value, of cost (none when a case is
    # unpriced), of latency (the cases whose latency both know).
    for pair in [*cmp.paired, *([cmp.headline] if cmp.headline else [])]:
        # McNemar's counts: each of A's runs of a case with B's run of the same repeat (B's last, given twice).
        only_a = only_b = paired = 0
        for case in pair.cases:
            passed_b = {rows[n - 1]["repeat"]: rows[n - 1]["passed"] for n in case.b_runs}
            for n in case.a_runs:
                passed, other = rows[n - 1]["passed"], passed_b.get(rows[n - 1]["repeat"])
                if other is not None:
                    paired += 1
                    only_a, only_b = only_a + (passed and not other), only_b + (other and not passed)
        assert (pair.only_a, pair.only_b, pair.pairs) == (only_a, only_b, paired)
        costs = [(c.a_cost, c.b_cost) for c in pair.cases]
        latencies = [(c.a_latency, c.b_latency) for c in pair.cases if None not in (c.a_latency, c.b_latency)]
        unpriced = any(None in cost for cost in costs)
        assert exact([pair.ci, pair.cost_delta_ci, pair.latency_delta_ci]) == exact([
            bootstrap_mean_ci([c.b_value - c.a_value for c in pair.cases], seed=seed % 3),
            None if unpriced else bootstrap_mean_ci([b - a for a, b in costs], seed=seed % 3),  # type: ignore[operator]
            bootstrap_mean_ci([b - a for a, b in latencies], seed=seed % 3)])  # type: ignore[operator]
    # The frame's comparison is the rows': the report's numbers are a notebook's.
    assert exact(compare(frame, seed=seed % 3)) == exact(cmp)


def test_the_shapes_the_seeds_make_are_the_ones_asked_for() -> None:
    """The seeds above cover what they are said to: without this, a change to the generator could leave
    a shape untested and every test still pass."""
    comparisons = [compare_rows(report_rows(random.Random(seed))) for seed in range(48)]
    pairs = [pair for cmp in comparisons for pair in cmp.paired]
    cells = [cell for cmp in comparisons for cell in cmp.overall]
    assert any(len(cmp.overall) == 1 for cmp in comparisons)
    assert any(len(cmp.overall) > MAX_PAIRED_SETTINGS for cmp in comparisons)
    assert {pair.measure for pair in pairs} == {"mean score", "pass rate"}
    assert any(case.case is not None for pair in pairs for case in pair.cases)
    assert any(pair.cost_a is None for pair in pairs) and any(pair.cost_a is not None for pair in pairs)
    assert any(cell.cost_mean is None for cell in cells) and any(cell.cost_mean is not None for cell in cells)
    assert any(cell.latency_runs < cell.runs for cell in cells) and any(cell.scripted_runs for cell in cells)
    assert any(pair.pairs < sum(len(case.a_runs) for case in pair.cases) for pair in pairs)  # unpaired repeats
    assert compare_rows([]) == Comparison(overall=[])
