"""A scenario's `expect` on real traces: each expectation's passing and failing case, and what a failure says.

Traces are built from hand-made wire exchanges with `build_trace`, as a recording would be; usage,
cost and findings come from the same functions `harness run` uses, so nothing here is mocked.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks import Finding
from harness.checks._registry import check_trace
from harness.cost import cost_of_trace
from harness.results import ExpectationResult
from harness.run._execute import usage_of
from harness.run._expect import evaluate, verdict
from harness.scenario._model import Expect
from harness.trace import Exchange, Outcome, build_trace
from harness.trace._model import Trace

MODEL = "claude-sonnet-5"
USER = {"role": "user", "content": "Refund order O1 for Ana."}


def exchange(index: int, messages: list[dict[str, Any]], content: list[dict[str, Any]], stop_reason: str,
             usage: dict[str, int]) -> Exchange:
    body = {"id": f"msg_{index}", "type": "message", "role": "assistant", "model": MODEL, "content": content,
            "stop_reason": stop_reason, "usage": usage}
    return Exchange(index=index, method="POST", url="https://api.anthropic.com/v1/messages",
                    request_headers={"anthropic-version": "2023-06-01"},
                    request_body={"model": MODEL, "max_tokens": 1024, "messages": messages}, status=200,
                    response_headers={}, response_body=body, started_at=1_760_000_000.0 + index, duration_s=0.5)


def tool_use(ident: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": arguments}


def agent_trace(steps: list[list[dict[str, Any]]], final: str = "Refund R1 issued for order O1.",
                *, drop_result_of: str | None = None) -> Trace:
    """Each step's tool_use blocks answered in the next request; a last step ends with `final`.
    `drop_result_of` leaves one tool_use unanswered, the T001 anti-pattern."""
    messages: list[dict[str, Any]] = [USER]
    exchanges = []
    usage = {"input_tokens": 100, "output_tokens": 20}
    for index, blocks in enumerate(steps):
        exchanges.append(exchange(index, list(messages), blocks, "tool_use", usage))
        results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "ok"}
                   for b in blocks if b["id"] != drop_result_of]
        messages += [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]
    exchanges.append(exchange(len(steps), list(messages), [{"type": "text", "text": final}], "end_turn", usage))
    trace = build_trace(exchanges, "test", whole_run=True)
    trace.outcome = Outcome(status="completed", final_text=final)
    return trace


REFUND_RUN = [
    [tool_use("toolu_1", "lookup_order", {"order_id": "O1", "customer": {"name": "Ana", "tier": "gold"}}),
     tool_use("toolu_2", "lookup_customer", {"name": "Ana"})],
    [tool_use("toolu_3", "refund", {"order_id": "O1", "amount": 20, "reason": "late"})],
]


def run_expect(expect: dict[str, Any], trace: Trace | None = None, *, outcome: Outcome | None = None,
               findings: list[Finding] | None = None) -> list[ExpectationResult]:
    trace = trace or agent_trace(REFUND_RUN)
    return evaluate(Expect.model_validate(expect), trace=trace, outcome=outcome or trace.outcome,
                    findings=check_trace(trace) if findings is None else findings, usage=usage_of(trace),
                    cost_usd=cost_of_trace(trace))


def one(expect: dict[str, Any], trace: Trace | None = None, **kw: Any) -> ExpectationResult:
    results = run_expect(expect, trace, **kw)
    assert len(results) == 1, results
    return results[0]


def calls(mode: str, *expected: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tools_called": {"mode": mode, "calls": [{"name": n, "input": i} for n, i in expected]}}


LOOKUP: tuple[str, dict[str, Any]] = ("lookup_order", {"order_id": "O1"})
CUSTOMER: tuple[str, dict[str, Any]] = ("lookup_customer", {})
REFUND: tuple[str, dict[str, Any]] = ("refund", {"order_id": "O1"})


# --- tools_called, each mode -------------------------------------------------------------------------


def test_strict_passes_on_the_same_calls_in_order() -> None:
    result = one(calls("strict", LOOKUP, CUSTOMER, REFUND))
    assert result.passed and result.name == "tools_called"
    assert result.message == ("mode strict: expected [lookup_order, lookup_customer, refund], "
                              "made [lookup_order, lookup_customer, refund]")


def test_strict_fails_on_another_order_and_names_the_first_differing_call() -> None:
    result = one(calls("strict", CUSTOMER, LOOKUP, REFUND))
    assert not result.passed
    assert "call 1 is lookup_order {'order_id': 'O1'" in result.message
    assert "expected lookup_customer {}" in result.message


def test_strict_fails_on_a_missing_call_and_says_how_many() -> None:
    result = one(calls("strict", LOOKUP, CUSTOMER, REFUND, ("notify", {})))
    assert not result.passed and "3 calls made, 4 expected" in result.message


def test_unordered_passes_in_any_order() -> None:
    assert one(calls("unordered", REFUND, CUSTOMER, LOOKUP)).passed


def test_unordered_fails_naming_the_extra_and_the_missing_call() -> None:
    result = one(calls("unordered", REFUND, LOOKUP, ("notify", {"to": "Ana"})))
    assert not result.passed
    assert "not expected: lookup_customer {'name': 'Ana'}" in result.message
    assert "not made: notify {'to': 'Ana'}" in result.message


def test_subset_passes_when_every_call_made_was_expected() -> None:
    assert one(calls("subset", REFUND, ("notify", {}), CUSTOMER, LOOKUP)).passed


def test_subset_fails_naming_the_unexpected_call() -> None:
    result = one(calls("subset", LOOKUP, REFUND, ("notify", {})))
    assert not result.passed
    assert result.message.endswith("; not expected: lookup_customer {'name': 'Ana'}")
    assert "not made" not in result.message  # an expected call never made is fine for subset


def test_superset_passes_when_every_expected_call_was_made() -> None:
    assert one(calls("superset", REFUND, LOOKUP)).passed


def test_superset_fails_naming_the_call_never_made() -> None:
    result = one(calls("superset", REFUND, ("cancel_order", {"order_id": "O1"})))
    assert not result.passed
    assert result.message.endswith("; not made: cancel_order {'order_id': 'O1'}")
    assert "not expected" not in result.message  # extra calls are fine for superset


def test_pairing_is_not_greedy() -> None:
    # the broad expectation (any lookup_order) would take the first call greedily and starve the
    # narrow one (order O2); the pairing must still find the valid assignment
    trace = agent_trace([[tool_use("t1", "lookup_order", {"order_id": "O2"}),
                          tool_use("t2", "lookup_order", {"order_id": "O1"})]])
    assert one(calls("unordered", ("lookup_order", {}), ("lookup_order", {"order_id": "O2"})), trace).passed


def test_no_calls_at_all() -> None:
    trace = agent_trace([])
    assert one(calls("strict"), trace).passed
    result = one(calls("superset", LOOKUP), trace)
    assert not result.passed and "made [none]" in result.message and "not made: lookup_order" in result.message


# --- partial argument matching -----------------------------------------------------------------------


def test_partial_input_matches_nested_dicts_and_allows_extra_arguments() -> None:
    # customer.tier, amount and reason are not given: they are not compared
    nested = ("lookup_order", {"customer": {"name": "Ana"}})
    assert one(calls("strict", nested, CUSTOMER, ("refund", {"order_id": "O1"}))).passed


def test_a_wrong_nested_value_fails() -> None:
    result = one(calls("strict", ("lookup_order", {"customer": {"name": "Bob"}}), CUSTOMER, REFUND))
    assert not result.passed and "expected lookup_order {'customer': {'name': 'Bob'}}" in result.message


def test_a_wrong_value_fails_in_every_mode() -> None:
    wrong = ("refund", {"amount": 25})
    for mode in ("strict", "unordered", "superset"):
        result = one(calls(mode, LOOKUP, CUSTOMER, wrong))
        assert not result.passed, mode
    assert "not made: refund {'amount': 25}" in one(calls("superset", wrong)).message


def test_an_argument_the_call_lacks_fails() -> None:
    assert not one(calls("superset", ("lookup_customer", {"email": "ana@example.com"}))).passed


# --- final_text ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, passed, message", [
    ({"contains": "R1"}, True, "'R1' in 'Refund R1 issued for order O1.'"),
    ({"contains": "R2"}, False, "'R2' not in 'Refund R1 issued for order O1.'"),
    ({"equals": "Refund R1 issued for order O1."}, True, "expected 'Refund R1 issued for order O1.'"),
    ({"equals": "Refund R1 issued."}, False, "expected 'Refund R1 issued.', got 'Refund R1 issued for order O1.'"),
    ({"matches": r"R\d+ issued"}, True, r"/R\d+ issued/ matches"),
    ({"matches": r"^Sorry"}, False, "/^Sorry/ does not match 'Refund R1 issued for order O1.'"),
])
def test_final_text(spec: dict[str, Any], passed: bool, message: str) -> None:
    result = one({"final_text": spec})
    assert result.passed is passed and result.name == f"final_text.{next(iter(spec))}"
    assert message in result.message


def test_final_text_contains_a_list_gives_one_result_per_needle() -> None:
    results = run_expect({"final_text": {"contains": ["R1", "O9", "O1"]}})
    assert [(r.name, r.passed) for r in results] == [("final_text.contains", True), ("final_text.contains", False),
                                                      ("final_text.contains", True)]
    assert "'O9' not in" in results[1].message


def test_final_text_fails_when_the_run_has_none() -> None:
    results = run_expect({"final_text": {"contains": "R1", "equals": "x", "matches": "x"}},
                         outcome=Outcome(status="error", reason="crashed"))
    assert [r.passed for r in results] == [False, False, False]
    assert all("no final text" in r.message for r in results)


# --- outcome ------------------------------------------------------------------------------------------


def test_outcome_matches_status_and_limit() -> None:
    stopped = Outcome(status="limit", limit="steps", reason="step limit 3 reached")
    assert one({"outcome": "limit", "limit": "steps"}, outcome=stopped).passed
    assert one({"outcome": "limit"}, outcome=stopped).passed  # no limit given: any limit will do
    assert one({"outcome": "completed"}).passed


def test_outcome_with_the_wrong_limit_fails_and_says_why_it_stopped() -> None:
    stopped = Outcome(status="limit", limit="steps", reason="step limit 3 reached")
    result = one({"outcome": "limit", "limit": "tokens"}, outcome=stopped)
    assert not result.passed
    assert result.message == "expected limit (tokens), got limit (steps): step limit 3 reached"


def test_a_limit_alone_expects_the_run_to_stop_on_it() -> None:
    # `expect: {limit: steps}` without `outcome` checked nothing: a run that completed passed it.
    result = one({"limit": "steps"})
    assert not result.passed and result.message == "expected limit (steps), got completed"
    assert one({"limit": "steps"}, outcome=Outcome(status="limit", limit="steps", reason="step limit")).passed


def test_outcome_with_the_wrong_status_fails() -> None:
    result = one({"outcome": "limit", "limit": "steps"})
    assert not result.passed and result.message == "expected limit (steps), got completed"


def test_outcome_missing_fails() -> None:
    trace = agent_trace([])
    trace.outcome = None
    result = one({"outcome": "completed"}, trace)
    assert not result.passed and "the run has no outcome" in result.message


# --- limits: at the limit passes, over it fails ---------------------------------------------------------


def test_max_steps_at_and_over_the_limit() -> None:
    steps = len(agent_trace(REFUND_RUN).calls)
    assert steps == 3
    assert one({"max_steps": 3}).passed
    over = one({"max_steps": 2})
    assert not over.passed and over.message == "3 model calls, at most 2 expected"


def test_max_tokens_total_at_and_over_the_limit() -> None:
    total = usage_of(agent_trace(REFUND_RUN)).total
    assert total == 3 * 120
    assert one({"max_tokens_total": total}).passed
    over = one({"max_tokens_total": total - 1})
    assert not over.passed and over.message == f"{total} tokens, at most {total - 1} expected"


def test_max_cost_usd_at_and_over_the_limit() -> None:
    cost = cost_of_trace(agent_trace(REFUND_RUN))
    assert cost is not None and cost > 0
    assert one({"max_cost_usd": cost}).passed
    over = one({"max_cost_usd": cost / 2})
    assert not over.passed and over.message.startswith("cost $") and "at most $" in over.message


def test_max_cost_usd_fails_when_the_cost_is_unknown() -> None:
    trace = agent_trace(REFUND_RUN)
    result = evaluate(Expect.model_validate({"max_cost_usd": 100}), trace=trace, outcome=trace.outcome,
                      findings=[], usage=usage_of(trace), cost_usd=None)
    # Unknown, never free; and the message says how to price the model.
    assert [(r.passed, r.message) for r in result] == [(False, "cost unknown: a model of the run has no price; price "
                                                        "it with harness run --prices FILE (under pytest: "
                                                        "--harness-prices FILE)")]


# --- expected findings, and the verdict ---------------------------------------------------------------


def test_an_expected_finding_present_passes_and_does_not_fail_the_run() -> None:
    trace = agent_trace(REFUND_RUN, drop_result_of="toolu_2")
    findings = check_trace(trace)
    assert "T001" in {f.code for f in findings}
    expect = Expect.model_validate({"findings": ["T001"]})
    result = one({"findings": ["T001"]}, trace)
    assert result.passed and result.name == "findings.T001" and result.message == "T001 found as expected"
    assert verdict(expect, findings, [result])
    # the same error finding, not expected, fails the run
    assert not verdict(Expect(), findings, [])


def test_an_expected_finding_absent_fails_and_lists_what_was_found() -> None:
    clean = agent_trace(REFUND_RUN)
    assert check_trace(clean) == []
    result = one({"findings": ["T001"]}, clean)
    assert not result.passed and result.message == "T001 expected but not found (no findings)"
    assert not verdict(Expect.model_validate({"findings": ["T001"]}), [], [result])
    dropped = agent_trace(REFUND_RUN, drop_result_of="toolu_2")
    other = one({"findings": ["H001"]}, dropped)
    assert not other.passed
    assert other.message.startswith("H001 expected but not found (found: ") and "T001" in other.message


def test_one_failing_expectation_fails_the_verdict() -> None:
    expect = Expect.model_validate({"outcome": "completed", "max_steps": 2, **calls("superset", REFUND)})
    results = run_expect(expect.model_dump(exclude_defaults=True))
    assert [(r.name, r.passed) for r in results] == [("outcome", True), ("tools_called", True), ("max_steps", False)]
    assert not verdict(expect, [], results)
