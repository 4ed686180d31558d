"""The whole pipeline catches every buggy agent by its own rule, and never flags the reference.

Each run goes through the real path: the agent's SDK client talks HTTP to the scripted model's
server, vcrpy records the traffic to a cassette, the cassette is read back as a trace, and the
built-in rules check it with the options the task declares.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anthropic
import pytest
import vcr
from bug_scripts import CASES, BugCase

from harness.agents import AgentFn, Task, async_reference_agent, reference_agent
from harness.checks import Finding, check_trace
from harness.trace import Outcome, load_trace
from harness.transport.scripted import ScriptedModel


def check_options(task: Task) -> dict[str, Any]:
    """The options a scenario declaring this task would pass to the rules."""
    return {
        "limits": {k: v for k, v in asdict(task.limits).items() if v is not None},
        "sequential_tools": sorted(task.sequential_tools),
        **task.policies,
    }


def recorded_run(agent: AgentFn, case: BugCase, cassette: Path) -> list[Finding]:
    """Run `agent` on the case's script over HTTP under vcrpy, then check the recorded trace."""
    model = ScriptedModel(case.script)
    task = case.task()
    with model.serve() as base_url, vcr.VCR().use_cassette(str(cassette), record_mode="all"):
        client_args: dict[str, Any] = {"base_url": base_url, "api_key": "sk-ant-test", "max_retries": 0}
        if inspect.iscoroutinefunction(agent):
            result = asyncio.run(agent(anthropic.AsyncAnthropic(**client_args), task))
        else:
            result = agent(anthropic.Anthropic(**client_args), task)
    trace = load_trace(cassette, whole_run=True)
    assert trace.calls, f"nothing recorded in {cassette}"
    trace.outcome = result if isinstance(result, Outcome) else Outcome(status="completed", final_text=result)
    trace.tool_executions = list(task.executions)
    return check_trace(trace, options=check_options(task))


def _describe(findings: list[Finding]) -> str:
    return "\n".join(f"  {f.code} {f.severity} {f.where()}: {f.message}" for f in findings) or "  (none)"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_buggy_agent_is_caught_by_exactly_its_rule(case: BugCase, tmp_path: Path) -> None:
    findings = recorded_run(case.agent, case, tmp_path / "buggy.yaml")

    errors = {f.code for f in findings if f.severity == "error"}
    assert errors == {case.agent.breaks} | case.also, (
        f"{case.agent.name} breaks {case.agent.breaks}; the checker found:\n{_describe(findings)}"
    )


REFERENCES = [
    pytest.param(case, case.reference, id=f"{case.id}-{getattr(case.reference, '__name__', 'reference')}")
    for case in CASES
] + [
    pytest.param(case, async_reference_agent, id=f"{case.id}-async_reference_agent")
    for case in CASES
    if case.reference is reference_agent
]


@pytest.mark.parametrize(("case", "reference"), REFERENCES)
def test_the_reference_on_the_same_script_is_not_flagged(case: BugCase, reference: AgentFn, tmp_path: Path) -> None:
    findings = recorded_run(reference, case, tmp_path / "reference.yaml")

    assert findings == [], f"the reference was flagged on {case.agent.name}'s script:\n{_describe(findings)}"
