"""The HTML page of `harness diff -o DIR`: what changed per cell and run, and the two traces side by side.

Steps are aligned in call order from the first one where the traces diverge; the identical steps
before it are rendered collapsed, both sides, so a tool_result's link back to its tool_use (often an
earlier step) always lands on the page. A run only on one side shows its steps on that side. Repeats
that changed the same way are shown once. Same escaping and CSP as the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from .._output import write_text
from ..cost import PriceTable
from ..cost._cost import price_calls
from ..results._diff import DiffEntry, ResultsDiff, RunDiff
from ..results._model import RunResult
from ._data import expected_codes
from ._render import _asset, content_security_policy, environment
from ._view import StepView, thread_views


@dataclass
class AlignedRun:
    n: int
    diff: RunDiff
    rows: list[tuple[StepView | None, StepView | None]]
    identical_before: int
    before: list[tuple[StepView | None, StepView | None]]
    """The identical steps before the divergence, shown collapsed."""
    same_as: list[str]
    """Other runs of its cell that changed the same way, not shown again."""


@dataclass
class PageEntry:
    entry: DiffEntry
    runs: list[AlignedRun]


def _steps_by_call(prefix: str, result: RunResult | None, prices: PriceTable | None) -> list[StepView]:
    if result is None or result.trace is None:
        return []
    expected = frozenset(expected_codes(result))
    costs = price_calls(result.trace, prices if prices is not None else result.price_table)  # as the run was
    by_index = {s.call_index: s for t in thread_views(prefix, result.trace, result.findings, costs, expected,
                                                         replay_run=result.mode == "replay")
                for s in t.steps}
    return [by_index[i] for i in sorted(by_index)]


def _aligned(n: int, run: RunDiff, others: list[RunDiff], diff: ResultsDiff,
             table: PriceTable | None) -> AlignedRun:
    base, new = diff.pairs.get(run.run_id, (None, None))
    left = _steps_by_call(f"base-{n}", base, table)
    right = _steps_by_call(f"new-{n}", new, table)
    pairs = [(left[i] if i < len(left) else None, right[i] if i < len(right) else None)
             for i in range(max(len(left), len(right)))]
    # A run on one side only has nothing to align: all its steps are shown.
    start = 0 if base is None or new is None else run.divergence if run.divergence is not None else len(pairs)
    return AlignedRun(n, run, pairs[start:], start, pairs[:start], [o.run_id for o in others])


def render_diff_page(diff: ResultsDiff, prices: PriceTable | None = None) -> str:
    entries: list[PageEntry] = []
    n = 0
    for entry in diff.entries():
        runs = []
        for group in entry.groups:
            n += 1
            runs.append(_aligned(n, group[0], group[1:], diff, prices))
        entries.append(PageEntry(entry, runs))
    script, style = _asset("report.js"), _asset("report.css")
    return environment().get_template("diff.html.j2").render(
        diff=diff, entries=entries, csp=content_security_policy(script, style), script=Markup(script),
        style=Markup(style),
    )


def build_diff_page(diff: ResultsDiff, out_dir: str | Path, prices: PriceTable | None = None) -> Path:
    page = Path(out_dir) / "index.html"
    write_text(page, render_diff_page(diff, prices))
    return page
