"""A retry is found by its body, not by its place: parallel subagents put their own calls between.

A coordinator runs its subagents under `Promise.all`; when one of them is answered 529 the SDK waits
and re-sends the same body, and meanwhile its siblings' requests reach the recording. The retry is
then not the exchange right after its failed attempt, yet it is the same call of the same thread
(tests/node/test_seed_agents.py records this with the official TypeScript SDK).
"""

from __future__ import annotations

from typing import Any

from harness.checks import check_trace
from harness.trace import Exchange, build_trace

TOOLS = [{"name": "get_customer", "input_schema": {"type": "object"}}]


def call(index: int, system: str, messages: list[dict[str, Any]], content: list[dict[str, Any]] | None, *,
         status: int = 200, retry: int = 0) -> Exchange:
    request = {"model": "claude-opus-4-8", "max_tokens": 100, "system": system, "tools": TOOLS, "messages": messages}
    stop = "tool_use" if content and content[-1]["type"] == "tool_use" else "end_turn"
    body: Any = (
        {"type": "message", "role": "assistant", "content": content, "stop_reason": stop, "usage": {}}
        if status == 200
        else {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    headers = {"x-stainless-retry-count": str(retry)}
    response_headers = {"retry-after": "0.3"} if status != 200 else {}
    return Exchange(index=index, method="POST", url="https://api.anthropic.com/v1/messages",
                    request_headers=headers, request_body=request, status=status,
                    response_headers=response_headers, response_body=body)


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def tool_use(tool_use_id: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": tool_use_id, "name": "get_customer", "input": {"customer_id": "C-42"}}]


def brief(value: str) -> dict[str, Any]:
    return {"role": "user", "content": value}


def with_result(first: list[dict[str, Any]], tool_use_id: str) -> list[dict[str, Any]]:
    return [*first, {"role": "assistant", "content": tool_use(tool_use_id)},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": "{}"}]}]


def test_a_subagents_first_call_retried_after_its_siblings_calls_is_one_call() -> None:
    a, b = [brief("Verifica al cliente C-42.")], [brief("Revisa el pedido O-7.")]
    trace = build_trace([
        call(0, "A", a, None, status=529),
        call(1, "B", b, text("Sin problemas.")),
        call(2, "A", a, text("Verificado."), retry=1),
    ], "t", whole_run=True)
    assert [(c.thread, c.step, [x.status for x in c.attempts]) for c in trace.calls] == [
        (1, 1, [529, 200]), (2, 1, [200])]
    assert check_trace(trace) == []


def test_a_subagents_later_call_retried_after_its_siblings_calls_continues_its_thread() -> None:
    a, b = [brief("Verifica al cliente C-42.")], [brief("Revisa el pedido O-7.")]
    trace = build_trace([
        call(0, "A", a, tool_use("toolu_a")),
        call(1, "B", b, tool_use("toolu_b")),
        call(2, "A", with_result(a, "toolu_a"), None, status=529),
        call(3, "B", with_result(b, "toolu_b"), text("Sin problemas.")),
        call(4, "A", with_result(a, "toolu_a"), text("Verificado."), retry=1),
    ], "t", whole_run=True)
    assert [(c.thread, c.step, len(c.attempts)) for c in trace.calls] == [(1, 1, 1), (2, 1, 1), (1, 2, 2), (2, 2, 1)]
    assert check_trace(trace) == []


def test_the_same_body_sent_again_after_a_success_is_still_a_new_call() -> None:
    # Only a failed call takes a later identical body as its retry: a success was answered.
    a, b = [brief("Verifica al cliente C-42.")], [brief("Revisa el pedido O-7.")]
    trace = build_trace([
        call(0, "A", a, text("Verificado.")),
        call(1, "B", b, text("Sin problemas.")),
        call(2, "A", a, text("Verificado otra vez.")),
    ], "t")
    assert [len(c.attempts) for c in trace.calls] == [1, 1, 1]


def test_a_retry_that_ignores_retry_after_is_caught_though_siblings_calls_came_between() -> None:
    # The back-off is measured between the attempts of one call: split apart, E001 could not see it.
    a, b = [brief("Verifica al cliente C-42.")], [brief("Revisa el pedido O-7.")]
    exchanges = [call(0, "A", a, None, status=529), call(1, "B", b, text("Sin problemas.")),
                 call(2, "A", a, text("Verificado."), retry=1)]
    for exchange, started in zip(exchanges, (0.0, 0.01, 0.05), strict=True):
        exchange.started_at, exchange.duration_s = started, 0.01
    findings = check_trace(build_trace(exchanges, "t", whole_run=True))
    assert [(f.code, f.call) for f in findings] == [("E001", 0)]
    assert "before its retry-after of 0.3s" in findings[0].message
