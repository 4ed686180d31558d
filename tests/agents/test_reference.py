"""The reference loop, on the wire: what it sends back after each stop_reason, limits and policies.

Every test runs the agent through the real `anthropic` SDK against the scripted model and asserts
on the requests the model received, the outcome, and the tool events the task recorded.
"""

from __future__ import annotations

from typing import Any

import pytest
from support_desk import APPROVALS, PREREQUISITES, Desk, Rendezvous, run_agent, support_task, tool_results, tool_use_ids

from harness.agents import AgentFn, Limits, async_reference_agent, reference_agent

BOTH: list[AgentFn] = [reference_agent, async_reference_agent]
both = pytest.mark.parametrize("agent", BOTH, ids=["sync", "async"])

VERIFY_AND_LOOKUP = {
    "thinking": "Verify the customer and fetch the order at once.",
    "text": "Checking the customer and the order.",
    "tool_use": [
        {"id": "toolu_cust", "name": "get_customer", "input": {"customer_id": "C1"}},
        {"id": "toolu_order", "name": "lookup_order", "input": {"order_id": "O1"}},
        {"id": "toolu_ghost", "name": "cancel_subscription", "input": {"customer_id": "C1"}},
    ],
}


def _normalized(value: Any) -> Any:
    """JSON with null fields dropped, the comparison H001 uses."""
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


@both
def test_parallel_tool_uses_get_all_results_in_one_user_message_first_and_in_order(agent: AgentFn) -> None:
    run = run_agent(agent, support_task(), [VERIFY_AND_LOOKUP, {"text": "Refund can go ahead."}])

    first, second = run.calls
    assistant, results = second["messages"][1], second["messages"][2]
    assert second["messages"][:1] == first["messages"]
    assert results["role"] == "user"
    assert [b["type"] for b in results["content"]] == ["tool_result"] * 3
    assert [b["tool_use_id"] for b in results["content"]] == tool_use_ids(assistant)
    by_id = {b["tool_use_id"]: b for b in results["content"]}
    assert "is_error" not in by_id["toolu_cust"] and "Ana Ruiz" in by_id["toolu_cust"]["content"]
    assert by_id["toolu_ghost"]["is_error"] is True
    assert "cancel_subscription" in by_id["toolu_ghost"]["content"]
    assert run.outcome.status == "completed"
    assert run.outcome.final_text == "Refund can go ahead."
    run.model.assert_complete()


@both
def test_the_assistant_turn_is_sent_back_verbatim_with_thinking_and_server_blocks(agent: AgentFn) -> None:
    content = [
        {"type": "thinking", "thinking": "The order is recent.", "signature": "EuYBCkQYAiJA"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "refund policy"}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [{"type": "web_search_result", "url": "https://example.com/p", "title": "Policy",
                         "encrypted_content": "Eo8BCioI", "page_age": None}],
        },
        {"type": "compaction", "content": "Earlier: the customer asked about order O1."},
        {"type": "text", "text": "Let me verify you."},
        {"type": "tool_use", "id": "toolu_cust", "name": "get_customer", "input": {"customer_id": "C1"}},
    ]
    run = run_agent(agent, support_task(), [{"content": content}, {"text": "Verified."}])

    sent_back = run.calls[1]["messages"][1]
    assert sent_back == {"role": "assistant", "content": _normalized(content)}
    assert tool_results(run.calls[1]["messages"][2])[0]["tool_use_id"] == "toolu_cust"


@both
def test_a_failing_tool_returns_is_error_to_the_model_and_the_loop_goes_on(agent: AgentFn) -> None:
    run = run_agent(
        agent,
        support_task(),
        [{"tool_use": {"id": "toolu_x", "name": "get_customer", "input": {"customer_id": "C404"}}},
         {"text": "Not found."}],
    )

    [result] = tool_results(run.calls[1]["messages"][-1])
    assert result == {"type": "tool_result", "tool_use_id": "toolu_x", "content": "Error: customer 'C404' not found",
                      "is_error": True}
    assert [(e.name, e.is_error) for e in run.task.executions] == [("get_customer", True)]
    assert run.outcome.status == "completed"


@both
def test_pause_turn_is_continued_with_the_paused_content_and_no_tool_result(agent: AgentFn) -> None:
    paused = [
        {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {"query": "O1 carrier"}},
        {"type": "text", "text": "Searching the carrier..."},
    ]
    run = run_agent(agent, support_task(),
                    [{"content": paused, "stop_reason": "pause_turn"}, {"text": "It was delivered."}])

    first, second = run.calls
    assert second["messages"] == [*first["messages"], {"role": "assistant", "content": paused}]
    assert run.outcome.status == "completed" and run.outcome.final_text == "It was delivered."


@both
def test_a_response_cut_by_max_tokens_is_an_error_and_its_tool_use_never_runs(agent: AgentFn, desk: Desk) -> None:
    cut = {"text": "Refunding now", "tool_use": {"name": "process_refund", "input": {"order_id": "O1"}},
           "stop_reason": "max_tokens"}
    run = run_agent(agent, support_task(desk), [cut, {"text": "unused"}])

    assert len(run.calls) == 1
    assert run.task.executions == [] and desk.refunds == []
    assert run.outcome.status == "error" and run.outcome.reason.startswith("response cut")
    assert run.outcome.final_text == "Refunding now"


@both
def test_a_refusal_ends_the_run_as_refused_without_a_retry(agent: AgentFn) -> None:
    run = run_agent(agent, support_task(), [{"stop_reason": "refusal"}, {"text": "unused"}])

    assert len(run.calls) == 1
    assert run.outcome.status == "refused"


@both
@pytest.mark.parametrize("stop_reason", ["model_context_window_exceeded", "something_new"])
def test_other_stop_reasons_end_the_run_as_an_error(agent: AgentFn, stop_reason: str) -> None:
    run = run_agent(agent, support_task(), [{"text": "Partial", "stop_reason": stop_reason}, {"text": "unused"}])

    assert len(run.calls) == 1
    assert run.outcome.status == "error" and stop_reason in run.outcome.reason


@both
def test_stop_sequence_completes_and_each_user_turn_follows_an_end_turn(agent: AgentFn) -> None:
    task = support_task(prompt=["Who is customer C1?", "And order O1?"])
    run = run_agent(agent, task, [{"text": "Ana Ruiz.<end>", "stop_sequence": "<end>"}, {"text": "Delivered."}])

    first, second = run.calls
    assert second["messages"] == [
        *first["messages"],
        {"role": "assistant", "content": [{"type": "text", "text": "Ana Ruiz.<end>"}]},
        {"role": "user", "content": "And order O1?"},
    ]
    assert run.outcome.status == "completed" and run.outcome.final_text == "Delivered."
    run.model.assert_complete()


LOOKUP_AGAIN = {"text": "Looking again.", "tool_use": {"name": "lookup_order", "input": {"order_id": "O1"}}}


@both
def test_the_step_limit_stops_before_the_next_call_and_says_so(agent: AgentFn) -> None:
    run = run_agent(agent, support_task(limits=Limits(steps=2)), [LOOKUP_AGAIN, LOOKUP_AGAIN, {"text": "unused"}])

    assert len(run.calls) == 2
    assert run.outcome.status == "limit" and run.outcome.limit == "steps"
    assert run.outcome.final_text == "Looking again."


@both
def test_the_token_budget_sums_input_output_and_cache_tokens_before_each_call(agent: AgentFn) -> None:
    usage = {"input_tokens": 300, "output_tokens": 100, "cache_creation_input_tokens": 200,
             "cache_read_input_tokens": 250}
    step = {**LOOKUP_AGAIN, "usage": usage}
    run = run_agent(agent, support_task(limits=Limits(steps=10, tokens=1500)), [step, step, {"text": "unused"}])

    # 850 after the first call is under the budget; 1700 after the second is past it.
    assert len(run.calls) == 2
    assert run.outcome.status == "limit" and run.outcome.limit == "tokens"


@both
def test_the_wall_time_limit_is_checked_before_each_call(agent: AgentFn) -> None:
    run = run_agent(agent, support_task(limits=Limits(wall_time_s=0.0)), [{"text": "unused"}])

    assert run.calls == []
    assert run.outcome.status == "limit" and run.outcome.limit == "wall_time"


@both
def test_consecutive_tool_errors_stop_the_run_at_three_by_default(agent: AgentFn, desk: Desk) -> None:
    desk.failing.add("lookup_order")
    run = run_agent(agent, support_task(desk), [LOOKUP_AGAIN] * 4 + [{"text": "unused"}])

    assert len(run.calls) == 3
    assert [e.is_error for e in run.task.executions] == [True, True, True]
    assert run.outcome.status == "limit" and run.outcome.limit == "tool_errors"


@both
def test_sequential_tools_run_one_at_a_time_and_independent_ones_together(agent: AgentFn, desk: Desk) -> None:
    desk.rendezvous = Rendezvous(parties=2)
    turn = {"tool_use": [
        {"name": "lookup_order", "input": {"order_id": "O1"}},
        {"name": "lookup_order", "input": {"order_id": "O1"}},
        {"name": "process_refund", "input": {"order_id": "O1", "amount": 4990, "customer_id": "C1"}},
        {"name": "process_refund", "input": {"order_id": "O1", "amount": 10, "customer_id": "C1"}},
    ]}
    task = support_task(desk, sequential_tools=frozenset({"process_refund"}))
    run = run_agent(agent, task, [turn, {"text": "Done."}])

    executions = sorted(run.task.executions, key=lambda e: e.started_at)
    refunds = [e for e in executions if e.name == "process_refund"]
    for refund in refunds:
        others = [e for e in executions if e is not refund]
        assert all(o.ended_at <= refund.started_at or o.started_at >= refund.ended_at for o in others)
    lookups = [e for e in executions if e.name == "lookup_order"]
    # The two lookups met at the rendezvous, so they overlapped; the refunds came after, in order.
    assert lookups[0].started_at < lookups[1].ended_at and lookups[1].started_at < lookups[0].ended_at
    assert [r["amount"] for r in desk.refunds] == [4990, 10]
    answered = [b["tool_use_id"] for b in tool_results(run.calls[1]["messages"][-1])]
    assert answered == tool_use_ids(run.calls[1]["messages"][1])


@both
def test_a_prerequisite_blocks_the_refund_until_the_same_customer_was_verified(agent: AgentFn, desk: Desk) -> None:
    refund = {"name": "process_refund", "input": {"order_id": "O1", "amount": 4990, "customer_id": "C1"}}
    script = [
        {"tool_use": refund},
        {"tool_use": {"name": "get_customer", "input": {"customer_id": "C1"}}},
        {"tool_use": refund},
        {"text": "Refunded."},
    ]
    run = run_agent(agent, support_task(desk, policies={"prerequisites": PREREQUISITES}), script)

    [blocked] = tool_results(run.calls[1]["messages"][-1])
    assert blocked["is_error"] is True and blocked["content"].startswith("PREREQUISITE_FAILED: process_refund")
    assert run.executed == ["get_customer", "process_refund"]
    assert desk.refunds == [refund["input"]]


@both
def test_a_refund_for_another_customer_than_the_verified_one_is_blocked(agent: AgentFn, desk: Desk) -> None:
    script = [
        {"tool_use": {"name": "get_customer", "input": {"customer_id": "C1"}}},
        {"tool_use": {"name": "process_refund", "input": {"order_id": "O1", "amount": 1, "customer_id": "C2"}}},
        {"text": "I cannot refund that."},
    ]
    run = run_agent(agent, support_task(desk, policies={"prerequisites": PREREQUISITES}), script)

    [blocked] = tool_results(run.calls[2]["messages"][-1])
    assert blocked["is_error"] is True and "customer_id='C2'" in blocked["content"]
    assert desk.refunds == []


@both
def test_an_approval_gate_lets_one_refund_through_per_approval(agent: AgentFn, desk: Desk) -> None:
    refund = {"name": "process_refund", "input": {"order_id": "O1", "amount": 4990, "customer_id": "C1"}}
    approval = {"name": "request_human_approval", "input": {"action": "refund O1", "context": "delivered late"}}
    script = [{"tool_use": refund}, {"tool_use": approval}, {"tool_use": refund},
              {"tool_use": refund}, {"text": "Done."}]
    run = run_agent(agent, support_task(desk, policies={"approvals": APPROVALS}), script)

    contents = [tool_results(call["messages"][-1])[0] for call in run.calls[1:]]
    assert contents[0]["content"].startswith("APPROVAL_REQUIRED: process_refund") and contents[0]["is_error"]
    assert "is_error" not in contents[2]
    assert contents[3]["content"].startswith("APPROVAL_REQUIRED") and contents[3]["is_error"]
    assert len(desk.refunds) == 1


@both
def test_an_open_circuit_rejects_the_tool_without_running_it(agent: AgentFn, desk: Desk) -> None:
    desk.failing.add("lookup_order")
    policies = {"circuit_breakers": [{"tool": "lookup_order", "failures": 2, "cooldown_s": 60}]}
    run = run_agent(agent, support_task(desk, policies=policies, limits=Limits(steps=10, tool_errors=5)),
                    [LOOKUP_AGAIN] * 3 + [{"text": "I will escalate."}])

    third = tool_results(run.calls[3]["messages"][-1])[0]
    assert third["is_error"] is True and third["content"].startswith("CIRCUIT_OPEN: lookup_order")
    assert run.executed == ["lookup_order", "lookup_order"]
    assert run.outcome.status == "completed"


@both
def test_betas_follow_the_request_and_effort_sits_in_output_config(agent: AgentFn) -> None:
    task = support_task(
        effort="high",
        request_options={
            "context_management": {"edits": [{"type": "compact_20260112"}]},
            "output_config": {"task_budget": {"type": "tokens", "total": 50_000}},
        },
        extra_headers={"anthropic-beta": "fine-grained-tool-streaming-2025-05-14"},
    )
    run = run_agent(agent, task, [{"text": "Hello."}])

    [body] = run.calls
    headers = run.model.requests[0].headers
    assert body["output_config"] == {"task_budget": {"type": "tokens", "total": 50_000}, "effort": "high"}
    assert "effort" not in body
    assert body["context_management"] == {"edits": [{"type": "compact_20260112"}]}
    assert headers["anthropic-beta"].split(",") == [
        "fine-grained-tool-streaming-2025-05-14", "compact-2026-01-12", "task-budgets-2026-03-13"]


@both
def test_a_400_is_not_retried_and_ends_the_run_as_an_error(agent: AgentFn) -> None:
    run = run_agent(agent, support_task(),
                    [{"error": {"status": 400, "message": "tools.2: bad schema"}}, {"text": "unused"}])

    assert len(run.calls) == 1
    assert run.outcome.status == "error" and "400" in run.outcome.reason and "bad schema" in run.outcome.reason


@both
def test_a_streamed_run_reads_the_reassembled_message_and_keeps_thinking_verbatim(agent: AgentFn) -> None:
    script = [{"thinking": "Verify first.", "tool_use": {"id": "toolu_s", "name": "get_customer",
                                                          "input": {"customer_id": "C1"}}}, {"text": "Verified."}]
    run = run_agent(agent, support_task(request_options={"stream": True}), script)

    first, second = run.calls
    assert first["stream"] is True and second["stream"] is True
    thinking, tool_use = second["messages"][1]["content"]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "Verify first." and thinking["signature"]
    assert tool_use == {"type": "tool_use", "id": "toolu_s", "name": "get_customer", "input": {"customer_id": "C1"}}
    assert tool_results(second["messages"][2])[0]["tool_use_id"] == "toolu_s"
    assert run.outcome.final_text == "Verified."
