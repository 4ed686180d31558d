"""Baseline diff: what changed between two results files, run by run, and whether it regressed.

Runs are matched by run id. A regression is a run that newly fails, a new error finding, or cost or
steps grown beyond a threshold; `harness diff` exits 1 on any of them so CI can gate on a baseline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..checks._registry import Finding
from ..cost import cost_of_trace
from ..trace._model import Call, Trace
from ._model import RunResult

DEFAULT_THRESHOLD_COST_PCT = 10.0
DEFAULT_THRESHOLD_STEPS = 2


def tool_calls(trace: Trace | None) -> list[dict[str, Any]]:
    """The trajectory: every tool the model asked for, in order, with its thread and input."""
    if trace is None:
        return []
    calls: list[dict[str, Any]] = []
    for call in trace.calls:
        thread = trace.threads[call.thread - 1].key if 0 < call.thread <= len(trace.threads) else None
        for block in call.content:
            if isinstance(block, dict) and block.get("type") in {"tool_use", "server_tool_use"}:
                calls.append({"thread": thread or str(call.thread), "name": block.get("name"), "input": block.get("input")})
    return calls


def step_signature(call: Call) -> list[Any]:
    """What a step did, for alignment: its stop_reason and the tools it asked for (names and inputs)."""
    tools = [[b.get("name"), b.get("input")] for b in call.content
             if isinstance(b, dict) and b.get("type") in {"tool_use", "server_tool_use"}]
    texts = [b.get("text") for b in call.content if isinstance(b, dict) and b.get("type") == "text"]
    return [call.stop_reason, tools, texts if not tools else None]


def first_divergence(base: Trace | None, new: Trace | None) -> int | None:
    """Index (in call order) of the first step where the two traces differ; None when they agree."""
    base_calls = base.calls if base else []
    new_calls = new.calls if new else []
    for i in range(max(len(base_calls), len(new_calls))):
        if i >= len(base_calls) or i >= len(new_calls):
            return i
        a, b = base_calls[i], new_calls[i]
        if (a.thread, a.step) != (b.thread, b.step) or step_signature(a) != step_signature(b):
            return i
    return None


def _tool_label(call: dict[str, Any], width: int = 60) -> str:
    """`name {"input": ...}` on one line, cut to `width`: enough to tell two tool calls apart."""
    text = json.dumps(call.get("input"), ensure_ascii=False, sort_keys=True, default=str)
    label = f"{call.get('name')} {text}"
    return label if len(label) <= width else label[: width - 1] + "…"


def _where(base: Trace | None, new: Trace | None, index: int | None) -> str | None:
    """The divergence as people count steps (thread and 1-based step), not a 0-based call index."""
    if index is None:
        return None
    for trace in (new, base):
        if trace is not None and index < len(trace.calls):
            call = trace.calls[index]
            return f"thread {call.thread} step {call.step}"
    return None


def _trajectory_diff(base: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any]:
    """deepdiff of two trajectories as plain JSON; {} when they are the same.

    deepdiff (with pandas and numpy) takes about 0.4 s to import: a run whose tools did not change
    never pays for it.
    """
    if base == new:
        return {}
    from deepdiff import DeepDiff

    diff = DeepDiff(base, new, verbose_level=2)
    return json.loads(diff.to_json()) if diff else {}


def _finding_key(finding: Finding) -> tuple[str, int | None, int | None]:
    return (finding.code, finding.thread, finding.step)


def _cost(result: RunResult) -> float | None:
    if result.cost_usd is not None:
        return result.cost_usd
    return cost_of_trace(result.trace) if result.trace is not None else None


@dataclass
class RunDiff:
    """How one run id changed from the baseline to the new results."""

    run_id: str
    scenario: str
    base_status: str | None
    """None when the run is new (not in the baseline)."""
    new_status: str | None
    """None when the run is gone (not in the new results)."""
    new_findings: list[Finding] = field(default_factory=list)
    gone_findings: list[Finding] = field(default_factory=list)
    trajectory: dict[str, Any] = field(default_factory=dict)
    """deepdiff of the tool-call sequences (names and inputs); empty when the same."""
    base_cost: float | None = None
    new_cost: float | None = None
    base_steps: int = 0
    new_steps: int = 0
    cost_regressed: bool = False
    steps_regressed: bool = False
    divergence: int | None = None
    """Index in call order of the first step where the traces differ."""
    divergence_where: str | None = None
    """That step as `thread T step S` (1-based, like findings), for people."""
    base_tools: list[str] = field(default_factory=list)
    new_tools: list[str] = field(default_factory=list)
    """Each side's tool calls as `name {input}`: the trajectory, readable."""
    failed_expectations: list[str] = field(default_factory=list)
    """Expectations the new run missed that the baseline met: why a run newly fails."""
    new_error: str | None = None
    """The harness error of the new run, when it could not run."""

    @property
    def change(self) -> str:
        if self.base_status is None:
            return "added"
        if self.new_status is None:
            return "removed"
        if self.base_status == "passed" and self.new_status != "passed":
            return "newly failing"
        if self.base_status != "passed" and self.new_status == "passed":
            return "newly passing"
        return "unchanged" if self.base_status == self.new_status else f"{self.base_status} -> {self.new_status}"

    @property
    def cost_change_pct(self) -> float | None:
        if self.base_cost is None or self.new_cost is None or self.base_cost == 0:
            return None
        return (self.new_cost - self.base_cost) / self.base_cost * 100

    @property
    def new_error_findings(self) -> list[Finding]:
        return [f for f in self.new_findings if f.severity == "error"]

    @property
    def regressed(self) -> bool:
        return (self.change == "newly failing" or bool(self.new_error_findings)
                or self.cost_regressed or self.steps_regressed)

    @property
    def reasons(self) -> list[str]:
        reasons = []
        if self.change == "newly failing":
            reasons.append(f"newly failing ({self.base_status} -> {self.new_status})")
            # Why: a run fails on an error finding (listed next) or a missed expectation, or did not run.
            reasons += [f"expectation {e}" for e in self.failed_expectations]
            if self.new_error:
                reasons.append(f"harness error: {self.new_error}")
        reasons += [f"new {f.code} thread {f.thread} step {f.step}: {f.message}" for f in self.new_error_findings]
        if self.cost_regressed:
            reasons.append(f"cost ${self.base_cost:.4f} -> ${self.new_cost:.4f} ({self.cost_change_pct:+.1f}%)")
        if self.steps_regressed:
            reasons.append(f"steps {self.base_steps} -> {self.new_steps}")
        return reasons

    @property
    def trajectory_lines(self) -> list[str]:
        """The two tool-call sequences from the first call that differs, for a reader."""
        if not self.trajectory:
            return []
        same = 0
        for a, b in zip(self.base_tools, self.new_tools):
            if a != b:
                break
            same += 1

        def tail(tools: list[str]) -> str:
            shown = tools[same: same + 6]
            more = len(tools) - same - len(shown)
            return ", ".join(shown) + (f", … {more} more" if more else "") if shown else "(none)"

        where = f" (traces diverge at {self.divergence_where})" if self.divergence_where else ""
        head = f"tool calls differ from call {same + 1} of {len(self.base_tools)} -> {len(self.new_tools)}{where}:"
        return [head, f"  base: {tail(self.base_tools)}", f"  new:  {tail(self.new_tools)}"]

    @property
    def interesting(self) -> bool:
        return (self.change != "unchanged" or bool(self.new_findings) or bool(self.gone_findings)
                or bool(self.trajectory) or self.regressed or self.base_steps != self.new_steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "scenario": self.scenario, "change": self.change,
            "base_status": self.base_status, "new_status": self.new_status,
            "regressed": self.regressed, "reasons": self.reasons,
            "new_findings": [f.to_dict() for f in self.new_findings],
            "gone_findings": [f.to_dict() for f in self.gone_findings],
            "trajectory": self.trajectory,
            "base_cost_usd": self.base_cost, "new_cost_usd": self.new_cost, "cost_change_pct": self.cost_change_pct,
            "base_steps": self.base_steps, "new_steps": self.new_steps, "first_divergence": self.divergence,
            "first_divergence_at": self.divergence_where, "base_tool_calls": self.base_tools,
            "new_tool_calls": self.new_tools, "failed_expectations": self.failed_expectations,
        }


@dataclass
class ResultsDiff:
    """Every run id of either side, with the thresholds used."""

    runs: list[RunDiff]
    threshold_cost_pct: float
    threshold_steps: int
    pairs: dict[str, tuple[RunResult | None, RunResult | None]] = field(default_factory=dict, repr=False)
    """The two records of each run id, for viewers that show the traces side by side."""

    @property
    def regressed(self) -> bool:
        return any(r.regressed for r in self.runs)

    def by_change(self, change: str) -> list[RunDiff]:
        return [r for r in self.runs if r.change == change]

    def to_dict(self) -> dict[str, Any]:
        return {
            "regressed": self.regressed,
            "threshold_cost_pct": self.threshold_cost_pct,
            "threshold_steps": self.threshold_steps,
            "counts": {c: len(self.by_change(c)) for c in ("newly failing", "newly passing", "added", "removed")},
            "runs": [r.to_dict() for r in self.runs if r.interesting],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"

    def to_text(self) -> str:
        lines = [f"{'REGRESSED' if self.regressed else 'OK'}: {len(self.runs)} run ids compared "
                 f"(cost threshold {self.threshold_cost_pct:g}%, steps threshold {self.threshold_steps})"]
        for run in self.runs:
            if not run.interesting:
                continue
            reasons = run.reasons
            head = run.change
            if run.change == "newly failing":
                head, reasons = reasons[0], reasons[1:]  # "newly failing (passed -> failed)" once, as the header
            lines.append(f"{'!' if run.regressed else '-'} {run.run_id}: {head}")
            lines += [f"    {reason}" for reason in reasons]
            lines += [f"    + {f.code} thread {f.thread} step {f.step}: {f.message}" for f in run.new_findings if f.severity != "error"]
            lines += [f"    - {f.code} thread {f.thread} step {f.step}: {f.message}" for f in run.gone_findings]
            lines += [f"    {line}" for line in run.trajectory_lines]
            if run.trajectory_lines == [] and run.divergence_where and run.base_status and run.new_status:
                lines.append(f"    traces diverge at {run.divergence_where}")
            if run.base_steps != run.new_steps and not run.steps_regressed:
                lines.append(f"    steps {run.base_steps} -> {run.new_steps}")
        return "\n".join(lines) + "\n"

    def to_markdown(self) -> str:
        def cell(text: object) -> str:
            # Direction controls shown as <U+XXXX> (as the HTML report does), so a name reads as sent.
            text = re.sub("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", lambda m: f"<U+{ord(m.group(0)):04X}>", str(text))
            return " ".join(str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").split())

        out = [f"## {'❌ Regressed' if self.regressed else '✅ No regression'} against the baseline", "",
               "| run | change | details |", "|---|---|---|"]
        for run in self.runs:
            if not run.interesting:
                continue
            # The change column already says "newly failing": the details start with why.
            details = run.reasons[1:] if run.change == "newly failing" else run.reasons
            details += [f"+ {f.code} t{f.thread} s{f.step}" for f in run.new_findings if f.severity != "error"]
            details += [f"- {f.code} t{f.thread} s{f.step}" for f in run.gone_findings]
            details += run.trajectory_lines
            out.append(f"| {cell(run.run_id)} | {'**' + run.change + '**' if run.regressed else run.change} | "
                       f"{'<br>'.join(cell(d) for d in details)} |")
        return "\n".join(out) + "\n"


def diff_results(
    base: Sequence[RunResult],
    new: Sequence[RunResult],
    *,
    threshold_cost_pct: float = DEFAULT_THRESHOLD_COST_PCT,
    threshold_steps: int = DEFAULT_THRESHOLD_STEPS,
) -> ResultsDiff:
    """Compare two sets of results run id by run id."""
    base_by_id = {r.run_id: r for r in base}
    new_by_id = {r.run_id: r for r in new}
    ids = list(base_by_id) + [i for i in new_by_id if i not in base_by_id]
    runs: list[RunDiff] = []
    pairs: dict[str, tuple[RunResult | None, RunResult | None]] = {}
    for run_id in ids:
        a, b = base_by_id.get(run_id), new_by_id.get(run_id)
        pairs[run_id] = (a, b)
        some = b or a
        assert some is not None
        diff = RunDiff(run_id=run_id, scenario=some.scenario, base_status=a.status if a else None,
                       new_status=b.status if b else None)
        if a is not None and b is not None:
            base_keys = {_finding_key(f) for f in a.findings}
            new_keys = {_finding_key(f) for f in b.findings}
            diff.new_findings = [f for f in b.findings if _finding_key(f) not in base_keys]
            diff.gone_findings = [f for f in a.findings if _finding_key(f) not in new_keys]
            diff.trajectory = _trajectory_diff(tool_calls(a.trace), tool_calls(b.trace))
            diff.base_cost, diff.new_cost = _cost(a), _cost(b)
            diff.base_steps, diff.new_steps = a.steps, b.steps
            pct = diff.cost_change_pct
            diff.cost_regressed = pct is not None and pct > threshold_cost_pct
            diff.steps_regressed = b.steps - a.steps > threshold_steps
            diff.divergence = first_divergence(a.trace, b.trace)
            diff.divergence_where = _where(a.trace, b.trace, diff.divergence)
            diff.base_tools = [_tool_label(c) for c in tool_calls(a.trace)]
            diff.new_tools = [_tool_label(c) for c in tool_calls(b.trace)]
            met_before = {e.name for e in a.expectations if e.passed}
            diff.failed_expectations = [f"{e.name}: {e.message}" for e in b.expectations
                                        if not e.passed and (e.name in met_before or not a.expectations)]
            diff.new_error = b.error
        runs.append(diff)
    return ResultsDiff(runs=runs, threshold_cost_pct=threshold_cost_pct, threshold_steps=threshold_steps, pairs=pairs)
