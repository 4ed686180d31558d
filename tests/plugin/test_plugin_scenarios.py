"""Scenario files collected as test items: ids, pass and fail for the right reasons, results, report, summary."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
        "T001 (failed, scripted; outcome completed*",
        "  scenario file: scenarios/dropper.yaml",  # as typed from the project, not an absolute path
        "  T001 thread 1, step 2, messages[[]2[]]: no tool_result for tool_use * (lookup_order, *",
        "*= harness =*",
        "3 run(s): 2 passed, 1 failed",
        "findings by code: T001 x1",
        f"results: {results}",
        # the one line pytest keeps per failure says what broke first, then which run
        "FAILED T001 thread 1, step 2, messages[[]2[]]: no tool_res… scenarios/dropper.yaml::dropper[[]*",
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


def test_a_run_ending_in_error_fails_without_expect(project: pytest.Pytester) -> None:
    # the reference agent returns (does not raise) an error outcome on a 400: not a pass either
    (project.path / "scenarios" / "refused.yaml").write_text(
        "name: refused\nprompt: hi\nmode: scripted\nscript:\n- error: {type: invalid_request_error}\n"
    )
    result = project.runpytest("--harness-scenarios", "-k", "refused")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED the agent's run ended in error: HTTP 400*"])


def test_a_malformed_scenario_is_a_collection_error_that_points_at_the_key(project: pytest.Pytester) -> None:
    (project.path / "scenarios" / "typo.yaml").write_text("name: typo\nprompt: hi\nmode: scripted\nscritp: []\n")
    result = project.runpytest("--harness-scenarios", "--collect-only")
    result.stdout.fnmatch_lines(["*typo.yaml:4: scritp*script*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_case_whose_scorer_cannot_be_imported_is_a_collection_error(project: pytest.Pytester) -> None:
    (project.path / "scenarios" / "cased.yaml").write_text(
        "name: cased\nprompt: '{{ q }}'\nmode: scripted\nscript: [{text: ok}]\ncases: [{id: one, vars: {q: hi}}]\n"
        "score: [nowhere_module:tone]\n")
    # In a process of its own: after an in-process run that failed collecting, the next one finds the
    # rules registered twice.
    result = project.runpytest_subprocess("--harness-scenarios", "--collect-only")
    result.stdout.fnmatch_lines(["*cased.yaml:6: score[[]0[]].nowhere_module:tone: "
                                 "cannot import scorer nowhere_module:tone*"
                                 "(case 'one', cases[[]0[]])"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_scorer_registered_by_a_module_the_conftest_imports_scores_collected_scenarios(
    pytester: pytest.Pytester,
) -> None:
    # pytest has no --plugin: a conftest that imports the module registers its scorers before any
    # scenario is collected, as docs/evaluation.md says.
    pytester.makepyfile(user_scorers=(
        "from harness import ScoreContext, scorer\n\n\n"
        "@scorer('shouts')\n"
        "def shouts(ctx: ScoreContext, options: None) -> bool:\n"
        "    \"\"\"The answer ends with an exclamation mark.\"\"\"\n"
        "    return (ctx.final_text or '').endswith('!')\n"))
    pytester.makeconftest("import user_scorers  # noqa: F401\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "loud.yaml").write_text(
        "name: loud\nprompt: '{{ word }}'\nmode: scripted\nscript: [{text: '{{ word }}!'}]\n"
        "cases: [{id: hi, vars: {word: Hi}}]\nscore: [shouts]\nexpect: {min_score: 1}\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--harness-scenarios", "scenarios/loud.yaml")
    result.assert_outcomes(passed=1)


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


def _empty_shard(pytester: pytest.Pytester, node_id: str, n: int) -> int:
    """A shard K of N that does not hold `node_id`."""
    from harness.results import shard_of

    return next(k for k in range(1, n + 1) if shard_of(node_id, n) != k)


def test_an_empty_shard_passes_instead_of_failing_the_ci_job(pytester: pytest.Pytester) -> None:
    # pytest exits 5 ("no tests ran") when every item is deselected; a CI matrix job whose shard happens
    # to be empty would be red although nothing is wrong.
    pytester.makepyfile(test_user_one="def test_only():\n    pass\n")
    k = _empty_shard(pytester, "test_user_one.py::test_only", 3)
    result = pytester.runpytest(f"--harness-shard={k}/3")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*= harness =*",
                                 f"--harness-shard {k}/3: this shard holds none of the 1 collected test(s)*"])


def test_an_empty_shard_passes_under_xdist_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user_one="def test_only():\n    pass\n")
    k = _empty_shard(pytester, "test_user_one.py::test_only", 3)
    results = pytester.path / "results" / f"shard-{k}.jsonl"
    result = pytester.runpytest_subprocess("-n", "2", f"--harness-shard={k}/3", "--harness-scenarios",
                                           f"--harness-results={results}")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"--harness-shard {k}/3: this shard holds none of the 1 collected test(s)*"])
    # the CI job's upload step (if-no-files-found: error) still finds the shard's results file
    assert results.is_file() and read_results(results) == []
    assert sorted(p.name for p in results.parent.iterdir()) == [results.name]  # no worker file left


def test_a_shard_of_a_project_without_tests_still_says_no_tests_ran(pytester: pytest.Pytester) -> None:
    # only a shard that left tests to the others is empty on purpose
    assert pytester.runpytest("--harness-shard=1/3").ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_asking_for_scenarios_pytest_does_not_look_at_says_how_to_reach_them(project: pytest.Pytester) -> None:
    # `testpaths = tests` is the common setup; --harness-scenarios then used to run no scenario, silently
    project.mkdir("tests")
    (project.path / "test_user_own.py").rename(project.path / "tests" / "test_user_own.py")
    project.makeini("[pytest]\ntestpaths = tests\n")
    result = project.runpytest("--harness-scenarios")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*= harness =*",
        "warning: --harness-scenarios: 2 scenario file(s) match harness_scenario_glob (scenarios/*.yaml) but none "
        "is under the paths pytest collects (tests); name them too (`pytest scenarios tests`) or "
        "add scenarios to testpaths",
    ])
    project.runpytest("--harness-scenarios", "scenarios", "tests").assert_outcomes(passed=3, failed=1)


def test_a_glob_that_matches_nothing_is_said(project: pytest.Pytester) -> None:
    result = project.runpytest("--harness-scenarios", "-o", "harness_scenario_glob=scenario/*.yaml")
    result.stdout.fnmatch_lines(
        ["warning: --harness-scenarios: no file under * matches harness_scenario_glob (scenario/*.yaml)*"])


def test_two_scenario_files_with_one_name_are_refused(project: pytest.Pytester) -> None:
    # their runs would share run ids: colliding result lines, and a merge of xdist workers' files that fails
    other = project.mkdir("scenarios/more")
    (other / "lookup.yaml").write_text((project.path / "scenarios" / "lookup.yaml").read_text())
    result = project.runpytest("--harness-scenarios", "--collect-only", "-o",
                               "harness_scenario_glob=scenarios/**/*.yaml")
    result.stdout.fnmatch_lines(
        ["*more/lookup.yaml:1: name: scenario name 'lookup' is also used by */scenarios/lookup.yaml*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_report_that_cannot_be_built_is_an_error_line_not_an_internal_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.report

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("template is broken")

    monkeypatch.setattr(harness.report, "build_report", broken)
    results = project.path / "out" / "results.jsonl"
    result = project.runpytest("--harness-scenarios", "-k", "lookup",
                               f"--harness-results={results}", "--harness-report=rep")
    result.assert_outcomes(passed=2)
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines([
        "2 run(s): 2 passed, 0 failed",
        "error: --harness-report: the report could not be written to */rep (RuntimeError: template is broken); "
        "the results are intact*",
        f"results: {results}",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert len(read_results(results)) == 2


def test_at_80_columns_the_short_summary_starts_with_the_codes_and_the_reason(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = project.runpytest("--harness-scenarios", "-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=3, failed=1)
    [line] = [text for text in result.outlines if text.startswith("FAILED ")]
    assert line.startswith("FAILED T001 thread 1, step 2, messages[2]: no tool_res"), line
    assert line.index("T001") < 80


def test_one_test_file_named_with_scenarios_on_in_the_ini_gives_no_warning(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nharness_scenarios = true\n")
    result = project.runpytest("test_user_own.py")
    result.assert_outcomes(passed=1)
    assert "none is under the paths pytest collects" not in result.stdout.str()


LINGERING_COMMAND = """
import subprocess, sys, time
from pathlib import Path

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(Path(__file__).with_name("pids"), "a") as out:
    out.write(f"{child.pid}\\n")
time.sleep(120)
"""


def test_sigterm_ends_the_agent_command_under_way_and_what_it_started(tmp_path: Path) -> None:
    # A command agent runs in a session of its own, killed when its run ends: SIGTERM (a CI job's timeout)
    # ended pytest outright, so the command and its child went on running (`harness run` hears it as Ctrl-C).
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "lingers.py").write_text(LINGERING_COMMAND, encoding="utf-8")
    (scenarios / "lingers.yaml").write_text(
        f"name: lingers\nprompt: hi\nagent: {{command: [{json.dumps(sys.executable)}, lingers.py]}}\n"
        "mode: scripted\nscript:\n  - text: hi\n", encoding="utf-8")
    pids = scenarios / "pids"
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--harness-scenarios", str(scenarios),
         "--harness-results", str(tmp_path / "results.jsonl")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text().strip()):
            assert session.poll() is None and time.monotonic() < deadline, session.communicate()
            time.sleep(0.05)
        child = int(pids.read_text().split()[0])
        with open(f"/proc/{child}/stat") as stat:  # the command is the child's parent
            command = int(stat.read().rsplit(")", 1)[1].split()[1])
        session.send_signal(signal.SIGTERM)
        out, _ = session.communicate(timeout=60)
    finally:
        if session.poll() is None:
            session.kill()
    try:
        assert "KeyboardInterrupt" in out, out  # ended as Ctrl-C ends it
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in (child, command)):
            assert time.monotonic() < deadline, "an agent command outlived the terminated pytest session"
            time.sleep(0.05)
    finally:  # failing, the test leaves nothing running
        for pid in (pid for pid in (child, command) if not _gone(pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
