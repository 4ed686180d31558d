"""Every finding shown whatever the outcome, and a replay miss named by the rule that explains it.

A behaviour regression under replay (the CI default) changes the agent's request, so the cassette
has nothing to answer it with: the run must say which rule the changed request breaks (exit 1), and
keep the closest-recording diff after it; only a miss nothing explains is the harness's error (exit 2).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from run_support import Project

from harness.cli import main
from harness.results import read_results

PARALLEL = """name: parallel
agent: {agent}
prompt: Customer C1 wants a refund for order O1.
tools:
- name: get_customer
  input_schema: {{type: object, properties: {{customer_id: {{type: string}}}}, required: [customer_id]}}
  fixture: {{output: {{customer_id: C1}}}}
- name: lookup_order
  input_schema: {{type: object, properties: {{order_id: {{type: string}}}}, required: [order_id]}}
  fixture: {{output: {{order_id: O1}}}}
script:
- tool_use:
  - {{name: get_customer, input: {{customer_id: C1}}}}
  - {{name: lookup_order, input: {{order_id: O1}}}}
- text: Done.
"""


def run(project: Project, *args: str) -> int:
    return main(["run", *args, "--fresh", "--results", str(project.results), "--report", str(project.root / "report")])


def test_a_replay_miss_a_rule_explains_is_that_rules_failure_with_the_diff_after_it(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("parallel", PARALLEL.format(agent="reference"))
    assert run(project, str(path), "--record") == 0
    path.write_text(path.read_text().replace("agent: reference", "agent: buggy.drops_parallel_results"))
    capsys.readouterr()

    assert run(project, str(path), "--mode", "replay") == 1
    [result] = read_results(project.results)
    assert result.status == "failed" and result.mode == "replay"
    assert [f.code for f in result.unexpected_errors] == ["T001"]
    [t001] = result.unexpected_errors
    assert t001.step == 2
    reasons = result.reasons()
    assert reasons[0].startswith("T001 thread 1, step 2, messages[2]: no tool_result")
    assert any(line.startswith("replay: no recorded interaction matches") for line in reasons[1:])
    out = capsys.readouterr().out
    assert out.index("T001 thread 1, step 2") < out.index("replay: no recorded interaction matches")
    assert out.count("replay: no recorded interaction matches") == 1  # said once, not again as an expectation
    assert "_Mismatch" not in out

    junit = project.root / "junit.xml"
    main(["report", str(project.results), "-o", str(project.root / "r2"), "--junit", str(junit)])
    failure = ET.parse(junit).getroot().find("testcase/failure")
    assert failure is not None and (failure.get("message") or "").startswith("T001 thread 1, step 2")


def test_a_replay_miss_nothing_explains_is_the_harness_error(project: Project,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("parallel", PARALLEL.format(agent="reference"))
    assert run(project, str(path), "--record") == 0
    path.write_text(path.read_text().replace("Customer C1 wants", "Customer C2 wants"))
    assert run(project, str(path), "--mode", "replay") == 2
    [result] = read_results(project.results)
    assert result.status == "error" and result.unexpected_errors == []
    assert result.why().startswith("replay: no recorded interaction matches")
    # the harness refused the request: not a failure the agent should have retried (E001), even as a warning
    assert [f.line() for f in result.findings] == []


def test_findings_of_an_error_run_are_in_the_summary(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    # The agent answers the first tool_use only, and the script has one step too few for it.
    path = project.scenario("short",
                            PARALLEL.format(agent="buggy.drops_parallel_results").replace("- text: Done.\n", "")
                            + "mode: scripted\n")
    assert run(project, str(path)) in (1, 2)
    [result] = read_results(project.results)
    out = capsys.readouterr().out
    [row] = [line for line in out.splitlines() if line.startswith("parallel ")]
    assert "T001" in row.split()[-1]
    assert "T001 thread 1, step 2" in out


def test_a_step_limit_breaker_whose_script_is_as_long_as_the_limit_is_b001(project: Project) -> None:
    scenario = Path(__file__).parents[2] / "scenarios" / "buggy-ignores-step-limit.yaml"
    text = scenario.read_text().split("script:")[0].split("\n", 1)[1]
    path = project.scenario("limit", text + "script:\n"
                            "- tool_use: {name: lookup_order, input: {order_id: O1}}\n"
                            "- tool_use: {name: lookup_order, input: {order_id: O1}}\nmode: scripted\n")
    assert run(project, str(path)) == 0
    [result] = read_results(project.results)
    assert result.status == "passed" and "B001" in {f.code for f in result.findings}


# Asks again at once, whatever failed: a loop without back-off, which E001 names on a model's 529.
IMPATIENT = """def agent(client, task):
    return [ask(client.with_options(max_retries=0), task, content) for content in (task.turns[0], "Thanks.")][-1]

def ask(client, task, content):
    for _ in range(3):
        try:
            response = client.messages.create(**task.request_params(), messages=[{"role": "user", "content": content}])
        except Exception:  # the point: it asks again at once, whatever failed
            continue
        return "".join(block.text for block in response.content if block.type == "text")
    raise RuntimeError("gave up")
"""


@pytest.mark.parametrize("miss", ["replay", "scripted"])
def test_the_harness_own_answers_are_never_an_e001_of_the_agent(project: Project, miss: str) -> None:
    # A replay miss (refused in-process) and a script that ran out (a 500 saying x-should-retry:
    # false) are the harness's answers: asking again at once cannot help, and is no missing back-off.
    (project.root / "scenarios" / "impatient.py").write_text(IMPATIENT)
    path = project.scenario("impatient", "name: impatient\nagent: impatient:agent\nprompt: Hi\n"
                                         "script:\n- text: Hello.\n- text: You are welcome.\n")
    assert run(project, str(path), "--record") == 0
    if miss == "replay":
        path.write_text(path.read_text().replace("prompt: Hi", "prompt: Hi again"))
    else:
        path.write_text(path.read_text().replace("- text: You are welcome.\n", "mode: scripted\n"))
    assert run(project, str(path), "--mode", miss) == 2
    [result] = read_results(project.results)
    assert result.status == "error" and result.trace is not None
    assert max(len(call.attempts) for call in result.trace.calls) == 3  # the agent did ask again at once
    assert [f.line() for f in result.findings if f.code == "E001"] == []
