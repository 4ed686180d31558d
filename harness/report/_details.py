"""A run's details as the page's script draws them: plain data (JSON), never HTML.

Every number is formatted here, as the rest of the report formats it, so the page's script only puts
strings in place (as text, never as markup). Keys are short and empty values left out: a report of
10,000 runs carries every run's details.
"""

from __future__ import annotations

from typing import Any

from ..checks._registry import Finding
from ._data import RunEntry, seconds, tokens, usd
from ._view import BlockView, StepView, ThreadView


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the keys that say nothing (None, False, "", []); the script reads them as absent."""
    return {k: v for k, v in data.items() if v is not None and v is not False and v != "" and v != []}


def finding(f: Finding, href: str, expected: bool) -> dict[str, Any]:
    return _compact({"h": href, "c": f.code, "s": f.severity, "w": f.where(), "m": f.message, "x": expected})


def block(b: BlockView) -> dict[str, Any]:
    data = _compact({"k": b.kind, "t": b.text, "n": b.name, "id": b.id, "err": b.is_error, "a": b.anchor})
    if b.kind == "thinking":
        data["len"] = len(b.text)  # characters, as Python counts them (JS would count UTF-16 units)
        data["sig"] = b.signature
    if b.kind == "tool_use":
        data["rc"] = b.result_count
        if b.result is not None:
            data["r"] = _compact({"t": b.result.text, "err": b.result.is_error, "step": b.result_step})
    return data


def _latency(s: StepView) -> str:
    if s.latency_s is None and s.replayed:
        return "n/a (replayed; no recorded time)"
    return seconds(s.latency_s) + (" recorded" if s.latency_recorded else "")


def step(s: StepView) -> dict[str, Any]:
    u = s.usage
    data = _compact({
        "a": s.anchor, "step": s.step, "call": s.call_index, "model": s.model, "stop": s.stop_reason or "—",
        "usage": (f"in {tokens(u['input_tokens'])} · out {tokens(u['output_tokens'])} · cache write "
                  f"{tokens(u['cache_creation_input_tokens'])} · cache read {tokens(u['cache_read_input_tokens'])}"),
        "cost": usd(s.cost.total_usd if s.cost else None), "lat": _latency(s), "att": s.attempts,
        "f": [finding(f, "#" + s.anchor, f.code in s.expected) for f in s.findings],
        "from": s.delta_from, "edited": s.history_edited, "err": s.error,
        "delta": [_compact({"i": m.index, "role": m.role, "prev": m.previous_response,
                            "b": [block(b) for b in m.blocks]}) for m in s.delta],
        "resp": [block(b) for b in s.response],
    })
    # Shown whenever they are given (first seen or changed), an empty prompt too: kept when "".
    if s.system is not None:
        data["sys"] = s.system
    if s.tools is not None:
        data["tools"] = ", ".join(s.tools) or "none"
    return data


def thread(t: ThreadView) -> dict[str, Any]:
    return _compact({"id": t.id, "key": t.key, "parent": t.parent, "a": t.anchor, "steps": [step(s) for s in t.steps]})


def run_details(run: RunEntry, threads: list[ThreadView]) -> dict[str, Any]:
    """What the page shows of a run once it is opened: its outcome, expectations, scores, findings
    and every thread's steps."""
    r = run.result
    head = f"scenario {r.scenario} ({r.scenario_path})" + (f" · case {r.case}" if r.case is not None else "")
    head += (f" · {r.model} / {r.effort or 'default'} / repeat {r.repeat} · mode {r.mode} · started {r.started_at}"
             f" · {r.duration_s:.2f}s")
    outcome = None if r.outcome is None else _compact({"status": r.outcome.status, "limit": r.outcome.limit,
                                                       "reason": r.outcome.reason, "final": r.outcome.final_text})
    return _compact({
        "head": head, "outcome": outcome, "error": r.error,
        "exp": [_compact({"ok": e.passed, "name": e.name, "m": e.message}) for e in r.expectations],
        "scores": [_compact({"name": s.name, "kind": s.kind if s.kind != "graded" else None,
                             "v": None if s.value is None else f"{s.value:.2f}", "label": s.label, "why": s.reason,
                             "disagree": s.disagreement})
                   for s in r.scores],
        "f": [finding(link.finding, link.href, link.expected) for link in run.findings],
        "notes": list(r.trace.notes) if r.trace is not None else [],
        "trace": r.trace is not None,
        "threads": [thread(t) for t in threads],
    })
