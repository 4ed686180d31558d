"""W rules: prerequisites, approval gates and circuit breakers a scenario declares, from events or the wire."""

from __future__ import annotations

from typing import Any

from recordings import TOOLS, Conversation, Recording, check, codes, text, tool_use


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": name, "input_schema": {"type": "object", "properties": {}}}


WORKFLOW_TOOLS = [*TOOLS, tool("delete_records"), tool("request_human_approval"), tool("fetch_rates")]
PREREQUISITES = {"prerequisites": [{"tool": "process_refund", "requires": "get_customer",
                                    "match": {"customer_id": "customer_id"}}]}
APPROVALS = {"approvals": [{"tool": "delete_records", "approval_tool": "request_human_approval"}]}


def agent(recording: Recording) -> Conversation:
    conv = recording.conversation(tools=WORKFLOW_TOOLS)
    conv.user("Handle ticket 7")
    return conv


def step(conv: Conversation, *uses: dict[str, Any], outputs: tuple[Any, ...] = (),
         errors: tuple[int, ...] = ()) -> None:
    conv.call(*uses)
    conv.results(*outputs, errors=errors)


def refund(customer: str) -> dict[str, Any]:
    return tool_use("process_refund", {"order_id": "o1", "customer_id": customer})


def lookup(customer: str) -> dict[str, Any]:
    return tool_use("get_customer", {"customer_id": customer})


# W001

def test_w001_a_refund_without_a_verified_customer(recording: Recording) -> None:
    conv = agent(recording)
    step(conv, refund("c1"))
    conv.call(text("Refunded."))
    findings = check(recording, options=PREREQUISITES)
    assert codes(findings) == {"W001"}
    assert "get_customer had not succeeded" in findings[0].message


def test_w001_the_verified_customer_must_match(recording: Recording) -> None:
    conv = agent(recording)
    step(conv, lookup("c2"))
    step(conv, refund("c1"))
    conv.call(text("Refunded."))
    findings = check(recording, options=PREREQUISITES)
    assert codes(findings) == {"W001"} and "customer_id='c1'" in findings[0].message


def test_w001_asked_in_the_same_turn_as_the_lookup_is_not_after_it(recording: Recording) -> None:
    conv = agent(recording)
    step(conv, lookup("c1"), refund("c1"))
    conv.call(text("Refunded."))
    assert codes(check(recording, options=PREREQUISITES)) == {"W001"}


def test_w001_verified_first_or_refused_by_the_dispatcher_is_fine(recording: Recording) -> None:
    conv = agent(recording)
    step(conv, refund("c1"), outputs=("PREREQUISITE_FAILED: call get_customer first",), errors=(0,))
    step(conv, lookup("c1"))
    step(conv, refund("c1"))
    conv.call(text("Refunded."))
    assert check(recording, whole_run=True, options=PREREQUISITES) == []


def test_w001_from_events_a_failed_lookup_does_not_verify(recording: Recording) -> None:
    conv = agent(recording)
    conv.call(lookup("c1"))
    conv.ran(conv.tool_uses()[0], 1.0, 1.5, is_error=True)
    conv.results("Error: boom", errors=[0])
    conv.call(refund("c1"))
    conv.ran(conv.tool_uses()[0], 3.0, 3.5)
    conv.results("refunded")
    conv.call(text("Refunded."))
    assert codes(check(recording, options={"policies": PREREQUISITES})) == {"W001"}


# W002

def test_w002_an_irreversible_tool_without_approval(recording: Recording) -> None:
    conv = agent(recording)
    step(conv, tool_use("delete_records", {"table": "orders"}))
    conv.call(text("Deleted."))
    findings = check(recording, options=APPROVALS)
    assert codes(findings) == {"W002"} and "request_human_approval" in findings[0].message


def test_w002_a_denied_approval_and_one_approval_for_two_deletions(recording: Recording) -> None:
    conv = agent(recording)
    step(conv, tool_use("request_human_approval", {"action": "delete"}), outputs=('{"approved": false}',))
    step(conv, tool_use("delete_records", {"table": "orders"}))
    conv.call(text("Deleted."))
    assert codes(check(recording, options=APPROVALS)) == {"W002"}
    twice = Recording()
    conv = agent(twice)
    step(conv, tool_use("request_human_approval", {"action": "delete"}), outputs=('{"approved": true}',))
    step(conv, tool_use("delete_records", {"table": "a"}), tool_use("delete_records", {"table": "b"}))
    conv.call(text("Deleted."))
    findings = check(twice, options=APPROVALS)
    assert codes(findings) == {"W002"} and len(findings) == 1


def test_w002_approved_first_is_fine(recording: Recording) -> None:
    conv = agent(recording)
    step(conv, tool_use("request_human_approval", {"action": "delete"}), outputs=("approved",))
    step(conv, tool_use("delete_records", {"table": "orders"}))
    step(conv, tool_use("request_human_approval", {"action": "delete"}), outputs=('{"approved": true}',))
    step(conv, tool_use("delete_records", {"table": "items"}))
    conv.call(text("Deleted."))
    assert check(recording, whole_run=True, options=APPROVALS) == []


# W003

BREAKER = {"circuit_breakers": [{"tool": "*", "failures": 3, "cooldown_s": 30}]}


def test_w003_on_the_wire_a_success_after_the_circuit_opened(recording: Recording) -> None:
    conv = agent(recording)
    for _ in range(3):
        step(conv, tool_use("fetch_rates"), outputs=("Error: upstream down",), errors=(0,))
    step(conv, tool_use("fetch_rates"), outputs=("1 USD = 0.9 EUR",))
    conv.call(text("0.9"))
    findings = check(recording, options=BREAKER)
    assert codes(findings) == {"W003"} and "fetch_rates" in findings[0].message


def test_w003_on_the_wire_rejections_while_open_are_fine(recording: Recording) -> None:
    conv = agent(recording)
    for _ in range(2):
        step(conv, tool_use("fetch_rates"), outputs=("Error: upstream down",), errors=(0,))
    step(conv, tool_use("fetch_rates"), outputs=("CIRCUIT_OPEN: fetch_rates blocked for 30s",), errors=(0,))
    conv.call(text("Rates are unavailable; escalating."))
    options = {"circuit_breakers": [{"tool": "fetch_rates", "failures": 2, "cooldown_s": 30}]}
    assert check(recording, whole_run=True, options=options) == []


def breaker_run(recording: Recording, retry_at: float) -> None:
    conv = agent(recording)
    for n in range(3):
        conv.call(tool_use("fetch_rates"))
        conv.ran(conv.tool_uses()[0], float(n), n + 0.5, is_error=True)
        conv.results("Error: upstream down", errors=[0])
    conv.call(tool_use("fetch_rates"))
    conv.ran(conv.tool_uses()[0], retry_at, retry_at + 0.5)
    conv.results("1 USD = 0.9 EUR")
    conv.call(text("0.9"))


def test_w003_from_events_a_call_within_the_cool_down(recording: Recording) -> None:
    breaker_run(recording, retry_at=10.0)
    findings = check(recording, options=BREAKER)
    assert codes(findings) == {"W003"} and "7.5s after" in findings[0].message


def test_w003_from_events_a_trial_after_the_cool_down_is_fine(recording: Recording) -> None:
    breaker_run(recording, retry_at=40.0)
    assert check(recording, whole_run=True, options=BREAKER) == []
