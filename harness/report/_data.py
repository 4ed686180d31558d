"""What every output of `harness report` shares: runs with their costs, ledgers and the comparison.

Built once from stored results (and a price table) so the HTML page, JUnit, Markdown and JSON
outputs can never disagree about a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..checks._registry import Finding
from ..cost import CallCost, ModelPrice, PriceTable, ServerToolPrice, call_model, cost_of_usage
from ..cost._prices import keep_rates, tables_said
from ..results._frame import frame_of, frame_row
from ..results._model import RunResult
from ._view import finding_call, step_anchor

if TYPE_CHECKING:
    from ._compare import CellStats, Comparison


@dataclass
class LedgerRow:
    """Cost of a group (a run, a scenario, a model): tokens by kind and USD, None when unpriced."""

    name: str
    runs: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    server_tool_uses: int = 0
    cost_usd: float | None = 0.0
    unpriced_models: set[str] = field(default_factory=set)

    def add_cost(self, cost: float | None) -> None:
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost


@dataclass
class FindingLink:
    finding: Finding
    href: str
    """Anchor of the step it happened at, or of the run when it is about the whole run."""
    expected: bool = False
    """The scenario asked for this code (`expect.findings`, an anti-pattern example): it does not fail the run."""


@dataclass
class RunEntry:
    n: int
    """1-based position in the report; anchors are `run-<n>` and `run-<n>-call-<i>`."""
    result: RunResult
    cost_usd: float | None
    tokens: int
    findings: list[FindingLink]
    cell: str
    """`<model>-<effort>-r<repeat>`: the JUnit test name."""

    @property
    def anchor(self) -> str:
        return f"run-{self.n}"


@dataclass
class ReportData:
    runs: list[RunEntry]
    rows: list[dict[str, Any]] = field(repr=False)
    """Each run's row of `harness.results.to_frame` (priced as `priced_with` says), in the runs' order."""
    by_scenario: list[LedgerRow]
    by_model: list[LedgerRow]
    totals: dict[str, int]
    total_cost: float | None
    """The agent runs' cost: what the comparison and `--max-cost` weigh."""
    prices_used: list[ModelPrice] = field(default_factory=list)
    """The price of every model a run or a call named, by the table that priced it: a model twice when
    two tables priced it differently."""
    server_tools: list[ServerToolPrice] = field(default_factory=list)
    priced_with: dict[str, int] = field(default_factory=dict)
    """Which tables priced the runs (a prices file, or `shipped`), and how many runs each: one, unless
    the results were run with different `--prices` and the report was given none."""
    prices_given: bool = False
    """The report was given its table (`--prices`), rather than pricing each run as it was run."""
    prices_differ: list[str] = field(default_factory=list)
    """Models whose prices the runs kept differ between runs: one prices file, edited between two runs, is
    two tables under one name (`priced_with` counts names)."""

    @property
    def tables_differ(self) -> str | None:
        """`2 with prices.yaml, 2 with the shipped table; their prices for M differ` when the runs were
        priced with more than one table, by name or by the prices they kept; None when with one."""
        if len(self.priced_with) <= 1 and not self.prices_differ:
            return None
        differ = f"; their prices for {', '.join(self.prices_differ)} differ" if self.prices_differ else ""
        return tables_said(self.priced_with) + differ

    @property
    def priced_with_text(self) -> str:
        """Which tables priced the runs, in a sentence for the page."""
        if self.tables_differ is not None:
            return (f"Priced as each run was, with different tables (runs: {self.tables_differ}): "
                    "their costs compare prices as well as runs.")
        label = next(iter(self.priced_with), "shipped")
        # Runs priced with the shipped table keep no copy of it (only a prices file's entries are kept):
        # they are priced with this version's table, which is all the page can truthfully say.
        recorded = not self.prices_given and label != "shipped"
        return f"Priced with {table_name(label)}" + (", as the runs recorded it." if recorded else ".")
    harness_calls: list[LedgerRow] = field(default_factory=list)
    """The harness's own calls (judge, simulated user), one line per role and model, never mixed
    into the agents' rows: `judge (claude-opus-4-8)`."""

    @cached_property
    def frame(self) -> Any:
        """The runs as `harness.results.to_frame(results, prices=prices)` gives them: pandas is imported
        only when asked for it (no output of the report does)."""
        return frame_of(self.rows)

    @cached_property
    def comparison(self) -> Comparison:
        """Settings compared: `compare(frame)`, computed from `rows` without making the frame."""
        # Here: the worker of a two-process build (`_files`) imports this module and compares nothing.
        from ._compare import compare_rows

        return compare_rows(self.rows)

    @property
    def harness_cost_note(self) -> str:
        return harness_cost_note(self.harness_calls)

    @property
    def harness_cost(self) -> float | None:
        return harness_cost(self.harness_calls)


def harness_cost_note(harness_calls: list[LedgerRow]) -> str:
    """What the harness's own calls cost, beside a total of the agents' (empty without such calls):
    `+ unpriced for the harness's own calls (judge)`; every output, `harness run`'s summary
    included, says it in these words."""
    if not harness_calls:
        return ""
    roles = ", ".join(sorted({row.name.split(" (")[0] for row in harness_calls}))
    return f"+ {usd(harness_cost(harness_calls))} for the harness's own calls ({roles})"


def total_cost_text(total_cost: float | None, harness_calls: list[LedgerRow]) -> str:
    """`total cost $0.0450 (+ $0.0120 for the harness's own calls (judge))`: the agents' total, and
    beside it, never in it, what the harness's own calls cost."""
    note = harness_cost_note(harness_calls)
    return f"total cost {usd(total_cost)}" + (f" ({note})" if note else "")


def harness_cost(harness_calls: list[LedgerRow]) -> float | None:
    """What the judge's and the simulated user's calls cost; None when one was unpriced."""
    total: float | None = 0.0
    for row in harness_calls:
        total = None if total is None or row.cost_usd is None else total + row.cost_usd
    return total


def count_harness_calls(own: dict[str, LedgerRow], seen: dict[str, set[int]], n: int, result: RunResult,
                        prices: PriceTable) -> set[str]:
    """Count the harness's own calls about run `n` (its judge's, its simulated user's) into `own`,
    one row per role and model; returns the models they named."""
    return _count_own(own, seen, n, own_calls(result, prices)[0])


def cell_name(result: RunResult) -> str:
    return f"{result.model}-{result.effort or 'default'}-r{result.repeat}"


def expected_codes(result: RunResult) -> frozenset[str]:
    """Codes the scenario expects to be found (see `RunResult.expected_codes`)."""
    return result.expected_codes


CallFigures = tuple[str | None, int, int, int, int, bool, float | None, int]
"""What the report counts of one call: the model it was billed as (`call_model`); its input, output,
cache-write and cache-read tokens as its usage says them; whether it was answered; its cost in USD (None
when unpriced) and its server tools' uses. Numbers, not the usage and its `CallCost`: a worker sends
these of each of its calls, pickled, and the usage's nested blocks and the cost's dozen fields were a
quarter of what it sent, for the seven numbers counted of them."""


def call_figures(model: str | None, usage: dict[str, Any], answered: bool, cost: CallCost | None) -> CallFigures:
    """The figures of a call billed as `model`, of `usage`, answered or not, priced as `cost`."""
    return (model, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
            int(usage.get("cache_creation_input_tokens") or 0), int(usage.get("cache_read_input_tokens") or 0),
            answered, None if cost is None else cost.total_usd,
            0 if cost is None else sum(cost.server_tool_uses.values()))


OwnCall = tuple[str, str, CallFigures]
"""One of the harness's own calls about a run as the report counts it: the name of its ledger row
(`judge (claude-opus-4-8)`), the model it was billed as and its figures (`call_figures`)."""


def own_calls(result: RunResult, prices: PriceTable) -> tuple[list[OwnCall], list[CallCost | None]]:
    """The harness's own calls about `result` (its judge's, its simulated user's), in order, as the report
    counts them, and their costs priced with `prices` (None when unpriced): both empty without any."""
    calls: list[OwnCall] = []
    costs: list[CallCost | None] = []
    if result.harness_trace is not None:
        for call in result.harness_trace.calls:
            billed = call_model(call)
            model = billed or "unknown model"
            name = f"{_ROLE_NAMES.get(call.final.harness_role or '', 'harness')} ({prices.base_model(model)})"
            usage = call.usage
            cost = cost_of_usage(billed, usage, prices)  # as `cost_of_call` prices it
            costs.append(cost)
            calls.append((name, model, call_figures(model, usage, call.response is not None, cost)))
    return calls, costs


def _count_own(own: dict[str, LedgerRow], seen: dict[str, set[int]], n: int, calls: list[OwnCall]) -> set[str]:
    """Count `calls`, the harness's own calls about run `n`, into `own`; returns the models they named."""
    models: set[str] = set()
    for name, model, figures in calls:
        models.add(model)
        _add_call(own.get(name) or own.setdefault(name, LedgerRow(name)), figures, model, n, seen)
    return models


@dataclass
class RunFigures:
    """What the report keeps of run `entry.n` once its trace is let go: everything its figures are
    made of. A process that packs other runs' details makes these of them and sends them over."""

    entry: RunEntry
    row: dict[str, Any]
    """The run's row of `harness.results.to_frame`."""
    calls: list[CallFigures]
    """Each call of its trace, in order (none without a trace)."""
    own: list[OwnCall] = field(default_factory=list)
    """The harness's own calls about it (`own_calls`): counted of these, not of its `harness_trace`, which is
    let go with its trace (`without_trace`)."""


def run_figures(n: int, result: RunResult, table: PriceTable) -> tuple[RunFigures, list[CallCost | None]]:
    """Run `n` as the report counts it, priced with `table`, and its trace's calls' costs (for its
    details). The entry holds `result` whole, its trace too."""
    call_costs: list[CallCost | None] = []
    calls: list[CallFigures] = []
    if result.trace is not None:
        for call in result.trace.calls:  # each call priced once, for every figure
            model, usage = call_model(call), call.usage
            cost = cost_of_usage(model, usage, table)
            call_costs.append(cost)
            calls.append(call_figures(model, usage, call.response is not None, cost))
    # The harness's own calls priced once, for the frame row's cost and the ledger both.
    own, own_costs = own_calls(result, table)
    row = frame_row(result, table, call_costs, own_costs)
    links = []
    # Read only for a run with findings: nearly half the runs of a suite have none.
    expected = expected_codes(result) if result.findings else frozenset()
    for finding in result.findings:
        index = finding_call(result.trace, finding) if result.trace is not None else None
        links.append(FindingLink(finding, f"#{step_anchor(n, index)}" if index is not None else f"#run-{n}",
                                 expected=finding.code in expected))
    entry = RunEntry(n=n, result=result, cost_usd=None if math.isnan(row["cost_usd"]) else float(row["cost_usd"]),
                     tokens=result.usage.total, findings=links, cell=cell_name(result))
    return RunFigures(entry, row, calls, own), call_costs


def without_trace(figures: RunFigures) -> RunFigures:
    """`figures` whose run is kept without its traces (what a report of 100,000 runs holds): the agent's,
    and the harness's own, whose calls `figures.own` counts (no output of the report reads it, and a
    worker pickled it whole for the process counting its runs)."""
    # A shallow copy, not `dataclasses.replace`: that builds the record again through its __init__. Made
    # as `copy.copy` makes it (a new instance given the same attributes), without its way through
    # `__reduce_ex__` and `copyreg`, three times as long, once for every run.
    kept = figures.entry.result
    result = object.__new__(type(kept))
    result.__dict__.update(kept.__dict__)
    result.trace = None
    result.harness_trace = None
    figures.entry.result = result
    return figures


def prepare(results: Iterable[RunResult], prices: PriceTable | None = None,
            render: Callable[[RunEntry, list[CallCost | None]], None] | None = None) -> ReportData:
    """Every figure of the report, in one pass over `results` (which may be a file being read).

    Each run is priced with `prices` when given, else with the table it was run with (its own
    `price_table`): the figures then are the ones the run said, and `priced_with` shows whether
    several tables made them.

    With `render`, each run is handed to it while its trace is loaded, with its calls' costs (each
    call is priced once, for every figure), and the data keeps the run without its trace: a report
    of 100,000 runs then holds one trace at a time.
    """
    tally = Tally(prices)
    for n, result in enumerate(results, start=1):
        figures, call_costs = run_figures(n, result, tally.table(result))
        if render is not None:
            render(figures.entry, call_costs)
            without_trace(figures)
        tally.add(figures)
    return tally.data()


class Tally:
    """The report's figures, counted a run at a time, in the runs' order (the ledgers list scenarios
    in the order first met)."""

    def __init__(self, prices: PriceTable | None) -> None:
        """`prices`: the table every run is priced with; None: each run's own (`price_table`)."""
        self._prices = prices
        self.runs: list[RunEntry] = []
        self._totals = {"passed": 0, "failed": 0, "error": 0, "runs": 0, "findings": 0}
        self._scenarios: dict[str, LedgerRow] = {}
        self._models: dict[str, LedgerRow] = {}
        self._own: dict[str, LedgerRow] = {}
        self._rows: list[dict[str, Any]] = []
        self._seen: dict[str, set[int]] = {}
        self._used: dict[tuple[str, ModelPrice], ModelPrice] = {}
        self._tools: dict[tuple[str, ServerToolPrice], ServerToolPrice] = {}
        self._priced_with: dict[str, int] = {}
        self._kept_rates: dict[str, set[tuple[float, ...]]] = {}
        # The last table a run was priced with, and the models whose prices were noted of it: runs are
        # priced with one table, or a few, and each price (a record of 8 fields) was hashed again for
        # every model of every run to find it noted already.
        self._noted_table: PriceTable | None = None
        self._noted_models: set[str] = set()

    def table(self, result: RunResult) -> PriceTable:
        """The table `result` is priced with."""
        return self._prices if self._prices is not None else result.price_table

    def add(self, figures: RunFigures) -> None:
        """Count the next run (its entry's `n` is one more than the last's)."""
        entry = figures.entry
        result, n = entry.result, entry.n
        table = self.table(result)
        self._priced_with[table.label] = self._priced_with.get(table.label, 0) + 1
        if self._prices is None:
            keep_rates(self._kept_rates, result.prices)
        called = {result.model}
        self._rows.append(figures.row)
        totals = self._totals
        totals["runs"] += 1
        totals["findings"] += len(result.findings)
        if result.status in totals:
            totals[result.status] += 1
        # A row made only for a scenario not met yet: setdefault would make one per run.
        scenario = self._scenarios.get(result.scenario) or self._scenarios.setdefault(result.scenario,
                                                                                    LedgerRow(result.scenario))
        scenario.runs += 1
        scenario.add_cost(entry.cost_usd)
        _add_usage(scenario, result)
        models = self._models
        for call in figures.calls:
            model = call[0] or result.model
            called.add(model)
            base = table.base_model(model)
            # A row made only for a model not met yet: setdefault would make one per call.
            row_of_model = models.get(base) or models.setdefault(base, LedgerRow(base))
            _add_call(row_of_model, call, model, n, self._seen)
        if figures.own:
            called |= _count_own(self._own, self._seen, n, figures.own)
        if table is not self._noted_table:
            self._noted_table, self._noted_models = table, set()
            for tool in table.server_tools.values():
                self._tools.setdefault((tool.name, tool), tool)
        if not called <= self._noted_models:
            for price in filter(None, map(table.model_price, called - self._noted_models)):
                self._used.setdefault((price.model, price), price)
            self._noted_models |= called
        self.runs.append(entry)

    def data(self) -> ReportData:
        """The figures of the runs counted."""
        runs, totals = self.runs, self._totals
        totals["expected_findings"] = sum(1 for run in runs for link in run.findings if link.expected)
        costs = [e.cost_usd for e in runs]
        total_cost = None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None))
        used, tools = self._used, self._tools
        return ReportData(runs=runs, rows=self._rows, by_scenario=list(self._scenarios.values()),
                          by_model=sorted(self._models.values(), key=lambda r: r.name), totals=totals,
                          total_cost=total_cost, prices_used=[used[k] for k in sorted(used, key=lambda k: k[0])],
                          server_tools=[tools[k] for k in sorted(tools, key=lambda k: k[0])],
                          priced_with=self._priced_with, prices_given=self._prices is not None,
                          prices_differ=sorted(model for model, rates in self._kept_rates.items() if len(rates) > 1),
                          harness_calls=sorted(self._own.values(), key=lambda r: r.name))


_ROLE_NAMES = {"judge": "judge", "user": "simulated user"}


def _add_call(row: LedgerRow, call: CallFigures, model: str, n: int, seen: dict[str, set[int]]) -> None:
    """Count one call of run `n`, billed as `model`, into a ledger row: its tokens by kind and its cost
    (None when unpriced, which only an answered call can be)."""
    _, input_tokens, output_tokens, write_tokens, read_tokens, answered, usd, tool_uses = call
    runs = seen.get(row.name)
    if runs is None:  # not setdefault: it would make a set for every call
        runs = seen[row.name] = set()
    runs.add(n)
    row.runs = len(runs)
    row.calls += 1
    row.input_tokens += input_tokens
    row.output_tokens += output_tokens
    row.cache_write_tokens += write_tokens
    row.cache_read_tokens += read_tokens
    if usd is None:
        if answered:
            row.add_cost(None)
            row.unpriced_models.add(model)
    else:
        row.add_cost(usd)
        row.server_tool_uses += tool_uses


def _add_usage(row: LedgerRow, result: RunResult) -> None:
    row.calls += result.steps
    row.input_tokens += result.usage.input_tokens
    row.output_tokens += result.usage.output_tokens
    row.cache_write_tokens += result.usage.cache_creation_input_tokens
    row.cache_read_tokens += result.usage.cache_read_input_tokens


def tokens(value: float | int | None) -> str:
    """A count for people: `12,345`. Each run's record writes five, so an int (as a count is) is written
    as one, not made a float for ",.0f" first: the same digits while the float is exact."""
    if type(value) is int and -_EXACT < value < _EXACT:
        return str(value) if -1000 < value < 1000 else f"{value:,}"
    return "—" if value is None else f"{value:,.0f}"


_EXACT = 2**53
"""Every int below this is exactly a float."""


def usd(value: float | None, digits: int = 4) -> str:
    """A cost for people: `$0.0523`, or `unpriced` when a model had no price (never $0). Below $999 (one
    below the first cost that rounds to $1,000) without the thousands' grouping, which writes nothing there."""
    if value is None:
        return "unpriced"
    return f"${value:.{digits}f}" if -999 < value < 999 else f"${value:,.{digits}f}"


def seconds(value: float | None) -> str:
    """A latency for people: milliseconds below a second (replayed runs take a few), else seconds."""
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f}s"


def cell_latency(cell: CellStats, value: float | None) -> str:
    """A comparison latency for people: "1.84s recorded" when it comes from cassettes' recorded timing,
    "n/a" when no run of the cell has a known one (a replay of a cassette without timing), never the
    replay's own time; "(2/3 runs)" when only some runs have one."""
    if value is None:
        return "n/a"
    text = seconds(value) + (" recorded" if cell.latency_recorded else "")
    if cell.latency_runs < cell.runs:
        text += f" ({cell.latency_runs}/{cell.runs} runs)"
    return text


def table_name(label: str) -> str:
    """A table's label (`PriceTable.label`) as a reader is told it."""
    return "the shipped table" if label == "shipped" else f"{label} over the shipped table"
