"""The coordinator: decomposition, parallel subagents on their own threads, consolidation."""

from __future__ import annotations

import json

import pytest
from support_desk import run_agent, support_task

from harness.agents import AGENTS, Limits, coordinator_agent, reference_agent, resolve_agent
from harness.agents._reference import parse_decomposition
from harness.errors import HarnessError

PLAN = {
    "subtasks": [
        {"name": "billing", "objective": "Check whether order O1 can be refunded.", "output_format": "yes/no and why",
         "tools": "lookup_order", "out_of_scope": ["issuing the refund"]},
        {"name": "customer", "objective": "Verify customer C1.", "output_format": "name and tier",
         "tools": "get_customer", "out_of_scope": []},
    ]
}
SCRIPT = [
    {"thread": "main", "text": json.dumps(PLAN)},
    {"thread": "main/billing", "tool_use": {"name": "lookup_order", "input": {"order_id": "O1"}}},
    {"thread": "main/billing", "text": "Yes: delivered, 49.90."},
    {"thread": "main/customer", "tool_use": {"name": "get_customer", "input": {"customer_id": "C1"}}},
    {"thread": "main/customer", "text": "Ana Ruiz, gold."},
    {"thread": "main", "text": "Ana Ruiz (gold) can get 49.90 back for O1."},
]


def test_subagents_run_on_their_own_threads_from_the_injected_brief_only() -> None:
    run = run_agent(coordinator_agent, support_task(), SCRIPT)

    run.model.assert_complete()
    by_thread: dict[str, list[dict]] = {}
    for request in run.model.requests:
        assert request.thread is not None
        by_thread.setdefault(request.thread, []).append(request.body)
    assert sorted(by_thread) == ["main", "main/billing", "main/customer"]

    coordinator_first = by_thread["main"][0]["messages"][0]
    for name, objective in [("billing", "Check whether order O1"), ("customer", "Verify customer C1")]:
        first = by_thread[f"main/{name}"][0]
        [brief] = first["messages"]
        assert brief["role"] == "user" and objective in brief["content"]
        assert "Customer C1 wants a refund for order O1." in brief["content"]  # context injected, not inherited
        assert coordinator_first not in first["messages"]
        assert first["system"] == support_task().system
        assert [t["name"] for t in first["tools"]] == [t["name"] for t in support_task().tools]

    decomposition, consolidation = by_thread["main"]
    assert decomposition["output_config"]["format"]["type"] == "json_schema"
    assert "output_config" not in consolidation
    assert consolidation["messages"][:2] == [*decomposition["messages"], consolidation["messages"][1]]
    assert "Yes: delivered, 49.90." in consolidation["messages"][2]["content"]
    assert "Ana Ruiz, gold." in consolidation["messages"][2]["content"]
    assert run.outcome.status == "completed"
    assert run.outcome.final_text == "Ana Ruiz (gold) can get 49.90 back for O1."
    assert {e.thread_key for e in run.task.executions} == {"main/billing", "main/customer"}


def test_the_step_limit_bounds_the_whole_run_across_subagents() -> None:
    run = run_agent(coordinator_agent, support_task(limits=Limits(steps=3)), SCRIPT)

    assert len(run.model.requests) == 3
    assert run.outcome.status == "limit" and run.outcome.limit == "steps"


def test_a_decomposition_that_is_not_json_ends_the_run_as_an_error() -> None:
    run = run_agent(coordinator_agent, support_task(), [{"thread": "main", "text": "I would split it in two."}])

    assert run.outcome.status == "error" and "not JSON" in run.outcome.reason


def test_subtask_names_become_unique_one_level_thread_keys() -> None:
    subtasks = parse_decomposition(
        "```json\n" + json.dumps({"subtasks": [{"name": "a/b c", "objective": "x"},
                                               {"name": "a/b c", "objective": "y"}]})
        + "\n```"
    )
    assert [s.name for s in subtasks] == ["a-b-c", "a-b-c-2"]


def test_agents_resolve_by_name_and_by_import_path() -> None:
    assert resolve_agent("reference") is reference_agent
    assert resolve_agent("harness.agents:coordinator_agent") is coordinator_agent
    assert resolve_agent("buggy.strips_thinking").breaks == "H001"
    assert {"reference", "reference-async", "coordinator"} <= set(AGENTS)


@pytest.mark.parametrize("spec", ["refrence", "harness.agents:nothing_here", "no_such_module_xyz:agent"])
def test_an_unknown_agent_is_refused_with_the_valid_names(spec: str) -> None:
    with pytest.raises(HarnessError) as error:
        resolve_agent(spec)
    assert spec.split(":")[0] in str(error.value)
    if ":" not in spec:
        assert "reference-async" in str(error.value) and "buggy.drops_parallel_results" in str(error.value)
