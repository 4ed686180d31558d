"""The HTML page, read as text: deltas not histories, escaping, CSP, anchors, ledgers and comparison."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from report_data import HOSTILE_JSON, HOSTILE_TEXT, exchange, matrix, result_for, rich_trace, run_details, runs_data

from harness.cost import call_model, cost_of_call, cost_of_trace, load_prices
from harness.report import build_report, markdown_summary, prepare, render_report, wilson_interval
from harness.report._data import tokens, usd
from harness.report._view import unique_content_size
from harness.results import RunResult
from harness.trace import build_trace


def test_the_rich_trace_costs_what_its_four_calls_add_up_to(with_bodies: Callable[[str], str]) -> None:
    # opus step 1: 1200x5 + 300x25 + 1500x6.25 + 500x10 = 27,875 micro-dollars; step 2: 400x5 + 250x25
    # + 2000x0.5 + one search (10,000) = 19,250; sonnet subagent: 100x2 + 40x10 = 600; step 3:
    # 500x5 + 20x25 + 100x6.25 + 2000x0.5 = 4,625. Total $0.05235.
    cost = cost_of_trace(rich_trace())
    assert cost == pytest.approx(0.05235, abs=1e-12)
    assert f"${cost:.4f}" in with_bodies(render_report([result_for(rich_trace())]))


def test_the_runs_ledgers_and_steps_say_what_pricing_each_call_alone_says() -> None:
    # The report prices a run's calls once and hands the costs to every figure: a cost handed to the
    # wrong call or figure would show here. A call that got no answer bills nothing, even unpriced.
    unanswered = exchange(5, [{"role": "user", "content": "One more thing."}], None, model="claude-mystery-1",
                          key="main/late", status=529, started_at=1_760_000_020.0)
    runs = [result_for(build_trace([*rich_trace().exchanges, unanswered], "priced", whole_run=True)),
            matrix()[-1]]  # claude-mystery-1 answered: unpriced
    table = load_prices()
    page = render_report(runs, prices=table)
    listed, details = runs_data(page), run_details(page)
    for n, run in enumerate(runs, start=1):
        assert run.trace is not None
        assert listed[n - 1]["cost"] == usd(cost_of_trace(run.trace, table))
        shown = {step["call"]: step["cost"] for thread in details[n]["threads"] for step in thread["steps"]}
        priced = {call.index: cost_of_call(call, table) for call in run.trace.calls}
        assert shown == {i: usd(None if cost is None else cost.total_usd) for i, cost in priced.items()}
    assert listed[0]["cost"] == "$0.0524" and listed[1]["cost"] == "unpriced"
    ledger = {row.name: row for row in prepare(runs, table).by_model}
    opus = [cost_of_call(call, table) for call in runs[0].trace.calls if call_model(call) == "claude-opus-4-8"]
    assert ledger["claude-opus-4-8"].cost_usd == pytest.approx(sum(c.total_usd for c in opus if c is not None))
    assert ledger["claude-mystery-1"].cost_usd is None and ledger["claude-mystery-1"].calls == 4


def test_history_is_rendered_once_not_at_every_step(
    results: list[RunResult], with_bodies: Callable[[str], str]
) -> None:
    page = with_bodies(render_report(results[:1]))
    # The opening user message travels in all three coordinator requests; the page shows it once.
    assert page.count("Can customer c-42 get a refund?") == 1
    # The previous response is not repeated as the next request's assistant turn.
    assert page.count("Let me check the customer and the policy.") == 1
    assert page.count("the previous response, unedited") == 2


def test_tool_use_is_paired_with_its_result_and_errors_are_marked(with_bodies: Callable[[str], str]) -> None:
    page = with_bodies(render_report([result_for(rich_trace())]))
    use = page.index('id="run-1-call-0-tu-toolu_02"')
    result = page.index("Error: search backend timed out", use)
    assert "tool_result · is_error" in page[use:result]
    assert "signature present" in page
    assert "web_search_tool_result" in page and "server_tool_use" in page
    # What the model took when recorded, labelled so, not the replay's 4 ms.
    assert re.search(r"attempts 2: HTTP 529 in 0\.30s \(recorded\), HTTP 200 in 2\.00s \(recorded\)", page)
    assert "latency 2.30s recorded" in page


def test_hostile_content_is_escaped_everywhere(results: list[RunResult]) -> None:
    page = render_report(results)
    assert "<script>window.__pwned" not in page
    assert "<img src=x" not in page and "<svg onload" not in page
    assert 'href="javascript:' not in page
    assert HOSTILE_JSON not in page
    # Ours last; the others are data the browser never runs, in which no recorded `<` can end the element.
    scripts = re.findall(r"<script([^>]*)>", page)
    assert scripts[-1] == "" and scripts[0] == ' type="application/json" id="runs-data"'
    assert all(s.startswith(' type="application/gzip" class="run-chunk"') for s in scripts[1:-1])
    data = re.search(r'<script type="application/json" id="runs-data">(.*?)</script>', page, re.S)
    assert data is not None and "<" not in data.group(1)
    markup = page[:page.rindex("<script>")]
    assert not re.search(r"<[a-z][^<>]*\son\w+=", markup)  # no element with an event handler
    # In the runs' details the hostile text is kept as it was written: the page's script puts it in as
    # text (the browser test opens every run and finds it inert and shown).
    assert HOSTILE_TEXT in json.dumps(run_details(page)[1], ensure_ascii=False).replace('\\"', '"')


def test_the_csp_allows_only_our_script_and_style_by_hash_and_no_network(results: list[RunResult]) -> None:
    page = render_report(results)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    policy = html.unescape(csp.group(1))
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    # Nothing on the page loads from anywhere: no src= at all, and links are in-page anchors only.
    assert " src=" not in page.replace(" src=x", "")
    assert set(re.findall(r'href="([^"#][^"]*)"', page)) == set()


def test_every_finding_links_to_an_anchor_on_the_page(
    results: list[RunResult], with_bodies: Callable[[str], str]
) -> None:
    page = with_bodies(render_report(results))
    ids = set(re.findall(r'id="([^"]+)"', page))
    links = set(re.findall(r'href="#([^"]+)"', page))
    links |= {f["href"].removeprefix("#") for run in runs_data(page) for f in run["findings"]}
    assert "run-1-call-1" in links  # T005 of run 1 is at thread 1, step 2, the trace's call 1
    assert "run-1-call-3" in ids
    # A case's side-by-side view is made by the page's script when asked for (the browser test follows one).
    assert {link for link in links if not link.startswith("pair-")} <= ids
    assert any(link.startswith("pair-") for link in links)


def test_unpriced_runs_say_so_and_the_cheapest_all_passing_setting_is_highlighted(results: list[RunResult]) -> None:
    page = render_report(results)
    mystery = runs_data(page)[25]
    assert mystery["n"] == 26 and mystery["unpriced"] and mystery["cost"] == "unpriced"
    assert re.search(r'id="cheapest">Cheapest setting that passes everything \(2 scenarios\): '
                     r'<b>claude-sonnet-5 / high</b>', page)
    highlighted = re.findall(r'<tr class="cheapest"><td>([^<]+)</td><td>([^<]+)</td>', page)
    # Overall, then each scenario's own pick: in "lookup" sonnet/low had a harness error, so haiku/high
    # (cheaper than sonnet/high, both runs passed) is that scenario's cheapest; in "refund" the two
    # sonnet efforts tie on cost and the lower effort is named.
    assert highlighted == [("claude-sonnet-5", "high"), ("claude-haiku-4-5", "high"), ("claude-sonnet-5", "low")]


def test_a_setting_that_ran_only_some_scenarios_is_not_the_cheapest_that_passes_everything() -> None:
    # The shipped-scenarios shape: most scenarios at one setting, one cheap scenario alone at another.
    # Mean cost per run of the lone setting measures a different workload; it must not win.
    runs = [result_for(rich_trace(), scenario=s, model="claude-opus-4-8", effort="high") for s in ("a", "b", "c")]
    runs.append(result_for(rich_trace("claude-sonnet-5", source="x"), scenario="a",
                           model="claude-sonnet-5", effort="low"))
    data = prepare(runs, load_prices())
    cmp = data.comparison
    assert cmp.scenarios == 3
    assert cmp.cheapest is not None and (cmp.cheapest.model, cmp.cheapest.effort) == ("claude-opus-4-8", "high")
    lone = next(c for c in cmp.overall if c.model == "claude-sonnet-5")
    assert lone.scenarios == 1 and not lone.passes_everything and not lone.cheapest_passing
    page = render_report(runs)
    assert "only 1 of 3 scenarios run" in page and ">1/3</td>" in page
    assert "| claude-sonnet-5 | low | 1/3 | 1 |" in markdown_summary(data)
    # With no setting covering every scenario, the page says why no setting is named.
    alone = prepare(runs[1:], load_prices()).comparison
    assert alone.cheapest is None
    assert "No setting ran all 3 scenarios" in render_report(runs[1:])


def test_wilson_interval_matches_the_textbook_values() -> None:
    low, high = wilson_interval(0, 4)
    assert low == 0.0 and high == pytest.approx(0.4899, abs=1e-4)
    low, high = wilson_interval(8, 10)
    assert (low, high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))


def long_run(steps: int) -> RunResult:
    """One thread of `steps` calls, each adding a tool_use and a ~1 KB tool_result to the history."""
    messages: list[dict] = [{"role": "user", "content": "Walk the catalogue."}]
    exchanges = []
    for i in range(steps):
        content = [{"type": "text", "text": f"Page {i}."},
                   {"type": "tool_use", "id": f"toolu_{i}", "name": "read_page", "input": {"page": i}}]
        exchanges.append(exchange(i, list(messages), content, stop_reason="tool_use",
                                  usage={"input_tokens": 1000 + 300 * i, "output_tokens": 40}))
        messages += [{"role": "assistant", "content": content},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                   "content": f"row {i}: " + "lorem ipsum " * 80}]}]
    trace = build_trace(exchanges, "long", whole_run=True)
    return result_for(trace, scenario="long")


def test_page_size_grows_with_new_content_not_steps_times_history(tmp_path: Path) -> None:
    small, big = long_run(50), long_run(200)
    size_small = build_report([small], tmp_path / "s").stat().st_size
    size_big = build_report([big], tmp_path / "b").stat().st_size
    assert big.trace is not None and small.trace is not None
    # Quadratic growth would make the 4x longer run ~16x bigger; linear keeps it near 4x.
    assert size_big / size_small < 5
    assert size_big < 3 * unique_content_size(big.trace) + 40_000


def test_the_matrix_renders_every_run_and_thread(tmp_path: Path, with_bodies: Callable[[str], str]) -> None:
    runs = matrix()
    page = with_bodies(build_report(runs, tmp_path).read_text(encoding="utf-8"))
    assert len(re.findall(r'<details class="run[^"]*" id="run-\d+"', page)) == len(runs)
    assert page.count("subagent of thread 1") == sum(1 for r in runs if r.trace is not None)
    assert "no trace stored for this run" in page


def test_the_scatter_labels_coincident_settings_once_and_keeps_points_off_the_axis_end() -> None:
    from harness.report._svg import cost_vs_pass_rate

    runs = [result_for(rich_trace(effort=e), scenario="s", effort=e) for e in ("low", "high")]
    svg = str(cost_vs_pass_rate(prepare(runs, load_prices()).comparison.overall))
    # Same cost, same pass rate: one "low, high" label, not two labels drawn over each other.
    assert svg.count(">low, high</text>") == 1 and ">low</text>" not in svg
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)]
    assert max(xs) < 60 + 350  # left margin + plot width: the dearest point is inside the plot


# Ints written as ints, costs below $999 without grouping (`tokens`, `usd`): what ",.0f" and ",.{digits}f"
# write, at the edges of either way (rounding up to 1,000; floats no longer exact; not ints).
_NUMBERS = [0, 1, -1, 999, 1000, -999, -1000, 123456789, 2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1, 10**20, True,
            0.5, 1.5, 2.5, 999.4, 999.5, 998.99995, 998.999951, 999.99995, -998.99995, 1e-07, -0.0, 1e300,
            float("nan"), float("inf"), -float("inf"), None]


@pytest.mark.parametrize("value", _NUMBERS, ids=repr)
def test_counts_and_costs_are_written_as_grouped_formats_write_them(value: float | None) -> None:
    assert tokens(value) == ("—" if value is None else f"{value:,.0f}")
    for digits in (2, 4, 6):
        assert usd(value, digits) == ("unpriced" if value is None else f"${value:,.{digits}f}")
