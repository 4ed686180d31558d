"""Paired comparison of settings on the same cases: deltas, intervals, McNemar, one-line verdict,
and honesty when the answers were scripted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harness.report import markdown_summary, prepare, render_report
from harness.report._compare import Comparison, compare
from harness.report._paired import compare_pair
from harness.results import RunResult, Usage, to_frame
from harness.scores import Score

A = ("claude-sonnet-5", "low")
B = ("claude-opus-4-8", "high")


def result(scenario: str, cell: tuple[str, str], passed: bool, *, cost: float | None = 0.01, answers: str = "model",
           repeat: int = 0, seconds: float = 2.0, cache_read: int = 0) -> RunResult:
    model, effort = cell
    return RunResult(run_id=f"{scenario}[{model}-{effort}-r{repeat}]", scenario=scenario, scenario_path="s.yaml",
                     model=model, effort=effort, repeat=repeat, mode="live", status="passed" if passed else "failed",
                     outcome=None, steps=3, usage=Usage(1000, 100, 0, cache_read), cost_usd=cost, duration_s=seconds,
                     answers=answers)


def suite(a_passes: list[bool], b_passes: list[bool], **kwargs: Any) -> list[RunResult]:
    """One scenario per case; A at $0.01 a run, B at $0.024."""
    out = []
    for i, (pa, pb) in enumerate(zip(a_passes, b_passes, strict=True)):
        out.append(result(f"case-{i:02d}", A, pa, cost=0.01, **kwargs))
        out.append(result(f"case-{i:02d}", B, pb, cost=0.024, **kwargs))
    return out


def test_a_setting_that_passes_more_of_the_same_cases_is_named_better_with_its_cost() -> None:
    runs = suite([True] * 4 + [False] * 8, [True] * 12)
    cmp = prepare(runs, prices=None).comparison  # type: ignore[arg-type]
    assert cmp.headline is not None
    assert cmp.headline.verdict() == ("claude-opus-4-8 / high is better than claude-sonnet-5 / low on these 12 cases "
                                      "(+0.67 pass rate, 95% CI +0.42 to +0.92), at 2.4x the cost.")
    pair = cmp.headline
    assert (pair.only_a, pair.only_b, pair.pairs) == (0, 8, 12)
    assert pair.mcnemar_p == pytest.approx(2 / 2**8)
    assert [c.delta for c in pair.cases[:5]] == [0, 0, 0, 0, 1]


def test_one_case_of_difference_is_no_detectable_difference() -> None:
    runs = suite([True] * 11 + [False], [True] * 12)
    verdict = prepare(runs, prices=None).comparison.headline.verdict()  # type: ignore[arg-type, union-attr]
    assert verdict.startswith("No detectable difference between claude-opus-4-8 / high and claude-sonnet-5 / low "
                              "on these 12 cases (pass rate +0.08, 95% CI +0.00 to +0.25, McNemar p = 1). ")
    assert verdict.endswith("claude-opus-4-8 / high costs 2.4x claude-sonnet-5 / low.")


def rows(deltas: list[float], *, base: float = 0.5) -> list[dict[str, Any]]:
    """Per case, A scores `base` and B `base + delta`, two repeats each, through the to_frame columns."""
    out: list[dict[str, Any]] = []
    for i, delta in enumerate(deltas):
        for repeat in (0, 1):
            for (model, effort), value in ((A, base), (B, base + delta)):
                out.append({"scenario": "qa", "case": f"q{i}", "model": model, "effort": effort, "repeat": repeat,
                            "passed": value >= 0.5, "score.f1": value, "cost_usd": 0.01 if model == A[0] else 0.03,
                            "latency_s": 1.0 if model == A[0] else 1.5, "input_tokens": 800, "cache_write_tokens": 0,
                            "cache_read_tokens": 200 if model == A[0] else 0, "answered_by": "model"})
    return out


def test_scores_are_compared_case_by_case_with_a_seeded_bootstrap_interval() -> None:
    pair = compare_pair(rows([0.1, 0.2, 0.15, 0.1, 0.05, 0.2, 0.1, 0.15]), A, B)
    assert pair.measure == "mean score" and pair.mean_delta == pytest.approx(0.13125)
    assert pair.ci is not None and 0 < pair.ci[0] < 0.13125 < pair.ci[1]
    assert pair.ci == compare_pair(rows([0.1, 0.2, 0.15, 0.1, 0.05, 0.2, 0.1, 0.15]), A, B).ci  # seeded
    assert re.fullmatch(r"claude-opus-4-8 / high is better than claude-sonnet-5 / low on these 8 cases "
                        r"\(\+0\.13 mean score, 95% CI \+0\.\d\d to \+0\.\d\d\), at 3.0x the cost\.", pair.verdict())
    assert pair.latency_b - pair.latency_a == pytest.approx(0.5)  # type: ignore[operator]
    assert (pair.cache_hit_a, pair.cache_hit_b) == (pytest.approx(0.2), 0.0)
    mixed = compare_pair(rows([0.1, -0.1, 0.05, -0.05, 0.0, 0.1, -0.1, 0.0]), A, B)
    assert mixed.verdict().startswith("No detectable difference between claude-opus-4-8 / high "
                                      "and claude-sonnet-5 / low on these 8 cases (mean score +0.00, 95% CI -0.")
    few = compare_pair(rows([0.3, 0.3]), A, B)
    assert "fewer than 5 cases cannot tell" in few.verdict()


def test_scripted_answers_compare_cost_and_latency_only_and_recommend_nothing() -> None:
    runs = suite([True] * 6, [True] * 6, answers="scripted")
    data = prepare(runs, prices=None)  # type: ignore[arg-type]
    cmp = data.comparison
    assert cmp.scripted and cmp.cheapest is None
    assert cmp.headline is not None
    # Both pass everything by construction: the cheaper comes first, and only on cost.
    assert cmp.headline.verdict() == ("Answers are scripted: cost and latency only. "
                                      "claude-sonnet-5 / low costs 0.42x claude-opus-4-8 / high.")
    page = render_report(runs)
    assert 'id="scripted">Answers are scripted: the same whatever the model or effort' in page
    assert "Cheapest setting that passes everything" not in page and 'id="verdict"' not in page
    assert page.count("Answers are scripted") == 1  # said once, at the top
    assert "no setting is recommended on quality" in markdown_summary(data)
    assert "⭐" not in markdown_summary(data)


def test_each_setting_shows_its_prompt_cache_hit_rate() -> None:
    runs = [result("s", A, True, cache_read=3000), result("s", B, True)]
    cells = {(c.model, c.effort): c for c in compare(to_frame(runs)).overall}
    assert cells[A].cache_hit_rate == pytest.approx(0.75) and cells[B].cache_hit_rate == 0.0
    assert '<th class="num" title="prompt-cache reads over all input tokens">cache hits</th>' in render_report(runs)


GREETINGS = """name: greetings
mode: scripted
prompt: "Greet {{ who }}."
script: [{text: "Hello, {{ who }}!"}]
cases: [{id: ana, vars: {who: Ana}}, {id: bo, vars: {who: Bo}}]
matrix: {models: [claude-haiku-4-5, claude-unpriced-9], repeats: 2}
score: [{final_text: {contains: "{{ who }}"}}]
"""


def test_the_comparison_is_computed_from_the_frame_to_frame_returns(tmp_path: Path) -> None:
    import pandas as pd

    from harness.cli import main
    from harness.cost import load_prices
    from harness.results import read_results

    (tmp_path / "s.yaml").write_text(GREETINGS, encoding="utf-8")
    results = tmp_path / "results.jsonl"
    assert main(["run", str(tmp_path / "s.yaml"), "--results", str(results), "--no-report"]) == 0
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  claude-unpriced-9: {input: 1, output: 5, cache_write_5m: 1.25, cache_write_1h: 2,"
                      " cache_read: 0.1}\n", encoding="utf-8")
    table = load_prices(prices)
    data = prepare(read_results(results), table)
    # What a notebook gets with the same price table is what the report compared: priced by --prices.
    pd.testing.assert_frame_equal(data.frame, to_frame(results, prices=table))
    assert data.comparison == compare(to_frame(results, prices=table))
    assert to_frame(results)["cost_usd"].isna().sum() == 4  # the table the runs were priced with
    cells = {c.model: c for c in data.comparison.overall}
    repriced = data.frame[data.frame["model"] == "claude-unpriced-9"]["cost_usd"]
    assert cells["claude-unpriced-9"].cost_mean == pytest.approx(repriced.mean()) and (repriced > 0).all()
    assert [run.cost_usd for run in data.runs] == data.frame["cost_usd"].tolist()


def test_numpy_is_imported_only_for_an_output_that_shows_the_comparison_and_pandas_by_none(tmp_path: Path) -> None:
    import subprocess
    import sys

    from harness.results import write_results

    results = tmp_path / "results.jsonl"
    write_results(results, suite([True, False], [True, True]))
    script = (
        "import sys\n"
        "from harness.cost import load_prices\n"
        "from harness.report import junit_xml, markdown_summary, prepare\n"
        "from harness.results import read_results\n"
        f"data = prepare(read_results({str(results)!r}), load_prices())\n"
        "junit_xml(data)\n"
        "print('numpy' in sys.modules, 'pandas' in sys.modules)\n"
        "markdown_summary(data)\n"
        "print('numpy' in sys.modules, 'pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "True", "False"]


def _each_pair_as_compare_pair_says(runs: list[RunResult], pairs: int) -> Comparison:
    """The comparison of `runs`, `pairs` pairs and a headline, each what `compare_pair` says of them among
    every run."""
    frame = to_frame(runs)
    cmp = compare(frame)
    every = [{**row, "n": n} for n, row in enumerate(frame.to_dict("records"), start=1)]
    assert len(cmp.paired) == pairs and cmp.headline is not None
    for pair in [*cmp.paired, cmp.headline]:
        assert pair == compare_pair(every, pair.a_key, pair.b_key)
    return cmp


def test_the_reports_pairs_are_what_compare_pair_says_of_all_the_runs() -> None:
    # The report sorts its rows by setting once and compares two settings' rows; each pair must be
    # what comparing them among every run says, a score only one setting has included.
    c = ("claude-haiku-4-5", "low")
    runs = []
    for i in range(6):
        for cell, value in ((A, 0.4 + i / 20), (B, 0.7), (c, 0.5 + i / 30)):
            run = result(f"case-{i}", cell, value >= 0.5, repeat=i % 2)
            names = ["f1", "haiku_only"] if cell == c else ["f1"]
            run.scores = tuple(Score(name, value, "measured") for name in names)
            runs.append(run)
    cmp = _each_pair_as_compare_pair_says(runs, pairs=3)
    assert {pair.measure for pair in cmp.paired} == {"mean score"}


def test_a_setting_compared_on_other_scores_in_another_pair_is_what_compare_pair_says_of_each_pair() -> None:
    # The report reads each setting's runs once for all its pairs: a setting compared with one that has
    # a score of its own (on both scores) and with one that has not (on the shared score alone) must
    # still be what comparing the two among every run says, pair by pair.
    c, d = ("claude-haiku-4-5", "low"), ("claude-haiku-4-5", "high")
    runs = []
    for i in range(7):
        for cell, value in ((A, 0.3 + i / 20), (B, 0.65), (c, 0.45 + i / 30), (d, 0.5 + (i % 3) / 7)):
            run = result(f"case-{i}", cell, value >= 0.5, repeat=i % 2, cost=0.01 + i / 997, seconds=1 + i / 7)
            names = ["f1", "haiku_only"] if cell in (c, d) else ["f1"]
            run.scores = tuple(Score(name, value if name == "f1" else 1 - value, "measured") for name in names)
            runs.append(run)
    cmp = _each_pair_as_compare_pair_says(runs, pairs=6)
    by_keys = {(pair.a_key, pair.b_key): pair for pair in cmp.paired}
    both, shared_only = by_keys[(c, d)], by_keys[(c, A)]
    # Against the other haiku setting, haiku/low's value is the mean of its two scores; against A, f1's.
    assert both.cases[0].a_value == pytest.approx(0.5) and shared_only.cases[0].a_value == pytest.approx(0.45)
    assert both.cases[0].a_runs == shared_only.cases[0].a_runs == [3]


def test_each_settings_figures_are_what_pandas_computes_on_its_rows() -> None:
    """The cells are read from the columns' arrays, not from a frame per group: the same numbers,
    exactly, as pandas' own operations on each group (uneven costs and latencies, an unpriced run,
    a run without a known latency)."""
    runs = [result(f"case-{i % 3}", A if i % 2 else B, i % 5 != 0, cost=None if i == 7 else 0.0113 * (i + 1) / 3,
                   seconds=0.37 * (i % 4) + 0.11 * i, cache_read=97 * i, repeat=i) for i in range(24)]
    runs[4].duration_s = float("nan")
    frame = to_frame(runs)
    cells = {(c.model, c.effort): c for c in compare(frame).overall}
    for (model, effort), group in frame.groupby(["model", "effort"]):
        cell = cells[(model, effort)]
        tokens = group[["input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens"]].sum(axis=1)
        known = group["latency_s"].dropna()
        priced = not group["cost_usd"].isna().any()
        read = float(group["cache_read_tokens"].sum())
        assert (cell.runs, cell.passed, cell.scenarios) == (len(group), int(group["passed"].sum()),
                                                           int(group["scenario"].nunique()))
        assert cell.steps_mean == float(group["steps"].mean()) and cell.tokens_mean == float(tokens.mean())
        assert cell.cost_mean == (float(group["cost_usd"].mean()) if priced else None)
        assert cell.cost_total == (float(group["cost_usd"].sum()) if priced else None)
        assert cell.latency_median == float(known.median()) and cell.latency_p90 == float(known.quantile(0.9))
        assert cell.latency_runs == len(known)
        assert cell.cache_hit_rate == read / (read + float(group["input_tokens"].sum())
                                              + float(group["cache_write_tokens"].sum()))


def test_the_reports_comparison_of_its_rows_is_the_comparison_of_their_frame() -> None:
    """The report compares its rows without making a frame (pandas never imported): every figure must be
    the frame's, with a score only some runs have (NaN in the frame, no key in a row), an unpriced
    run, a run of unknown latency, scripted answers and several scenarios, settings and cases."""
    c = ("claude-haiku-4-5", "low")
    runs = []
    for i in range(30):
        cell = (A, B, c)[i % 3]
        run = result(f"scenario-{i % 4}", cell, i % 7 != 0, cost=None if i == 11 else 0.0017 * (i % 5 + 1),
                     seconds=0.29 * (i % 6) + 0.013 * i, cache_read=31 * i, repeat=i // 12,
                     answers="scripted" if i % 10 == 0 else "model")
        run.case = f"case-{i % 2}" if i % 4 else None
        names = ["f1", "haiku_only"] if cell == c else ["f1"]
        run.scores = tuple(Score(name, None if i == 13 else (i % 9) / 8, "measured") for name in names)
        runs.append(run)
    runs[5].duration_s = float("nan")
    data = prepare(runs, prices=None)  # type: ignore[arg-type]
    expected = compare(to_frame(runs))
    assert len(expected.overall) == 3 and len(expected.by_scenario) == 4 and len(expected.paired) == 3
    assert data.comparison == expected
