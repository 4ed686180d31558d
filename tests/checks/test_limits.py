"""B rules: declared limits (steps, tokens as budgets count them, wall time) are honoured and reported."""

from __future__ import annotations

from recordings import Conversation, Recording, check, codes, text, tool_use

from harness.agents._task import Limits
from harness.trace import Outcome


def three_calls(conv: Conversation, usage: dict[str, int] | None = None) -> None:
    conv.user("Look up c1, then c2")
    conv.call(text("First c1."), tool_use("get_customer", {"customer_id": "c1"}), usage=usage)
    conv.results("Ana")
    conv.call(tool_use("get_customer", {"customer_id": "c2"}), usage=usage)
    conv.results("Bo")
    conv.call(text("Ana and Bo."), usage=usage)


def test_b001_more_calls_than_the_step_limit(conv: Conversation, recording: Recording) -> None:
    three_calls(conv)
    findings = check(recording, options={"limits": {"steps": 2}})
    assert codes(findings) == {"B001"}
    assert findings[0].call == 2 and "limit of 2" in findings[0].message
    assert check(recording, whole_run=True, options={"limits": Limits(steps=3)}) == []


def test_b002_a_call_started_past_the_token_budget_counting_cache_reads(conv: Conversation,
                                                                        recording: Recording) -> None:
    three_calls(conv, usage={"input_tokens": 10, "output_tokens": 10, "cache_read_input_tokens": 500,
                             "cache_creation_input_tokens": 0})
    findings = check(recording, options={"limits": {"tokens": 1000}})
    assert codes(findings) == {"B002"}
    assert findings[0].call == 2 and "1040 tokens already used" in findings[0].message
    assert check(recording, whole_run=True, options={"limits": {"tokens": 1100}}) == []


def test_b003_a_call_started_after_the_deadline(conv: Conversation, recording: Recording) -> None:
    three_calls(conv)
    findings = check(recording, options={"limits": {"wall_time_s": 1.5}})
    assert codes(findings) == {"B003"}
    assert findings[0].call == 2
    assert check(recording, whole_run=True, options={"limits": {"wall_time_s": 5.0}}) == []


def stopped_by_steps(conv: Conversation) -> None:
    conv.user("Look up c1, then c2")
    conv.call(text("First c1."), tool_use("get_customer", {"customer_id": "c1"}))
    conv.results("Ana")
    conv.call(tool_use("get_customer", {"customer_id": "c2"}))



def test_b003_a_call_a_moment_past_the_deadline_is_a_loaded_machine_not_a_loop_ignoring_it(
    conv: Conversation, recording: Recording
) -> None:
    # Calls start at 0, 1.05 and 2.1 s into the run: a 2 s deadline checked just in time, then the request
    # sent 0.1 s later (a scheduler's delay), is within the margin; 0.3 s past a 1.8 s one, the call is late.
    three_calls(conv)
    assert check(recording, whole_run=True, options={"limits": {"wall_time_s": 2.0}}) == []
    assert codes(check(recording, whole_run=True, options={"limits": {"wall_time_s": 1.8}})) == {"B003"}


def test_b004_a_run_stopped_by_a_limit_reported_as_completed(conv: Conversation, recording: Recording) -> None:
    stopped_by_steps(conv)
    findings = check(recording, outcome=Outcome(status="completed", final_text="First c1."),
                     options={"limits": {"steps": 2}})
    assert codes(findings) == {"B004"}
    assert "steps limit" in findings[0].message and "'completed'" in findings[0].message


def test_b004_a_limit_outcome_must_name_the_limit_and_return_what_it_had(conv: Conversation,
                                                                         recording: Recording) -> None:
    stopped_by_steps(conv)
    options = {"limits": {"steps": 2}}
    assert codes(check(recording, outcome=Outcome(status="limit", final_text="First c1."), options=options)) == {"B004"}
    assert codes(check(recording, outcome=Outcome(status="limit", limit="steps"), options=options)) == {"B004"}
    reported = Outcome(status="limit", limit="steps", final_text="First c1. (unfinished: step limit)")
    assert check(recording, outcome=reported, options=options) == []
