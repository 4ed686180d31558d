"""For each buggy agent: a task and a script that provoke its bug, and how the bug shows in a run.

Shared by the wire tests (the bug is really committed, the reference does not commit it) and the
checker tests (the rule of `breaks` catches it, the reference is not flagged).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from support_desk import APPROVALS, PREREQUISITES, Desk, Rendezvous, Run, support_task, tool_results, tool_use_ids

from harness.agents import AgentFn, Limits, Task, buggy, coordinator_agent, reference_agent
from harness.agents.buggy import BuggyAgent


@dataclass(frozen=True)
class BugCase:
    agent: BuggyAgent
    task: Callable[[], Task]
    script: list[dict[str, Any]]
    committed: Callable[[Run], bool]
    """True when the run shows the bug: on the wire, in its outcome or in its tool events."""
    reference: AgentFn = reference_agent
    also: frozenset[str] = frozenset()
    """Other rules the same bug breaks by its nature (e.g. two user messages in a row also break H003)."""

    @property
    def id(self) -> str:
        return f"{self.agent.name}-{self.agent.breaks}"


VERIFY = {"name": "get_customer", "input": {"customer_id": "C1"}}
LOOKUP = {"name": "lookup_order", "input": {"order_id": "O1"}}
REFUND = {"name": "process_refund", "input": {"order_id": "O1", "amount": 4990, "customer_id": "C1"}}
DONE = {"text": "The refund for O1 is on its way."}
PARALLEL = [{"text": "Checking both.", "tool_use": [VERIFY, LOOKUP]}, DONE]


def _results_after_first_turn(run: Run) -> list[dict[str, Any]]:
    """Every message the second request added after the first assistant turn."""
    return run.calls[1]["messages"][2:] if len(run.calls) > 1 else []


def _all_results(run: Run) -> list[dict[str, Any]]:
    return [b for call in run.calls for m in call["messages"][-1:] for b in tool_results(m)]


def _failing_desk(*tools: str) -> Desk:
    desk = Desk()
    desk.failing.update(tools)
    return desk


def _overlapping(run: Run, name: str) -> bool:
    runs = [e for e in run.task.executions if e.name == name]
    return any(a.started_at < b.ended_at and b.started_at < a.ended_at for a in runs for b in runs if a is not b)


def _subagent_inherits(run: Run) -> bool:
    coordinator = [r.body for r in run.model.requests if r.thread == "main"]
    subagent = [r.body for r in run.model.requests if r.thread == "main/billing"]
    return bool(coordinator and subagent) and subagent[0]["messages"][0] == coordinator[0]["messages"][0]


COORDINATOR_SCRIPT = [
    {"thread": "main", "text": '{"subtasks": [{"name": "billing", "objective": "Can order O1 be refunded?"}]}'},
    {"thread": "main/billing", "text": "Yes, it was delivered."},
    {"thread": "main", "text": "O1 can be refunded."},
]

CASES: list[BugCase] = [
    BugCase(
        buggy.drops_parallel_results, support_task, PARALLEL,
        lambda run: len(tool_results(run.calls[1]["messages"][2])) < len(tool_use_ids(run.calls[1]["messages"][1])),
    ),
    BugCase(
        buggy.results_in_separate_messages, support_task, PARALLEL,
        lambda run: len(_results_after_first_turn(run)) > 1,
        # H003 too, as a warning only: the API merges the two user messages into one valid turn.
    ),
    BugCase(
        buggy.text_before_results, support_task, PARALLEL,
        lambda run: run.calls[1]["messages"][2]["content"][0]["type"] == "text",
    ),
    BugCase(
        buggy.error_without_is_error, support_task,
        [{"tool_use": {"name": "get_customer", "input": {"customer_id": "C404"}}}, {"text": "No such customer."}],
        lambda run: any(r["content"].startswith("Error") and not r.get("is_error") for r in _all_results(run)),
    ),
    BugCase(
        buggy.ignores_unknown_tool, support_task,
        [{"tool_use": [VERIFY, {"name": "cancel_subscription", "input": {"customer_id": "C1"}}]}, DONE],
        lambda run: len(tool_results(run.calls[1]["messages"][2])) < 2,
    ),
    BugCase(
        buggy.unknown_tool_as_success, support_task,
        [{"tool_use": [VERIFY, {"name": "cancel_subscription", "input": {"customer_id": "C1"}}]}, DONE],
        lambda run: not tool_results(run.calls[1]["messages"][2])[1].get("is_error"),
    ),
    BugCase(
        buggy.retries_failing_tool, lambda: support_task(_failing_desk("lookup_order")),
        [{"tool_use": LOOKUP}] * 4 + [{"text": "The order service is down; escalating."}],
        lambda run: len(run.calls) > 3,
    ),
    BugCase(
        buggy.parallel_side_effects,
        lambda: support_task(Desk(rendezvous=Rendezvous(parties=2)), sequential_tools=frozenset({"process_refund"})),
        [{"tool_use": [REFUND, {**REFUND, "input": {**REFUND["input"], "amount": 10}}]}, DONE],
        lambda run: _overlapping(run, "process_refund"),
    ),
    BugCase(
        buggy.strips_thinking, support_task,
        [{"thinking": "Verify first.", "tool_use": VERIFY}, DONE],
        lambda run: [b["type"] for b in run.calls[1]["messages"][1]["content"]] == ["tool_use"],
    ),
    BugCase(
        buggy.keeps_only_text, lambda: support_task(prompt=["Summarise the case.", "And now refund it?"]),
        [{"content": [{"type": "compaction", "content": "Earlier turns: customer C1, order O1."},
                      {"type": "text", "text": "C1 asks about O1."}]}, DONE],
        lambda run: run.calls[1]["messages"][1]["content"] == "C1 asks about O1.",
    ),
    BugCase(
        buggy.truncates_old_results, support_task,
        [{"tool_use": VERIFY}, {"tool_use": LOOKUP}, DONE],
        lambda run: run.calls[2]["messages"][:3] != run.calls[1]["messages"],
    ),
    BugCase(
        buggy.continues_after_end_turn, support_task,
        [{"text": "Refund approved."}, {"text": "Anything else?"}],
        lambda run: len(run.calls) > 1 and run.calls[1]["messages"][-1]["role"] == "assistant",
        # Its second request ends with the assistant turn: a prefill, which this model (claude-sonnet-5) refuses.
        also=frozenset({"R008"}),
    ),
    BugCase(
        buggy.done_when_text, support_task,
        [{"text": "Let me check the customer.", "tool_use": VERIFY}, DONE],
        lambda run: run.outcome.status == "completed" and len(run.calls) == 1,
    ),
    BugCase(
        buggy.ends_on_pause_turn, support_task,
        [{"content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                       "input": {"query": "carrier O1"}}, {"type": "text", "text": "Searching..."}],
          "stop_reason": "pause_turn"}, DONE],
        lambda run: run.outcome.status == "completed" and len(run.calls) == 1,
    ),
    BugCase(
        buggy.retries_refusal, support_task,
        [{"stop_reason": "refusal"}, {"text": "Fine, here it is."}],
        lambda run: len(run.calls) > 1 and run.calls[1]["messages"] == run.calls[0]["messages"],
    ),
    BugCase(
        buggy.runs_cut_tool_use, support_task,
        [{"text": "Refunding", "tool_use": {"name": "process_refund", "input": {"order_id": "O1"}},
          "stop_reason": "max_tokens"}, DONE],
        lambda run: "process_refund" in run.executed,
    ),
    BugCase(
        buggy.unknown_stop_as_success, support_task,
        [{"text": "Half an ans", "stop_reason": "model_context_window_exceeded"}],
        lambda run: run.outcome.status == "completed",
    ),
    BugCase(
        buggy.ignores_step_limit, lambda: support_task(limits=Limits(steps=2)),
        [{"tool_use": LOOKUP}, {"tool_use": LOOKUP}, {"tool_use": LOOKUP}, DONE],
        lambda run: len(run.calls) > 2,
    ),
    BugCase(
        buggy.ignores_token_budget, lambda: support_task(limits=Limits(steps=10, tokens=1000)),
        [{"tool_use": LOOKUP, "usage": {"input_tokens": 700, "output_tokens": 100}}] * 2 + [DONE],
        lambda run: len(run.calls) > 2,
    ),
    BugCase(
        buggy.iteration_cap_only, lambda: support_task(limits=Limits(steps=2)),
        [{"text": "Looking.", "tool_use": LOOKUP}] * 2 + [DONE],
        lambda run: run.outcome.status == "completed" and len(run.calls) == 2,
    ),
    BugCase(
        buggy.top_level_effort, lambda: support_task(effort="high"), [DONE],
        lambda run: "effort" in run.calls[0],
    ),
    BugCase(
        buggy.compaction_without_beta,
        lambda: support_task(request_options={"context_management": {"edits": [{"type": "compact_20260112"}]}}),
        [DONE],
        lambda run: "compact-2026-01-12" not in run.model.requests[0].headers.get("anthropic-beta", ""),
    ),
    BugCase(
        buggy.strict_inside_schema, support_task, [DONE],
        lambda run: any("strict" in t["input_schema"] for t in run.calls[0]["tools"]),
    ),
    BugCase(
        buggy.dated_model_id, support_task, [DONE],
        lambda run: re.search(r"-\d{8}$", run.calls[0]["model"]) is not None,
    ),
    BugCase(
        buggy.legacy_output_format,
        lambda: support_task(request_options={"output_config": {"format": {"type": "json_schema", "schema": {
            "type": "object", "properties": {"refund": {"type": "boolean"}}, "required": ["refund"],
            "additionalProperties": False}}}}),
        [{"text": '{"refund": true}'}],
        lambda run: "output_format" in run.calls[0],
    ),
    BugCase(
        buggy.resends_bad_request, support_task,
        [{"error": {"status": 400, "message": "tools.2.input_schema: invalid"}}] * 2,
        lambda run: len(run.calls) > 1 and run.calls[1] == run.calls[0],
    ),
    BugCase(
        buggy.inherits_coordinator_history, support_task, COORDINATOR_SCRIPT, _subagent_inherits,
        reference=coordinator_agent,
    ),
    BugCase(
        buggy.refund_without_verification, lambda: support_task(policies={"prerequisites": PREREQUISITES}),
        [{"tool_use": REFUND}, DONE],
        lambda run: "process_refund" in run.executed,
    ),
    BugCase(
        buggy.skips_approval_gate, lambda: support_task(policies={"approvals": APPROVALS}),
        [{"tool_use": REFUND}, DONE],
        lambda run: "process_refund" in run.executed,
    ),
    BugCase(
        buggy.ignores_circuit_breaker,
        lambda: support_task(_failing_desk("lookup_order"), policies={"circuit_breakers": [
            {"tool": "lookup_order", "failures": 2, "cooldown_s": 60}]}),
        [{"tool_use": LOOKUP}] * 3 + [{"text": "Escalating."}],
        lambda run: run.executed.count("lookup_order") > 2,
    ),
]
