"""Threads are rebuilt from the requests: continuation, fresh conversations, retries, explicit keys."""

from __future__ import annotations

from typing import Any

from harness.trace import Exchange, build_trace


def exchange(index: int, messages: list[dict[str, Any]], content: list[dict[str, Any]] | None, *,
             status: int = 200, system: str | None = None, key: str | None = None,
             stop_reason: str = "end_turn") -> Exchange:
    request: dict[str, Any] = {"model": "claude-sonnet-5", "max_tokens": 100, "messages": messages}
    if system is not None:
        request["system"] = system
    body: Any = (
        {"type": "message", "role": "assistant", "content": content, "stop_reason": stop_reason, "usage": {}}
        if status == 200
        else {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    return Exchange(index=index, method="POST", url="https://api.anthropic.com/v1/messages",
                    request_headers={}, request_body=request, status=status, response_headers={},
                    response_body=body, thread_key=key)


USER = {"role": "user", "content": "hi"}
TOOL_USE = [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}


def test_a_call_that_extends_the_history_continues_the_thread() -> None:
    first = exchange(0, [USER], TOOL_USE, stop_reason="tool_use")
    second = exchange(1, [USER, {"role": "assistant", "content": TOOL_USE}, RESULT], [{"type": "text", "text": "done"}])
    trace = build_trace([first, second], "t")
    assert [(c.thread, c.step) for c in trace.calls] == [(1, 1), (1, 2)]


def test_an_identical_request_after_a_success_is_a_new_thread_not_a_retry() -> None:
    trace = build_trace([exchange(0, [USER], [{"type": "text", "text": "a"}]),
                         exchange(1, [USER], [{"type": "text", "text": "b"}])], "t")
    assert [(c.thread, c.step, len(c.attempts)) for c in trace.calls] == [(1, 1, 1), (2, 1, 1)]


def test_a_resend_after_a_failure_is_another_attempt_of_the_same_call() -> None:
    trace = build_trace([exchange(0, [USER], None, status=529), exchange(1, [USER], [{"type": "text", "text": "a"}])],
                        "t")
    assert len(trace.calls) == 1
    assert [a.status for a in trace.calls[0].attempts] == [529, 200]
    assert trace.calls[0].stop_reason == "end_turn"


def test_explicit_thread_keys_win_and_name_the_parent() -> None:
    trace = build_trace([
        exchange(0, [USER], TOOL_USE, key="main", stop_reason="tool_use"),
        exchange(1, [{"role": "user", "content": "brief"}], [{"type": "text", "text": "r"}], key="main/sub"),
    ], "t")
    assert [t.key for t in trace.threads] == ["main", "main/sub"]
    assert trace.threads[1].parent == 1


def test_trace_round_trips_through_plain_data() -> None:
    from harness.trace import Trace

    trace = build_trace([exchange(0, [USER], TOOL_USE, stop_reason="tool_use")], "t")
    again = Trace.from_dict(trace.to_dict())
    assert again.to_dict() == trace.to_dict()
    assert again.calls[0].stop_reason == "tool_use"


def test_an_edited_history_still_continues_its_thread_so_history_rules_can_see_it() -> None:
    first = exchange(0, [USER], TOOL_USE, stop_reason="tool_use")
    second = exchange(1, [USER, {"role": "assistant", "content": TOOL_USE}, RESULT], [{"type": "text", "text": "done"}])
    # The agent rewrote its earlier assistant turn before asking again: the history is edited (H002).
    third = exchange(2, [USER, {"role": "assistant", "content": [{"type": "text", "text": "edited"}]}, RESULT,
                         {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
                         {"role": "user", "content": "more"}], [{"type": "text", "text": "ok"}])
    trace = build_trace([first, second, third], "t")
    assert [(c.thread, c.step) for c in trace.calls] == [(1, 1), (1, 2), (1, 3)]


def test_many_independent_calls_with_the_same_prompt_stay_separate_threads() -> None:
    trace = build_trace([exchange(i, [USER], [{"type": "text", "text": str(i)}]) for i in range(300)], "t")
    assert len(trace.threads) == 300
