"""Run many planned runs concurrently, appending each result to the results file the moment it ends.

Workers are daemon threads so an interrupt (Ctrl-C, SIGTERM) returns at once: finished results are
already on disk, and the report says which runs were cut. Writes are serialized under one lock, so
an interrupt never leaves half a line.
"""

from __future__ import annotations

import threading
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..agents import AgentFn, resolve_agent
from ..checks import rules
from ..errors import HarnessError
from ..results import ResultsWriter, RunResult
from ..scenario import ScenarioFile, build_handlers
from ._execute import RunOptions, execute, script_of, unfinished_result
from ._plan import PlannedRun

OnResult = Callable[[int, int, PlannedRun, RunResult], None]
"""Called after each result is written: (finished so far, total, run, result)."""


@dataclass
class RunReport:
    """What a batch of runs left behind."""

    results: list[tuple[PlannedRun, RunResult]] = field(default_factory=list)
    """Finished runs in the order they finished (the results file's order)."""
    cut: list[PlannedRun] = field(default_factory=list)
    """Runs an interrupt stopped: those under way and those not started."""
    interrupted: bool = False
    """An interrupt (Ctrl-C, SIGTERM) stopped the batch before every run finished."""


def resolve_agents(sources: list[ScenarioFile]) -> tuple[dict[str, AgentFn], list[HarnessError]]:
    """Resolve each scenario's agent and check its rule codes, fixtures and script before anything runs.

    Returns the agents by scenario path, and one error per scenario that cannot run (the others still can).
    """
    known = set(rules())
    agents: dict[str, AgentFn] = {}
    errors: list[HarnessError] = []
    for source in sources:
        unknown = _unknown_rule_code(source, known)
        if unknown is not None:
            errors.append(unknown)
            continue
        try:
            build_handlers(source)
            if source.scenario.script is not None:
                script_of(source)
        except HarnessError as exc:
            errors.append(exc)
            continue
        try:
            agents[str(source.path)] = resolve_agent(source.scenario.agent, near=source.path.parent)
        except HarnessError as exc:
            errors.append(source.error(("agent",), getattr(exc, "problem", str(exc))))
        except (ImportError, AttributeError, ValueError, TypeError) as exc:
            errors.append(source.error(("agent",), f"cannot load agent {source.scenario.agent!r}: {exc}"))
    return agents, errors


def _unknown_rule_code(source: ScenarioFile, known: set[str]) -> HarnessError | None:
    """The first rule code the scenario names (in `disable` or `expect.findings`) that no rule has."""
    scenario = source.scenario
    for loc, codes in ((("disable",), scenario.disable), (("expect", "findings"), scenario.expect.findings)):
        for i, code in enumerate(codes):
            if code not in known:
                return source.error((*loc, i), f"unknown rule code {code}; known codes: {', '.join(sorted(known))}")
    return None


def run_all(
    runs: list[PlannedRun],
    agents: Mapping[str, AgentFn],
    writer: ResultsWriter,
    *,
    jobs: int = 1,
    options: RunOptions = RunOptions(),
    on_result: OnResult | None = None,
) -> RunReport:
    """Make every run with up to `jobs` at once; returns early, with `interrupted`, on KeyboardInterrupt."""
    report = RunReport()
    pending: deque[PlannedRun] = deque(runs)
    under_way: list[PlannedRun] = []
    lock = threading.Lock()
    stopping = threading.Event()

    def worker() -> None:
        while True:
            with lock:
                if stopping.is_set() or not pending:
                    return
                run = pending.popleft()
                under_way.append(run)
            result = _execute_safely(run, agents[str(run.source.path)], options)
            with lock:
                if stopping.is_set():
                    return  # interrupted meanwhile: the run counts as cut, its line is not written
                writer.write(result)
                under_way.remove(run)
                report.results.append((run, result))
                if on_result is not None:
                    on_result(len(report.results), len(runs), run, result)

    threads = [threading.Thread(target=worker, name=f"harness-run-{i}", daemon=True) for i in range(max(1, min(jobs, len(runs))))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            # A timed join lets KeyboardInterrupt reach this thread promptly.
            while thread.is_alive():
                thread.join(0.2)
    except KeyboardInterrupt:
        with lock:
            stopping.set()
            report.interrupted = True
            report.cut = [*under_way, *pending]
    return report


def _execute_safely(run: PlannedRun, agent: AgentFn, options: RunOptions) -> RunResult:
    """A defect of the harness in one run becomes that run's error; the other runs go on."""
    try:
        return execute(run, agent, options)
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        result = unfinished_result(run)
        result.error = f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
        return result
