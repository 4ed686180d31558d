"""One scenario run's result, as stored one JSON object per line in a results file.

The report, the baseline diff, the merge of shards and the pytest plugin all read these records
only, so a report can be rebuilt without re-running anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..checks._registry import Finding
from ..cost import PriceTable, cost_of_trace, load_prices
from ..scores._model import Score
from ..trace._model import Outcome, Trace, field_arguments, field_values

RESULT_SCHEMA = 1

AGENT_RAISED = "agent_raised"
"""The expectation every run has implicitly: the agent does not raise, unless `expect: {outcome: error}` says so."""

AGENT_ERROR = "agent_error"
"""Its twin for an agent that returned an error outcome (it caught the SDK's 400, or its give-up
after retrying 429s): the run ended in error, whatever else held, unless `expect: {outcome: error}`."""

_AGENT_ENDED = {AGENT_RAISED: "the agent raised", AGENT_ERROR: "the agent's run ended in error"}

Status = Literal["passed", "failed", "error"]


@dataclass
class ExpectationResult:
    """One expectation a scenario declared, and whether the run met it."""

    name: str
    """e.g. `outcome`, `final_text`, `tools_called`, `max_steps`, `max_cost_usd`."""
    passed: bool
    message: str
    """What was expected and what happened."""


@dataclass
class Usage:
    """Token counts summed over every call of the run (input, output, cache creation, cache read)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


@dataclass
class RunResult:
    """The result of running one scenario in one matrix cell once."""

    run_id: str
    """Stable id: `<scenario>[<model>-<effort>-r<repeat>]`, or `<scenario>[<case>][<model>-<effort>-r<repeat>]`
    for a scenario with cases; unique within a results file."""
    scenario: str
    scenario_path: str
    model: str
    effort: str | None
    repeat: int
    """0-based repeat number within the cell."""
    mode: str
    """replay, record, live or scripted."""
    status: Status
    """passed: no error finding and every expectation met; failed: otherwise; error: the harness could not run it."""
    outcome: Outcome | None
    findings: list[Finding] = field(default_factory=list)
    expectations: list[ExpectationResult] = field(default_factory=list)
    error: str | None = None
    """Why the harness could not run the scenario (cassette mismatch, agent import error...)."""
    cassette_not_written: str | None = None
    """A recording run only: why its cassette was not written (an error outcome, a harness problem,
    nothing recorded), the previous cassette being kept as it was."""
    started_at: str = ""
    """ISO 8601 UTC."""
    duration_s: float = 0.0
    steps: int = 0
    """Model calls made (attempts of one call count once)."""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    """None when a model of the run has no price (unpriced, never zero)."""
    prices: PriceTable | None = None
    """The prices the run's costs were reckoned with, when not the shipped table's (`harness run
    --prices FILE`): that table cut to the models the run's calls (the agent's and the harness's own)
    were billed as, with the file's name. None: the shipped table (every result written before
    results kept their prices)."""
    answers: str | None = None
    """Where the model's answers came from: `scripted` (the scenario's script, played directly or
    replayed from a cassette recorded from it: identical across cells by construction, so they say
    nothing about a model's quality), `model` (the API, live or recorded), None when unknown."""
    trace: Trace | None = None
    harness_trace: Trace | None = None
    """The harness's own model calls about this run (the judge's, the simulated user's), apart from
    the agent's `trace`: no rule reads them, and their cost is their own line of the ledger. None
    when the run made none."""
    case: str | None = None
    """The case's id, for a scenario with `cases` or a `dataset`; None otherwise."""
    scores: tuple[Score, ...] = ()
    """The scenario's `score:` entries, in order, as the run earned them."""
    schema: int = RESULT_SCHEMA

    @property
    def expected_codes(self) -> frozenset[str]:
        """Rule codes the scenario expects to find (its anti-pattern's point): they never fail the run."""
        return frozenset(e.name.removeprefix("findings.") for e in self.expectations if e.name.startswith("findings."))

    @property
    def unexpected_errors(self) -> list[Finding]:
        """Error findings the scenario did not ask for: the ones that fail a run, whatever its status."""
        expected = self.expected_codes
        return [f for f in self.findings if f.severity == "error" and f.code not in expected]

    @property
    def price_table(self) -> PriceTable:
        """The prices the run was priced with: its own `prices`, else the shipped table."""
        return self.prices if self.prices is not None else load_prices()

    @property
    def harness_cost_usd(self) -> float | None:
        """What the harness's own calls (judge, simulated user) cost, by the prices the agent's were
        (`price_table`): 0.0 without any, None when one was unpriced (never counted as free)."""
        return 0.0 if self.harness_trace is None else cost_of_trace(self.harness_trace, self.price_table)

    @property
    def failed_expectations(self) -> list[ExpectationResult]:
        return [e for e in self.expectations if not e.passed]

    def reasons(self) -> list[str]:
        """Why the run did not pass, one line per reason, in the order that explains it best: an
        agent that raised (the cause of what follows), the findings (on a replay miss, the rule the
        changed request breaks says more than the miss), failed expectations, the harness's own
        error (before the expectations when the run is an error), a cassette left unwritten.
        Empty when the run passed."""
        if self.status == "passed":
            return []
        unmet = self.failed_expectations
        # A command's failure quotes its stderr on lines of their own, indented under it as the
        # harness's error is: one line per reason, whoever prints them.
        lines = [line for e in unmet if e.name in _AGENT_ENDED
                 for line in f"{_AGENT_ENDED[e.name]}: {e.message}".splitlines()]
        lines += [f.line() for f in self.unexpected_errors]
        errors = self.error.splitlines() if self.error else []
        if self.status == "error":  # nothing the agent did explains it: the harness's error comes first
            lines += errors
            errors = []
        lines += [f"expect {e.name}: {e.message}" for e in unmet if e.name not in _AGENT_ENDED]
        lines += errors
        if self.cassette_not_written and self.cassette_not_written != self.error:
            lines.append(self.cassette_not_written)
        return lines

    def why(self) -> str:
        """The first reason the run did not pass, in one line ("" when it passed)."""
        reasons = self.reasons()
        return reasons[0] if reasons else ("" if self.status == "passed" else f"run {self.status}")

    def to_dict(self) -> dict[str, Any]:
        # Field by field: asdict would deep-copy the whole trace only to have it replaced below.
        data = field_values(self)
        data["usage"] = field_values(self.usage)
        data["expectations"] = [field_values(e) for e in self.expectations]
        data["outcome"] = self.outcome.to_dict() if self.outcome else None
        data["findings"] = [f.to_dict() for f in self.findings]
        data["trace"] = self.trace.to_dict() if self.trace else None
        if self.harness_trace is None:
            del data["harness_trace"]  # most runs make no call of the harness's own: no key for them
        else:
            data["harness_trace"] = self.harness_trace.to_dict()
        data["scores"] = [s.to_dict() for s in self.scores]
        if self.prices is None:
            del data["prices"]  # the shipped table: lines as they were before results kept their prices
        else:
            data["prices"] = self.prices.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        data = field_arguments(cls, data)
        outcome = data.get("outcome")
        trace = data.get("trace")
        data["outcome"] = Outcome(**outcome) if outcome else None
        data["findings"] = [Finding.from_dict(field_arguments(Finding, f)) for f in data.get("findings", [])]
        data["expectations"] = [ExpectationResult(**e) for e in data.get("expectations", [])]
        data["usage"] = Usage(**data.get("usage", {}))
        data["trace"] = Trace.from_dict(trace) if trace else None
        own = data.get("harness_trace")
        data["harness_trace"] = Trace.from_dict(own) if own else None
        data["scores"] = tuple(Score.from_dict(s) for s in data.get("scores") or ())
        prices = data.get("prices")
        data["prices"] = PriceTable.from_dict(prices) if prices is not None else None
        return cls(**data)
