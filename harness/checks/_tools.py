"""T rules: the tool_use / tool_result protocol: every call answered once, in the next message, results first.

T001-T003 share one pass over the messages each request adds: every assistant turn with tool_use
blocks is paired with the user message right after it. T005 and T008 read the harness's tool
events when the trace has them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..trace._model import Call, ToolExecution, Trace
from ..trace._normalize import tool_name
from ._examples import MODEL, PAY_TOOLS, TOOL_CALLS_DOC, TOOLS
from ._registry import CheckContext, Example, Finding, rule
from ._wire import (
    TraceIndex,
    limits_option,
    normalize,
    ordinal,
    result_text,
    trace_index,
)

DEFAULT_MAX_CONSECUTIVE_TOOL_ERRORS = 3

_ERROR_OPENING = re.compile(
    r"^(?:(?i:error)\b|TIMEOUT\b|CIRCUIT_OPEN\b|PREREQUISITE_FAILED\b|SECURITY_ERROR\b"
    r"|Traceback \(most recent call last\))"
)


@dataclass(frozen=True)
class _Issue:
    code: str
    call: Call
    message: str
    message_index: int | None
    block_index: int | None = None


def _pairing_issues(trace: Trace) -> list[_Issue]:
    """T001/T002/T003 problems of every assistant turn with tool_use and the user message after it."""
    index = trace_index(trace)
    cached = index.memo.get("tool_pairing")
    if cached is None:
        cached = []
        for row in index.rows:
            if row.has_request:
                cached.extend(_pairing_issues_of(index, row.call))
        index.memo["tool_pairing"] = cached
    return cached


def _earlier_tool_use(index: TraceIndex, messages: list[Any], before: int, tool_use_id: str) -> int | None:
    for i in range(before - 1, -1, -1):
        turn = index.turn(messages[i])
        if turn.role == "assistant" and any(b.get("id") == tool_use_id for _, b in turn.tool_uses):
            return i
    return None


def _pairing_issues_of(index: TraceIndex, call: Call) -> Iterator[_Issue]:
    messages = index.rows[call.index].messages
    start = index.start(call)
    if start == 0 and messages:
        for bi, block in index.turn(messages[0]).tool_results:
            yield _Issue("T001", call, f"tool_result for {block.get('tool_use_id')} opens the conversation: no "
                         "tool_use precedes it", 0, bi)
    turn = index.turn
    for i in range(max(start - 1, 0), len(messages) - 1):
        user = turn(messages[i + 1])
        if user.role != "user":
            continue  # alternation is H003's to report
        results = user.tool_results
        before = turn(messages[i])
        uses = before.tool_uses if before.role == "assistant" else []
        if not uses and not results:
            continue
        if (user.only_results and len(user.result_ids) == len(before.use_ids) == len(set(user.result_ids))
                and set(user.result_ids) == set(before.use_ids) and before.role == "assistant"):
            continue  # each tool_use answered once, results alone: nothing any of T001-T003 reports
        answered_call = index.is_answer(call, i)
        if answered_call is not None and answered_call.stop_reason != "tool_use":
            continue  # results after another stop_reason are L001/L003/L005/L006's to judge
        ids = [str(b.get("id")) for _, b in uses]
        result_ids = [str(b.get("tool_use_id")) for _, b in results]
        present = set(result_ids)
        declared = index.declared_tools(answered_call or call)
        # A missing result for an undeclared tool is T006's: answer it with an is_error result.
        missing = [(n, bi, b) for n, (bi, b) in enumerate(uses) if str(b.get("id")) not in present
                   and (declared is None or str(b.get("name")) in declared)]
        if missing:
            later: dict[str, int] = {}
            for k in range(i + 2, len(messages)):
                for _, block in turn(messages[k]).tool_results:
                    later.setdefault(str(block.get("tool_use_id")), k)
            if answered_call is not None and not results and not any(x in later for x in ids):
                continue  # no results at all for the turn just answered: L002
            for n, _, block in missing:
                tool_use_id = str(block.get("id"))
                which = f"the {ordinal(n + 1)} of {len(uses)}" if len(uses) > 1 else "the only one"
                if tool_use_id in later:
                    yield _Issue(
                        "T002", call,
                        f"tool_result for {tool_use_id} ({tool_name(block)}, {which} in messages[{i}]) travels in "
                        f"messages[{later[tool_use_id]}]; send every tool_result in the user message right after the "
                        "assistant turn",
                        later[tool_use_id],
                    )
                else:
                    yield _Issue(
                        "T001", call,
                        f"no tool_result for tool_use {tool_use_id} ({tool_name(block)}, {which} in messages[{i}]); "
                        "send exactly one tool_result per tool_use id in the next user message",
                        i + 1,
                    )
        # Counted only when some id repeats: a Counter per turn was a tenth of these rules' time.
        repeated = Counter(result_ids).items() if len(present) < len(result_ids) else ()
        for tool_use_id, count in repeated:
            if count > 1 and tool_use_id in ids:
                yield _Issue("T001", call, f"{count} tool_results for tool_use {tool_use_id}; send exactly one",
                             i + 1)
        for bi, block in results:
            tool_use_id = str(block.get("tool_use_id"))
            if tool_use_id in ids:
                continue
            earlier = _earlier_tool_use(index, messages, i, tool_use_id)
            if earlier is None:
                yield _Issue("T001", call, f"tool_result for unknown tool_use id {tool_use_id}: the assistant turn "
                             f"before it has {', '.join(ids) or 'no tool_use'}", i + 1, bi)
            elif earlier + 1 < start:
                yield _Issue("T002", call, f"tool_result for {tool_use_id} (tool_use in messages[{earlier}]) arrives "
                             f"in messages[{i + 1}], not right after its assistant turn", i + 1, bi)
        kinds = [b.get("type") for b in user.blocks]
        first_other = next((k for k, kind in enumerate(kinds) if kind != "tool_result"), None)
        if first_other is not None:
            late = [k for k in range(first_other + 1, len(kinds)) if kinds[k] == "tool_result"]
            if late:
                yield _Issue(
                    "T003", call,
                    f"{kinds[first_other]} block at content[{first_other}] comes before tool_result(s) at "
                    f"content{late}; put every tool_result first in the user message",
                    i + 1, late[0],
                )


def _issues(trace: Trace, ctx: CheckContext, code: str) -> Iterator[Finding]:
    for issue in _pairing_issues(trace):
        if issue.code == code:
            yield ctx.finding(code, issue.call, issue.message, message_index=issue.message_index,
                              block_index=issue.block_index)


@rule(
    "T001", "Every tool_use id gets exactly one tool_result in the next user message",
    reads=("content", "turns"),
    why="The API rejects a request whose tool_use has no tool_result right after it, or a tool_result "
        "with no tool_use; a lost result of parallel calls leaves the model reasoning on half the data.",
    fix="Answer every tool_use block of the response, each with one tool_result carrying its id, in the "
        "next user message.",
    docs=(TOOL_CALLS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Paris and Rome?"}]},
         "response": {"content": [
             {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
             {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}],
             "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Paris and Rome?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]}]},
         "response": {"content": [{"type": "text", "text": "Paris is 18C."}], "stop_reason": "end_turn"}},
    )),
)
def one_result_per_tool_use(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """Every `tool_use` id of an assistant turn gets exactly one `tool_result` in the user message right
    after it: none missing (the 2nd..nth of parallel calls included), none twice, none for an id the turn
    does not have."""
    yield from _issues(trace, ctx, "T001")


@rule(
    "T002", "All tool_results of a turn travel in the user message right after it",
    reads=("content", "turns"),
    why="The API pairs a turn's tool_use blocks with the user message right after it: a result sent "
        "one message late is refused, or read by the model as an answer to something else.",
    fix="Collect the results of every tool of the turn and send them together in the next user message.",
    docs=(TOOL_CALLS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Paris and Rome?"}]},
         "response": {"content": [
             {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
             {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}],
             "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Paris and Rome?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "And Rome?"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "24C"}]}]},
         "response": {"content": [{"type": "text", "text": "Paris 18C, Rome 24C."}], "stop_reason": "end_turn"}},
    )),
)
def results_in_next_message(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """All `tool_result` blocks answering one assistant turn travel in the single user message that
    follows it, not in a later message."""
    yield from _issues(trace, ctx, "T002")


@rule(
    "T003", "tool_result blocks come before any other block of their user message",
    reads=("content", "turns"),
    why="The API expects a turn's tool results first in the user message; text placed before them makes "
        "the request invalid or teaches the model to end its turns early with empty answers.",
    fix="Put the tool_result blocks first and any text you add after them.",
    docs=(TOOL_CALLS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "text", "text": "Here it is:"},
                                         {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]}]},
         "response": {"content": [{"type": "text", "text": "18C in Paris."}], "stop_reason": "end_turn"}},
    )),
)
def results_first(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """In the user message that answers a turn, every `tool_result` block comes before any other block
    (text, image, document)."""
    yield from _issues(trace, ctx, "T003")


@rule(
    "T004", "tool_use ids are unique within a thread",
    reads=("content",),
    why="A tool_result names its tool_use by id: two calls with one id make it ambiguous which one a result "
        "answers, for the API and for the loop's own bookkeeping.",
    fix="Keep the ids the API gives; when the loop writes tool_use blocks itself (a replayed or injected "
        "history), give each a fresh id.",
    docs=(TOOL_CALLS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Paris, then Rome"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Rome"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "24C"}]}]},
         "response": {"content": [{"type": "text", "text": "Paris 18C, Rome 24C."}], "stop_reason": "end_turn"}},
    )),
)
def unique_tool_use_ids(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """No `tool_use` id appears twice in one thread, whether in a response or in an assistant turn the
    loop wrote itself."""
    index = trace_index(trace)
    rows = index.rows
    for thread in trace.threads:
        # id -> (step, where in that step, index there, the block): where it was first used.
        seen: dict[str, tuple[int, str, int, Any]] = {}
        for row in (rows[i] for i in thread.calls):
            call = row.call
            for mi, turn in index.added_turns(call):
                if turn.role != "assistant" or not turn.tool_uses or index.is_answer(call, mi) is not None:
                    continue
                for bi, block in turn.tool_uses:
                    tool_use_id = str(block.get("id"))
                    earlier = seen.get(tool_use_id)
                    if earlier is None:
                        seen[tool_use_id] = (call.step, "messages", mi, block)
                    elif earlier[3] != block and normalize(earlier[3]) != normalize(block):
                        yield ctx.finding("T004", call, f"tool_use id {tool_use_id} is used again; first used at "
                                          f"{_first_use(earlier)}", message_index=mi, block_index=bi)
            for bi, block in row.tool_uses:
                tool_use_id = str(block.get("id"))
                earlier = seen.get(tool_use_id)
                if earlier is not None:
                    yield ctx.finding("T004", call, f"the response's content[{bi}] reuses tool_use id {tool_use_id}, "
                                      f"first used at {_first_use(earlier)}; ids must be unique within a thread")
                else:
                    seen[tool_use_id] = (call.step, "response content", bi, block)


def _first_use(seen: tuple[int, str, int, Any]) -> str:
    """`step 2 messages[3]`, `step 2 response content[1]`: where T004 saw an id first."""
    step, where, at, _ = seen
    return f"step {step} {where}[{at}]"


def _reads_as_error(text: str) -> bool:
    text = text.lstrip()
    if _ERROR_OPENING.match(text):
        return True
    # An object with an "error" key spells it out, or in \u escapes; most JSON results are not parsed.
    if text.startswith("{") and ("error" in text or "\\u" in text):
        try:
            value = json.loads(text)
        except ValueError:
            return False
        return isinstance(value, dict) and bool(value.get("error"))
    return False


def _failed(execution: ToolExecution) -> bool:
    return execution.is_error or execution.error is not None


@rule(
    "T005", "A tool that failed returns is_error: true",
    reads=("content", "is_error"),
    warning="when only the wire is known and the result merely reads as an error",
    why="Without is_error the model takes the failure text for a result: it may build its answer on it "
        "instead of retrying, choosing another tool or telling the user.",
    fix="Catch the tool's failure and send its message in a tool_result with is_error: true.",
    docs=(TOOL_CALLS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": "service unavailable"}]}]},
         "response": {"content": [{"type": "text", "text": "It is unavailable."}], "stop_reason": "end_turn"}},
    ), tool_executions=(
        {"tool_use_id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}, "started_at": 0.1,
         "ended_at": 0.2, "is_error": True, "error": "ConnectionError: service unavailable"},
    )),
)
def failures_flagged(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A tool that failed (an exception or an error result in the harness's tool events) returns its
    `tool_result` with `is_error: true`. On the wire alone, a result whose text reads as an error (it opens
    with `Error`, `TIMEOUT`, `CIRCUIT_OPEN`, a traceback, or is a JSON object with an `error`) without
    `is_error` is a warning."""
    index = trace_index(trace)
    executions = {e.tool_use_id: e for e in trace.tool_executions}
    reported: set[tuple[int, str]] = set()
    for call in trace.calls:
        for mi, turn in index.added_turns(call):
            if turn.role != "user":
                continue
            for bi, block in turn.tool_results:
                tool_use_id = str(block.get("tool_use_id"))
                if block.get("is_error") is True or (call.thread, tool_use_id) in reported:
                    continue
                execution = executions.get(tool_use_id)
                text = result_text(block)
                if execution is not None and _failed(execution):
                    reported.add((call.thread, tool_use_id))
                    yield ctx.finding(
                        "T005", call,
                        f"{execution.name} failed ({execution.error or 'is_error'}) but its tool_result for "
                        f"{tool_use_id} lacks is_error: true; flag failures so the model can correct course",
                        message_index=mi, block_index=bi,
                    )
                elif _reads_as_error(text):
                    reported.add((call.thread, tool_use_id))
                    yield ctx.finding(
                        "T005", call,
                        f"tool_result for {tool_use_id} reads as an error ({text.strip()[:60]!r}) but has no "
                        "is_error: true; set is_error on failed tool results",
                        message_index=mi, block_index=bi, severity="warning",
                    )


@rule(
    "T006", "A tool_use naming an undeclared tool gets an is_error tool_result",
    reads=("content", "is_error", "tools"),
    warning="when the recording may be a fragment and simply ends after that tool_use",
    why="The model can ask for a tool that does not exist. Leaving the call unanswered breaks the next "
        "request, and answering it as a success tells the model a tool it invented worked.",
    fix="Dispatch unknown tool names to an error result (is_error: true, 'unknown tool NAME') instead of "
        "skipping them.",
    docs=(TOOL_CALLS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Book a table"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "book_table",
                                   "input": {"people": 2}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Book a table"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "book_table",
                                               "input": {"people": 2}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}]}]},
         "response": {"content": [{"type": "text", "text": "Booked."}], "stop_reason": "end_turn"}},
    )),
)
def unknown_tool_gets_error(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A `tool_use` naming a tool the request's `tools` does not declare still gets a `tool_result`, and
    that result has `is_error: true`."""
    index = trace_index(trace)
    for row in index.rows:
        if not row.tool_uses or not row.answered:
            continue
        call = row.call
        declared = index.declared_tools(call)
        if declared is None:
            continue  # without the request's tools (response-only recording) nothing is known about names
        unknown = [(bi, b) for bi, b in row.tool_uses if b.get("name") not in declared]
        if not unknown:
            continue
        answer = index.answer(call)
        for bi, block in unknown:
            tool_use_id, name = str(block.get("id")), block.get("name")
            shown = repr(name) if name is not None else "a tool with no name"
            if answer is None:
                if trace.outcome is None or trace.outcome.status != "limit":
                    yield ctx.at_end("T006", call,
                                     f"content[{bi}] calls {shown}, which the request does not declare; "
                                     f"it must still get a tool_result with is_error: true")
                continue
            messages = answer.next.messages
            hits = [(mi, k, r) for mi in range(answer.rest, len(messages))
                    for k, r in index.turn(messages[mi]).tool_results
                    if str(r.get("tool_use_id")) == tool_use_id]
            if not hits:
                yield ctx.finding(
                    "T006", answer.next,
                    f"tool_use {tool_use_id} calls {shown}, which the request does not declare, and gets no "
                    "tool_result; answer unknown tools with an is_error result",
                    message_index=answer.rest if answer.rest < len(messages) else None,
                )
            elif hits[0][2].get("is_error") is not True:
                yield ctx.finding(
                    "T006", answer.next,
                    f"tool_use {tool_use_id} calls {shown}, which the request does not declare, and its "
                    "tool_result has no is_error: true; answer unknown tools with an is_error result",
                    message_index=hits[0][0], block_index=hits[0][1],
                )


@rule(
    "T007", "No more than N consecutive tool errors without stopping or changing course",
    reads=("content", "is_error"),
    why="A tool that keeps failing will usually fail again: a loop that goes on calling it burns steps and "
        "tokens without progress.",
    fix="Count consecutive tool errors and stop the run (or change strategy) when they reach the limit.",
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Four cities"}]},
         "response": {"content": [
             {"type": "tool_use", "id": f"toolu_{n}", "name": "get_weather", "input": {"city": city}}
             for n, city in enumerate(("Paris", "Rome", "Oslo", "Lima"), start=1)], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Four cities"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{n}", "name": "get_weather", "input": {"city": city}}
                for n, city in enumerate(("Paris", "Rome", "Oslo", "Lima"), start=1)]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "timeout", "is_error": True}
                for n in range(1, 5)]}]},
         "response": {"content": [{"type": "text", "text": "All failed."}], "stop_reason": "end_turn"}},
    )),
)
def tool_error_streak(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A thread sends no more than N `is_error` tool results in a row (option
    `max_consecutive_tool_errors`, else the `tool_errors` limit, else 3) without the run stopping or
    changing course."""
    limit = ctx.option("max_consecutive_tool_errors")
    if not isinstance(limit, int):
        limit = limits_option(ctx.options).get("tool_errors")
    if not isinstance(limit, int):
        limit = DEFAULT_MAX_CONSECUTIVE_TOOL_ERRORS
    index = trace_index(trace)
    failed = {e.tool_use_id for e in trace.tool_executions if _failed(e)}
    for thread in trace.threads:
        names: dict[str, str] = {}
        streak: list[str] = []
        for row in (index.rows[i] for i in thread.calls):
            call = row.call
            for mi, turn in index.added_turns(call):
                kind = turn.role
                if kind == "assistant":
                    for _, block in turn.tool_uses:
                        names[str(block.get("id"))] = tool_name(block)
                    continue
                if kind != "user":
                    continue
                for bi, block in turn.tool_results:
                    tool_use_id = str(block.get("tool_use_id"))
                    if block.get("is_error") is True or tool_use_id in failed:
                        streak.append(names.get(tool_use_id, tool_use_id))
                        if len(streak) == limit + 1:
                            yield ctx.finding(
                                "T007", call,
                                f"{limit + 1} consecutive tool errors ({', '.join(streak)}) and the loop goes on; "
                                f"after {limit} stop the run or change course",
                                message_index=mi, block_index=bi,
                            )
                    else:
                        streak = []
            for _, block in row.tool_uses:
                names[str(block.get("id"))] = tool_name(block)


def _disables_parallel(call: Call | None) -> bool:
    choice = call.request.get("tool_choice") if call is not None else None
    return isinstance(choice, dict) and choice.get("disable_parallel_tool_use") is True


@rule(
    "T008", "Sequential tools never run concurrently with another tool of their thread", needs="events",
    why="Parallel tool calls are meant for independent reads. Two side effects run at once (a charge and "
        "a refund, two writes to one record) can interleave and leave the world in a state nobody asked for.",
    fix="Run the tools the scenario declares sequential one at a time, or set "
        "tool_choice.disable_parallel_tool_use so the model asks for one at a time.",
    docs=(TOOL_CALLS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "tools": PAY_TOOLS,
                     "messages": [{"role": "user", "content": "Charge and refund"}]},
         "response": {"content": [
             {"type": "tool_use", "id": "toolu_1", "name": "charge_card", "input": {"amount": 10}},
             {"type": "tool_use", "id": "toolu_2", "name": "refund", "input": {"amount": 10}}],
             "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": PAY_TOOLS, "messages": [
            {"role": "user", "content": "Charge and refund"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "charge_card", "input": {"amount": 10}},
                {"type": "tool_use", "id": "toolu_2", "name": "refund", "input": {"amount": 10}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "charged"},
                                         {"type": "tool_result", "tool_use_id": "toolu_2", "content": "refunded"}]}]},
         "response": {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}},
    ), options={"sequential_tools": ["charge_card", "refund"]}, tool_executions=(
        {"tool_use_id": "toolu_1", "name": "charge_card", "input": {"amount": 10}, "started_at": 1.0, "ended_at": 2.0},
        {"tool_use_id": "toolu_2", "name": "refund", "input": {"amount": 10}, "started_at": 1.5, "ended_at": 2.5},
    )),
)
def sequential_tools_not_overlapping(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """Tools declared sequential (option `sequential_tools`, e.g. tools with side effects) never run at
    the same time as another tool of their thread, per the harness's tool events, unless the request
    set `tool_choice.disable_parallel_tool_use`."""
    sequential = set(ctx.option("sequential_tools") or ())
    if not sequential or not trace.tool_executions:
        return
    owner: dict[str, Call] = {}
    for call in trace.calls:
        for block in call.content:
            if block.get("type") == "tool_use":
                owner.setdefault(str(block.get("id")), call)
    by_key = {t.key: t.id for t in trace.threads if t.key is not None}
    groups: dict[Any, list[ToolExecution]] = {}
    for execution in trace.tool_executions:
        asker = owner.get(execution.tool_use_id)
        thread = asker.thread if asker is not None else by_key.get(execution.thread_key or "", execution.thread_key)
        groups.setdefault(thread, []).append(execution)
    for executions in groups.values():
        executions.sort(key=lambda e: e.started_at)
        active: list[ToolExecution] = []
        for execution in executions:
            active = [a for a in active if a.ended_at > execution.started_at]
            for other in active:
                if execution.name not in sequential and other.name not in sequential:
                    continue
                side = execution if execution.name in sequential else other
                asker = owner.get(side.tool_use_id)
                if _disables_parallel(asker):
                    continue
                yield ctx.finding(
                    "T008", asker or owner.get(execution.tool_use_id),
                    f"{side.name} ({side.tool_use_id}) is declared sequential but ran at the same time as "
                    f"{(other if side is execution else execution).name} "
                    f"({other.started_at:.3f}-{other.ended_at:.3f}s vs "
                    f"{execution.started_at:.3f}-{execution.ended_at:.3f}s); "
                    "run side-effecting tools one at a time or set tool_choice.disable_parallel_tool_use",
                )
            active.append(execution)
