"""Each buggy agent really commits its anti-pattern on the wire, and the reference does not."""

from __future__ import annotations

import re

import pytest
from bug_scripts import CASES, BugCase
from support_desk import run_agent

from harness.agents import AGENTS, buggy
from harness.agents.buggy import BUGGY_AGENTS
from harness.checks import rules


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_buggy_agent_commits_its_bug(case: BugCase) -> None:
    run = run_agent(case.agent, case.task(), case.script)

    assert case.committed(run), f"{case.agent.name} did not commit its bug: {run.outcome}, {len(run.calls)} calls"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_reference_on_the_same_script_does_not(case: BugCase) -> None:
    run = run_agent(case.reference, case.task(), case.script)

    assert not case.committed(run), f"the reference shows {case.agent.breaks}'s bug: {run.outcome}"


def test_every_buggy_agent_has_a_script_a_rule_code_a_reason_and_its_name() -> None:
    assert sorted(c.agent.name for c in CASES) == sorted(BUGGY_AGENTS)
    for name, agent in BUGGY_AGENTS.items():
        assert re.fullmatch(r"[LTHBREMW]\d{3}", agent.breaks), name
        assert agent.breaks in rules(), name
        # What the agent does wrong, then why it is wrong.
        assert agent.__doc__ and len(agent.__doc__.strip().split("\n\n")) == 2, name
        assert AGENTS[f"buggy.{name}"] is agent
        assert getattr(buggy, name) is agent, "the module attribute is the agent, named once by its class"


def test_the_module_lists_every_buggy_agent_and_nothing_private() -> None:
    assert sorted(buggy.__all__) == sorted([*BUGGY_AGENTS, "BUGGY_AGENTS", "BuggyAgent", "buggy_agent"])
