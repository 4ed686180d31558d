"""Run many planned runs concurrently, appending each result to the results file the moment it ends.

With -j N, N runs go at once: those that spend CPU (scripted, replay) in worker processes
(`_workers`), those that wait on the API (live, record) on threads, which share its rate limiter.
Either way the harness is the results file's one writer, and keeps of each finished run only what its
summary shows. Its slots are daemon threads so an interrupt (Ctrl-C, SIGTERM) returns at once:
finished results are already on disk, and the report says which runs were cut. Each line is
appended in one write, so an interrupt never leaves half a line.
"""

from __future__ import annotations

import math
import os
import threading
import traceback
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._imports import raised_at_import
from .._modes import PAID_MODES
from ..agents import AGENTS, AgentFn, CommandAgent, resolve_agent
from ..agents._processes import allow_runs, kill_every_run
from ..checks import rules
from ..cost import PriceTable, cost_of_trace
from ..errors import HarnessError
from ..results import ResultsWriter, RunResult
from ..scenario import ScenarioFile, build_handlers, check_script_tools, import_callable
from ..trace import Outcome
from ..transport.scripted import Script
from ._deadline import Deadline
from ._execute import RunOptions, execute, script_of, unfinished_result
from ._plan import PlannedRun
from ._workers import GATHER_S, WorkerPool

OnResult = Callable[[int, int, PlannedRun, RunResult], None]
"""Called after each result is written: (finished so far, total, run, result)."""

AHEAD_S = 0.25
"""Runs in worker processes shorter than this are sent to a worker a few at a time (`WorkerPool.make`'s
`then`): for quick runs the worker's wait for the harness between two runs is a share of the run
worth saving; for longer ones it is not, and a run sent ahead waits behind the one under way even
when another slot is free."""
MAX_AHEAD = 16


def runs_ahead(duration_s: float) -> int:
    """How many runs of the same scenario a slot sends ahead to its worker after one that took
    `duration_s`: enough to keep the worker busy twice the time the slot lets its answers gather
    (one for runs longer than that). So the end of a batch waits on a slot's runs sent ahead about
    that long, or one run at most `AHEAD_S` long. None after a run with no length of its own (its
    worker died, the backstop killed it): what the next ones take is not known."""
    if duration_s <= 0 or duration_s >= AHEAD_S:
        return 0
    return min(MAX_AHEAD, max(1, math.ceil(2 * GATHER_S / max(duration_s, 1e-3))))


@dataclass
class RunReport:
    """What a batch of runs left behind: every planned run is finished, cut or not made."""

    results: list[tuple[PlannedRun, RunResult]] = field(default_factory=list)
    """Finished runs in the order they finished (the results file's order), each reduced to what the
    summary shows of it (`summary_of`): the whole result is in the results file, and a command of
    100,000 runs keeps no more than its summary needs, not 100,000 traces."""
    cut: list[PlannedRun] = field(default_factory=list)
    """Runs an interrupt stopped: those under way and those not started."""
    not_made: list[tuple[PlannedRun, str]] = field(default_factory=list)
    """Runs that were planned but not made (or not kept), each with why: the results file could not
    be written, the spending cap was reached."""
    interrupted: bool = False
    """An interrupt (Ctrl-C, SIGTERM) stopped the batch before every run finished."""
    write_error: HarnessError | None = None
    """The results file could not be written: no run was started after it."""
    spent_usd: float = 0.0
    """What the finished runs that called the API (live, record) cost, by the price table, the calls of
    their judges and simulated users included."""


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
            # A scenario with cases has its script checked per case, once its templates are rendered.
            if source.scenario.script is not None and not source.has_cases:
                spec = source.scenario.agent
                builtin = isinstance(spec, str) and spec in AGENTS
                check_script_tools(source, script_of(source), own_tools=not builtin)
        except HarnessError as exc:
            errors.append(exc)
            continue
        unbound = _unbound_scorer(source)
        if unbound is not None:
            errors.append(unbound)
            continue
        spec = source.scenario.agent
        if not isinstance(spec, str):
            # Whether the command starts is known only when a run starts it: that run's error outcome.
            agents[str(source.path)] = CommandAgent(spec, folder=source.path.parent, scenario=source.name)
            continue
        try:
            agents[str(source.path)] = resolve_agent(spec, near=source.path.parent)
        except HarnessError as exc:
            errors.append(source.error(("agent",), getattr(exc, "problem", str(exc))))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: B036 - a module's import may raise anything, sys.exit included
            errors.append(source.error(("agent",),
                                       f"cannot load agent {source.scenario.agent!r}: {raised_at_import(exc)}"))
    return agents, errors


def _unbound_scorer(source: ScenarioFile) -> HarnessError | None:
    """The first 'module:function' of the scenario's scores (a custom scorer, a custom comparator of
    tool_calls) that cannot be imported, pointed at where it is written."""
    for index, entry in enumerate(source.score_entries):
        for loc, spec in entry.imports():
            try:
                import_callable(spec, near=source.path.parent)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: B036 - a module's import may raise anything, sys.exit included
                what = "scorer" if not loc else "custom comparator"
                return source.error(("score", index, entry.scorer, *loc),
                                    f"cannot import {what} {spec}: {raised_at_import(exc)}")
    return None


def check_cases(runs: list[PlannedRun]) -> tuple[list[PlannedRun], list[HarnessError]]:
    """What `resolve_agents` checks of a scenario without cases, checked for every case of a scenario
    with cases once its templates are rendered: the tools its script calls and the scorers (and
    comparators) it imports. Before any run starts: a typo found by the first run would otherwise
    fail every run, after paying for them. A scenario with a case that fails is left out whole, with
    one error naming the case; the runs of the others are kept."""
    bad: dict[str, HarnessError] = {}
    checked: set[int] = set()
    scripts: dict[Path, Script] = {}
    for run in runs:
        source = run.source
        key = str(source.path)
        if source.case is None or key in bad or id(source) in checked:
            continue
        checked.add(id(source))
        try:
            if source.scenario.script is not None:
                spec = source.scenario.agent
                # A script file is the same for every case (only an inline script holds templates).
                path = source.resolve(source.scenario.script) if isinstance(source.scenario.script, str) else None
                script = scripts.get(path) if path is not None else None
                if script is None:
                    script = script_of(source)
                    if path is not None:
                        scripts[path] = script
                check_script_tools(source, script, own_tools=not (isinstance(spec, str) and spec in AGENTS))
        except HarnessError as exc:
            bad[key] = exc
            continue
        unbound = _unbound_scorer(source)
        if unbound is not None:
            bad[key] = unbound
    return [run for run in runs if str(run.source.path) not in bad], list(bad.values())


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
    max_cost_usd: float | None = None,
) -> RunReport:
    """Make every run with up to `jobs` at once; returns early, with `interrupted`, on KeyboardInterrupt.

    Every run ends in the report: finished (its line written), cut (interrupted) or not made (the
    results file failed, the spending cap was reached). A worker never dies silently: whatever a run
    raises is that run's error.

    `max_cost_usd` caps what the runs that call the API spend: once the finished ones have cost that
    much, or one of them cost an unknown amount (an unpriced model), no run is started any more.
    Runs under way then finish, so the spend may pass the cap by what they cost.
    """
    allow_runs()  # an interrupt of an earlier batch in this process (a test's, a caller's) ended its commands
    report = RunReport()
    pending: deque[PlannedRun] = deque(runs)
    under_way: list[PlannedRun] = []
    lock = threading.Lock()
    stopping = threading.Event()
    # Runs whose line is being appended: an interrupt waits for them (a write is quick), so that a line in
    # the file is always a finished run in the report, never a cut one that --resume would skip.
    writing: list[PlannedRun] = []
    written = threading.Condition(lock)

    def stop_for(reason: str) -> None:
        """Under the lock: start nothing more; what was still waiting is not made, for `reason`."""
        report.not_made.extend((run, reason) for run in pending)
        pending.clear()

    # Runs that spend CPU (scripted, replay) go to worker processes when more than one may go at once;
    # those that wait on the API (live, record) stay on threads, which share the rate limiter.
    processed = [run.mode not in PAID_MODES for run in runs]
    slots = max(1, min(jobs, len(runs)))
    pool = _pool(runs, agents, options, writer) if slots > 1 and any(processed) else None
    position = {id(run): index for index, run in enumerate(runs)}

    def pooled(run: PlannedRun) -> bool:
        return pool is not None and processed[position[id(run)]]

    def make(run: PlannedRun, slot: int, then: Sequence[PlannedRun]) -> tuple[bytes, RunResult]:
        """The run made in this slot's worker process (`then` sent along, to be made next), or in this
        thread: its line, and its result (already its summary when made in a worker)."""
        index = position[id(run)]
        if pool is not None and processed[index]:
            deadline = Deadline.of(run.source.scenario.limits.wall_time_s, options.timeout_s)
            after = [position[id(next_run)] for next_run in then]
            return _recorded(run, lambda: pool.make(slot, index, None if deadline is None else deadline.seconds,
                                                    then=after))
        return _recorded(run, lambda: _line_and_result(_execute_safely(run, agents[str(run.source.path)], options)))

    def worker(slot: int) -> None:
        then: deque[PlannedRun] = deque()  # sent ahead to this slot's worker process: the slot's next runs
        ahead = 0  # how many to send ahead, by the slot's last run (none before a first run says)
        measured: Path | None = None  # the scenario of that run: only its runs are sent ahead

        def forget_ahead(reason: str) -> None:
            """Under the lock: the runs sent ahead (the worker is making the first) are not made, for
            `reason`, and the worker is ended: it would make them all the same."""
            if then:
                for later in then:
                    under_way.remove(later)
                    report.not_made.append((later, reason))
                then.clear()
                if pool is not None:
                    pool.end(slot)

        while True:
            with lock:
                if stopping.is_set():
                    return
                if then:
                    run = then.popleft()
                elif pending:
                    run = pending.popleft()
                    under_way.append(run)
                else:
                    return
                if pooled(run) and run.source.path == measured:
                    while (len(then) < ahead and pending and pooled(pending[0])
                           and pending[0].source.path == measured):
                        then.append(pending.popleft())
                        under_way.append(then[-1])
            line, result = make(run, slot, then)
            ahead, measured = runs_ahead(result.duration_s), run.source.path
            with lock:
                if stopping.is_set():
                    return  # interrupted meanwhile: the run counts as cut, its line is not written
                if report.write_error is not None:
                    under_way.remove(run)
                    report.not_made.append((run, "the results file could not be written"))
                    forget_ahead("the results file could not be written")
                    continue
                writing.append(run)
            # Outside the runner's lock (the writer has its own): a write gives up the GIL, and the other
            # workers, finishing their runs meanwhile, must not queue behind it.
            try:
                writer.append(line)  # in the file now; the writer syncs it to disk in its own thread
            except HarnessError as exc:
                with lock:
                    writing.remove(run)
                    written.notify_all()
                    under_way.remove(run)
                    report.not_made.append((run, "its result could not be written"))
                    if report.write_error is None:
                        report.write_error = exc
                        stop_for("the results file could not be written")
                    forget_ahead("the results file could not be written")
                continue
            with lock:
                writing.remove(run)
                written.notify_all()
                under_way.remove(run)
                report.results.append((run, summary_of(result)))
                if stopping.is_set():
                    return  # interrupted as the line was written: the run finished, its line is kept
                if max_cost_usd is not None and run.mode in PAID_MODES:
                    over = _over_budget(report, run, result, max_cost_usd, options.prices)
                    if over is not None:
                        stop_for(over)
                if on_result is not None:
                    on_result(len(report.results), len(runs), run, result)

    threads = [threading.Thread(target=worker, args=(i,), name=f"harness-run-{i}", daemon=True) for i in range(slots)]
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
            written.wait_for(lambda: not writing, timeout=10)
            report.cut = [*under_way, *pending]
        kill_every_run()  # the agent commands of runs cut here (in-process): not left running once we exit
    finally:
        if pool is not None:
            pool.close(at_once=report.interrupted)  # interrupted, the runs under way in the workers end too
    return report


def _pool(runs: list[PlannedRun], agents: Mapping[str, AgentFn], options: RunOptions,
          writer: ResultsWriter) -> WorkerPool | None:
    """Worker processes for the batch, or None where there are none to be had (no fork: threads then)."""
    if not hasattr(os, "fork"):  # pragma: no cover - Windows
        return None

    def make(run: PlannedRun) -> tuple[bytes, RunResult]:
        def made() -> tuple[bytes, RunResult]:
            result = _execute_safely(run, agents[str(run.source.path)], options)
            # The harness's own calls (a judge's, a simulated user's: a few) go back with the summary: the
            # command counts their cost as each run finishes, as it does for a run made on a thread.
            return ResultsWriter.line(result), replace(summary_of(result), harness_trace=result.harness_trace)

        return _recorded(run, made)

    try:
        return WorkerPool(runs, make, close_fds=[writer.fileno()])
    except OSError:  # out of processes or memory: the runs still go, on threads
        return None


def summary_of(result: RunResult) -> RunResult:
    """What a finished run keeps of its result (`RunReport.results`): what the command's summary
    shows of it. Its traces, outcome and scores are left to the results file, where the report, the
    diff and the export read them back one run at a time; a run that passed keeps no expectations
    (all met) and every run only its error findings (those the summary names)."""
    passed = result.status == "passed"
    return replace(result, trace=None, harness_trace=None, outcome=None, scores=(),
                   expectations=[] if passed else result.expectations,
                   findings=[f for f in result.findings if f.severity == "error"])


def _over_budget(report: RunReport, run: PlannedRun, result: RunResult, max_cost_usd: float,
                 prices: PriceTable | None) -> str | None:
    """Under the runner's lock: add a finished paid run's cost to the spend; why nothing more may
    start, if the cap is reached or the spend is no longer known. An unpriced run is never free."""
    # The judge's and the simulated user's calls are paid for too, though they are not the agent's.
    own = 0.0 if result.harness_trace is None else cost_of_trace(result.harness_trace, prices)
    if result.cost_usd is None or own is None:
        return (
            f"the cost of {run.run_id} is unknown (a model it used has no price), so the spend can no longer be "
            f"shown to be under --max-cost ${max_cost_usd:g}"
        )
    report.spent_usd += result.cost_usd + own
    if report.spent_usd >= max_cost_usd:
        return (f"the spend reached ${report.spent_usd:.4f}, at or over --max-cost ${max_cost_usd:g} "
                "(--resume makes it later)")
    return None


def _execute_safely(run: PlannedRun, agent: AgentFn, options: RunOptions) -> RunResult:
    """A defect of the harness in one run becomes that run's error; the other runs go on.

    BaseException too: a SystemExit or KeyboardInterrupt that escaped the agent's own guard (from a
    tool handler, a fixture) would otherwise end the worker thread and leave its runs unaccounted.
    """
    try:
        return execute(run, agent, options)
    except BaseException as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        result = unfinished_result(run)
        result.error = f"{type(exc).__name__}: {exc}{where}"
        return result


def _line_and_result(result: RunResult) -> tuple[bytes, RunResult]:
    return ResultsWriter.line(result), result


def _recorded(run: PlannedRun, make: Callable[[], tuple[bytes, RunResult]]) -> tuple[bytes, RunResult]:
    """The run's line and result; what fails past the run itself (its result is no JSON: a plugin
    rule's finding whose message is a set) is the run's error, named, so the worker goes on to the next
    run and the command exits as for any errored run, instead of the worker thread dying with its runs."""
    try:
        return make()
    except Exception as exc:  # noqa: BLE001 - any defect here is this run's error, not the batch's end
        result = unfinished_result(run)
        result.error = f"the run's result could not be recorded: {type(exc).__name__}: {exc}"
        result.outcome = Outcome(status="error", reason=result.error)
        return ResultsWriter.line(result), result
