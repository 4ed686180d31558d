"""Scenario files collected as test items: ids, pass and fail for the right reasons, results, report, summary."""

from __future__ import annotations

import pytest

from harness.results import read_results


def test_scenarios_are_not_collected_unless_asked(project: pytest.Pytester) -> None:
    result = project.runpytest("--collect-only", "-q")
    assert "dropper" not in result.stdout.str() and "lookup" not in result.stdout.str()
    assert "== harness ==" not in result.stdout.str()


def test_one_item_per_scenario_and_matrix_cell_with_readable_ids(project: pytest.Pytester) -> None:
    result = project.runpytest("--harness-scenarios", "--collect-only", "-q")
    result.stdout.fnmatch_lines([
        "scenarios/dropper.yaml::dropper[[]claude-sonnet-5-default-r0[]]",
        "scenarios/lookup.yaml::lookup[[]claude-sonnet-5-low-r0[]]",
        "scenarios/lookup.yaml::lookup[[]claude-sonnet-5-high-r0[]]",
        "test_user_own.py::test_scripted",
    ])


def test_the_ini_turns_collection_on_and_the_glob_picks_the_files(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nharness_scenarios = true\nharness_scenario_glob = scenarios/look*.yaml\n")
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*lookup*low-r0*", "*lookup*high-r0*"])
    assert "dropper" not in result.stdout.str()


def test_a_buggy_scenario_fails_with_its_finding_and_the_good_ones_pass(project: pytest.Pytester) -> None:
    results = project.path / "out" / "results.jsonl"
    result = project.runpytest("--harness-scenarios", f"--harness-results={results}")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*scenario dropper[[]claude-sonnet-5-default-r0[]]*",
        "dropper[[]claude-sonnet-5-default-r0[]] failed (scripted; outcome completed*",
        "  T001 thread 1, step 2, messages[[]2[]]: no tool_result for tool_use * (lookup_order, *",
        "*= harness =*",
        "3 run(s): 2 passed, 1 failed",
        "findings by code: T001 x1",
        f"results: {results}",
    ])
    stored = read_results(results)
    assert {(r.run_id, r.status) for r in stored} == {
        ("dropper[claude-sonnet-5-default-r0]", "failed"),
        ("lookup[claude-sonnet-5-low-r0]", "passed"),
        ("lookup[claude-sonnet-5-high-r0]", "passed"),
    }
    assert {f.code for r in stored for f in r.findings} == {"T001"}


def test_an_unmet_expectation_is_shown_with_what_happened(project: pytest.Pytester) -> None:
    lookup = project.path / "scenarios" / "lookup.yaml"
    lookup.write_text(lookup.read_text().replace("contains: Ana", "contains: Bob"))
    result = project.runpytest("--harness-scenarios", "-k", "lookup and low")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  expect final_text*Bob*"])


def test_a_malformed_scenario_is_a_collection_error_that_points_at_the_key(project: pytest.Pytester) -> None:
    (project.path / "scenarios" / "typo.yaml").write_text("name: typo\nprompt: hi\nmode: scripted\nscritp: []\n")
    result = project.runpytest("--harness-scenarios", "--collect-only")
    result.stdout.fnmatch_lines(["*typo.yaml:4: scritp*script*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_the_report_is_written_from_the_runs(project: pytest.Pytester) -> None:
    result = project.runpytest("--harness-scenarios", "--harness-report=report", "-k", "lookup")
    result.assert_outcomes(passed=2)
    page = project.path / "report" / "index.html"
    result.stdout.fnmatch_lines([f"report: {page}"])
    html = page.read_text()
    assert "lookup" in html and "claude-sonnet-5" in html


def test_shards_split_the_items_like_harness_run_splits_runs(project: pytest.Pytester) -> None:
    from harness.results import shard_of

    ids = ["dropper[claude-sonnet-5-default-r0]", "lookup[claude-sonnet-5-high-r0]", "lookup[claude-sonnet-5-low-r0]"]
    for k in (1, 2):
        result = project.runpytest("--harness-scenarios", "--collect-only", "-q", f"--harness-shard={k}/2", "scenarios")
        shown = {run_id for run_id in ids if run_id in result.stdout.str()}
        assert shown == {run_id for run_id in ids if shard_of(run_id, 2) == k}


def test_a_bad_shard_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--harness-shard=3/2")
    result.stderr.fnmatch_lines(["*--harness-shard '3/2': K counts from 1 and must be at most N=2*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
