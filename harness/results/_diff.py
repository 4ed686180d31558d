"""Baseline diff: what changed between two results files, and whether it regressed.

Runs are matched by run id and grouped into cells (a scenario, case, model and effort: the run id
without its repeat). A cell's verdict is over all its repeats at once, so one flaky repeat does not
fail a build while a real drop does: its pass count regressed when every run passed before and none
passes now, or when one-sided Fisher's exact test says the drop is unlikely by chance (p <= alpha,
default 0.05). A rule's error finding that new runs show more often is judged the same way; cost and
steps compare the cells' medians against their thresholds. `harness diff` exits 1 on any of them.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._console import reveal_bidi
from .._stats import fisher_exact
from ..checks._registry import Finding
from ..cost import cost_of_trace
from ..cost._prices import count_tables, keep_rates, tables_said
from ..trace._model import Call, Trace
from ..trace._normalize import normalize, normalize_message
from ._model import RunResult

DEFAULT_THRESHOLD_COST_PCT = 10.0
DEFAULT_THRESHOLD_STEPS = 2
DEFAULT_ALPHA = 0.05
"""A pass count's drop with one-sided Fisher's exact p at or below this is a regression."""

_REPEAT = re.compile(r"-r(\d+)\]$")
_MISSING = object()


def cell_of(run_id: str) -> str:
    """The run id without its repeat (`s[m-e-r2]` -> `s[m-e]`): the runs judged together."""
    return _REPEAT.sub("]", run_id)


def _repeat_label(run_id: str) -> str:
    found = _REPEAT.search(run_id)
    return f"r{found.group(1)}" if found else run_id


def tool_calls(trace: Trace | None) -> list[dict[str, Any]]:
    """The trajectory: every tool the model asked for, in order, with its thread and input."""
    if trace is None:
        return []
    calls: list[dict[str, Any]] = []
    for call in trace.calls:
        thread = trace.threads[call.thread - 1].key if 0 < call.thread <= len(trace.threads) else None
        for block in call.content:
            if isinstance(block, dict) and block.get("type") in {"tool_use", "server_tool_use"}:
                calls.append({"thread": thread or str(call.thread), "name": block.get("name"),
                              "input": block.get("input")})
    return calls


def step_signature(call: Call) -> list[Any]:
    """What a step did, for alignment: its stop_reason and the tools it asked for (names and inputs)."""
    tools = [[b.get("name"), b.get("input")] for b in call.content
             if isinstance(b, dict) and b.get("type") in {"tool_use", "server_tool_use"}]
    texts = [b.get("text") for b in call.content if isinstance(b, dict) and b.get("type") == "text"]
    return [call.stop_reason, tools, texts if not tools else None]


def _request_of(call: Call) -> dict[str, Any]:
    """The request as the API reads it (cache breakpoints and null fields dropped), for comparing."""
    request: dict[str, Any] = normalize({k: v for k, v in call.request.items() if k != "messages"})
    request["messages"] = [normalize_message(m) for m in call.messages]
    return request


def _first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two JSON values differ, as (`messages[2].content[0].text`, old, new)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                return sub, a.get(key, _MISSING), b.get(key, _MISSING)
            found = _first_difference(a[key], b[key], sub)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                return f"{path}[{i}]", a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING
            found = _first_difference(a[i], b[i], f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else (path, a, b)


def _short(value: Any, width: int = 50) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def _around_change(old: str, new: str, context: int = 15) -> tuple[str, str]:
    """Two strings as JSON, from a little before where they first differ: a long shared opening
    would otherwise fill the line and cut off the change itself."""
    same = 0
    while same < min(len(old), len(new)) and old[same] == new[same]:
        same += 1
    start = max(0, same - context)
    return _short(("…" if start else "") + old[start:]), _short(("…" if start else "") + new[start:])


@dataclass(frozen=True)
class Divergence:
    """The first step where two traces differ, and how."""

    index: int
    """The step's index in call order (0-based)."""
    where: str
    """The step as people count it: `thread T, step S` (1-based, like findings)."""
    what: str
    """What differs there, e.g. `request messages[0].content[0].text: "a" -> "b"`."""


def _step_difference(a: Call, b: Call) -> str | None:
    """How step `b` differs from step `a`: its request first (what the agent sent), then the answer."""
    if (a.thread, a.step) != (b.thread, b.step):
        return f"the call is {a.where} in the baseline, {b.where} now"
    found = _first_difference(_request_of(a), _request_of(b))
    if found:
        path, old, new = found
        if isinstance(old, str) and isinstance(new, str):
            old, new = _around_change(old, new)
            return f"request {path}: {old} -> {new}"
        return f"request {path}: {_short(old)} -> {_short(new)}"
    if a.final.status != b.final.status:
        return f"answer status {a.final.status} -> {b.final.status}"
    if step_signature(a) != step_signature(b):
        if a.stop_reason != b.stop_reason:
            return f"response stop_reason {a.stop_reason} -> {b.stop_reason}"
        old_tools, new_tools = step_signature(a)[1], step_signature(b)[1]
        if old_tools == new_tools:
            return "response text differs"
        for i in range(max(len(old_tools), len(new_tools))):
            old = _tool_label({"name": old_tools[i][0], "input": old_tools[i][1]}) if i < len(old_tools) else "nothing"
            new = _tool_label({"name": new_tools[i][0], "input": new_tools[i][1]}) if i < len(new_tools) else "nothing"
            if old != new:
                return f"response tool_use {i + 1} asks for {new} (baseline: {old})"
        return "response tool calls differ"
    return None


def divergence(base: Trace | None, new: Trace | None) -> Divergence | None:
    """The first step where the traces differ, comparing each step's request and its response;
    None when they agree. A changed request is where an agent's behaviour changed, even when a
    replayed answer to it happens to be the same."""
    base_calls = base.calls if base else []
    new_calls = new.calls if new else []
    for i in range(max(len(base_calls), len(new_calls))):
        if i >= len(new_calls):
            call = base_calls[i]
            return Divergence(i, call.where,
                              f"the new run makes no call here (the baseline made {len(base_calls)})")
        if i >= len(base_calls):
            call = new_calls[i]
            return Divergence(i, call.where,
                              f"the baseline made no call here (the new run makes {len(new_calls)})")
        what = _step_difference(base_calls[i], new_calls[i])
        if what:
            call = new_calls[i]
            return Divergence(i, call.where, what)
    return None


def first_divergence(base: Trace | None, new: Trace | None) -> int | None:
    """Index (in call order) of the first step where the two traces differ; None when they agree."""
    found = divergence(base, new)
    return found.index if found else None


def _tool_label(call: dict[str, Any], width: int = 60) -> str:
    """`name {"input": ...}` on one line, cut to `width`: enough to tell two tool calls apart."""
    text = json.dumps(call.get("input"), ensure_ascii=False, sort_keys=True, default=str)
    label = f"{call.get('name')} {text}"
    return label if len(label) <= width else label[: width - 1] + "…"


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
    return cost_of_trace(result.trace, result.price_table) if result.trace is not None else None


def _first_line(text: str) -> str:
    """A harness error's first line: the rest (a replay miss's body diff, the command to record
    again) was printed with the run, and the divergence says what changed."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


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
    expected_codes: frozenset[str] = frozenset()
    """Codes the scenario asks for (an anti-pattern example): never a regression."""
    trajectory: dict[str, Any] = field(default_factory=dict)
    """deepdiff of the tool-call sequences (names and inputs); empty when the same."""
    base_cost: float | None = None
    new_cost: float | None = None
    base_steps: int | None = None
    """None when the run is new."""
    new_steps: int | None = None
    """None when the run is gone."""
    cost_regressed: bool = False
    steps_regressed: bool = False
    divergence: int | None = None
    """Index in call order of the first step where the traces differ."""
    divergence_where: str | None = None
    """That step as `thread T, step S` (1-based, like findings), for people."""
    divergence_what: str | None = None
    """What differs at that step: the request (what the agent sent) or the response."""
    base_tools: list[str] = field(default_factory=list)
    new_tools: list[str] = field(default_factory=list)
    """Each side's tool calls as `name {input}`: the trajectory, readable."""
    failed_expectations: list[str] = field(default_factory=list)
    """Expectations the new run missed that the baseline met: why a run newly fails."""
    new_error: str | None = None
    """The harness error of the new run, when it could not run."""

    @property
    def cell(self) -> str:
        return cell_of(self.run_id)

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
        return [f for f in self.new_findings if f.severity == "error" and f.code not in self.expected_codes]

    @property
    def worse(self) -> bool:
        """This run alone changed for the worse; whether that is a regression is its cell's verdict."""
        return (self.change == "newly failing" or bool(self.new_error_findings)
                or self.cost_regressed or self.steps_regressed)

    @property
    def headline(self) -> str:
        """The change in a few words: `newly failing (passed -> error)`, `removed (was passed, 4 steps)`."""
        if self.change == "newly failing":
            return f"newly failing ({self.base_status} -> {self.new_status})"
        if self.change == "removed":
            return f"removed (was {self.base_status}, {self.base_steps} steps)"
        if self.change == "added":
            return f"added ({self.new_status}, {self.new_steps} steps)"
        return self.change

    @property
    def reasons(self) -> list[str]:
        """Why the run is worse, one line each (the headline excluded)."""
        reasons = []
        if self.change == "newly failing":
            # Why: a run fails on an error finding (listed next) or a missed expectation, or did not run.
            reasons += [f"expectation {e}" for e in self.failed_expectations]
            if self.new_error:
                reasons.append(f"harness error: {_first_line(self.new_error)}")
        reasons += [f"new {f.line()}" for f in self.new_error_findings]
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
        for a, b in zip(self.base_tools, self.new_tools, strict=False):
            if a != b:
                break
            same += 1

        def tail(tools: list[str]) -> str:
            shown = tools[same: same + 6]
            more = len(tools) - same - len(shown)
            return ", ".join(shown) + (f", … {more} more" if more else "") if shown else "(none)"

        head = f"tool calls differ from call {same + 1} of {len(self.base_tools)} -> {len(self.new_tools)}:"
        return [head, f"  base: {tail(self.base_tools)}", f"  new:  {tail(self.new_tools)}"]

    @property
    def detail_lines(self) -> list[str]:
        """Everything said about the run beyond its headline, in the order that explains it."""
        lines = list(self.reasons)
        lines += [f"+ {f.line()}" for f in self.new_findings if f not in self.new_error_findings]
        lines += [f"- {f.line()}" for f in self.gone_findings]
        if self.divergence_where and self.base_status and self.new_status:
            lines.append(f"traces diverge at {self.divergence_where}: {self.divergence_what}")
        lines += self.trajectory_lines
        if (self.base_steps != self.new_steps and not self.steps_regressed
                and self.base_status and self.new_status):
            lines.append(f"steps {self.base_steps} -> {self.new_steps}")
        return lines

    @property
    def interesting(self) -> bool:
        return (self.change != "unchanged" or bool(self.new_findings) or bool(self.gone_findings)
                or bool(self.trajectory) or self.worse or self.base_steps != self.new_steps
                or self.divergence is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "cell": self.cell, "scenario": self.scenario, "change": self.change,
            "base_status": self.base_status, "new_status": self.new_status,
            "worse": self.worse, "reasons": self.reasons,
            "new_findings": [f.to_dict() for f in self.new_findings],
            "gone_findings": [f.to_dict() for f in self.gone_findings],
            "trajectory": self.trajectory,
            "base_cost_usd": self.base_cost, "new_cost_usd": self.new_cost, "cost_change_pct": self.cost_change_pct,
            "base_steps": self.base_steps, "new_steps": self.new_steps, "first_divergence": self.divergence,
            "first_divergence_at": self.divergence_where, "first_divergence_what": self.divergence_what,
            "base_tool_calls": self.base_tools, "new_tool_calls": self.new_tools,
            "failed_expectations": self.failed_expectations,
        }


@dataclass
class CountChange:
    """A count over a cell's runs, before and after: runs passing, or runs showing a rule's error."""

    base: int
    base_runs: int
    new: int
    new_runs: int
    p_value: float
    """One-sided Fisher's exact p of the change in the bad direction."""
    regressed: bool
    good: bool = True
    """Counted runs are good ones (passes): a drop is bad. Else bad ones (a rule's errors): a rise is."""

    def ratio(self) -> str:
        return f"{self.base}/{self.base_runs} -> {self.new}/{self.new_runs}"

    def verdict(self, alpha: float) -> str:
        """Why this change is or is not a regression, in the reader's terms."""
        if self.base_runs == self.new_runs == 1:
            return ""
        test = f"one-sided Fisher's exact p = {self.p_value:.3g}"
        if not self.regressed:
            return f"{test} > {alpha:g}: within chance, not a regression"
        if self.p_value <= alpha:
            return f"{test} <= {alpha:g}"
        flip = ("every run passed before and none passes now" if self.good
                else "no run had them before, every run has now")
        return f"{test}, but {flip}"


def _count_change(base: int, base_runs: int, new: int, new_runs: int, *, good: bool, alpha: float) -> CountChange:
    """`good`: a count that should not drop (passes); else one that should not rise (a rule's errors).
    Regressed when the count flipped completely (every run good before, none now: a deterministic
    regression, whatever the repeats) or Fisher's test finds the change unlikely by chance."""
    if good:
        p = fisher_exact(base, base_runs, new, new_runs, "less")
        flipped = base == base_runs > 0 and new == 0 < new_runs
    else:
        p = fisher_exact(base, base_runs, new, new_runs, "greater")
        flipped = base == 0 < base_runs and new == new_runs > 0
    moved = (new / new_runs < base / base_runs if good else new / new_runs > base / base_runs) \
        if base_runs and new_runs else False
    return CountChange(base, base_runs, new, new_runs, p, moved and (flipped or p <= alpha), good)


def _median(values: list[float | None]) -> float | None:
    """Median of the runs' values; None when any is unknown (an unpriced run is never free)."""
    if not values or any(v is None for v in values):
        return None
    return float(statistics.median(v for v in values if v is not None))


@dataclass
class CellDiff:
    """One cell (a scenario, case, model and effort) over all its repeats: the unit of a verdict."""

    cell: str
    scenario: str
    runs: list[RunDiff]
    passes: CountChange | None
    """None when one side has no run of the cell (added or removed)."""
    error_codes: dict[str, CountChange] = field(default_factory=dict)
    """Rules whose (unexpected) error findings new runs show more often than the baseline's did."""
    base_cost: float | None = None
    new_cost: float | None = None
    """Median cost per run; None when a run is unpriced."""
    base_steps: float | None = None
    new_steps: float | None = None
    cost_regressed: bool = False
    steps_regressed: bool = False

    @property
    def repeated(self) -> bool:
        """More than one run id: its runs are judged, and listed, together."""
        return len(self.runs) > 1

    @property
    def regressed(self) -> bool:
        return ((self.passes is not None and self.passes.regressed)
                or any(c.regressed for c in self.error_codes.values())
                or self.cost_regressed or self.steps_regressed)

    @property
    def interesting(self) -> bool:
        return self.regressed or any(r.interesting for r in self.runs)

    def reasons(self, alpha: float) -> list[str]:
        """Why the cell regressed, or what changed in it, over its repeats (repeated cells only: a
        single run's own reasons say it)."""
        if not self.repeated:
            return []
        lines = []
        for code, count in self.error_codes.items():
            if count.regressed or count.new:
                lines.append(f"{code} errors in {count.ratio()} runs ({count.verdict(alpha)})")
        if self.cost_regressed and self.base_cost and self.new_cost is not None:
            pct = (self.new_cost - self.base_cost) / self.base_cost * 100
            lines.append(f"median cost ${self.base_cost:.4f} -> ${self.new_cost:.4f} ({pct:+.1f}%)")
        if self.steps_regressed:
            lines.append(f"median steps {self.base_steps:g} -> {self.new_steps:g}")
        return lines

    def headline(self, alpha: float) -> str:
        if self.passes is None:  # every run id is on one side only
            return f"{self.runs[0].change} ({len(self.runs)} runs)"
        verdict = self.passes.verdict(alpha)
        return f"passed {self.passes.ratio()} runs" + (f" ({verdict})" if verdict else "")

    def run_groups(self) -> list[tuple[list[RunDiff], list[str]]]:
        """The cell's interesting runs, those that changed the same way together (replayed repeats
        usually do): each group's runs and its lines, said once."""
        groups: dict[tuple[str, ...], list[RunDiff]] = {}
        for run in self.runs:
            if run.interesting:
                groups.setdefault((run.headline, *run.detail_lines), []).append(run)
        return [(runs, list(lines)) for lines, runs in groups.items()]

    def to_dict(self, alpha: float) -> dict[str, Any]:
        passes = self.passes
        return {
            "cell": self.cell, "scenario": self.scenario, "regressed": self.regressed,
            "passed": None if passes is None else {"base": passes.base, "base_runs": passes.base_runs,
                                                   "new": passes.new, "new_runs": passes.new_runs,
                                                   "p_value": passes.p_value},
            "error_codes": {code: {"base": c.base, "base_runs": c.base_runs, "new": c.new, "new_runs": c.new_runs,
                                   "p_value": c.p_value, "regressed": c.regressed}
                            for code, c in self.error_codes.items()},
            "base_median_cost_usd": self.base_cost, "new_median_cost_usd": self.new_cost,
            "base_median_steps": self.base_steps, "new_median_steps": self.new_steps,
            "cost_regressed": self.cost_regressed, "steps_regressed": self.steps_regressed,
            "reasons": self.reasons(alpha), "runs": [r.run_id for r in self.runs],
        }


@dataclass
class DiffEntry:
    """One line of a diff's listing (text, Markdown, the page) with what it says below it."""

    regressed: bool
    name: str
    """A run id, or a repeated cell's id (the run id without its repeat)."""
    change: str
    lines: list[str]
    groups: list[list[RunDiff]]
    """The runs it stands for, those that changed the same way together: a page shows one of each."""


@dataclass
class ResultsDiff:
    """Every run id of either side, grouped into cells, with the thresholds used."""

    runs: list[RunDiff]
    threshold_cost_pct: float
    threshold_steps: int
    pairs: dict[str, tuple[RunResult | None, RunResult | None]] = field(default_factory=dict, repr=False)
    """The two records of each run id, for viewers that show the traces side by side."""
    cells: list[CellDiff] = field(default_factory=list)
    alpha: float = DEFAULT_ALPHA
    priced_with: tuple[dict[str, int], dict[str, int]] = ({}, {})
    """Which price tables made the costs compared (`PriceTable.label`: runs priced with each), the
    baseline's and the new runs'."""
    prices_differ: list[str] = field(default_factory=list)
    """Models both sides kept prices for that differ between them: one prices file, edited between
    the runs, is two tables under one name."""

    @property
    def prices_note(self) -> str | None:
        """Said when the two sides' costs were not all priced with one table: a cost change then
        may be a price change, not the runs'."""
        base, new = self.priced_with
        if len({*base, *new}) <= 1 and not self.prices_differ:
            return None
        differ = f", and their prices for {', '.join(self.prices_differ)} differ" if self.prices_differ else ""
        return (f"note: the costs compare prices as well as runs: the baseline's were priced {tables_said(base)}, "
                f"the new ones' {tables_said(new)}{differ}")

    @property
    def regressed(self) -> bool:
        return any(c.regressed for c in self.cells)

    def by_change(self, change: str) -> list[RunDiff]:
        return [r for r in self.runs if r.change == change]

    def _criteria(self) -> str:
        return (f"cost threshold {self.threshold_cost_pct:g}%, steps threshold {self.threshold_steps}, "
                f"repeats judged by one-sided Fisher's exact test at p <= {self.alpha:g}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "regressed": self.regressed,
            "threshold_cost_pct": self.threshold_cost_pct,
            "threshold_steps": self.threshold_steps,
            "alpha": self.alpha,
            "priced_with": {"base": dict(self.priced_with[0]), "new": dict(self.priced_with[1])},
            "prices_differ": list(self.prices_differ),
            "counts": {c: len(self.by_change(c)) for c in ("newly failing", "newly passing", "added", "removed")},
            "cells": [c.to_dict(self.alpha) for c in self.cells if c.interesting],
            "runs": [r.to_dict() for r in self.runs if r.interesting],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"

    def entries(self) -> list[DiffEntry]:
        """What every output lists, one entry per interesting cell: a cell of one run is that run (its
        id and change), a repeated cell its pass count and then its runs, those that changed the
        same way said once."""
        entries = []
        for cell in self.cells:
            if not cell.interesting:
                continue
            if not cell.repeated:
                entries += [DiffEntry(cell.regressed, run.run_id, run.headline, run.detail_lines, [[run]])
                            for run in cell.runs if run.interesting]
                continue
            lines = cell.reasons(self.alpha)
            groups = cell.run_groups()
            for runs, (headline, *details) in groups:
                lines.append(f"{', '.join(_repeat_label(r.run_id) for r in runs)}: {headline}")
                lines += [f"  {line}" for line in details]
            entries.append(DiffEntry(cell.regressed, cell.cell, cell.headline(self.alpha), lines,
                                     [runs for runs, _ in groups]))
        return entries

    def _compared(self) -> str:
        """How much was compared: a cell or run id on one side only is listed, never compared, so a NEW
        that lost most runs must not read as "every cell compared"."""
        removed, added = len(self.by_change("removed")), len(self.by_change("added"))
        runs = len(self.runs) - removed - added
        cells = len(self.cells)
        counted = f"{cells} cell{'s' if cells != 1 else ''}"
        if removed or added:
            compared = sum(1 for c in self.cells if c.passes is not None)
            counted = f"{compared} of {counted}"
        text = f"{counted} ({runs} run id{'s' if runs != 1 else ''}) compared"
        if removed or added:
            text += (f"; {removed} run id{'s' if removed != 1 else ''} only in the baseline (removed), "
                     f"{added} only in the new results (added)")
        return text

    def to_text(self) -> str:
        lines = [f"{'REGRESSED' if self.regressed else 'OK'}: {self._compared()} ({self._criteria()})"]
        if self.prices_note:
            lines.append(self.prices_note)
        for entry in self.entries():
            lines.append(f"{'!' if entry.regressed else '-'} {entry.name}: {entry.change}")
            lines += [f"    {line}" for line in entry.lines]
        return "\n".join(lines) + "\n"

    def to_markdown(self) -> str:
        def cell(text: object) -> str:
            text = reveal_bidi(str(text))  # as the HTML report does, so a name reads as sent
            indent = "&emsp;" * ((len(text) - len(text.lstrip(" "))) // 2)  # a repeat's lines under its header
            return indent + " ".join(str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").split())

        out = [f"## {'❌ Regressed' if self.regressed else '✅ No regression'} against the baseline", "",
               f"_{self._criteria()}_", "", f"_{self._compared()}_", "",
               *([f"_{self.prices_note}_", ""] if self.prices_note else []),
               "| run | change | details |", "|---|---|---|"]
        for entry in self.entries():
            change = cell(entry.change)
            out.append(f"| {cell(entry.name)} | {'**' + change + '**' if entry.regressed else change} | "
                       f"{'<br>'.join(cell(line) for line in entry.lines)} |")
        return "\n".join(out) + "\n"


def _run_diff(run_id: str, a: RunResult | None, b: RunResult | None, threshold_cost_pct: float,
              threshold_steps: int) -> RunDiff:
    some = b or a
    assert some is not None
    diff = RunDiff(run_id=run_id, scenario=some.scenario, base_status=a.status if a else None,
                   new_status=b.status if b else None, expected_codes=some.expected_codes,
                   base_steps=a.steps if a else None, new_steps=b.steps if b else None)
    if a is None or b is None:
        return diff
    base_keys = {_finding_key(f) for f in a.findings}
    new_keys = {_finding_key(f) for f in b.findings}
    diff.new_findings = [f for f in b.findings if _finding_key(f) not in base_keys]
    diff.gone_findings = [f for f in a.findings if _finding_key(f) not in new_keys]
    diff.trajectory = _trajectory_diff(tool_calls(a.trace), tool_calls(b.trace))
    diff.base_cost, diff.new_cost = _cost(a), _cost(b)
    pct = diff.cost_change_pct
    diff.cost_regressed = pct is not None and pct > threshold_cost_pct
    diff.steps_regressed = b.steps - a.steps > threshold_steps
    found = divergence(a.trace, b.trace)
    if found:
        diff.divergence, diff.divergence_where, diff.divergence_what = found.index, found.where, found.what
    diff.base_tools = [_tool_label(c) for c in tool_calls(a.trace)]
    diff.new_tools = [_tool_label(c) for c in tool_calls(b.trace)]
    met_before = {e.name for e in a.expectations if e.passed}
    diff.failed_expectations = [f"{e.name}: {e.message}" for e in b.expectations
                                if not e.passed and (e.name in met_before or not a.expectations)]
    diff.new_error = b.error
    return diff


def _cell_diff(cell: str, runs: list[RunDiff], base: list[RunResult], new: list[RunResult], *,
               threshold_cost_pct: float, threshold_steps: int, alpha: float) -> CellDiff:
    out = CellDiff(cell=cell, scenario=runs[0].scenario, runs=runs, passes=None)
    if not base or not new:
        return out
    out.passes = _count_change(sum(r.status == "passed" for r in base), len(base),
                               sum(r.status == "passed" for r in new), len(new), good=True, alpha=alpha)

    def with_code(results: list[RunResult], code: str) -> int:
        return sum(any(f.code == code for f in r.unexpected_errors) for r in results)

    codes = dict.fromkeys(f.code for r in new for f in r.unexpected_errors)
    for code in codes:
        count = _count_change(with_code(base, code), len(base), with_code(new, code), len(new), good=False, alpha=alpha)
        if count.new > count.base * count.new_runs / count.base_runs:  # shown only when more frequent
            out.error_codes[code] = count
    out.base_cost, out.new_cost = _median([_cost(r) for r in base]), _median([_cost(r) for r in new])
    out.base_steps = float(statistics.median(r.steps for r in base))
    out.new_steps = float(statistics.median(r.steps for r in new))
    if out.base_cost and out.new_cost is not None:
        out.cost_regressed = (out.new_cost - out.base_cost) / out.base_cost * 100 > threshold_cost_pct
    out.steps_regressed = out.new_steps - out.base_steps > threshold_steps
    return out


def diff_results(
    base: Sequence[RunResult],
    new: Sequence[RunResult],
    *,
    threshold_cost_pct: float = DEFAULT_THRESHOLD_COST_PCT,
    threshold_steps: int = DEFAULT_THRESHOLD_STEPS,
    alpha: float = DEFAULT_ALPHA,
) -> ResultsDiff:
    """Compare two sets of results run id by run id, and judge each cell over its repeats."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    base_by_id = {r.run_id: r for r in base}
    new_by_id = {r.run_id: r for r in new}
    ids = list(base_by_id) + [i for i in new_by_id if i not in base_by_id]
    runs: list[RunDiff] = []
    pairs: dict[str, tuple[RunResult | None, RunResult | None]] = {}
    by_cell: dict[str, list[RunDiff]] = {}
    for run_id in ids:
        a, b = base_by_id.get(run_id), new_by_id.get(run_id)
        pairs[run_id] = (a, b)
        diff = _run_diff(run_id, a, b, threshold_cost_pct, threshold_steps)
        runs.append(diff)
        by_cell.setdefault(diff.cell, []).append(diff)
    cells = [_cell_diff(cell, members, [r for r in (pairs[m.run_id][0] for m in members) if r is not None],
                        [r for r in (pairs[m.run_id][1] for m in members) if r is not None],
                        threshold_cost_pct=threshold_cost_pct, threshold_steps=threshold_steps, alpha=alpha)
             for cell, members in by_cell.items()]
    priced_with = (count_tables(r.price_table.label for r in base), count_tables(r.price_table.label for r in new))
    base_rates, new_rates = _kept_rates(base), _kept_rates(new)
    differ = sorted(model for model in base_rates.keys() & new_rates.keys() if base_rates[model] != new_rates[model])
    return ResultsDiff(runs=runs, threshold_cost_pct=threshold_cost_pct, threshold_steps=threshold_steps,
                       pairs=pairs, cells=cells, alpha=alpha, priced_with=priced_with, prices_differ=differ)


def _kept_rates(results: Sequence[RunResult]) -> dict[str, set[tuple[float, ...]]]:
    kept: dict[str, set[tuple[float, ...]]] = {}
    for result in results:
        keep_rates(kept, result.prices)
    return kept
