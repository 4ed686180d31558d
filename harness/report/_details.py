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
from ..cost import CallCost
from ..trace._model import Call, Trace
from ._data import FindingLink, RunEntry, tokens
from ._view import (
    _attempt_line,
    _common_prefix,
    _content_blocks,
    _result_text,
    _system_text,
    _tool_names,
    finding_call,
    pretty_json,
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

    def __bool__(self) -> bool:
        return bool(self.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NotPlain({self.value!r})"


_PLAIN = frozenset({str, int, bool, type(None)})


def plain(value: Any) -> Any:
    """`value`, taken into the page's data from a result or a trace: as it is when it is of a type
    pydantic_core writes as `json` does (exactly str, int, bool or None), else wrapped (`NotPlain`)."""
    return value if type(value) in _PLAIN else NotPlain(value)


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the keys that say nothing (None, False, "", []); the script reads them as absent.

    `data` itself when it has none (most have none): a true value is never one of them (`NotPlain` is
    true as its value is), so the four comparisons are made for a false value only, and the dict is
    rebuilt only when one is to go: 16,000 instructions fewer for a run's details (of 286,000)."""
    for v in data.values():
        if not v and not (v is not None and v is not False and v != "" and v != []):
            return {k: v for k, v in data.items() if v or (v is not None and v is not False and v != "" and v != [])}
    return data


def _says(value: Any) -> bool:
    """Whether `_compact` keeps `value`."""
    return value is not None and value is not False and value != "" and value != []


def finding(f: Finding, href: str, expected: bool) -> dict[str, Any]:
    code, severity, message = f.code, f.severity, f.message
    data = _compact({"h": href, "c": code if type(code) is str else plain(code),
                     "s": severity if type(severity) is str else plain(severity), "w": f.where(),
                     "m": message if type(message) is str else plain(message)})
    if expected or _says(expected):  # last, as `_compact` would have kept it: a finding not expected has none
        data["x"] = expected
    return data


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


def _usage(usage: dict[str, Any]) -> str:
    """A call's token counts as `tokens` writes them; one under 1,000 (no thousands to group) as it is:
    `tokens` formats through a float, with grouping, and four counts on each of a 10,000-run report's
    25,000 steps took 14,000 instructions a step; 8,000 so. One of 0-999 (most) is taken written from a
    table, not formatted again."""
    get, small = usage.get, _SMALL_COUNTS
    a, b = get("input_tokens") or 0, get("output_tokens") or 0
    c, d = get("cache_creation_input_tokens") or 0, get("cache_read_input_tokens") or 0
    return (f"in {small[a] if 0 <= a < 1000 and type(a) is int else a if -1000 < a < 1000 else tokens(a)} · out "
            f"{small[b] if 0 <= b < 1000 and type(b) is int else b if -1000 < b < 1000 else tokens(b)} · cache write "
            f"{small[c] if 0 <= c < 1000 and type(c) is int else c if -1000 < c < 1000 else tokens(c)} · cache read "
            f"{small[d] if 0 <= d < 1000 and type(d) is int else d if -1000 < d < 1000 else tokens(d)}")


_SMALL_COUNTS = tuple(str(n) for n in range(1000))
"""`str(n)` of each count 0-999; an int subclass is still formatted, as it always was."""


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
        # `_common_prefix`'s first test, inline: a thread's request nearly always re-sends the previous whole.
        start = len(previous)
        if start > len(messages) or messages[:start] != previous:
            start = _common_prefix(previous, messages)
        edited = start < len(previous)
        previous = messages
        call_index, step_number = call.index, call.step
        anchor = f"run-{run}-call-{call_index}"  # step_anchor's
        shown: list[dict[str, Any]] = []
        for index, message in enumerate(messages[start:], start):
            if not isinstance(message, dict):
                shown.append({"i": index, "role": "?", "b": [_block(message)]})
                continue
            raw_role = message.get("role", "?")
            role = raw_role if type(raw_role) is str else str(raw_role)
            head: dict[str, Any] = {"i": index, "role": role} if role else {"i": index}
            content = message.get("content")
            if (index == start and role == "assistant" and previous_content is not None
                    and content == previous_content):
                head["prev"] = True  # the previous response, unedited: shown at the previous step already
                shown.append(head)
                continue
            if type(content) is str:
                # `_content_blocks`' one text block, as `_block` draws it.
                head["b"] = [{"k": "text", "t": content} if content else {"k": "text"}]
                shown.append(head)
                continue
            carries_results = raw_role == "user"  # as `new_tool_results` has them
            blocks: list[dict[str, Any]] = []
            for block in content if type(content) is list else _content_blocks(content):
                if isinstance(block, dict):
                    kind = block.get("type")
                    if kind == "text":
                        text = block.get("text", "")
                        if type(text) is str:  # as `_block` draws it
                            blocks.append({"k": "text", "t": text} if text else {"k": "text"})
                            continue
                    elif kind == "tool_result":
                        use_id = block.get("tool_use_id", "")
                        if type(use_id) is not str:
                            use_id = str(use_id)
                        is_error = block.get("is_error")
                        if carries_results:
                            text = block.get("content")  # `_result_text`'s, for a text as it is
                            if type(text) is not str:
                                text = plain(_result_text(block))
                            answer: dict[str, Any] = {"t": text} if text else {}
                            if is_error:
                                answer["err"] = True
                            answer["step"] = step_number
                            if use_id in results:
                                results[use_id].append(answer)
                            else:
                                results[use_id] = [answer]
                        target = tool_use_anchor.get(use_id)
                        if target is not None:
                            # Shown in full beside its tool_use; here only a pointer, so it is not rendered twice.
                            ref: dict[str, Any] = {"k": "ref", "id": use_id} if use_id else {"k": "ref"}
                            if is_error:
                                ref["err"] = True
                            ref["a"] = target
                            blocks.append(ref)
                            continue
                blocks.append(_block(block))
            if blocks:
                head["b"] = blocks
            shown.append(head)
        response = call.response
        answered: list[dict[str, Any]] = []
        content = call.content
        for block in content:  # each a dict, its type, id and name strings or absent (`Call.content`)
            kind = block.get("type")
            if kind == "text" and type(text := block.get("text", "")) is str:
                answered.append({"k": "text", "t": text} if text else {"k": "text"})  # as `_block` draws it
                continue
            if kind == "tool_use" and type(name := block.get("name", "")) is str and type(
                    use_id := block.get("id", "")) is str:
                data: dict[str, Any] = {"k": "tool_use", "t": pretty_json(block.get("input"))}  # as `_block` draws it
                if name:
                    data["n"] = name
                if use_id:
                    data["id"] = use_id
                data["rc"] = 0
                tool_uses.append(data)
                tool_use_anchor[use_id] = f"{anchor}-tu-{use_id}"
                answered.append(data)
                continue
            data = _block(block)
            if data["k"] == "tool_use":
                tool_uses.append(data)
                use_id = data.get("id", "")
                tool_use_anchor[use_id] = f"{anchor}-tu-{use_id}"
            answered.append(data)
        request = call.request
        system = request.get("system")
        if system is not None and type(system) is not str:
            system = _system_text(request)
        tools = _tool_names(request)
        # The attempts in one pass (most calls have one): their lines, summed latency and flags.
        attempts: list[str] = []
        total: float | None = 0.0
        recorded = replayed = False
        for a in call.attempts:
            latency = a.recorded_duration_s  # `attempt_latency`'s, inline
            kept = latency is not None
            if not kept:
                latency = None if a.replayed or replay_run else a.duration_s
            status, stream_error = a.status, a.stream_error
            if type(status) is int and not stream_error and type(latency) is float:
                # `_attempt_line`'s common case: an answer without a stream error, its time known; `%`
                # writes a float for less than a format spec does.
                attempts.append(f"HTTP {status} in {latency:.2f}s (recorded)" if kept
                                else f"HTTP {status} in {latency:.2f}s")
            else:
                attempts.append(_attempt_line(status, latency, stream_error, kept))
            # Not a partial sum: a call whose retries' times are partly unknown would look faster than it was.
            total = None if latency is None or total is None else total + latency
            recorded = recorded or kept
            replayed = replayed or a.replayed
        cost = call_costs[call_index]
        if response:  # `call_model`'s, with the response read once
            model = response.get("model")
            model = str(model) if isinstance(model, str) else call.model
        else:
            model = call.model
        stop = response.get("stop_reason") if response else None
        if stop is not None and type(stop) is not str:
            stop = call.stop_reason  # `stop_reason`'s text of an odd one; a string or None is its own
        # The latency as `seconds` writes it, "recorded" said, "n/a" for a replayed answer without one.
        if total is None:
            latency_text = ("n/a (replayed; no recorded time)" if replay_run or replayed
                            else "— recorded" if recorded else "—")
        else:
            latency_text = f"{total * 1000:.0f} ms" if total < 1 else f"{total:.2f}s"
            if recorded:
                latency_text += " recorded"
        if cost is None:
            usd_text = "unpriced"  # `usd`'s texts: a cost under $999 has no thousands to group, and `%` writes
        else:  # a float for less than a format spec does
            value = cost.total_usd
            usd_text = "$%.4f" % value if -999 < value < 999 and type(value) is float else f"${value:,.4f}"  # noqa: UP031
        step: dict[str, Any] = {
            "a": anchor, "step": step_number if type(step_number) is int else plain(step_number),
            "call": call_index if type(call_index) is int else plain(call_index),
            "model": model if type(model) is str and model else plain(model or "?"),
            "stop": stop if type(stop) is str and stop else plain(stop or "—"), "usage": _usage(call.usage),
            "cost": usd_text,
            "lat": latency_text,
        }
        if attempts:
            step["att"] = attempts
        found = by_call.get(call_index)
        if found:
            # Each as the run's list shows it when it links here, as the report links a step's findings.
            href = "#" + anchor
            step["f"] = [listed if link.href == href else finding(link.finding, href, link.expected)
                         for link, listed in found]
        step["from"] = start
        if edited:
            step["edited"] = True
        if response is None:
            error = call.error
            if error is not None:
                step["err"] = f"{error.get('type', 'error')}: {error.get('message', '')}"
        if shown:
            step["delta"] = shown
        if answered:
            step["resp"] = answered
        # Shown whenever they are given (first seen or changed), an empty prompt too: kept when "".
        if system is not None and system != last_system:
            step["sys"] = plain(system)
        if tools != last_tools:
            step["tools"] = ", ".join(tools) or "none"
        steps.append(step)
        last_system, last_tools = system, tools
        previous_content = content if response is not None else None
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
    threads: list[dict[str, Any]] = []
    for thread in trace.threads:
        # Built as `_compact` leaves it, a None (most threads' key and parent) never put in.
        tid, key, parent = thread.id, thread.key, thread.parent
        data: dict[str, Any] = {"id": tid if type(tid) is int else plain(tid)}
        if key is not None:
            data["key"] = plain(key)
        if parent is not None:
            data["parent"] = plain(parent)
        data["a"] = f"run-{run}-thread-{tid}"
        data["steps"] = _steps(run, trace.thread_calls(tid), by_call, call_costs, replay_run)
        threads.append(_compact(data))
    return threads


def run_details(run: RunEntry, call_costs: list[CallCost | None]) -> dict[str, Any]:
    """What the page shows of a run once it is opened: its outcome, expectations, scores, findings
    and every thread's steps; `call_costs` are its trace's calls priced (`harness.cost._cost.price_calls`)."""
    r = run.result
    head = f"scenario {r.scenario} ({r.scenario_path})" + (f" · case {r.case}" if r.case is not None else "")
    head += (f" · {r.model} / {r.effort or 'default'} / repeat {r.repeat} · mode {r.mode} · started {r.started_at}"
             f" · {r.duration_s:.2f}s")
    # Built as `_compact` leaves it, in its keys' order: a None never put in, an empty list left out.
    details: dict[str, Any] = {"head": head}
    o = r.outcome
    if o is not None:
        outcome: dict[str, Any] = {"status": plain(o.status)}
        if o.limit is not None:
            outcome["limit"] = plain(o.limit)
        outcome["reason"] = plain(o.reason)
        if o.final_text is not None:
            outcome["final"] = plain(o.final_text)
        details["outcome"] = _compact(outcome)
    if r.error is not None and _says(error := plain(r.error)):
        details["error"] = error
    exp: list[dict[str, Any]] = []
    for e in r.expectations:
        passed, name, message = e.passed, e.name, e.message
        item: dict[str, Any] = {"ok": passed} if passed is True else {} if passed is False else {"ok": plain(passed)}
        item["name"] = name if type(name) is str else plain(name)
        item["m"] = message if type(message) is str else plain(message)
        exp.append(_compact(item))
    if exp:
        details["exp"] = exp
    scores = [_compact({"name": plain(s.name), "kind": plain(s.kind) if s.kind != "graded" else None,
                        "v": None if s.value is None else f"{s.value:.2f}", "label": plain(s.label),
                        "why": plain(s.reason), "disagree": s.disagreement})
              for s in r.scores]
    if scores:
        details["scores"] = scores
    found = [finding(link.finding, link.href, link.expected) for link in run.findings]
    if found:
        details["f"] = found
    trace = r.trace
    if trace is not None:
        if trace.notes:
            details["notes"] = [plain(note) for note in trace.notes]
        details["trace"] = True
        threads = _threads(run.n, trace, list(zip(run.findings, found, strict=True)), call_costs, r.mode == "replay")
        if threads:
            details["threads"] = threads
    return details
