"""The plugin's `harness` section is the table of runs `harness run` prints, drawn by rich the same way:
plain lines when pytest does not style its output, styled and fitted to the terminal when it does."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

ANSI = re.compile(r"\x1b\[[0-9;]*m")
RULE = re.compile(r"^=+ .* =+$")
HEADER = ["scenario", "cell", "mode", "status", "steps", "tokens", "cost", "findings"]


def harness_section(lines: list[str]) -> list[str]:
    """The lines of the `harness` section of pytest's summary, up to the next section's rule."""
    plain = [ANSI.sub("", line) for line in lines]
    start = next(i for i, line in enumerate(plain) if RULE.match(line) and " harness " in line)
    end = next(i for i in range(start + 1, len(plain)) if RULE.match(plain[i]))
    return lines[start + 1:end]


def test_off_a_terminal_the_section_is_the_run_table_in_plain_lines(project: pytest.Pytester) -> None:
    result = project.runpytest("--harness-scenarios")
    result.assert_outcomes(passed=3, failed=1)
    section = harness_section(result.outlines)
    assert "\x1b" not in "\n".join(section)
    assert section[0].split() == HEADER
    cost = r"\$\d+\.\d{4}"
    assert re.fullmatch(rf"dropper +claude-sonnet-5-default +scripted +failed +2 +\d+ +{cost} +T001", section[1])
    assert re.fullmatch(rf"lookup +claude-sonnet-5-high +scripted +passed +2 +\d+ +{cost} +-", section[2])
    assert re.fullmatch(rf"lookup +claude-sonnet-5-low +scripted +passed +2 +\d+ +{cost} +-", section[3])
    assert section[4:6] == ["3 run(s): 2 passed, 1 failed", "findings by code: T001 x1"]


def test_the_table_is_the_one_harness_run_prints_for_the_same_runs(project: pytest.Pytester) -> None:
    section = harness_section(project.runpytest("--harness-scenarios").outlines)
    done = subprocess.run([sys.executable, "-m", "harness", "run", "scenarios",
                           "--results", str(project.path / "r.jsonl"), "--no-report"],
                          cwd=project.path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    printed = done.stdout.splitlines()
    start = next(i for i, line in enumerate(printed) if line.split() == HEADER)
    assert printed[start:start + 4] == section[:4]


def test_on_a_styled_80_column_terminal_the_table_fits_and_the_reason_still_leads(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = project.runpytest_subprocess("--harness-scenarios", "--color=yes", "-rf")
    result.assert_outcomes(passed=3, failed=1)
    section = harness_section(result.outlines)
    shown = [ANSI.sub("", line).rstrip() for line in section]
    assert max(len(line) for line in shown) <= 80, "\n".join(shown)
    assert shown[0].split() == HEADER
    # The failed run's row is red, the others are not; its status and numbers are whole, not cut.
    [failed] = [i for i, line in enumerate(shown) if line.startswith("dropper")]
    assert "\x1b[31m" in section[failed]
    assert "\x1b[31m" not in "".join(line for line in section if ANSI.sub("", line).startswith("lookup"))
    assert re.search(r" scripted +failed +2 +\d+ +\$\d+\.\d{4} +T001$", shown[failed]), shown[failed]
    assert "3 run(s): 2 passed, 1 failed" in shown
    # pytest's own short summary line, below, still starts with the codes and the reason (issue 9).
    [line] = [ANSI.sub("", text) for text in result.outlines if ANSI.sub("", text).startswith("FAILED ")]
    assert line.startswith("FAILED T001 thread 1, step 2, messages[2]: no tool_res"), line


def test_a_run_that_errs_before_any_call_cost_nothing(project: pytest.Pytester) -> None:
    # Its replay has no cassette: no call was made, so it cost $0 at any price, not "unpriced", here and
    # in `harness run`'s table for the same run.
    (project.path / "scenarios" / "unrecorded.yaml").write_text(
        "name: unrecorded\nprompt: Hi\nmode: replay\ncassette: nowhere.yaml\n")
    section = harness_section(project.runpytest("--harness-scenarios", "-k", "unrecorded").outlines)
    assert re.fullmatch(r"unrecorded +claude-sonnet-5-default +replay +error +0 +0 +\$0\.0000 +-", section[1])
    done = subprocess.run([sys.executable, "-m", "harness", "run", "scenarios/unrecorded.yaml",
                           "--results", str(project.path / "r.jsonl"), "--no-report"],
                          cwd=project.path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert section[1] in done.stdout.splitlines()


def test_harness_results_naming_a_scenario_is_a_usage_error_and_the_scenario_is_kept(project: pytest.Pytester) -> None:
    # The session collects that very file; writing the results over it (exit 0) lost the scenario.
    scenario = project.path / "scenarios" / "lookup.yaml"
    before = scenario.read_text(encoding="utf-8")
    outcome = project.runpytest("--harness-scenarios", "--harness-results", str(scenario), "scenarios")
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    assert scenario.read_text(encoding="utf-8") == before
    outcome.stderr.fnmatch_lines([f"*{scenario} exists and is not a results file*never writes over a file*"])


def test_harness_report_naming_a_site_s_folder_is_a_usage_error_and_its_page_is_kept(project: pytest.Pytester) -> None:
    # The report's index.html replaced whatever the folder held, a site's own page too.
    site = project.path / "site"
    site.mkdir()
    page = "<!DOCTYPE html>\n<html>\n<title>Our docs</title>\n"
    (site / "index.html").write_text(page, encoding="utf-8")
    outcome = project.runpytest("--harness-scenarios", "--harness-report", str(site), "scenarios")
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    assert (site / "index.html").read_text(encoding="utf-8") == page
    outcome.stderr.fnmatch_lines([f"*--harness-report: {site / 'index.html'} exists and is not a harness report page*"])
