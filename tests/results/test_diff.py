"""Baseline diff: newly failing/passing, new and gone findings, trajectories, thresholds, exit status."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.checks._registry import Finding
from harness.cli import main
from harness.cost import load_prices
from harness.report._diffpage import build_diff_page
from harness.results import ExpectationResult, RunResult, Usage, diff_results, write_results
from harness.trace import Exchange, build_trace


def run(run_id: str, tools: list[tuple[str, dict[str, Any]]], *, status: str = "passed", cost: float = 0.10,
        findings: list[Finding] | None = None, prompt: str = "go", error: str | None = None) -> RunResult:
    """A one-thread run that calls `tools` in order, one per step, then answers."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    exchanges = []
    for i, (name, arguments) in enumerate([*tools, ("", {})]):
        content = ([{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": arguments}] if name
                   else [{"type": "text", "text": "done"}])
        body = {"type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": content,
                "stop_reason": "tool_use" if name else "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}
        exchanges.append(Exchange(index=i, method="POST",
                                  url="https://api.anthropic.com/v1/messages", request_headers={},
                                  request_body={"model": "claude-sonnet-5", "messages": list(messages)}, status=200,
                                  response_headers={}, response_body=body, thread_key="main"))
        messages += [{"role": "assistant", "content": content},
                     {"role": "user",
                      "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}]}]
    trace = build_trace(exchanges, run_id, whole_run=True)
    return RunResult(run_id=run_id, scenario=run_id.split("[")[0], scenario_path="s.yaml", model="claude-sonnet-5",
                     effort="high", repeat=0, mode="replay", status=status, outcome=None,  # type: ignore[arg-type]
                     findings=findings or [], steps=len(trace.calls), usage=Usage(10, 5), cost_usd=cost, trace=trace,
                     error=error)


def finding(code: str, step: int, severity: str = "error") -> Finding:
    return Finding(code=code, severity=severity, thread=1, step=step,  # type: ignore[arg-type]
                   message=f"{code} broke", call=step - 1)


SAME = [("get_customer", {"id": "c1"}), ("refund", {"id": "c1", "amount": 10})]


def test_identical_results_do_not_regress() -> None:
    diff = diff_results([run("a[x]", SAME)], [run("a[x]", SAME)])
    assert not diff.regressed
    assert [r.change for r in diff.runs] == ["unchanged"]
    assert diff.runs[0].trajectory == {} and diff.runs[0].divergence is None


def test_a_newly_failing_run_with_a_new_error_finding_regresses() -> None:
    base = [run("a[x]", SAME, findings=[finding("T005", 1, "warning")]), run("b[x]", SAME, status="failed")]
    new = [run("a[x]", SAME, status="failed", findings=[finding("T001", 2)]), run("b[x]", SAME)]
    diff = diff_results(base, new)
    a, b = diff.runs
    assert (a.change, b.change) == ("newly failing", "newly passing")
    assert [(f.code, f.step) for f in a.new_findings] == [("T001", 2)]
    assert [(f.code, f.step) for f in a.gone_findings] == [("T005", 1)]
    assert a.worse and not b.worse and diff.regressed
    assert a.headline == "newly failing (passed -> failed)" and "new T001 thread 1, step 2: T001 broke" in a.reasons


def test_a_new_warning_alone_is_reported_but_not_a_regression() -> None:
    diff = diff_results([run("a[x]", SAME)], [run("a[x]", SAME, findings=[finding("T005", 1, "warning")])])
    assert not diff.regressed
    assert "+ T005 thread 1, step 1" in diff.to_text()


def test_the_trajectory_diff_names_the_changed_tool_input_and_the_divergence() -> None:
    changed = [("get_customer", {"id": "c1"}), ("refund", {"id": "c2", "amount": 10})]
    diff = diff_results([run("a[x]", SAME)], [run("a[x]", changed)])
    only = diff.runs[0]
    assert only.divergence == 1
    assert only.trajectory["values_changed"] == {"root[1]['input']['id']": {"new_value": "c2", "old_value": "c1"}}
    assert not diff.regressed  # a different path that still passes, at the same cost, is news, not a regression


def test_cost_and_steps_beyond_their_thresholds_regress() -> None:
    longer = [*SAME, ("refund", {"id": "c1", "amount": 10}), ("notify", {}), ("notify", {})]
    diff = diff_results([run("a[x]", SAME, cost=0.10)], [run("a[x]", longer, cost=0.12)],
                        threshold_cost_pct=10, threshold_steps=2)
    only = diff.runs[0]
    assert only.cost_change_pct == pytest.approx(20.0)
    assert only.cost_regressed and only.steps_regressed and diff.regressed
    relaxed = diff_results([run("a[x]", SAME, cost=0.10)], [run("a[x]", longer, cost=0.12)],
                           threshold_cost_pct=25, threshold_steps=3)
    assert not relaxed.regressed


def test_costs_priced_with_different_tables_are_said_to_compare_prices_too(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  claude-sonnet-5: {output: 30}\n", encoding="utf-8")
    repriced = run("a[x]", SAME, cost=0.12)
    repriced.prices = load_prices(prices).for_models(["claude-sonnet-5"])
    diff = diff_results([run("a[x]", SAME, cost=0.10)], [repriced])
    note = (f"note: the costs compare prices as well as runs: the baseline's were priced 1 with the shipped table, "
            f"the new ones' 1 with {prices}")
    assert note in diff.to_text().splitlines()
    assert f"_{note}_" in diff.to_markdown().splitlines()
    assert diff.to_dict()["priced_with"] == {"base": {"shipped": 1}, "new": {str(prices): 1}}
    same = diff_results([run("a[x]", SAME, cost=0.10)], [run("a[x]", SAME, cost=0.10)])
    assert "note:" not in same.to_text() and same.to_dict()["priced_with"] == {"base": {"shipped": 1},
                                                                              "new": {"shipped": 1}}


def test_added_and_removed_runs_are_listed() -> None:
    diff = diff_results([run("gone[x]", SAME)], [run("new[x]", SAME)])
    assert {r.run_id: r.change for r in diff.runs} == {"gone[x]": "removed", "new[x]": "added"}
    assert not diff.regressed


def test_the_cli_exits_1_on_regression_and_writes_the_side_by_side_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    write_results(base, [run("a[x]", SAME), run("b[x]", SAME)])
    write_results(new, [run("a[x]", [("get_customer", {"id": "<script>window.__pwned=1</script>"})], status="failed"),
                        run("b[x]", SAME)])
    assert main(["diff", str(base), str(new), "--format", "json", "-o", str(tmp_path / "page")]) == 1
    out = capsys.readouterr().out
    data = json.loads(out[: out.rindex("}") + 1])
    assert data["regressed"] is True and data["counts"]["newly failing"] == 1
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert "0 step(s) identical before the first divergence" in page
    assert "<script>window.__pwned" not in page and page.count("<script") == 1
    assert main(["diff", str(base), str(base), "--format", "markdown"]) == 0
    assert "No regression" in capsys.readouterr().out


def test_a_newly_failing_run_says_why_and_where_the_traces_diverge_in_steps_people_count() -> None:
    # Base: get_customer, refund. New: an extra lookup before the refund, and the strict
    # tools_called expectation it met before now fails. The first different call is the trace's
    # call index 1, which is thread 1, step 2 (steps count from 1, as in findings), never "step 1".
    base = run("a[x]", SAME)
    base.expectations = [ExpectationResult("tools_called", True, "as expected"),
                         ExpectationResult("outcome", True, "ok")]
    new = run("a[x]", [SAME[0], ("lookup_order", {"id": "o9"}), SAME[1]], status="failed")
    new.expectations = [ExpectationResult("tools_called", False, "call 2 is lookup_order, expected refund"),
                        ExpectationResult("outcome", True, "ok")]
    diff = diff_results([base], [new])
    only = diff.runs[0]
    assert only.divergence == 1 and only.divergence_where == "thread 1, step 2"
    assert "expectation tools_called: call 2 is lookup_order, expected refund" in only.reasons
    text = diff.to_text()
    assert "! a[x]: newly failing (passed -> failed)\n" in text and text.count("newly failing") == 1
    assert ('traces diverge at thread 1, step 2: response tool_use 1 asks for lookup_order {"id": "o9"} '
            '(baseline: refund {"amount": 10, "id": "c1"})') in text
    assert "tool calls differ from call 2 of 2 -> 3:" in text
    assert '  base: refund {"amount": 10, "id": "c1"}' in text
    assert '  new:  lookup_order {"id": "o9"}, refund {"amount": 10, "id": "c1"}' in text
    assert "step index" not in text and "values_changed" not in text  # no 0-based index, no deepdiff jargon
    markdown = diff.to_markdown()
    assert "| **newly failing (passed -&gt; failed)** | expectation tools_called" in markdown
    assert "from step 1" not in markdown and "thread 1, step 2" in markdown
    data = diff.to_dict()["runs"][0]
    assert data["first_divergence_at"] == "thread 1, step 2" and data["failed_expectations"]


def test_the_side_by_side_page_keeps_the_identical_steps_so_every_link_lands(tmp_path: Path) -> None:
    longer = [*SAME, ("notify", {"id": "c1"})]
    diff = diff_results([run("a[x]", SAME)], [run("a[x]", longer, status="failed")])
    page = build_diff_page(diff, tmp_path).read_text(encoding="utf-8")
    # The new step 3's tool_result points at the tool_use of step 2, before the divergence.
    ids = set(re.findall(r'id="([^"]+)"', page))
    links = set(re.findall(r'href="#([^"]+)"', page))
    assert any("-tu-" in link for link in links)
    assert links <= ids, links - ids
    assert "2 step(s) identical before the first divergence (at thread 1, step 3)" in page
    assert '<details><summary class="muted">2 step(s) identical' in page  # collapsed, not in the way
    assert "\\u0027" not in page and "iterable_item_added" not in page


def repeats(cell: str, statuses: str, **kwargs: Any) -> list[RunResult]:
    """One run per letter of `statuses` (p: passed, f: failed with a T001), repeats r0, r1, ... of `cell`."""
    out = []
    for i, letter in enumerate(statuses):
        failed = letter == "f"
        out.append(run(f"{cell}[m-high-r{i}]", SAME, status="failed" if failed else "passed",
                       findings=[finding("T001", 2)] if failed else [], **kwargs))
    return out


def test_one_flaky_repeat_in_five_does_not_fail_the_build() -> None:
    diff = diff_results(repeats("s", "ppppp"), repeats("s", "ppfpp"))
    assert not diff.regressed
    text = diff.to_text()
    assert ("- s[m-high]: passed 5/5 -> 4/5 runs (one-sided Fisher's exact p = 0.5 > 0.05: within chance, "
            "not a regression)") in text
    assert "    r2: newly failing (passed -> failed)\n      new T001 thread 1, step 2: T001 broke\n" in text
    assert "T001 errors in 0/5 -> 1/5 runs (one-sided Fisher's exact p = 0.5 > 0.05" in text
    cell = diff.to_dict()["cells"][0]
    assert cell["passed"] == {"base": 5, "base_runs": 5, "new": 4, "new_runs": 5, "p_value": 0.5}
    assert cell["regressed"] is False


def test_a_real_drop_over_repeats_fails_the_build() -> None:
    diff = diff_results(repeats("s", "ppppp"), repeats("s", "pffff"))
    assert diff.regressed
    text = diff.to_text()
    assert text.startswith("REGRESSED: 1 cell (5 run ids) compared")
    assert "! s[m-high]: passed 5/5 -> 1/5 runs (one-sided Fisher's exact p = 0.0238 <= 0.05)" in text
    # The four failed repeats changed the same way: said once, with their repeat numbers.
    assert "    r1, r2, r3, r4: newly failing (passed -> failed)\n" in text and text.count("T001 broke") == 1
    assert "T001 errors in 0/5 -> 4/5 runs (one-sided Fisher's exact p = 0.0238 <= 0.05)" in text


def test_2_of_5_is_within_chance_and_a_larger_alpha_makes_it_a_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    write_results(base, repeats("s", "ppppp"))
    write_results(new, repeats("s", "ppfff"))
    assert main(["diff", str(base), str(new)]) == 0
    assert "passed 5/5 -> 2/5 runs (one-sided Fisher's exact p = 0.0833 > 0.05" in capsys.readouterr().out
    assert main(["diff", str(base), str(new), "--alpha", "0.1"]) == 1
    assert "p = 0.0833 <= 0.1" in capsys.readouterr().out
    with pytest.raises(SystemExit) as bad:
        main(["diff", str(base), str(new), "--alpha", "5"])
    assert bad.value.code == 2
    assert "--alpha: expected a number between 0 and 1, got 5" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--threshold-cost", "-5", "expected a percentage of 0 or more, got -5"),
    ("--threshold-cost", "nan", "expected a percentage of 0 or more, got nan"),
    ("--threshold-cost", "ten", "expected a percentage of 0 or more, got 'ten'"),
    ("--threshold-steps", "-1", "expected a number of steps of 0 or more, got -1"),
    ("--threshold-steps", "1.5", "expected a number of steps of 0 or more, got '1.5'"),
])
def test_a_threshold_below_zero_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str,
                                           value: str, says: str) -> None:
    # Below zero every unchanged run is "more" than its threshold: a diff of a file against itself
    # regressed on all of them (and exit 1), and a NaN one never regressed on cost at all.
    same = tmp_path / "same.jsonl"
    write_results(same, repeats("s", "ppp"))
    with pytest.raises(SystemExit) as bad:
        main(["diff", str(same), str(same), option, value])
    assert bad.value.code == 2
    assert f"{option}: {says}" in capsys.readouterr().err
    assert main(["diff", str(same), str(same), option, "0"]) == 0


def test_every_repeat_flipping_is_a_regression_even_when_too_few_for_the_test() -> None:
    # 2/2 -> 0/2 has p = 0.17: no test can tell two repeats from chance, but a replayed cell that
    # fails everywhere it passed everywhere is the deterministic regression CI exists to catch.
    diff = diff_results(repeats("s", "pp"), repeats("s", "ff"))
    assert diff.regressed
    assert ("! s[m-high]: passed 2/2 -> 0/2 runs (one-sided Fisher's exact p = 0.167, but every run passed "
            "before and none passes now)") in diff.to_text()
    assert not diff_results(repeats("s", "fp"), repeats("s", "ff")).to_dict()["cells"][0]["regressed"]


def test_where_traces_diverge_compares_the_requests_not_only_the_responses() -> None:
    # Same answers, but the agent now sends another prompt: the traces diverge at its first request.
    diff = diff_results([run("a[x]", SAME)], [run("a[x]", SAME, prompt="go now")])
    only = diff.runs[0]
    assert only.divergence == 0 and only.divergence_where == "thread 1, step 1"
    assert only.divergence_what == 'request messages[0].content[0].text: "go" -> "go now"'
    assert 'traces diverge at thread 1, step 1: request messages[0].content[0].text: "go" -> "go now"' in diff.to_text()
    assert not diff.regressed
    assert diff_results([run("a[x]", SAME)], [run("a[x]", SAME)]).runs[0].divergence is None


def test_a_removed_run_shows_its_baseline_steps(tmp_path: Path) -> None:
    diff = diff_results([run("gone[x]", SAME), run("kept[x]", SAME)], [run("kept[x]", SAME), run("new[x]", SAME[:1])])
    text = diff.to_text()
    assert "- gone[x]: removed (was passed, 3 steps)" in text and "- new[x]: added (passed, 2 steps)" in text
    assert "0 -> 0" not in text
    runs = {r["run_id"]: r for r in diff.to_dict()["runs"]}
    assert (runs["gone[x]"]["base_steps"], runs["gone[x]"]["new_steps"]) == (3, None)
    page = build_diff_page(diff, tmp_path).read_text(encoding="utf-8")
    assert "steps 3 → —" in page and "Not in the new results: the baseline's steps are on the left." in page
    assert len(re.findall(r'<article class="step[^"]*" id="run-base-1-call-', page)) == 3  # all the removed run's steps
    assert len(re.findall(r'<article class="step[^"]*" id="run-new-2-call-', page)) == 2


def test_a_harness_error_is_said_once_in_its_own_words() -> None:
    error = ("replay: no recorded interaction matches POST https://api.anthropic.com/v1/messages.\n"
             "Closest recorded: #1 POST /v1/messages (messages: 1); its body (recorded -> sent):\n"
             "Cassette: cassettes/s.yaml")
    base = repeats("s", "ppp")
    new = [run(f"s[m-high-r{i}]", [], status="error", prompt="go now", error=error) for i in range(3)]
    text = diff_results(base, new).to_text()
    assert "! s[m-high]: passed 3/3 -> 0/3 runs (one-sided Fisher's exact p = 0.05 <= 0.05)" in text
    assert text.count("harness error: replay: no recorded interaction matches POST") == 1
    assert "Closest recorded" not in text and "Cassette:" not in text
    assert "r0, r1, r2: newly failing (passed -> error)" in text
    assert "traces diverge at thread 1, step 1: request messages[0].content[0].text" in text
    assert not re.search(r"\b_[A-Z]\w+|Error:|Exception", text)  # no class name of ours or Python's


def test_run_with_a_baseline_judges_repeats_together_and_says_a_replay_miss_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's path: record a scenario's cassettes for 3 repeats, replay them as the baseline, then
    # change the prompt: every replay misses. The diff names the cell once, with the changed request.
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "scenarios").mkdir()
    scenario = tmp_path / "scenarios" / "support-refund.yaml"
    scenario.write_text((root / "scenarios" / "support-refund.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    rec, base, new = (str(tmp_path / f"{name}.jsonl") for name in ("rec", "base", "new"))
    assert main(["run", "scenarios", "--record", "--repeat", "3", "--results", rec, "--no-report"]) == 0
    assert main(["run", "scenarios", "--mode", "replay", "--repeat", "3", "--results", base, "--no-report"]) == 0
    text = scenario.read_text(encoding="utf-8")
    assert "\nprompt: Customer C1 wants a refund for order O1.\n" in text
    scenario.write_text(text.replace("for order O1.\n", "for order O1, please.\n", 1), encoding="utf-8")
    capsys.readouterr()
    status = main(["run", "scenarios", "--mode", "replay", "--repeat", "3", "--results", new, "--no-report",
                   "--baseline", base])
    assert status == 2  # a replay miss no rule explains
    out = capsys.readouterr().out
    assert "REGRESSED: " in out, out
    diff = out.split("REGRESSED: ", 1)[1]
    assert diff.startswith("1 cell (3 run ids) compared")
    assert "! support-refund[claude-sonnet-5-default]: passed 3/3 -> 0/3 runs" in diff
    assert "    r0, r1, r2: newly failing (passed -> error)\n" in diff
    assert diff.count("replay: no recorded interaction matches") == 1, diff
    assert ('traces diverge at thread 1, step 1: request messages[0].content[0].text: "…nd for order O1." -> '
            '"…nd for order O1, please."') in diff
    assert "Closest recorded" not in diff and "_Mismatch" not in diff


def test_the_headline_counts_only_what_both_sides_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A NEW that lost most runs (one shard's file, a merge cut short): removed runs are listed, not
    # regressions, but the first line said "OK: 3 cells (3 run ids) compared" when one was.
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    write_results(base, [run("a[x]", SAME), run("b[x]", SAME), run("c[x]", SAME)])
    write_results(new, [run("a[x]", SAME), run("d[x]", SAME)])
    assert main(["diff", str(base), str(new)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("OK: 1 of 4 cells (1 run id) compared; 2 run ids only in the baseline (removed), "
                            "1 only in the new results (added) (cost threshold"), first
    assert main(["diff", str(base), str(new), "--format", "markdown"]) == 0
    assert ("_1 of 4 cells (1 run id) compared; 2 run ids only in the baseline (removed), 1 only in the new "
            "results (added)_") in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("new_runs", [[], [run("renamed[x]", SAME)]], ids=["empty", "disjoint"])
def test_a_new_file_with_no_run_of_the_baseline_compares_nothing_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_runs: list[RunResult]
) -> None:
    # A run that wrote nothing, or the wrong file: every baseline run "removed", yet "OK: 2 cells
    # compared" and exit 0, a green gate that compared nothing.
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    write_results(base, [run("a[x]", SAME), run("b[x]", SAME)])
    write_results(new, new_runs)
    assert main(["diff", str(base), str(new)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"harness: {new} holds none of the 2 run(s) of {base} ({len(new_runs)} run(s), "
                            "none with the same run id): nothing to compare\n")
    write_results(new, [*new_runs, run("b[x]", SAME)])
    assert main(["diff", str(base), str(new)]) == 0
