"""Under `pytest -n 2` each worker writes its own results file and the controller merges them into one."""

from __future__ import annotations

import pytest

from harness.results import read_results


def test_workers_results_are_merged_into_one_file_and_one_report(project: pytest.Pytester) -> None:
    out = project.path / "out"
    result = project.runpytest_subprocess(
        "-n", "2", "--harness-scenarios", f"--harness-results={out / 'results.jsonl'}",
        f"--harness-report={out / 'report'}"
    )
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*T001 thread 1, step 2*",
        "*= harness =*",
        "3 run(s): 2 passed, 1 failed",
        "findings by code: T001 x1",
    ])
    merged = read_results(out / "results.jsonl")
    assert [r.run_id for r in merged] == [
        "dropper[claude-sonnet-5-default-r0]", "lookup[claude-sonnet-5-high-r0]", "lookup[claude-sonnet-5-low-r0]",
    ]
    # the worker files are folded into the merged one, not left to be merged twice later
    assert sorted(p.name for p in out.iterdir()) == ["report", "results.jsonl"]
    assert "dropper" in (out / "report" / "index.html").read_text()
