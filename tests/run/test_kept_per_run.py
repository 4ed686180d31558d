"""A command keeps of each finished run only what its summary shows: the traces are in the results
file, and what needs them (the report, the baseline diff, the export) reads them back from there."""

from __future__ import annotations

import pytest
from run_support import LOOKUP, SCRIPT, Project

from harness.cli import main
from harness.results import ResultsWriter, read_results
from harness.run import Overrides, load_all, plan, resolve_agents, run_all

SCENARIO = f"""name: lookup
prompt: Where is order O1?
{LOOKUP}expect: {{outcome: completed, final_text: {{contains: shipped}}}}
matrix: {{repeats: 2}}
mode: scripted
{SCRIPT}"""


def test_finished_runs_keep_no_trace_and_the_file_holds_them_whole(project: Project) -> None:
    path = project.scenario("lookup", SCENARIO)
    sources, problems = load_all([str(path)])
    agents, agent_problems = resolve_agents(sources)
    runs, plan_problems = plan(sources, Overrides())
    assert not problems + agent_problems + plan_problems
    with ResultsWriter(project.results, fresh=True) as writer:
        report = run_all(runs, agents, writer)
    kept = [result for _, result in report.results]
    assert [(r.status, r.trace, r.harness_trace, r.outcome) for r in kept] == [("failed", None, None, None)] * 2
    assert all(r.why() == "expect final_text.contains: 'shipped' not in 'Order O1 was delivered.'"
               for r in kept), kept[0].why()
    whole = read_results(project.results)
    assert [len(r.trace.calls) if r.trace else 0 for r in whole] == [2, 2]
    assert all(r.outcome is not None and r.outcome.final_text == "Order O1 was delivered." for r in whole)


def test_the_report_and_the_baseline_diff_read_the_traces_back(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", SCENARIO.replace("shipped", "delivered"))
    report = project.root / "report"
    assert main(["run", str(path), "--fresh", "--results", str(project.results), "--report", str(report)]) == 0
    # The same page as the one built from the results file alone, where every trace is.
    assert main(["report", str(project.results), "-o", str(project.root / "again")]) == 0
    assert (report / "index.html").read_bytes() == (project.root / "again" / "index.html").read_bytes()
    baseline = project.root / "baseline.jsonl"
    baseline.write_bytes(project.results.read_bytes())
    capsys.readouterr()
    assert main(["run", str(path), "--fresh", "--results", str(project.results), "--no-report",
                 "--baseline", str(baseline)]) == 0
    assert "regress" not in capsys.readouterr().out.lower()
