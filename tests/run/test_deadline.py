"""`limits.wall_time_s` and `--timeout` enforced: an overrunning run ends as `limit`, whatever the agent does.

Past the deadline every new model call is refused; an agent still running after the grace is
stopped (a command killed with its process group, a Python agent left behind, its calls refused).
An agent that keeps to its deadline itself is never blamed, even with a call under way at it.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from run_support import Project

from harness.cli import main
from harness.results import RunResult, read_results

COMMANDS = Path(__file__).resolve().parents[1] / "commands"
TWO_ANSWERS = "script: [{text: one}, {text: two}]\n"


def scenario(agent: str, *, wall_time_s: float | None = 2, extra: str = "") -> str:
    limits = f"limits: {{wall_time_s: {wall_time_s}}}\n" if wall_time_s is not None else ""
    return f"name: overrun\nagent: {agent}\nprompt: hi\nmode: scripted\n{limits}{TWO_ANSWERS}{extra}"


def run(project: Project, body: str, *args: str) -> tuple[int, RunResult]:
    path = project.scenario("overrun", body)
    status = main(["run", str(path), *args, "--fresh", "--results", str(project.results), "--no-report"])
    [result] = read_results(project.results)
    return status, result


@pytest.mark.parametrize("agent", ["overrunning_agents:sleeper", "overrunning_agents:async_sleeper"])
def test_an_agent_that_works_past_its_wall_time_is_stopped_and_ends_as_limit(
    project: Project, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, result = run(project, scenario(agent))
    assert status == 1
    assert result.duration_s < 30  # stopped, not waited for through its minute of sleep
    assert result.outcome is not None
    assert (result.outcome.status, result.outcome.limit) == ("limit", "wall_time")
    assert "the harness stopped the agent, still running" in result.outcome.reason
    assert "past limits.wall_time_s=2s" in result.outcome.reason
    assert result.status == "failed"
    [unmet] = result.failed_expectations
    assert unmet.name == "limits.wall_time_s"
    out = capsys.readouterr().out
    assert "expect limits.wall_time_s: the harness stopped the agent" in out
    # The agent reported nothing; the harness cut it short, so nothing after its end is judged.
    assert result.trace is not None and result.trace.outcome is None and not result.trace.whole_run
    assert result.steps == 0 and result.error is None


@pytest.mark.parametrize("agent", ["overrunning_agents:late_caller", "overrunning_agents:late_caller_over_http"])
def test_a_call_past_the_deadline_is_refused_and_named_by_b003(project: Project, agent: str) -> None:
    status, result = run(project, scenario(agent))
    assert status == 1
    assert result.outcome is not None and (result.outcome.status, result.outcome.limit) == ("limit", "wall_time")
    assert "refused 1 model call(s) the agent tried past limits.wall_time_s=2s" in result.outcome.reason
    assert [f.code for f in result.findings if f.severity == "error"] == ["B003"]
    assert result.steps == 2  # the refused request is checked like any other
    assert result.trace is not None
    [refused] = [e for e in result.trace.exchanges if e.status is None]
    assert refused.index == 1
    # The refusal is the harness's doing: the agent's crash on it is not reported as a second fault.
    assert [e.name for e in result.failed_expectations] == ["limits.wall_time_s"]


def test_an_agent_that_reports_the_limit_itself_after_a_refused_call(project: Project) -> None:
    _, result = run(project, scenario("overrunning_agents:late_caller_that_stops"))
    assert result.trace is not None and result.trace.outcome is not None
    assert result.trace.outcome.status == "limit"  # what the agent said is kept for the rules
    assert "B003" in {f.code for f in result.findings}


def test_a_scenario_about_the_overrun_passes_when_b003_is_expected(project: Project) -> None:
    status, result = run(project, scenario("overrunning_agents:late_caller", extra="expect: {findings: [B003]}\n"))
    assert (status, result.status) == (0, "passed")


def test_a_call_under_way_at_the_deadline_is_let_finish_and_a_loop_that_stops_itself_passes(project: Project) -> None:
    # The reference loop checks its clock before each call: its first call is still being answered
    # at the deadline (delay_s), so it stops on its own, reporting the limit with what it had.
    body = scenario("reference", extra="expect: {outcome: limit, limit: wall_time}\n").replace(
        TWO_ANSWERS, "script: [{tool_use: {name: wait, input: {}}, delay_s: 3}]\n"
        "tools: [{name: wait, input_schema: {type: object}, fixture: {output: done}}]\n"
    )
    status, result = run(project, body)
    assert (status, result.status) == (0, "passed"), result.reasons()
    assert result.outcome is not None and "the harness" not in result.outcome.reason
    assert result.findings == []


def test_timeout_caps_every_run(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    status, result = run(project, scenario("overrunning_agents:sleeper", wall_time_s=None), "--timeout", "1.5")
    assert status == 1
    assert result.outcome is not None and result.outcome.status == "limit"
    [unmet] = result.failed_expectations
    assert unmet.name == "timeout"
    assert "stopped the agent" in unmet.message and "past --timeout 1.5s" in unmet.message
    assert "expect timeout: the harness stopped the agent" in capsys.readouterr().out


def test_timeout_is_the_tighter_of_the_two(project: Project) -> None:
    _, result = run(project, scenario("overrunning_agents:late_caller_with_timeout", wall_time_s=30), "--timeout", "2")
    assert result.outcome is not None and "past --timeout 2s" in result.outcome.reason
    assert [e.name for e in result.failed_expectations] == ["timeout"]
    assert "B003" not in {f.code for f in result.findings}  # the scenario's own 30 s were kept


@pytest.mark.parametrize("value", ["0", "-2", "soon"])
def test_timeout_must_be_a_positive_number_of_seconds(project: Project, value: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(project, scenario("reference"), f"--timeout={value}")
    assert exited.value.code == 2 and "--timeout" in capsys.readouterr().err


def test_a_command_past_its_wall_time_is_killed_with_its_process_group(
    project: Project, tmp_path: Path, process_ends: Callable[[int], bool]
) -> None:
    shutil.copy(COMMANDS / "misbehaving.py", project.root / "scenarios")
    pid_file = tmp_path / "grandchild.pid"
    command = json.dumps([sys.executable, "misbehaving.py", "hang", str(pid_file)])
    t0 = time.monotonic()
    status, result = run(project, scenario(f"{{command: {command}}}"))
    assert time.monotonic() - t0 < 60  # not the 600 s the command would sleep, nor its 300 s timeout_s
    assert status == 1
    assert result.outcome is not None and (result.outcome.status, result.outcome.limit) == ("limit", "wall_time")
    assert "the harness stopped the agent" in result.outcome.reason
    assert process_ends(int(pid_file.read_text())), "the command's grandchild outlived the kill"
