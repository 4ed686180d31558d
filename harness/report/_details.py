"""A run's details as the page's script draws them: plain data (JSON), never HTML.

Every number is formatted here, as the rest of the report formats it, so the page's script only puts
strings in place (as text, never as markup). Keys are short and empty values left out: a report of
10,000 runs carries every run's details.

Built from the trace in one pass, straight into the page's data: the diff page's view objects
(`_view.StepView`) are the same steps, and a test holds the two to the same content, but a report
of 10,000 runs draws 50,000 steps, and making each an object first cost a fifth of its build.
"""

from __future__ import annotations

from typing import Any

from ..checks._registry import Finding
from ..cost import CallCost, call_model
from ..trace._model import Call, Trace
from ..trace._timing import attempt_latency
from ._data import FindingLink, RunEntry, seconds, tokens, usd
from ._view import (
    _attempt_line,
    _common_prefix,
    _content_blocks,
    _result_text,
    _system_text,
    _tool_names,
    finding_call,
    pretty_json,
    step_anchor,
)

_TOOL_USES = {"tool_use": "tool_use", "server_tool_use": "server_tool_use", "mcp_tool_use": "server_tool_use"}


class NotPlain:
    """A value the page's data takes from a result or a trace as it is, of a type other than str, int,
    bool or None (a float, an Enum, a str subclass: a result built in code, not read from JSON).

    The page's data is written by pydantic_core's encoder (`_chunks.page_json`), which writes some of
    those otherwise than `json` does (`1e-07` as `1e-7`, an Enum as its value): it refuses this
    wrapper, so a run holding one is written by `json`, which writes the value inside as before.
    Compared as its value, so `_compact` leaves out what it left out before (a str subclass's "")."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return bool(self.value == other)

    def __ne__(self, other: object) -> bool:
        return bool(self.value != other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NotPlain({self.value!r})"


_PLAIN = frozenset({str, int, bool, type(None)})


def plain(value: Any) -> Any:
    """`value`, taken into the page's data from a result or a trace: as it is when it is of a type
    pydantic_core writes as `json` does (exactly str, int, bool or None), else wrapped (`NotPlain`)."""
    return value if type(value) in _PLAIN else NotPlain(value)


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the keys that say nothing (None, False, "", []); the script reads them as absent."""
    return {k: v for k, v in data.items() if v is not None and v is not False and v != "" and v != []}


def finding(f: Finding, href: str, expected: bool) -> dict[str, Any]:
    return _compact({"h": href, "c": plain(f.code), "s": plain(f.severity), "w": f.where(), "m": plain(f.message),
                     "x": expected})


def _block(block: Any) -> dict[str, Any]:
    """A content block as the script draws it (a tool_use's answer is added by its step). Keys in the
    order the script's data always had: kind, text, name, id, error; empty ones left out."""
    if not isinstance(block, dict):
        return {"k": "other", "t": pretty_json(block)}
    kind = str(block.get("type", ""))
    if kind == "text":
        text = str(block.get("text", ""))
        return {"k": "text", "t": text} if text else {"k": "text"}
    if kind == "thinking":
        text = str(block.get("thinking", ""))
        data: dict[str, Any] = {"k": "thinking", "t": text} if text else {"k": "thinking"}
        data["len"] = len(text)  # characters, as Python counts them (JS would count UTF-16 units)
        data["sig"] = bool(block.get("signature"))
        return data
    if kind == "redacted_thinking":
        return {"k": "redacted_thinking", "t": "(redacted by the API)"}
    if kind in _TOOL_USES:
        data = {"k": _TOOL_USES[kind], "t": pretty_json(block.get("input"))}
        name, use_id = str(block.get("name", "")), str(block.get("id", ""))
        if name:
            data["n"] = name
        if use_id:
            data["id"] = use_id
        if kind == "tool_use":
            data["rc"] = 0  # how many tool_results answer it: its step counts them for its response's
        return data
    if kind == "tool_result":
        text = _result_text(block)
        data = {"k": "tool_result", "t": plain(text)} if text else {"k": "tool_result"}
        use_id = str(block.get("tool_use_id", ""))
        if use_id:
            data["id"] = use_id
        if block.get("is_error"):
            data["err"] = True
        return data
    if kind.endswith("_tool_result"):
        content = block.get("content")
        data = {"k": "server_result", "t": pretty_json(content), "n": kind}
        use_id = str(block.get("tool_use_id", ""))
        if use_id:
            data["id"] = use_id
        if isinstance(content, dict) and "error_code" in content:
            data["err"] = True
        return data
    data = {"k": "other", "t": pretty_json(block)}
    if kind:
        data["n"] = kind
    return data


def _latency(latency_s: float | None, recorded: bool, replayed: bool) -> str:
    if latency_s is None and replayed:
        return "n/a (replayed; no recorded time)"
    return seconds(latency_s) + (" recorded" if recorded else "")


def _usage(usage: dict[str, Any]) -> str:
    """A call's token counts as `tokens` writes them; one under 1,000 (no thousands to group) as it is:
    `tokens` formats through a float, with grouping, and four counts on each of a 10,000-run report's
    25,000 steps took 14,000 instructions a step; 8,000 so."""
    get = usage.get
    a, b = get("input_tokens") or 0, get("output_tokens") or 0
    c, d = get("cache_creation_input_tokens") or 0, get("cache_read_input_tokens") or 0
    return (f"in {a if -1000 < a < 1000 else tokens(a)} · out {b if -1000 < b < 1000 else tokens(b)} · cache write "
            f"{c if -1000 < c < 1000 else tokens(c)} · cache read {d if -1000 < d < 1000 else tokens(d)}")


def _steps(run: int | str, calls: list[Call], by_call: dict[int, list[tuple[FindingLink, dict[str, Any]]]],
           call_costs: list[CallCost | None], replay_run: bool) -> list[dict[str, Any]]:
    """A thread's steps, each with only its request's delta (the messages new since the thread's
    previous call); a tool_result is shown beside the tool_use it answers, paired by id."""
    # Where each tool_result travelled, so the tool_use can show it: gathered as the requests are drawn,
    # and each tool_use given its answers once the thread's last step is (they come in later steps).
    results: dict[str, list[dict[str, Any]]] = {}
    tool_uses: list[dict[str, Any]] = []
    tool_use_anchor: dict[str, str] = {}
    steps: list[dict[str, Any]] = []
    last_system: str | None = None
    last_tools: list[str] | None = None
    previous_content: Any = None
    previous: list[Any] = []
    for call in calls:
        # The request against the thread's previous one (`request_deltas`, in the same pass).
        messages = call.messages
        start = _common_prefix(previous, messages)
        edited = start < len(previous)
        previous = messages
        anchor = step_anchor(run, call.index)
        shown: list[dict[str, Any]] = []
        for offset, message in enumerate(messages[start:]):
            index = start + offset
            if not isinstance(message, dict):
                shown.append({"i": index, "role": "?", "b": [_block(message)]})
                continue
            role = str(message.get("role", "?"))
            head: dict[str, Any] = {"i": index, "role": role} if role else {"i": index}
            if (offset == 0 and role == "assistant" and previous_content is not None
                    and message.get("content") == previous_content):
                head["prev"] = True  # the previous response, unedited: shown at the previous step already
                shown.append(head)
                continue
            carries_results = message.get("role") == "user"  # as `new_tool_results` has them
            blocks: list[dict[str, Any]] = []
            for block in _content_blocks(message.get("content")):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    use_id = str(block.get("tool_use_id", ""))
                    if carries_results:
                        text = _result_text(block)
                        answer: dict[str, Any] = {"t": plain(text)} if text else {}
                        if block.get("is_error"):
                            answer["err"] = True
                        answer["step"] = call.step
                        results.setdefault(use_id, []).append(answer)
                    target = tool_use_anchor.get(use_id)
                    if target is not None:
                        # Shown in full beside its tool_use; here only a pointer, so it is not rendered twice.
                        ref: dict[str, Any] = {"k": "ref", "id": use_id} if use_id else {"k": "ref"}
                        if block.get("is_error"):
                            ref["err"] = True
                        ref["a"] = target
                        blocks.append(ref)
                        continue
                blocks.append(_block(block))
            if blocks:
                head["b"] = blocks
            shown.append(head)
        response: list[dict[str, Any]] = []
        content = call.content
        for block in content:
            data = _block(block)
            if data["k"] == "tool_use":
                tool_uses.append(data)
                use_id = data.get("id", "")
                tool_use_anchor[use_id] = f"{anchor}-tu-{use_id}"
            response.append(data)
        request = call.request
        system = _system_text(request)
        tools = _tool_names(request)
        # The attempts in one pass (most calls have one): their lines, summed latency and flags.
        attempts: list[str] = []
        total: float | None = 0.0
        recorded = replayed = False
        for a in call.attempts:
            latency = attempt_latency(a, replay_run)
            kept = a.recorded_duration_s is not None
            attempts.append(_attempt_line(a.status, latency, a.stream_error, kept))
            # Not a partial sum: a call whose retries' times are partly unknown would look faster than it was.
            total = None if latency is None or total is None else total + latency
            recorded = recorded or kept
            replayed = replayed or a.replayed
        cost = call_costs[call.index]
        step: dict[str, Any] = {
            "a": anchor, "step": plain(call.step), "call": plain(call.index), "model": plain(call_model(call) or "?"),
            "stop": plain(call.stop_reason or "—"), "usage": _usage(call.usage),
            "cost": usd(cost.total_usd if cost else None),
            "lat": _latency(total, recorded, replay_run or replayed),
        }
        if attempts:
            step["att"] = attempts
        found = by_call.get(call.index)
        if found:
            # Each as the run's list shows it when it links here, as the report links a step's findings.
            href = "#" + anchor
            step["f"] = [shown if link.href == href else finding(link.finding, href, link.expected)
                         for link, shown in found]
        step["from"] = start
        if edited:
            step["edited"] = True
        error = call.error
        if error is not None:
            step["err"] = f"{error.get('type', 'error')}: {error.get('message', '')}"
        if shown:
            step["delta"] = shown
        if response:
            step["resp"] = response
        # Shown whenever they are given (first seen or changed), an empty prompt too: kept when "".
        if system is not None and system != last_system:
            step["sys"] = plain(system)
        if tools != last_tools:
            step["tools"] = ", ".join(tools) or "none"
        steps.append(step)
        last_system, last_tools = system, tools
        previous_content = content if call.response is not None else None
    for data in tool_uses:
        answers = results.get(data.get("id", ""))
        if answers:
            data["rc"] = len(answers)  # in place of its 0: the keys keep their order
            data["r"] = answers[0]
    return steps


def _threads(run: int, trace: Trace, findings: list[tuple[FindingLink, dict[str, Any]]],
             call_costs: list[CallCost | None], replay_run: bool) -> list[dict[str, Any]]:
    # The run's findings as the report linked them (each with its data in the run's list): whether the
    # scenario expected each is said there already, not asked of the run's expectations again.
    by_call: dict[int, list[tuple[FindingLink, dict[str, Any]]]] = {}
    for link, shown in findings:
        index = finding_call(trace, link.finding)
        if index is not None:
            by_call.setdefault(index, []).append((link, shown))
    return [_compact({"id": plain(thread.id), "key": plain(thread.key), "parent": plain(thread.parent),
                      "a": f"run-{run}-thread-{thread.id}",
                      "steps": _steps(run, trace.thread_calls(thread.id), by_call, call_costs, replay_run)})
            for thread in trace.threads]


def run_details(run: RunEntry, call_costs: list[CallCost | None]) -> dict[str, Any]:
    """What the page shows of a run once it is opened: its outcome, expectations, scores, findings
    and every thread's steps; `call_costs` are its trace's calls priced (`harness.cost._cost.price_calls`)."""
    r = run.result
    head = f"scenario {r.scenario} ({r.scenario_path})" + (f" · case {r.case}" if r.case is not None else "")
    head += (f" · {r.model} / {r.effort or 'default'} / repeat {r.repeat} · mode {r.mode} · started {r.started_at}"
             f" · {r.duration_s:.2f}s")
    o = r.outcome
    outcome = None if o is None else _compact({"status": plain(o.status), "limit": plain(o.limit),
                                               "reason": plain(o.reason), "final": plain(o.final_text)})
    found = [finding(link.finding, link.href, link.expected) for link in run.findings]
    threads = ([] if r.trace is None else
               _threads(run.n, r.trace, list(zip(run.findings, found, strict=True)), call_costs, r.mode == "replay"))
    return _compact({
        "head": head, "outcome": outcome, "error": plain(r.error),
        "exp": [_compact({"ok": plain(e.passed), "name": plain(e.name), "m": plain(e.message)})
                for e in r.expectations],
        "scores": [_compact({"name": plain(s.name), "kind": plain(s.kind) if s.kind != "graded" else None,
                             "v": None if s.value is None else f"{s.value:.2f}", "label": plain(s.label),
                             "why": plain(s.reason), "disagree": s.disagreement})
                   for s in r.scores],
        "f": found,
        "notes": [plain(note) for note in r.trace.notes] if r.trace is not None else [],
        "trace": r.trace is not None,
        "threads": threads,
    })
