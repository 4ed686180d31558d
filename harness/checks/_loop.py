"""L rules: each stop_reason is handled as it asks (end, run the tools, resume, or give up).

What must come after a thread's last call can only be proven missing in a whole run, so those
findings go through `ctx.at_end`; with an outcome (the harness ran the agent) they are judged on it.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..trace._model import Call, Trace
from ..trace._normalize import resends_history, tool_name
from ._examples import MODEL, STOP_REASONS_DOC, TOOL_CALLS_DOC, TOOLS
from ._limits import reached_limits
from ._registry import CheckContext, Example, Finding, rule
from ._wire import (
    KNOWN_STOP_REASONS,
    Answer,
    TraceIndex,
    has_request,
    is_human_turn,
    trace_index,
)


def _results_for(index: TraceIndex, answer: Answer, ids: set[str]) -> list[tuple[int, int, str]]:
    """(message index, block index, id) of each tool_result for `ids` that the next request adds."""
    found = []
    messages = index.rows[answer.next.index].messages
    for mi in range(answer.rest, len(messages)):
        for bi, block in index.turn(messages[mi]).tool_results:
            if str(block.get("tool_use_id")) in ids:
                found.append((mi, bi, str(block.get("tool_use_id"))))
    return found


def _tool_use_ids(index: TraceIndex, call: Call) -> set[str]:
    return {str(b.get("id")) for _, b in index.rows[call.index].tool_uses}


def output_tool(call: Call, ctx: CheckContext) -> str | None:
    """How the response's tool_use blocks are the run's answer, when they are: every one names the tool
    the request forces with `tool_choice`, or a tool declared in the `output_tools` option."""
    names = {str(b.get("name")) for b in call.content if b.get("type") == "tool_use"}
    choice = call.request.get("tool_choice")
    forced = choice.get("name") if isinstance(choice, dict) and choice.get("type") == "tool" else None
    declared = {str(name) for name in ctx.option("output_tools") or ()}
    if not names or not all(name == forced or name in declared for name in names):
        return None
    how = "forced by tool_choice" if names == {forced} else "declared as an output tool"
    return f"{', '.join(sorted(names))} ({how})"


_CALL_SETUP = ("tools", "tool_choice", "system", "output_config", "output_format")


def _separate_call(call: Call, nxt: Call) -> bool:
    """`nxt` is set up differently (tools, tool_choice, system, output format): a separate call built on
    the conversation, such as langgraph's `response_format` call, not the loop going on."""
    return any(call.request.get(key) != nxt.request.get(key) for key in _CALL_SETUP)


def _ends_as_completed(trace: Trace, call: Call) -> bool:
    index = trace_index(trace)
    return trace.outcome is not None and trace.outcome.status == "completed" and index.final_call is call


@rule(
    "L001", "After end_turn or stop_sequence, a further call adds a new human turn",
    reads=("content", "stop_reason"),
    why="end_turn means the model has finished its answer. Calling again with nothing new asks it to go on "
        "talking to itself: tokens spent on an answer nobody asked for, and a loop that may never end.",
    fix="Stop the loop when stop_reason is end_turn or stop_sequence and return the answer. Call again only "
        "when there is a new user message to send.",
    docs=(STOP_REASONS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Hi"},
                                                   {"role": "assistant",
                                                    "content": [{"type": "text", "text": "Hello!"}]}]},
         "response": {"content": [{"type": "text", "text": " How can I help?"}], "stop_reason": "end_turn"}},
    )),
)
def continue_only_with_new_turn(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A call that follows a response with `end_turn` or `stop_sequence` in the same thread adds a human
    turn: a user message that is not only `tool_result` blocks. A separate call (other tools, tool_choice,
    system or output format) that ends with the answer as its last message is a prefill: R008 judges it."""
    index = trace_index(trace)
    for call in index.answered_with("end_turn", "stop_sequence"):
        answer = index.answer(call)
        if answer is None:
            continue
        added = answer.next.messages[answer.rest :]
        if any(is_human_turn(m) for m in added):
            continue
        if not added and _separate_call(call, answer.next):
            continue  # a prefill: R008 judges whether the model accepts it
        what = "only tool_result blocks" if added else "no message"
        yield ctx.finding(
            "L001",
            answer.next,
            f"step {call.step} ended with {call.stop_reason}, yet this call follows with {what} "
            "after the assistant turn; "
            "end the loop on end_turn/stop_sequence, or call again only with a new user turn",
            message_index=answer.rest if added else None,
        )


@rule(
    "L002", "After tool_use the next request carries the tool results; the run never ends there as completed",
    reads=("content", "stop_reason"),
    warning="when the recording may be a fragment and simply ends after the tool_use",
    why="tool_use means the model is waiting for the tools' output. A request without the results leaves "
        "it without the data it asked for, and a run that ends there returns an unfinished task as done.",
    fix="Run every tool the response asks for and send the results in the next user message. If a limit "
        "stops the run first, report the run as stopped by that limit, not as completed.",
    docs=(STOP_REASONS_DOC, TOOL_CALLS_DOC),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS,
                     "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use"}},
    ), outcome={"status": "completed"}),
)
def tool_use_is_answered(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """After a response with `tool_use`, the thread's next request carries a `tool_result` for it. A run
    may end on `tool_use` only when a declared limit stopped it and its outcome says so, or on an output
    tool: one whose input is the answer, forced by that call's `tool_choice` or declared in the
    `output_tools` option (`--output-tool NAME`, a scenario's `output_tools:`); that ending is a note."""
    index = trace_index(trace)
    for call in index.answered_with("tool_use"):
        uses = index.rows[call.index].tool_uses
        if not uses:
            continue
        ids = {str(b.get("id")) for _, b in uses}
        answer = index.answer(call)
        if answer is not None:
            declared = index.declared_tools(call)
            if declared is not None and not any(b.get("name") in declared for _, b in uses):
                continue  # only undeclared tools were asked for: T006 says how to answer them
            if not _results_for(index, answer, ids):
                yield ctx.finding(
                    "L002",
                    answer.next,
                    f"step {call.step} stopped for tool_use ({', '.join(sorted(ids))}) but this request carries no "
                    "tool_result for it; run the tools and send their results in the next user message",
                    message_index=answer.rest if answer.rest < len(answer.next.messages) else None,
                )
            continue
        names = ", ".join(sorted({tool_name(b) for b in call.content if b.get("type") == "tool_use"}))
        output = output_tool(call, ctx)
        if output is not None:
            ctx.note("L002", call, f"the thread ends on the output tool {output}: its input is the answer, so no "
                     "tool_result follows, by design")
            continue
        if trace.outcome is None:
            yield ctx.at_end(
                "L002",
                call,
                f"the thread ends on tool_use ({names}) without sending the tool results",
            )
        elif trace.outcome.status != "limit" and not reached_limits(trace, ctx.options):
            yield ctx.finding(
                "L002",
                call,
                f"the run ended on tool_use ({names}) and reports {trace.outcome.status!r}; run the tools and call "
                "again, or stop by a declared limit and report status 'limit'",
            )


@rule(
    "L003", "After pause_turn the paused turn is re-sent as is, with no tool_result",
    reads=("content", "stop_reason"),
    warning="when the recording may be a fragment and simply ends on the pause",
    why="pause_turn means a long server-side turn (web search, code execution) was paused and will go on "
        "when the paused content is sent back. A tool_result, a history without the paused content, or "
        "ending there loses the work the server did.",
    fix="Append the paused response's content as the assistant turn, add nothing else, and call again.",
    docs=(STOP_REASONS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Search the news"}]},
         "response": {"content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                                   "input": {"query": "news"}}], "stop_reason": "pause_turn"}},
    ), outcome={"status": "completed"}),
)
def pause_turn_resumed(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """After a response with `pause_turn`, the next request re-sends the history with the paused content
    appended as it came and no `tool_result` for it; the run does not end on the pause."""
    index = trace_index(trace)
    for call in index.answered_with("pause_turn"):
        answer = index.answer(call)
        if answer is not None:
            messages = answer.next.messages
            for mi in range(answer.rest, len(messages)):
                results = index.turn(messages[mi]).tool_results
                if results:
                    bi, block = results[0]
                    yield ctx.finding(
                        "L003",
                        answer.next,
                        f"step {call.step} paused (pause_turn) but this request adds a tool_result "
                        f"({block.get('tool_use_id')}); re-send the history with the paused content "
                        "appended and nothing else",
                        message_index=mi,
                        block_index=bi,
                    )
                    break
            continue
        again = index.later_with_messages(call)
        if again:
            yield ctx.finding(
                "L003",
                again[0],
                f"step {call.step} of thread {call.thread} paused (pause_turn) and its history was sent again without "
                "the paused content; append the response content as the assistant turn and call again",
            )
        elif trace.outcome is None:
            yield ctx.at_end("L003", call, "the thread ends on pause_turn instead of resuming the paused turn")
        elif trace.outcome.status != "limit":
            yield ctx.finding(
                "L003",
                call,
                f"the run ended on pause_turn and reports {trace.outcome.status!r}; call again with "
                "the paused content appended",
            )


@rule(
    "L004", "After refusal the history is not re-sent and the run does not end as completed",
    reads=("content", "stop_reason"),
    why="A refusal will come again for the same history: re-sending it is a retry loop that spends tokens "
        "for the same answer, and reporting it as completed hides from the caller that nothing was done.",
    fix="Stop on refusal and report it (outcome status 'refused'). Change the request before calling again.",
    docs=(STOP_REASONS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Do the forbidden thing"}]},
         "response": {"content": [], "stop_reason": "refusal"}},
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Do the forbidden thing"}]},
         "response": {"content": [], "stop_reason": "refusal"}},
    )),
)
def refusal_not_retried(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """After a response with `refusal`, the refused history is not sent again: unchanged, with user
    messages appended before any assistant turn, or with text appended to its last user message (a
    retry loop, e.g. smolagents' "Error: ... Now let's retry"); and the run does not report `completed`.
    A loop retrying one refusal is one finding, at its first re-send."""
    calls = trace.calls
    for call in trace_index(trace).answered_with("refusal"):
        if not has_request(call):
            continue
        if any(c.stop_reason == "refusal" and resends_history(c.messages, call.messages) for c in calls[: call.index]):
            continue  # itself a re-send of an earlier refusal: reported there
        again = [c for c in calls[call.index + 1:] if has_request(c) and resends_history(call.messages, c.messages)]
        if again:
            how = "unchanged" if again[0].messages == call.messages else "with text appended"
            yield ctx.finding(
                "L004",
                again[0],
                f"the history refused at {call.where} is sent again {how} "
                f"({len(again)} time(s)); do not retry a refusal in a loop: report it and stop",
            )
        if _ends_as_completed(trace, call):
            yield ctx.finding(
                "L004",
                call,
                "the run ended on a refusal but reports 'completed'; report the refusal (status 'refused')",
            )


@rule(
    "L005", "A max_tokens cut is never executed nor returned as the completed answer",
    reads=("content", "stop_reason"),
    warning="when the recording may be a fragment and simply ends on the cut response",
    why="A response cut by max_tokens is incomplete: its text stops mid-way and a tool_use block in it may "
        "carry a truncated input. Returning it as the answer, or running that tool, acts on half a decision.",
    fix="Treat max_tokens as an error or continue the response (raise max_tokens, or call again to go on); "
        "never run a tool_use of a cut response.",
    docs=(STOP_REASONS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "Write a poem"}]},
         "response": {"content": [{"type": "text", "text": "Roses are red, vio"}], "stop_reason": "max_tokens"}},
    ), outcome={"status": "completed", "final_text": "Roses are red, vio"}),
)
def max_tokens_not_trusted(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """After a response with `max_tokens`, no `tool_result` answers one of its `tool_use` blocks, and the
    run does not report `completed` with the cut response as its answer."""
    index = trace_index(trace)
    for call in index.answered_with("max_tokens"):
        answer = index.answer(call)
        if answer is not None:
            content = call.content
            last_id = str(content[-1].get("id")) if content and content[-1].get("type") == "tool_use" else None
            for mi, bi, tool_use_id in _results_for(index, answer, _tool_use_ids(index, call)):
                # Only the response's last block can have been cut mid-way; an earlier tool_use is whole,
                # but the turn it belongs to is not (the model had not finished deciding).
                what = ("the last block of a response cut by max_tokens, so its input may be incomplete"
                        if tool_use_id == last_id else
                        "whole, but from a response cut by max_tokens after it (the turn is unfinished)")
                yield ctx.finding(
                    "L005",
                    answer.next,
                    f"tool_result for {tool_use_id}, a tool_use of step {call.step}: {what}; never run the tools "
                    "of a cut response: raise max_tokens or retry the call",
                    message_index=mi,
                    block_index=bi,
                )
        if _ends_as_completed(trace, call):
            yield ctx.finding(
                "L005",
                call,
                "the run reports 'completed' with an answer cut by max_tokens; treat the cut as an error "
                "or continue it, never as the final answer",
            )
        elif answer is None and trace.outcome is None and not index.later_with_messages(call):
            yield ctx.at_end(
                "L005",
                call,
                "the thread ends on a response cut by max_tokens; it must not become the completed answer",
            )


@rule(
    "L006", "An unknown stop_reason is never continued as tool_use nor returned as success",
    reads=("content", "stop_reason"),
    why="New stop reasons appear (model_context_window_exceeded, for one). A loop that treats any reason it "
        "does not know as 'run the tools' or 'done' continues or returns a response it has not understood.",
    fix="Handle every known stop_reason explicitly and end the run as an error on any other (or handle it "
        "like max_tokens).",
    docs=(STOP_REASONS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Summarize the log"}]},
         "response": {"content": [{"type": "text", "text": "The log shows"}],
                      "stop_reason": "model_context_window_exceeded"}},
    ), outcome={"status": "completed", "final_text": "The log shows"}),
)
def unknown_stop_reason_handled(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A response whose `stop_reason` is none of end_turn, tool_use, max_tokens, stop_sequence, pause_turn
    or refusal is neither answered with `tool_result` blocks nor reported as a completed run."""
    index = trace_index(trace)
    for row in index.rows:
        if not row.answered or row.stop_reason in KNOWN_STOP_REASONS:
            continue
        call = row.call
        reason = row.stop_reason
        answer = index.answer(call)
        if answer is not None:
            for mi, bi, tool_use_id in _results_for(index, answer, _tool_use_ids(index, call)):
                yield ctx.finding(
                    "L006",
                    answer.next,
                    f"step {call.step} stopped with {reason!r}, yet this request answers its tool_use {tool_use_id} as "
                    "if it were tool_use; end the run as an error or handle it like max_tokens",
                    message_index=mi,
                    block_index=bi,
                )
        if _ends_as_completed(trace, call):
            yield ctx.finding(
                "L006",
                call,
                f"the run ended on stop_reason {reason!r} and reports 'completed'; an unknown stop_reason is an error",
            )
