"""Server-held threads: a request that continues one sends only its new turn; the trace rebuilds the rest.

The SDK's beta tool runner sends `thread: {"type": "continue", "previous_message_id": ...}` by default,
so a correct loop written with it must read as one conversation, and a wrong one must still be caught.
"""

from __future__ import annotations

from typing import Any

from anthropic import beta_tool

from harness.checks import check_trace
from harness.trace import Exchange, Trace, build_trace
from harness.transport import open_session


@beta_tool
def lookup_order(order_id: str) -> str:
    """Looks an order up by id."""
    return f'{{"order_id": "{order_id}", "status": "delivered"}}'


def test_the_sdk_tool_runner_reads_as_one_clean_conversation() -> None:
    script = [
        {"tool_use": {"name": "lookup_order", "input": {"order_id": "O1"}}},
        {"tool_use": {"name": "lookup_order", "input": {"order_id": "O2"}}},
        {"text": "Both delivered."},
    ]
    with open_session("scripted", script=script) as session:
        runner = session.client().beta.messages.tool_runner(
            model="claude-sonnet-5", max_tokens=500, tools=[lookup_order],
            messages=[{"role": "user", "content": "Where are O1 and O2?"}],
        )
        assert runner.until_done().stop_reason == "end_turn"
    trace = build_trace(session.exchanges, "tool-runner", whole_run=True)
    continued = [c for c in trace.calls if (c.request.get("thread") or {}).get("type") == "continue"]
    assert continued and all(len(c.request["messages"]) == 1 for c in continued)  # only the new turn on the wire
    assert [(c.thread, c.step, len(c.messages)) for c in trace.calls] == [(1, 1, 1), (1, 2, 3), (1, 3, 5)]
    assert check_trace(trace) == []
    again = Trace.from_dict(trace.to_dict())
    assert [len(c.messages) for c in again.calls] == [1, 3, 5]


def _exchange(index: int, request: dict[str, Any], response: dict[str, Any]) -> Exchange:
    return Exchange(index=index, method="POST", url="https://api.anthropic.com/v1/messages", request_headers={},
                    request_body={"model": "claude-sonnet-5", "max_tokens": 100, **request}, status=200,
                    response_headers={}, response_body={"type": "message", "role": "assistant", "usage": {},
                                                        **response})


def test_a_continuation_that_drops_a_tool_result_is_still_caught() -> None:
    tools = [{"name": "t", "input_schema": {"type": "object"}}]
    first = _exchange(0, {"tools": tools, "thread": {"type": "create"},
                          "messages": [{"role": "user", "content": "go"}]},
                      {"id": "msg_1", "stop_reason": "tool_use", "content": [
                          {"type": "tool_use", "id": "toolu_a", "name": "t", "input": {}},
                          {"type": "tool_use", "id": "toolu_b", "name": "t", "input": {}}]})
    second = _exchange(1, {"tools": tools, "thread": {"type": "continue", "previous_message_id": "msg_1"},
                           "messages": [{"role": "user", "content": [
                               {"type": "tool_result", "tool_use_id": "toolu_a", "content": "ok"}]}]},
                       {"id": "msg_2", "stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}]})
    trace = build_trace([first, second], "dropped", whole_run=True)
    assert [c.thread for c in trace.calls] == [1, 1]
    assert {f.code for f in check_trace(trace) if f.severity == "error"} == {"T001"}


def test_a_continuation_of_a_response_not_recorded_is_noted() -> None:
    lone = _exchange(0, {"thread": {"type": "continue", "previous_message_id": "msg_gone"},
                         "messages": [{"role": "user", "content": "and then?"}]},
                     {"id": "msg_3", "stop_reason": "end_turn", "content": [{"type": "text", "text": "then"}]})
    trace = build_trace([lone], "fragment")
    assert any("msg_gone" in note for note in trace.notes)
