"""W rules: the workflow policies a scenario declares (prerequisites, approval gates, circuit breakers).

A tool "ran" when the harness's tool events say so; without events, when its tool_use got a
tool_result without is_error. Order comes from event times, or from message order on the wire.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..trace._model import Call, Trace
from ._examples import MODEL, PAY_TOOLS, REFUND_TOOLS
from ._registry import CheckContext, Example, Finding, rule
from ._wire import blocks, of_type, policy, result_text, role, trace_index


@dataclass(frozen=True)
class _Run:
    """One tool execution in a thread, as events or the wire show it."""

    name: str
    input: Any
    tool_use_id: str
    call: Call
    """The call whose response asked for the tool."""
    ok: bool
    output: str
    asked: float
    """When it was asked or started: event start time, or the order of the assistant message on the wire."""
    done: float
    """When its result was known: event end time, or the order of the user message on the wire."""
    timed: bool


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return result_text({"content": output})
    return json.dumps(output, default=str)


def _runs(trace: Trace) -> dict[int, list[_Run]]:
    """Tool runs per thread, in the order they happened."""
    index = trace_index(trace)
    cached: dict[int, list[_Run]] | None = index.memo.get("tool_runs")
    if cached is not None:
        return cached
    owner: dict[str, Call] = {}
    for call in trace.calls:
        for block in call.content:
            if block.get("type") == "tool_use":
                owner.setdefault(str(block.get("id")), call)
    runs: dict[int, list[_Run]] = {}
    if trace.tool_executions:
        for e in sorted(trace.tool_executions, key=lambda e: e.started_at):
            asker = owner.get(e.tool_use_id)
            if asker is None:
                continue  # a tool the model never asked for on the wire: nothing to place it in a thread
            runs.setdefault(asker.thread, []).append(_Run(
                e.name, e.input, e.tool_use_id, asker, not (e.is_error or e.error is not None),
                _output_text(e.output), e.started_at, e.ended_at, True,
            ))
    else:
        for thread in trace.threads:
            asked: dict[str, tuple[str, Any, float]] = {}
            order = 0
            found: list[_Run] = []
            for call in (trace.calls[i] for i in thread.calls):
                for _, message in index.added(call):
                    order += 1
                    if role(message) == "assistant":
                        for _, block in of_type(blocks(message), "tool_use"):
                            asked[str(block.get("id"))] = (str(block.get("name")), block.get("input"), order)
                    elif role(message) == "user":
                        for _, block in of_type(blocks(message), "tool_result"):
                            tool_use_id = str(block.get("tool_use_id"))
                            if tool_use_id not in asked:
                                continue
                            name, tool_input, when = asked.pop(tool_use_id)
                            found.append(_Run(
                                name, tool_input, tool_use_id, owner.get(tool_use_id, call),
                                block.get("is_error") is not True, result_text(block), when, order, False,
                            ))
            runs[thread.id] = found
    index.memo["tool_runs"] = runs
    return runs


def _matches(run: _Run, earlier: _Run, match: dict[str, str]) -> bool:
    tool_input = run.input if isinstance(run.input, dict) else {}
    earlier_input = earlier.input if isinstance(earlier.input, dict) else {}
    return all(tool_input.get(arg) == earlier_input.get(other) for arg, other in match.items())



@rule(
    "W001", "A tool runs only after its prerequisite succeeded, with matching arguments", needs="scenario",
    reads=("content", "is_error"),
    why="A prerequisite left to the prompt is a suggestion: the model can skip it, and an action that "
        "needs a verified customer runs on an unverified one.",
    fix="Enforce the prerequisite in the tool dispatcher: refuse the tool (is_error) until its prerequisite "
        "has succeeded with the same arguments.",
    example=Example((
        {"request": {"model": MODEL, "tools": REFUND_TOOLS, "messages": [{"role": "user", "content": "Refund C7"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "process_refund",
                                   "input": {"customer_id": "C7"}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": REFUND_TOOLS, "messages": [
            {"role": "user", "content": "Refund C7"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "process_refund",
                                               "input": {"customer_id": "C7"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "refunded"}]}]},
         "response": {"content": [{"type": "text", "text": "Refunded."}], "stop_reason": "end_turn"}},
    ), options={"prerequisites": [{"tool": "process_refund", "requires": "get_customer",
                                   "match": {"customer_id": "customer_id"}}]}),
)
def prerequisites_met(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A tool with a prerequisite (option `prerequisites`: `{tool, requires, match}`) runs only after the
    required tool succeeded earlier in the thread, with matching arguments when `match` says so (e.g.
    `process_refund.customer_id` equals the id `get_customer` verified)."""
    rules = policy(ctx.options, "prerequisites")
    if not rules:
        return
    for runs in _runs(trace).values():
        for prerequisite in rules:
            tool, requires = prerequisite.get("tool"), prerequisite.get("requires")
            match = prerequisite.get("match") or {}
            done = [r for r in runs if r.name == requires and r.ok]
            for run in runs:
                if run.name != tool or not run.ok:
                    continue
                before = [r for r in done if r.done <= run.asked]
                if any(_matches(run, r, match) for r in before):
                    continue
                if before and match:
                    wanted = ", ".join(f"{a}={run.input.get(a) if isinstance(run.input, dict) else None!r}"
                                       for a in match)
                    why = f"no successful {requires} with matching {wanted} came before it"
                else:
                    why = f"{requires} had not succeeded before it"
                yield ctx.finding("W001", run.call, f"{tool} ran ({run.tool_use_id}) but {why}; enforce the "
                                  "prerequisite in the tool dispatcher, not in the prompt")


def _grants(run: _Run) -> bool:
    if not run.ok:
        return False
    text = run.output.strip()
    if text.lower() == "approved":
        return True
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("approved") is True


@rule(
    "W002", "An irreversible tool runs only after an approval tool granted it", needs="scenario",
    reads=("content", "is_error"),
    why="Irreversible actions (a refund, a deletion) need a human or a policy to say yes first; a model "
        "that skips the gate acts on its own judgement where it was not meant to.",
    fix="Have the dispatcher refuse the gated tool until the approval tool has returned a granted approval "
        "for it, and spend that approval on one run.",
    example=Example((
        {"request": {"model": MODEL, "tools": REFUND_TOOLS, "messages": [{"role": "user", "content": "Delete C7"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "delete_account",
                                   "input": {"customer_id": "C7"}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": REFUND_TOOLS, "messages": [
            {"role": "user", "content": "Delete C7"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "delete_account",
                                               "input": {"customer_id": "C7"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "deleted"}]}]},
         "response": {"content": [{"type": "text", "text": "Deleted."}], "stop_reason": "end_turn"}},
    ), options={"approvals": [{"tool": "delete_account", "approval_tool": "request_approval"}]}),
)
def approvals_granted(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A tool behind an approval gate (option `approvals`: `{tool, approval_tool}`) runs only after the
    approval tool granted it (a result `approved`, or JSON with `approved: true`); one approval covers one run."""
    gates = policy(ctx.options, "approvals")
    if not gates:
        return
    for runs in _runs(trace).values():
        for gate in gates:
            tool, approval_tool = gate.get("tool"), gate.get("approval_tool")
            # An approval counts once it is known and covers one run of the tool (irreversible actions).
            moments = sorted(
                [(r.done, 0, r) for r in runs if r.name == approval_tool]
                + [(r.asked, 1, r) for r in runs if r.name == tool and r.ok],
                key=lambda item: (item[0], item[1]),
            )
            granted = 0
            for _, kind, run in moments:
                if kind == 0:
                    granted += 1 if _grants(run) else 0
                elif granted:
                    granted -= 1
                else:
                    yield ctx.finding("W002", run.call, f"{tool} ran ({run.tool_use_id}) without an approval from "
                                      f"{approval_tool} for it; gate irreversible tools on a granted approval")


@rule(
    "W003", "After K consecutive failures a tool is not called again within the cool-down", needs="scenario",
    reads=("content", "is_error"),
    why="A dependency that failed K times in a row is likely down; calling it again at once adds load to "
        "it and spends the run's steps on calls that will fail.",
    fix="Keep a circuit breaker per tool in the dispatcher: after K failures answer calls to it with an "
        "is_error result until the cool-down has passed.",
    example=Example((
        {"request": {"model": MODEL, "tools": PAY_TOOLS, "messages": [{"role": "user", "content": "Charge 10"}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "charge_card", "input": {"amount": 10}},
                                  {"type": "tool_use", "id": "toolu_2", "name": "charge_card",
                                   "input": {"amount": 10}}],
                      "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": PAY_TOOLS, "messages": [
            {"role": "user", "content": "Charge 10"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "charge_card", "input": {"amount": 10}},
                {"type": "tool_use", "id": "toolu_2", "name": "charge_card", "input": {"amount": 10}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "gateway down", "is_error": True},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "gateway down", "is_error": True}]}]},
         "response": {"content": [{"type": "tool_use", "id": "toolu_3", "name": "charge_card",
                                   "input": {"amount": 10}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": PAY_TOOLS, "messages": [
            {"role": "user", "content": "Charge 10"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "charge_card", "input": {"amount": 10}},
                {"type": "tool_use", "id": "toolu_2", "name": "charge_card", "input": {"amount": 10}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "gateway down", "is_error": True},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "gateway down", "is_error": True}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "charge_card",
                                               "input": {"amount": 10}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3", "content": "charged"}]}]},
         "response": {"content": [{"type": "text", "text": "Charged."}], "stop_reason": "end_turn"}},
    ), options={"circuit_breakers": [{"tool": "charge_card", "failures": 2, "cooldown_s": 60}]}),
)
def circuit_breakers_hold(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """After K consecutive failures of a tool (option `circuit_breakers`: `{tool, failures, cooldown_s}`)
    the tool does not run again within the cool-down. Without tool events, a later successful result in
    the same thread counts as a run inside the cool-down."""
    breakers = policy(ctx.options, "circuit_breakers")
    if not breakers:
        return
    for runs in _runs(trace).values():
        for breaker in breakers:
            target = breaker.get("tool", "*")
            threshold = int(breaker.get("failures", 3))
            cooldown = float(breaker.get("cooldown_s", 0))
            failures: dict[str, int] = {}
            opened: dict[str, float] = {}
            for run in runs:
                if target not in ("*", run.name):
                    continue
                if run.name in opened:
                    within = not run.timed or run.asked - opened[run.name] < cooldown
                    # Without events only a successful result proves the tool ran (a refusal reads as an error).
                    ran = run.timed or run.ok
                    if within and ran:
                        when = f"{run.asked - opened[run.name]:.1f}s after" if run.timed else "after"
                        yield ctx.finding(
                            "W003", run.call,
                            f"{run.name} ran ({run.tool_use_id}) {when} its {threshold} consecutive failures opened "
                            f"the circuit (cool-down {cooldown:g}s); reject calls while the circuit is open",
                        )
                    if within:
                        continue
                    del opened[run.name]  # half-open: one trial call decides
                if run.ok:
                    failures[run.name] = 0
                    continue
                failures[run.name] = failures.get(run.name, 0) + 1
                if failures[run.name] >= threshold:
                    opened[run.name] = run.done
