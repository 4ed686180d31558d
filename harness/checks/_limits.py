"""B rules: the limits every loop needs (steps, tokens, wall time, tool errors) are honoured.

They read the `limits` option ({"steps", "tokens", "wall_time_s", "tool_errors"}, None = not set) and,
for B004, the run's outcome; without a declared limit they have nothing to check.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..trace._model import Call, Trace
from ._examples import MODEL, TOOLS
from ._registry import CheckContext, Example, Finding, rule
from ._wire import blocks, limits_option

_UNFINISHED = frozenset({"tool_use", "pause_turn"})


def call_tokens(call: Call) -> int:
    """Tokens of one call as budgets count them: input + output + both cache fields."""
    usage = call.usage
    total = 0
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            total += int(value)
    return total


# B003's margin. A loop checks its clock, then sends: on a loaded machine the request can start a
# few hundred milliseconds after a check that found time left, which is not a loop ignoring its
# deadline. Only a call starting later than this past the deadline is one.
_DEADLINE_SLACK_S = 0.25
_DEADLINE_SLACK_SHARE = 0.02
"""...or this share of the deadline, when larger (a 60 s deadline: 1.2 s)."""


def deadline_slack(wall_time_s: float) -> float:
    """How late past a deadline a call may start and still not be B003 (nor refused by the harness)."""
    return max(_DEADLINE_SLACK_S, wall_time_s * _DEADLINE_SLACK_SHARE)


def _run_start(trace: Trace) -> float | None:
    starts = [a.started_at for c in trace.calls for a in c.attempts if a.started_at is not None]
    return min(starts) if starts else None


def _trailing_tool_errors(call: Call) -> int:
    """Consecutive is_error tool_results at the end of the history the last call sent."""
    results = [b for m in call.messages for b in blocks(m) if b.get("type") == "tool_result"]
    count = 0
    for block in reversed(results):
        if block.get("is_error") is not True:
            break
        count += 1
    return count


def reached_limits(trace: Trace, options: dict[str, Any]) -> dict[str, str]:
    """Which declared limits the run had reached by its last call, with the numbers that show it."""
    limits = limits_option(options)
    reached: dict[str, str] = {}
    if not trace.calls:
        return reached
    steps = limits.get("steps")
    if isinstance(steps, int) and len(trace.calls) >= steps:
        reached["steps"] = f"{len(trace.calls)} calls, limit {steps}"
    budget = limits.get("tokens")
    if isinstance(budget, int):
        used = sum(call_tokens(c) for c in trace.calls)
        if used >= budget:
            reached["tokens"] = f"{used} tokens, budget {budget}"
    wall = limits.get("wall_time_s")
    start = _run_start(trace)
    last = trace.calls[-1].final
    if isinstance(wall, int | float) and start is not None and last.started_at is not None:
        elapsed = last.started_at + (last.duration_s or 0.0) - start
        if elapsed >= wall:
            reached["wall_time"] = f"{elapsed:.1f}s elapsed, limit {wall}s"
    max_errors = limits.get("tool_errors")
    if isinstance(max_errors, int):
        errors = _trailing_tool_errors(trace.calls[-1])
        if errors >= max_errors:
            reached["tool_errors"] = f"{errors} consecutive tool errors, limit {max_errors}"
    return reached


@rule(
    "B001", "The run makes no more model calls than its step limit", needs="scenario",
    why="The step limit is the safety net against a loop that never converges; a loop that ignores it can "
        "run, and spend, without end.",
    fix="Count calls and stop before the one that would pass the limit; report the run as stopped by it.",
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]}]},
         "response": {"content": [{"type": "text", "text": "18C."}], "stop_reason": "end_turn"}},
    ), options={"limits": {"steps": 1}}),
)
def steps_within_limit(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A run makes no more model calls than its step limit (`limits.steps`)."""
    steps = limits_option(ctx.options).get("steps")
    if isinstance(steps, int) and len(trace.calls) > steps:
        call = trace.calls[steps]
        yield ctx.finding(
            "B001",
            call,
            f"call {steps + 1} of {len(trace.calls)} exceeds the step limit of {steps}; "
            "stop the loop when the limit is reached and report it",
        )


@rule(
    "B002", "No call starts once cumulative tokens are past the budget", needs="scenario",
    why="A token budget caps what one task may cost; checking it only at the end lets a single run spend "
        "many times the budget.",
    fix="Add each response's usage to a running total and stop before the next call once it passes the budget.",
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use",
                      "usage": {"input_tokens": 900, "output_tokens": 200}}},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]}]},
         "response": {"content": [{"type": "text", "text": "18C."}], "stop_reason": "end_turn",
                      "usage": {"input_tokens": 950, "output_tokens": 10}}},
    ), options={"limits": {"tokens": 1000}}),
)
def tokens_within_budget(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """No call starts once the run's cumulative tokens (input + output + cache creation + cache read, over
    all calls so far) are past its token budget (`limits.tokens`)."""
    budget = limits_option(ctx.options).get("tokens")
    if not isinstance(budget, int):
        return
    used = 0
    for call in trace.calls:
        if used > budget:
            yield ctx.finding(
                "B002",
                call,
                f"call started with {used} tokens already used (input + output + cache), past the budget of {budget}; "
                "sum usage after every call and stop before the next one",
            )
            return
        used += call_tokens(call)


@rule(
    "B003", "No call starts after the wall-clock deadline", needs="scenario",
    why="A deadline bounds how long a user or a pipeline waits; a loop that checks it only after the "
        "last call overruns it by however long that call takes.",
    fix="Check the elapsed time before every call and stop when the deadline has passed.",
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use"}, "at": 0.0},
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]}]},
         "response": {"content": [{"type": "text", "text": "18C."}], "stop_reason": "end_turn"}, "at": 45.0},
    ), options={"limits": {"wall_time_s": 30}}),
)
def calls_before_deadline(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """No call starts after the run's wall-clock deadline (`limits.wall_time_s`, counted from the first
    request), by more than a margin: 0.25 s or 2% of the deadline, whichever is larger, the time a
    loaded machine may take between the loop's own check of its clock and the request it then sends."""
    wall = limits_option(ctx.options).get("wall_time_s")
    start = _run_start(trace)
    if not isinstance(wall, int | float) or start is None:
        return
    late = wall + deadline_slack(wall)
    for call in trace.calls:
        for attempt in call.attempts:
            if attempt.started_at is not None and attempt.started_at - start > late:
                yield ctx.finding(
                    "B003",
                    call,
                    f"request started {attempt.started_at - start:.1f}s into the run, after the {wall}s deadline; "
                    "check the elapsed time before every call",
                )
                return


@rule(
    "B004", "A run stopped by a limit reports the limit and returns what it had", needs="scenario",
    why="A caller that gets 'completed' for a run cut short takes a partial result for the answer; one "
        "that gets nothing loses what was achieved.",
    fix="When a limit stops the loop, return status 'limit' with the limit's name and the text produced so far.",
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use"}},
    ), options={"limits": {"steps": 1}}, outcome={"status": "completed"}),
)
def limit_reported(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A run that a limit stopped reports it: its outcome has status `limit` and names which limit, and it
    returns the text the model had produced. A run that ends unfinished (on `tool_use` or `pause_turn`)
    with a declared limit reached does not report another status."""
    outcome = trace.outcome
    if outcome is None or not trace.calls:
        return
    last = trace.calls[-1]
    if outcome.status == "limit":
        if not outcome.limit:
            yield ctx.finding("B004", last, "the run ended by a limit but its outcome does not name which one")
        produced_text = any(b.get("type") == "text" and b.get("text") for c in trace.calls for b in c.content)
        if not outcome.final_text and produced_text:
            yield ctx.finding(
                "B004",
                last,
                f"the run stopped at the {outcome.limit or 'unnamed'} limit and returned nothing although the model "
                "had produced text; return what was achieved and say the task is unfinished",
            )
        return
    if last.stop_reason not in _UNFINISHED:
        return
    reached = reached_limits(trace, ctx.options)
    if reached:
        name, numbers = next(iter(reached.items()))
        yield ctx.finding(
            "B004",
            last,
            f"the run stopped at the {name} limit ({numbers}) with the loop unfinished (stop_reason "
            f"{last.stop_reason}) but reports {outcome.status!r}; report status 'limit' naming {name!r}",
        )
