"""Agents as commands: a real process per run, talking to the run's endpoint over real HTTP.

The agent here is a Python program in its own process (the SDK reads ANTHROPIC_BASE_URL and
ANTHROPIC_API_KEY, as any SDK in any language does), so every check comes from the wire.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import ScenarioError
from harness.results import RunResult, read_results
from harness.scenario import load_scenario

HERE = Path(__file__).resolve().parent

TOOLS = """tools:
  - name: get_customer
    input_schema: {type: object, properties: {customer_id: {type: string}}, required: [customer_id]}
    fixture:
      match:
        - {input: {customer_id: C1}, output: {name: Ana Ruiz}}
  - name: process_refund
    input_schema: {type: object, properties: {customer_id: {type: string}}, required: [customer_id]}
    fixture: {output: {refunded: true}}
"""

REFUND = f"""name: refund
agent: {{command: [{json.dumps(sys.executable)}, loop_agent.py], timeout_s: 60}}
prompt: Refund customer C1.
{TOOLS}limits: {{steps: 5}}
mode: scripted
script:
  - tool_use: {{name: get_customer, input: {{customer_id: C1}}}}
  - tool_use: {{name: process_refund, input: {{customer_id: C1}}}}
  - text: Refunded Ana Ruiz.
expect:
  outcome: completed
  final_text: {{contains: Refunded}}
  tools_called: {{calls: [{{name: get_customer}}, {{name: process_refund}}]}}
"""


def run(tmp_path: Path, scenario: str, name: str = "scenario") -> tuple[int, list[RunResult]]:
    shutil.copy(HERE / "loop_agent.py", tmp_path)
    shutil.copy(HERE / "misbehaving.py", tmp_path)
    path = tmp_path / f"{name}.yaml"
    path.write_text(scenario, encoding="utf-8")
    status = main(["run", str(path), "--results", str(tmp_path / "results.jsonl"), "--no-report", "-j", "2", "--fresh"])
    return status, read_results(tmp_path / "results.jsonl")


def test_a_command_agent_is_judged_from_the_wire_like_a_python_agent(tmp_path: Path) -> None:
    status, [result] = run(tmp_path, REFUND)
    assert status == 0, (result.error, result.outcome, result.findings, result.expectations)
    assert result.outcome is not None and result.outcome.final_text == "Refunded Ana Ruiz."
    assert result.steps == 3 and result.trace is not None
    # Tools run on the endpoint are the run's tool events, paired with their tool_use ids.
    uses = [b["id"] for call in result.trace.calls
            for b in (call.response or {}).get("content", []) if b["type"] == "tool_use"]
    assert [(e.name, e.tool_use_id) for e in result.trace.tool_executions] == list(
        zip(["get_customer", "process_refund"], uses, strict=True)
    )


def test_a_workflow_policy_applies_to_a_command_agent(tmp_path: Path) -> None:
    scenario = REFUND.replace("expect:",
                              "policies:\n  approvals: [{tool: process_refund, approval_tool: ask_manager}]\nexpect:")
    scenario = scenario.replace("  outcome: completed\n", "  outcome: completed\n  findings: [W002]\n")
    status, [result] = run(tmp_path, scenario)
    assert [f.code for f in result.findings] == ["W002"], result.findings


def test_the_task_file_holds_the_request_turns_limits_scenario_and_case(tmp_path: Path) -> None:
    dump = tmp_path / "dump.py"
    dump.write_text("import os, shutil; shutil.copy(os.environ['HARNESS_TASK'], 'task.json'); print('ok')\n")
    scenario = f"""name: dump
agent: {{command: [{json.dumps(sys.executable)}, dump.py]}}
system: Be brief.
turns: [one, two]
effort: low
{TOOLS}limits: {{steps: 4, tokens: 1000}}
mode: scripted
script: [{{text: hi}}]
"""
    run(tmp_path, scenario, "dump")
    task = json.loads((tmp_path / "task.json").read_text())
    assert task["request"]["system"] == "Be brief."
    assert task["request"]["output_config"] == {"effort": "low"}
    assert [t["name"] for t in task["request"]["tools"]] == ["get_customer", "process_refund"]
    assert task["turns"] == ["one", "two"]
    assert task["limits"] == {"steps": 4, "tokens": 1000}
    assert (task["scenario"], task["case"]) == ("dump", {"model": "claude-sonnet-5", "effort": "low"})


def _misbehaving(how: str, *extra: str, timeout_s: float = 60) -> str:
    args = ", ".join(json.dumps(a) for a in (sys.executable, "misbehaving.py", how, *extra))
    return f"""name: {how}
agent: {{command: [{args}], timeout_s: {timeout_s}, env: {{GREETING: hello}}}}
prompt: hi
mode: scripted
script: [{{text: hi}}]
"""


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("exit",
         "exited with status 3\nlast lines of its stderr:\n  Traceback (most recent call last):\n  "
         "ValueError: the agent fell over"),
        ("abort", "was killed by SIGABRT (signal 6)"),
        ("garbage", "exited with status 0 but printed bytes that are not UTF-8 on stdout"),
        ("half-json", "its last line starts like JSON but is not"),
        ("bad-outcome", "`outcome` must be one of completed, limit, refused, error, got 'finished'"),
        ("silent", "printed nothing on stdout"),
    ],
)
def test_a_command_that_goes_wrong_is_that_runs_error_outcome(tmp_path: Path, how: str, said: str) -> None:
    status, [result] = run(tmp_path, _misbehaving(how))
    assert result.outcome is not None and result.outcome.status == "error"
    assert result.outcome.reason.startswith(f"agent command `{sys.executable} misbehaving.py {how}` ")
    assert said in result.outcome.reason


def test_a_request_that_is_no_api_call_is_noted_in_the_runs_trace(tmp_path: Path) -> None:
    status, [result] = run(tmp_path, _misbehaving("wrong-path"))
    assert status == 0, (result.error, result.outcome)
    assert result.trace is not None
    assert [e.status for e in result.trace.exchanges] == [404, 200]
    assert "the endpoint answered 404 to POST /chat/completions: not a Messages API path" in result.trace.notes


def test_a_failed_commands_stderr_is_shown_inside_its_runs_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each reason is one line: the quoted stderr used to start at the left margin, as if it were
    # the console's own output rather than this run's.
    _, [result] = run(tmp_path, _misbehaving("exit"))
    assert all("\n" not in reason for reason in result.reasons()), result.reasons()
    out = capsys.readouterr().out
    block = out.split("ERROR exit [claude-sonnet-5-default]", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert "      ValueError: the agent fell over" in block, block
    assert all(line.startswith("    ") for line in block), block


def test_an_outcome_object_and_the_commands_env_and_cwd(tmp_path: Path) -> None:
    _, [refused] = run(tmp_path, _misbehaving("outcome"))
    assert refused.outcome is not None
    assert (refused.outcome.status, refused.outcome.final_text, refused.outcome.reason) == (
        "refused", "I will not do that.", "policy"
    )
    _, [env] = run(tmp_path, _misbehaving("env"))
    assert env.outcome is not None and env.outcome.final_text == f"hello {tmp_path.name}"


def test_a_command_not_found_is_an_error_outcome_and_the_other_runs_go_on(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "lost.yaml").write_text(
        "agent: {command: [no-such-agent-binary, x]}\nprompt: hi\nmode: scripted\nscript: [{text: hi}]\n"
    )
    (tmp_path / "scenarios" / "fine.yaml").write_text(REFUND)
    shutil.copy(HERE / "loop_agent.py", tmp_path / "scenarios")
    main(["run", str(tmp_path / "scenarios"), "--results", str(tmp_path / "r.jsonl"), "--no-report", "-j", "2"])
    results = {r.scenario: r for r in read_results(tmp_path / "r.jsonl")}
    assert results["refund"].status == "passed", results["refund"].error
    lost = results["lost"].outcome
    assert lost is not None and lost.status == "error"
    assert (f"agent command `no-such-agent-binary x` command not found: 'no-such-agent-binary' "
            f"(cwd {tmp_path / 'scenarios'})") in lost.reason


def test_a_command_that_hangs_is_killed_with_its_process_group(
    tmp_path: Path, process_ends: Callable[[int], bool]
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    t0 = time.monotonic()
    _, [result] = run(tmp_path, _misbehaving("hang", str(pid_file), timeout_s=2))
    assert time.monotonic() - t0 < 60  # not the 600 s the command would sleep
    assert result.outcome is not None
    assert "did not finish within timeout_s=2; killed with every process it started" in result.outcome.reason
    assert process_ends(int(pid_file.read_text())), "the command's grandchild outlived the kill"


def test_a_grandchild_in_a_session_of_its_own_is_killed_with_a_command_that_hangs(
    tmp_path: Path, process_ends: Callable[[int], bool]
) -> None:
    # setsid() takes a process out of the command's process group: killing the group missed it, and it
    # slept on for 600 s after the run.
    pid_file = tmp_path / "grandchild.pid"
    _, [result] = run(tmp_path, _misbehaving("hang-setsid", str(pid_file), timeout_s=2))
    assert result.outcome is not None and "did not finish within timeout_s=2" in result.outcome.reason
    assert process_ends(int(pid_file.read_text())), "the command's setsid grandchild outlived the kill"


def test_a_daemon_a_command_started_is_ended_with_its_run(
    tmp_path: Path, process_ends: Callable[[int], bool]
) -> None:
    pid_file = tmp_path / "daemon.pid"
    _, [result] = run(tmp_path, _misbehaving("daemon", str(pid_file)))
    assert result.outcome is not None and result.outcome.final_text == "started a daemon", result.outcome
    assert process_ends(int(pid_file.read_text())), "the daemon the command started outlived the run"


@pytest.mark.parametrize("how", ["leaves-child", "leaves-child-quiet"])
def test_a_command_that_exits_leaving_a_child_completes_and_the_child_is_ended(
    tmp_path: Path, how: str, process_ends: Callable[[int], bool]
) -> None:
    # A child that holds stdout open used to make the harness wait until timeout_s and call a command
    # that had finished a hang; one that let go of stdout outlived the run.
    pid_file = tmp_path / "child.pid"
    t0 = time.monotonic()
    status, [result] = run(tmp_path, _misbehaving(how, str(pid_file), timeout_s=30))
    assert time.monotonic() - t0 < 25
    assert result.outcome is not None and result.outcome.status == "completed", result.outcome
    assert result.outcome.final_text == "hi"
    assert process_ends(int(pid_file.read_text())), "the command's child outlived the run"


@pytest.mark.parametrize(
    ("agent", "line", "key", "problem"),
    [
        ("{command: []}", 2, "agent.command", "at least 1 item"),
        ("{command: [node], timeout: 5}", 2, "agent.timeout", "unknown key; valid keys: command, cwd, env, timeout_s"),
        ("{command: [node], timeout_s: 0}", 2, "agent.timeout_s", "greater than 0"),
        ("{command: [node], env: {ANTHROPIC_API_KEY: x}}", 2, "agent.env", "ANTHROPIC_API_KEY is set by the harness"),
    ],
)
def test_a_malformed_agent_command_points_at_its_line_and_key(
    tmp_path: Path, agent: str, line: int, key: str, problem: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"prompt: hi\nagent: {agent}\n")
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    assert (raised.value.line, raised.value.key) == (line, key)
    assert problem in raised.value.problem


PEAK_RSS = """import resource, sys
from harness.cli import main

def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

main(["run", sys.argv[1], "--results", sys.argv[3], "--no-report", "--fresh"])
before = peak_kib()
main(["run", sys.argv[2], "--results", sys.argv[3], "--no-report", "--fresh"])
print(before, peak_kib())
"""


def test_a_command_that_floods_its_output_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # 100 MiB on stdout and on stderr used to be held whole (about 500 MiB of RSS); only the last line
    # and a tail for error messages matter. The same process first runs a quiet command, for a baseline.
    shutil.copy(HERE / "misbehaving.py", tmp_path)
    (tmp_path / "quiet.yaml").write_text(_misbehaving("env"))
    (tmp_path / "flood.yaml").write_text(_misbehaving("flood"))
    (tmp_path / "peak.py").write_text(PEAK_RSS)
    done = subprocess.run(
        [sys.executable, "peak.py", "quiet.yaml", "flood.yaml", "results.jsonl"], cwd=tmp_path,
        capture_output=True, text=True, timeout=300, check=True,
    )
    before, after = map(int, done.stdout.split()[-2:])
    assert after - before < 40 * 1024, f"peak RSS grew by {(after - before) // 1024} MiB reading 200 MiB of output"
    flood = read_results(tmp_path / "results.jsonl")[-1]
    assert flood.outcome is not None and flood.outcome.final_text == "the answer after the flood", flood.outcome


def test_a_cut_stderr_or_stdout_is_said_in_the_error(tmp_path: Path) -> None:
    _, [failed] = run(tmp_path, _misbehaving("flood-and-fail"))
    assert failed.outcome is not None
    reason = failed.outcome.reason
    assert "exited with status 3" in reason and reason.endswith("  ValueError: the last words"), reason[-300:]
    assert "last lines of its stderr (of 17.2 MiB, the last 64 KiB kept):" in reason, reason[:300]
    _, [long_line] = run(tmp_path, _misbehaving("one-long-line"))
    assert long_line.outcome is not None
    assert ("exited with status 0 but printed 3 MiB on stdout and its last line is longer than the 1 MiB the "
            "harness keeps: the final answer must be a line shorter than that") in long_line.outcome.reason


MISUSE = f"""name: misuse
agent: {{command: [{json.dumps(sys.executable)}, misbehaving.py, misuses-routes, answers.json], timeout_s: 60}}
prompt: Refund customer C1.
{TOOLS}mode: scripted
script:
  - tool_use: {{name: get_customer, input: {{customer_id: C1}}}}
  - text: Done.
"""


@pytest.fixture(scope="module")
def misuse(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, dict[str, Any]]:
    """One run of a command that calls the harness's own routes wrongly, and what it was answered."""
    tmp_path = tmp_path_factory.mktemp("misuse")
    _, [result] = run(tmp_path, MISUSE, "misuse")
    return result, json.loads((tmp_path / "answers.json").read_text())


def _said(answer: dict[str, Any]) -> tuple[int, str, str]:
    return answer["status"], answer["body"]["error"]["type"], answer["body"]["error"]["message"]


def test_a_tool_use_id_the_run_never_issued_or_that_names_another_tool_is_refused(
    misuse: tuple[RunResult, dict[str, Any]],
) -> None:
    result, said = misuse
    answers, tool_use_id = said["answers"], said["tool_use_id"]
    status, kind, message = _said(answers["never issued"])
    assert (status, kind) == (409, "conflict_error")  # the API's type for a 409, as the scripted model's
    assert message.startswith("x-harness-tool-use-id toolu_never_issued is the id of no tool_use block the run's "
                              f"answers asked for (open: get_customer {tool_use_id})"), message
    status, kind, message = _said(answers["another tool's id"])
    assert (status, kind) == (409, "conflict_error")
    assert message.startswith(f"x-harness-tool-use-id {tool_use_id} is a tool_use block of get_customer, "
                              "not process_refund"), message
    assert answers["right"] == {"status": 200, "body": {"content": '{"name": "Ana Ruiz"}', "is_error": False}}
    status, kind, message = _said(answers["run twice"])
    assert (status, kind) == (409, "conflict_error")
    assert message.startswith(f"x-harness-tool-use-id {tool_use_id} was run already: each tool_use gets one "
                              "tool_result"), message
    # Refused calls ran nothing: the run's tool events hold the one call that was right.
    assert result.trace is not None
    assert [(e.name, e.tool_use_id) for e in result.trace.tool_executions] == [("get_customer", tool_use_id)]
    # Each refusal is noted in the run's trace, as the endpoint's other answers to bad requests are.
    for what in ("never issued", "another tool's id", "run twice"):
        path = "process_refund" if what == "another tool's id" else "get_customer"
        assert (f"the endpoint answered 409 to POST /harness/tools/{path}: {_said(answers[what])[2]}"
                in result.trace.notes), (what, result.trace.notes)


def test_asking_for_the_next_turn_of_a_scenario_with_no_simulated_user_is_a_404_saying_how_to_declare_one(
    misuse: tuple[RunResult, dict[str, Any]],
) -> None:
    result, said = misuse
    status, kind, message = _said(said["answers"]["no user"])
    assert (status, kind) == (404, "not_found_error"), said["answers"]["no user"]
    assert message.startswith("this scenario declares no simulated user, so there is no next user turn to ask for: "
                              "the agent's last final answer is the run's."), message
    assert 'declare one in the scenario: `user: {persona: "..."}`' in message
    assert result.trace is not None
    assert f"the endpoint answered 404 to POST /harness/user: {message}" in result.trace.notes


def test_the_tool_routes_refusals_are_plain_text_with_json_for_values(
    misuse: tuple[RunResult, dict[str, Any]],
) -> None:
    # A foreign agent's author reads these: the input it sent shows as the JSON it sent, not as a
    # Python repr ({'customer_id': ['C8', 'C9']}).
    answers, tool_use_id = misuse[1]["answers"], misuse[1]["tool_use_id"]
    status, kind, message = _said(answers["unasked"])
    assert (status, kind) == (409, "conflict_error")
    assert message == (
        'no answer of this run asks for process_refund with input {"customer_id": ["C8", "C9"]} and is still '
        f"unanswered (open tool_use blocks: get_customer {tool_use_id}). Call a tool once the answer asking for it "
        "has been read to its end, or send its tool_use id in the x-harness-tool-use-id header"
    )
    assert _said(answers["unknown tool"])[::2] == (
        404, "no tool refund_everything in this scenario (its tools: get_customer, process_refund)"
    )
    assert _said(answers["not an object"])[::2] == (400, "the tool's input must be a JSON object, got an array")
