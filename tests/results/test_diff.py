"""Baseline diff: newly failing/passing, new and gone findings, trajectories, thresholds, exit status."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.checks._registry import Finding
from harness.cli import main
from harness.report._diffpage import build_diff_page
from harness.results import ExpectationResult, RunResult, Usage, diff_results, write_results
from harness.trace import Exchange, build_trace


def run(run_id: str, tools: list[tuple[str, dict[str, Any]]], *, status: str = "passed", cost: float = 0.10,
        findings: list[Finding] | None = None) -> RunResult:
    """A one-thread run that calls `tools` in order, one per step, then answers."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    exchanges = []
    for i, (name, arguments) in enumerate([*tools, ("", {})]):
        content = ([{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": arguments}] if name
                   else [{"type": "text", "text": "done"}])
        body = {"type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": content,
                "stop_reason": "tool_use" if name else "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}
        exchanges.append(Exchange(index=i, method="POST", url="https://api.anthropic.com/v1/messages", request_headers={},
                                  request_body={"model": "claude-sonnet-5", "messages": list(messages)}, status=200,
                                  response_headers={}, response_body=body, thread_key="main"))
        messages += [{"role": "assistant", "content": content},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}]}]
    trace = build_trace(exchanges, run_id, whole_run=True)
    return RunResult(run_id=run_id, scenario=run_id.split("[")[0], scenario_path="s.yaml", model="claude-sonnet-5",
                     effort="high", repeat=0, mode="replay", status=status, outcome=None,  # type: ignore[arg-type]
                     findings=findings or [], steps=len(trace.calls), usage=Usage(10, 5), cost_usd=cost, trace=trace)


def finding(code: str, step: int, severity: str = "error") -> Finding:
    return Finding(code=code, severity=severity, thread=1, step=step, message=f"{code} broke", call=step - 1)  # type: ignore[arg-type]


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
    assert a.regressed and not b.regressed and diff.regressed
    assert "newly failing (passed -> failed)" in a.reasons and "new T001 thread 1 step 2: T001 broke" in a.reasons


def test_a_new_warning_alone_is_reported_but_not_a_regression() -> None:
    diff = diff_results([run("a[x]", SAME)], [run("a[x]", SAME, findings=[finding("T005", 1, "warning")])])
    assert not diff.regressed
    assert "+ T005 thread 1 step 1" in diff.to_text()


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
    # call index 1, which is thread 1 step 2 (steps count from 1, as in findings), never "step 1".
    base = run("a[x]", SAME)
    base.expectations = [ExpectationResult("tools_called", True, "as expected"), ExpectationResult("outcome", True, "ok")]
    new = run("a[x]", [SAME[0], ("lookup_order", {"id": "o9"}), SAME[1]], status="failed")
    new.expectations = [ExpectationResult("tools_called", False, "call 2 is lookup_order, expected refund"),
                        ExpectationResult("outcome", True, "ok")]
    diff = diff_results([base], [new])
    only = diff.runs[0]
    assert only.divergence == 1 and only.divergence_where == "thread 1 step 2"
    assert "expectation tools_called: call 2 is lookup_order, expected refund" in only.reasons
    text = diff.to_text()
    assert "! a[x]: newly failing (passed -> failed)\n" in text and text.count("newly failing") == 1
    assert "tool calls differ from call 2 of 2 -> 3 (traces diverge at thread 1 step 2):" in text
    assert '  base: refund {"amount": 10, "id": "c1"}' in text
    assert '  new:  lookup_order {"id": "o9"}, refund {"amount": 10, "id": "c1"}' in text
    assert "step index" not in text and "values_changed" not in text  # no 0-based index, no deepdiff jargon
    markdown = diff.to_markdown()
    assert "| **newly failing** | expectation tools_called" in markdown
    assert "from step 1" not in markdown and "thread 1 step 2" in markdown
    data = diff.to_dict()["runs"][0]
    assert data["first_divergence_at"] == "thread 1 step 2" and data["failed_expectations"]


def test_the_side_by_side_page_keeps_the_identical_steps_so_every_link_lands(tmp_path: Path) -> None:
    longer = [*SAME, ("notify", {"id": "c1"})]
    diff = diff_results([run("a[x]", SAME)], [run("a[x]", longer, status="failed")])
    page = build_diff_page(diff, tmp_path).read_text(encoding="utf-8")
    # The new step 3's tool_result points at the tool_use of step 2, before the divergence.
    ids = set(re.findall(r'id="([^"]+)"', page))
    links = set(re.findall(r'href="#([^"]+)"', page))
    assert any("-tu-" in link for link in links)
    assert links <= ids, links - ids
    assert "2 step(s) identical before the first divergence (at thread 1 step 3)" in page
    assert '<details><summary class="muted">2 step(s) identical' in page  # collapsed, not in the way
    assert "\\u0027" not in page and "iterable_item_added" not in page
