"""M001: a subagent thread starts from its brief, not from the coordinator's messages."""

from __future__ import annotations

import copy

from recordings import Conversation, Recording, check, codes, text, tool_use

DELEGATE = [{"name": "delegate_research", "description": "Ask a subagent.",
             "input_schema": {"type": "object", "properties": {"brief": {"type": "string"}}, "required": ["brief"]}}]


def coordinator(recording: Recording, key: str | None) -> Conversation:
    lead = recording.conversation(system="You coordinate research.", tools=DELEGATE, key=key)
    lead.user("Compare refund policies of shops A and B")
    lead.call(text("Plan: research A, then B."))
    lead.user("Go ahead")
    lead.call(tool_use("delegate_research", {"brief": "Refund policy of shop A"}))
    return lead


def test_m001_a_subagent_given_the_coordinators_history(recording: Recording) -> None:
    lead = coordinator(recording, "lead")
    sub = recording.conversation(system="You research one shop.", tools=[], key="lead/research-1")
    sub.messages = copy.deepcopy(lead.messages[:3]) + [{"role": "assistant", "content": "Delegating."},
                                                       {"role": "user", "content": "Refund policy of shop A"}]
    sub.call(text("Shop A refunds within 30 days."))
    lead.results("Shop A refunds within 30 days.")
    lead.call(text("A: 30 days."))
    findings = check(recording)
    assert codes(findings) == {"M001"}
    assert findings[0].thread == 2 and "3 messages of thread 1" in findings[0].message


def test_m001_found_on_the_wire_without_thread_keys(recording: Recording) -> None:
    lead = coordinator(recording, None)
    lead.results("Shop A refunds within 30 days.")
    lead.call(text("A: 30 days."))
    sub = recording.conversation(system="You research one shop.", tools=[])
    sub.messages = copy.deepcopy(lead.messages[:2]) + [{"role": "user", "content": "Now shop B"}]
    sub.call(text("Shop B refunds within 14 days."))
    assert codes(check(recording)) == {"M001"}


def test_m001_a_subagent_with_only_its_brief_and_a_fork_of_the_same_agent_are_fine(recording: Recording) -> None:
    lead = coordinator(recording, "lead")
    sub = recording.conversation(system="You research one shop.", tools=[], key="lead/research-1")
    sub.user("Objective: refund policy of shop A. Output: one line. Out of scope: shop B.")
    sub.call(text("Shop A refunds within 30 days."))
    lead.results("Shop A refunds within 30 days.")
    lead.call(text("A: 30 days."))
    fork = recording.conversation(system="You coordinate research.", tools=DELEGATE, key="lead-retry")
    fork.messages = copy.deepcopy(lead.messages[:2]) + [{"role": "user", "content": "Try shop C instead"}]
    fork.call(text("Looking at shop C."))
    assert check(recording, whole_run=True) == []
