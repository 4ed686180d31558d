"""One run, start to finish: scenario cell -> task -> transport session -> agent -> trace -> checks -> result.

Nothing here raises for a problem of the run itself: an agent that crashes ends as outcome `error`,
and a transport that could not answer (replay mismatch, unplayed answers, a leaked key) makes the
RunResult's status `error` with the transport's message. Only a broken scenario raises ScenarioError.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, get_args

import anthropic
import httpx2

from .._modes import RecordMode
from ..agents import AgentFn, CommandAgent, Limits, Task
from ..agents._served_tools import TOOLS_PREFIX, USER_PATH, tools_handler, user_handler
from ..checks import CheckOptions, check_trace
from ..cost import PriceTable, call_model, cost_of_trace
from ..errors import HarnessError, UnplayedInteractions
from ..results import ExpectationResult, RunResult, Usage
from ..results._model import AGENT_ERROR, AGENT_RAISED
from ..scenario import ScenarioFile, build_handlers
from ..scenario._model import LimitName
from ..scores import ScoreContext, bind, score_run
from ..trace import Exchange, Outcome, Trace, build_trace
from ..trace._model import OutcomeStatus
from ..transport import Session, open_session, read_cassette_metadata
from ..transport._session import sdk_runs_in_process
from ..transport.scripted import Script, load_script, parse_script
from ._deadline import Deadline, DeadlineGate
from ._expect import evaluate, min_score_results, verdict
from ._plan import PlannedRun
from ._user import simulated_user, user_failures

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass(frozen=True)
class RunOptions:
    """What the command line adds to every run."""

    record_mode: RecordMode | None = None
    """vcrpy record mode for record (and scripted recording): none, once, new_episodes, all."""
    record: bool = False
    """Mode scripted: also write the exchanges to the run's cassette (how shipped cassettes are made)."""
    disable: tuple[str, ...] = ()
    """Rule codes off for every scenario, besides each scenario's own `disable`."""
    keep_failed: bool = False
    """A recording run that did not pass also writes what it recorded to `NAME.failed.yaml` beside
    the cassette it left unchanged, for inspection."""
    timeout_s: float | None = None
    """Seconds any run may take (`--timeout`), enforced as a scenario's `limits.wall_time_s` is."""
    prices: PriceTable | None = None
    """What the runs' calls are priced with (`--prices`); None: the shipped table."""


def build_task(source: ScenarioFile, model: str, effort: str | None) -> Task:
    """The task an agent gets for one cell of a scenario, with fresh tool handlers."""
    scenario = source.scenario
    limits = scenario.limits
    return Task(
        prompt=scenario.prompt_turns,
        model=model,
        system=scenario.system,
        tools=[tool.definition() for tool in scenario.tools],
        handlers=build_handlers(source),
        sequential_tools=frozenset(tool.name for tool in scenario.tools if tool.sequential),
        effort=effort,
        max_tokens=scenario.max_tokens,
        request_options=dict(scenario.request),
        extra_headers=dict(scenario.headers),
        limits=Limits(
            steps=limits.steps, tokens=limits.tokens, wall_time_s=limits.wall_time_s, tool_errors=limits.tool_errors
        ),
        policies=policies_of(source),
    )


def policies_of(source: ScenarioFile) -> dict[str, Any]:
    """The scenario's workflow policies, in the shape of the W rules' options."""
    return source.scenario.policies.model_dump(exclude_defaults=False)


def check_options(source: ScenarioFile) -> CheckOptions:
    """The options the rules read, from the scenario's limits, tools, policies and options."""
    scenario = source.scenario
    return CheckOptions(
        limits=scenario.limits,
        sequential_tools=tuple(sorted(tool.name for tool in scenario.tools if tool.sequential)),
        policies=scenario.policies,
        history_projection=scenario.options.history_projection,
        max_consecutive_tool_errors=scenario.options.max_consecutive_tool_errors,
        output_tools=tuple(scenario.output_tools),
    )


def outcome_of(value: Any) -> Outcome:
    """What an agent returned, as an Outcome: text means it completed."""
    if isinstance(value, Outcome):
        wrong = _wrong_outcome_field(value)
        if wrong is None:
            return value
        # Kept as given, bytes or an exception could not even be written to the results file.
        return Outcome(status="error", reason=f"the agent returned an Outcome whose {wrong}")
    if isinstance(value, str):
        return Outcome(status="completed", final_text=value)
    return Outcome(
        status="error",
        reason=f"the agent returned {type(value).__name__}; an agent returns its final text (str) or an Outcome",
    )


def _wrong_outcome_field(outcome: Outcome) -> str | None:
    """The first field of an agent's Outcome that is not what the results file and the rules take."""
    for name, allowed in (("status", get_args(OutcomeStatus)), ("limit", get_args(LimitName))):
        value = getattr(outcome, name)
        if value is not None and value not in allowed:
            return f"{name} is {value!r}, not one of {', '.join(allowed)}"
    for name in ("reason", "final_text"):
        value = getattr(outcome, name)
        if value is not None and not isinstance(value, str):
            return f"{name} is {type(value).__name__}, not a str"
    return None


@dataclass
class AgentRun:
    """How the agent's run ended."""

    outcome: Outcome
    raised: BaseException | None = None
    """What the agent let out, if it raised."""


_interrupts_reach_runs = True
"""False in a worker process (`_workers`): the terminal's Ctrl-C goes to the harness alone, so a
KeyboardInterrupt there, even in the main thread, is the agent's."""


def in_worker_process() -> None:
    """Say that this process is a worker of the harness, which makes runs and hears no Ctrl-C."""
    global _interrupts_reach_runs
    _interrupts_reach_runs = False


def _real_interrupt(exc: BaseException) -> bool:
    """A Ctrl-C of the command itself, which must stop everything: Python delivers it to the main
    thread only. A KeyboardInterrupt in a worker thread (or process) was raised by the agent, like
    SystemExit."""
    return (isinstance(exc, KeyboardInterrupt) and _interrupts_reach_runs
            and threading.current_thread() is threading.main_thread())


def call_agent(agent: AgentFn, session: Session, task: Task, *, deadline: DeadlineGate | None = None) -> AgentRun:
    """Run the agent to its end, then release the session's agent side (`Session.release_agent`).
    Whatever the agent lets out, SystemExit and KeyboardInterrupt included, is the run's error
    outcome (a real Ctrl-C excepted). The session stays open for the harness's own calls (a judge)
    until `close_session` settles it. With a `deadline`, an agent that overruns it is stopped (see
    `DeadlineGate`): its outcome is then the harness's `limit`.

    The run is served on the local endpoint too (`task.base_url`, unless the caller already set it):
    the agent may use the client it is given, or any client pointed there."""
    task.watch_answers(lambda: session.exchanges)
    if task.base_url is None:
        task.base_url = session.serve()
    if session.route is not None:
        session.route.local.setdefault(TOOLS_PREFIX, tools_handler(task))
        session.route.local.setdefault(USER_PATH, user_handler(task))
    if deadline is None:
        return AgentRun(*_run_agent(agent, session, task))
    session.capture.gate = deadline.admit
    ended = deadline.run(lambda: _run_agent(agent, session, task))
    # Stopped: a Python agent may still be running somewhere, every call it makes refused.
    return AgentRun(*ended) if ended is not None else AgentRun(deadline.outcome())


def _run_agent(agent: AgentFn, session: Session, task: Task) -> tuple[Outcome, BaseException | None]:
    """The agent's run, then its clients closed and the session's agent side released."""
    # An SDK older than 1.0 is built on httpx: its client reaches the run over HTTP, on the endpoint.
    in_process = sdk_runs_in_process()
    if inspect.iscoroutinefunction(agent):

        async def drive() -> tuple[Outcome, BaseException | None]:
            client = session.async_client() if in_process else task.async_client()
            outcome, raised = await _guard_async(agent(client, task))
            await task.aclose_clients()
            await session.arelease_agent()
            return outcome, raised

        return asyncio.run(drive())
    raised = None
    try:
        outcome = outcome_of(agent(session.client() if in_process else task.client(), task))
    except BaseException as exc:  # the agent under test failing is a result, not a harness crash
        if _real_interrupt(exc):
            raise
        outcome, raised = _crashed(exc), exc
    task.close_clients()
    session.release_agent()
    return outcome, raised


def close_session(session: Session, ran: AgentRun, task: Task, *, hold: bool = False,
                  unplayed_said: bool = False) -> list[str]:
    """Settle the session once the run and the harness's own calls about it are done; returns what
    it reported (unplayed answers, a leaked key). `hold` leaves the recording to `Session.settle`,
    once the run is judged; `unplayed_said`: answers left unplayed are explained already."""
    try:
        session.close(
            run_failed=_failed(ran.raised, session, task), why=_why_not_kept(ran.outcome, ran.raised, session, task),
            hold=hold,
        )
    except UnplayedInteractions as exc:
        return [] if unplayed_said else [str(exc)]
    except HarnessError as exc:
        return [str(exc)]
    return []


def _failed(raised: BaseException | None, session: Session, task: Task) -> bool:
    """The run is not worth recording: the agent died mid-run (its answers may be partial), a request
    got no answer (an unreachable API: nothing or part of the run recorded), or the harness made
    answers up (a replay miss, an exhausted script). Writing it would replace a good cassette with
    a broken one, e.g. `interactions: []`. An error outcome the agent returned after whole answers
    (a 400 it gave up on, a cut at max_tokens) is what those answers lead to, and scenarios expect
    it: that recording is kept."""
    # The harness said no (a replay miss, a call past the deadline) or stopped the run (a killed command).
    refused = bool(session.capture.refused) or task._stopped
    return raised is not None or bool(session.problems) or refused or _unanswered(session.exchanges)


def _unanswered(exchanges: Sequence[Exchange]) -> bool:
    return any(exchange.status is None for exchange in exchanges)


def _why_not_kept(outcome: Outcome, raised: BaseException | None, session: Session, task: Task) -> str | None:
    if session.problems:
        return f"the harness could not answer every request ({str(session.problems[0]).splitlines()[0]})"
    if session.capture.refused:
        return "the harness refused a request of the run (its deadline had passed)"
    if task._stopped:
        return "the harness stopped the run past its deadline"
    if raised is not None:
        return f"the agent raised {type(raised).__name__}: {raised}"
    if _unanswered(session.exchanges):
        return f"a request got no answer; the run ended: {outcome.reason or outcome.status}"
    return None


async def _guard_async(running: Any) -> tuple[Outcome, BaseException | None]:
    try:
        return outcome_of(await running), None
    except BaseException as exc:  # the agent under test failing is a result, not a harness crash
        if _real_interrupt(exc):
            raise
        return _crashed(exc), exc


def _crashed(exc: BaseException) -> Outcome:
    """The error outcome of an agent that raised, saying where in the agent's own code.

    Without the place, a user with several agents (or a long loop) has only the message to go on;
    the frame named is the last one outside the SDK, its HTTP stack and the harness, i.e. the line
    of the agent that made the failing call or raised.
    """
    reason = f"{type(exc).__name__}: {exc}"
    where = _agent_frame(exc)
    return Outcome(status="error", reason=f"{reason} (at {where})" if where else reason)


def _agent_frame(exc: BaseException) -> str | None:
    harness_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    library_dirs = tuple(
        [os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (anthropic, httpx2) if m.__file__]
        # The harness's own agents (harness/agents) are agents like any other: their frames count.
        + [os.path.join(harness_dir, part) + os.sep for part in ("run", "transport", "trace")]
    )
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(library_dirs)]
    if not frames:
        return None
    frame = frames[-1]
    filename = os.path.relpath(frame.filename) if not frame.filename.startswith("<") else frame.filename
    return f"{filename}:{frame.lineno} in {frame.name}"


def usage_of(trace: Trace) -> Usage:
    """Tokens summed over the answers of every call (input, output, cache creation, cache read)."""
    usage = Usage()
    for call in trace.calls:
        for name in _USAGE_FIELDS:
            value = call.usage.get(name)
            if isinstance(value, int):
                setattr(usage, name, getattr(usage, name) + value)
    return usage


def unfinished_result(run: PlannedRun) -> RunResult:
    """The result of a run that has not got anywhere yet: status `error`, no outcome, started now."""
    return RunResult(
        run_id=run.run_id,
        scenario=run.scenario,
        scenario_path=str(run.source.path),
        model=run.cell.model,
        effort=run.cell.effort,
        repeat=run.cell.repeat,
        mode=run.mode,
        status="error",
        outcome=None,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        case=run.case,
        answers=answers_of(run),
    )


def answers_of(run: PlannedRun) -> str | None:
    """Where the run's answers come from (`RunResult.answers`): a replay asks its cassette, whose
    metadata says whether it was recorded from the scenario's script or from the API."""
    if run.mode == "scripted":
        return "scripted"
    if run.mode in ("record", "live"):
        return "model"
    if run.cassette is None:
        return None
    try:
        metadata = read_cassette_metadata(run.cassette) or {}
    except (OSError, ValueError, HarnessError):  # a missing or unreadable cassette is the replay's own error
        return None
    return {"scripted model": "scripted", "live API": "model"}.get(str(metadata.get("recorded_against")))


def execute(run: PlannedRun, agent: AgentFn, options: RunOptions = RunOptions()) -> RunResult:
    """Make one planned run and return its result (never raises for the run's own failures)."""
    source = run.source
    scenario = source.scenario
    t0 = time.monotonic()
    result = unfinished_result(run)
    task = build_task(source, run.cell.model, run.cell.effort)
    try:
        session = open_session(run.mode, **_session_args(run, options))
    except HarnessError as exc:
        result.error = str(exc)
        result.cost_usd = 0.0  # no call was made: nothing was spent, at any price
        result.duration_s = time.monotonic() - t0
        return result
    recording = session.cassette is not None and session.cassette.records
    task.simulated_user = simulated_user(scenario, session)
    deadline = Deadline.of(scenario.limits.wall_time_s, options.timeout_s)
    gate = DeadlineGate(deadline, task, session.capture) if deadline is not None else None
    ran = call_agent(agent, session, task, deadline=gate)
    outcome = ran.outcome
    # The harness ended a run that overran its deadline: it did not end by itself, so what should have
    # come after is not judged, and how the agent reported its end (if it did) is kept for the rules.
    enforced = gate is not None and gate.enforced
    # A replay miss the agent swallowed (or retried past) is still a broken run; it also explains
    # whatever closing complains of next (unplayed answers), so it is reported alone. So is a
    # simulated user's malformed reply: the agent's loop raised it, but the harness failed.
    cut = [str(p) for p in [*session.problems, *user_failures(task.simulated_user)]]
    seam_problems = len(session.problems)
    exchanges = list(session.exchanges)
    # The requests the harness refused are checked like any other: the rule a changed request
    # breaks (T001 at step 2) is what explains a replay miss. The harness cut such a run short, so
    # it is not a whole run: what should have come after its end is not the agent's fault.
    checked = sorted([*exchanges, *session.capture.refused], key=lambda exchange: exchange.index)
    # What the endpoint noticed (a 404 to a path that is no API call, an upstream that did not
    # answer) explains the exchanges it is about, so it goes in the trace with them.
    trace = build_trace(checked, run.run_id, whole_run=not cut and not enforced, notes=session.notes)
    trace.outcome = None if gate is not None and gate.stopped_at is not None else outcome
    trace.tool_executions = list(task.executions)
    findings = check_trace(trace, disabled=(*scenario.disable, *options.disable), options=check_options(source))
    result.outcome = gate.outcome() if gate is not None and enforced else outcome
    result.trace = trace
    result.findings = findings
    result.steps = len(trace.calls)
    result.usage = usage_of(trace)
    result.cost_usd = cost_of_trace(trace, options.prices)
    scoring: list[str] = []
    if enforced and gate is not None:
        # Ended by the harness at its deadline: only the findings expected are judged, and the overrun.
        result.expectations = [e for e in evaluate(
            scenario.expect, trace=trace, outcome=outcome, findings=findings,
            usage=result.usage, cost_usd=result.cost_usd
        ) if e.name.startswith("findings.")]
        result.expectations.append(gate.expectation(result.expected_codes, frozenset(f.code for f in findings)))
    elif not cut:
        # Expectations judge how a run ended; one the harness cut short did not end by itself.
        result.expectations = evaluate(
            scenario.expect, trace=trace, outcome=outcome, findings=findings,
            usage=result.usage, cost_usd=result.cost_usd
        )
        if scenario.expect.outcome != "error" and (ran.raised is not None or outcome.status == "error"):
            result.expectations.append(_agent_failed(outcome, raised=ran.raised is not None))
        # A judge reads the finished run through the session, so that its calls are recorded with it.
        scoring = _score(run, result, session, task)
    else:
        result.expectations = [e for e in evaluate(
            scenario.expect, trace=trace, outcome=outcome, findings=findings,
            usage=result.usage, cost_usd=result.cost_usd
        ) if e.name.startswith("findings.")]
    # A scorer that failed (a malformed verdict) stopped its judge early: the answers the judge then
    # left unplayed are that failure, said once, not a second problem of the run.
    judge_stopped = bool(scoring) and session.left_only_harness_answers()
    closing = close_session(session, ran, task, hold=recording, unplayed_said=judge_stopped)
    result.harness_trace = harness_trace(session, run.run_id)
    if options.prices is not None and options.prices.file is not None:
        # Kept with the result, so the file's costs read back (the judge's too) are the ones priced here.
        result.prices = options.prices.for_models(
            {call_model(call) or run.cell.model for t in (trace, result.harness_trace) if t for call in t.calls})
    # A judge's replay miss (or its script running out) explains what closing says next (its
    # recorded answers unplayed), so it is reported alone, like the agent's.
    judge_cut = len(session.problems) > seam_problems
    problems = cut or [*scoring, *([] if judge_cut else closing)]
    # The agent's failure is already a reason of its own when it failed an expectation: said once.
    reason_said = any(e.name in (AGENT_RAISED, AGENT_ERROR) for e in result.expectations)
    unreachable = _ignored_endpoint(
        agent, outcome, ran.raised, exchanges, problems, reason_said=reason_said
    ) or _unreachable(run, outcome, ran.raised, exchanges)
    if unreachable is not None:
        problems = [unreachable, *problems]
    if problems:
        result.error = "\n".join(_unique(problems))
        # A cut run whose requests break a rule is the agent's regression (exit 1), the miss its
        # symptom; with nothing to explain it, the miss is the harness's error (exit 2).
        result.status = "failed" if cut and result.unexpected_errors else "error"
        if cut and any(f.severity == "error" for f in findings) and not result.unexpected_errors:
            # The request the harness could not answer is itself the violation the scenario expects
            # (an agent past a step limit as long as its script: B001): the run did what it is for.
            result.status = "passed" if verdict(scenario.expect, findings, result.expectations) else "failed"
    else:
        result.status = "passed" if verdict(scenario.expect, findings, result.expectations) else "failed"
    unwritten = None
    if recording:
        # A run that failed its checks on whole answers is what the model did. With no cassette yet
        # there is no good one to replace, and without it a replay could not reproduce the run: a
        # weaker model's failing cases of an evaluation would replay as errors, not as failures.
        keep = result.status == "passed" or (result.status == "failed" and not run.cassette.exists())
        try:
            session.settle(passed=keep, why=f"the run {result.status}: {result.why()}",
                           keep_failed=options.keep_failed)
        except HarnessError as exc:  # a read-only folder, a file in the way: the run is still reported
            unwritten = str(exc)
    result.cassette_not_written = unwritten or session.cassette_not_written
    if result.status == "passed" and result.cassette_not_written:
        # Recording was the point of the run: one whose cassette was not written did not do its job.
        result.status = "error"
        result.error = result.cassette_not_written
    result.duration_s = time.monotonic() - t0
    return result


def harness_trace(session: Session, source: str) -> Trace | None:
    """The harness's own calls of the run (judge, simulated user) as a trace of their own, or None."""
    exchanges = session.harness_exchanges
    return build_trace(list(exchanges), source, harness_calls=True) if exchanges else None


def _score(run: PlannedRun, result: RunResult, session: Session, task: Task) -> list[str]:
    """Score the finished run (`score:`) and judge `expect.min_score`; what went wrong scoring it."""
    source = run.source
    if not source.score_entries:
        return []
    assert result.trace is not None
    try:
        bound = bind(source.score_entries, near=source.path.parent)
    except (ImportError, AttributeError, TypeError) as exc:
        return [f"cannot import a scorer: {exc}"]
    scenario = source.scenario
    ctx = ScoreContext(
        scenario=run.scenario, scenario_path=str(source.path), case=run.case,
        vars=dict(source.case.vars) if source.case else {}, model=run.cell.model, effort=run.cell.effort,
        mode=run.mode, prompt=scenario.prompt_turns, system=scenario.system, trace=result.trace,
        outcome=result.outcome, usage=result.usage, cost_usd=result.cost_usd,
        conversation=tuple(task.conversation), harness_client=session.harness_client,
    )
    scores, problems = score_run(bound, ctx)
    result.scores = tuple(scores)
    result.expectations.extend(min_score_results(scenario.expect.min_score, scores))
    return problems


def _agent_failed(outcome: Outcome, *, raised: bool) -> ExpectationResult:
    """An agent that raised, or whose run ended in error (it returned the 400 or the retries it gave
    up on), never passes, `expect` or not: a scenario about such an end says `expect: {outcome: error}`."""
    if raised:
        return ExpectationResult(AGENT_RAISED, False, outcome.reason or "the agent raised")
    return ExpectationResult(AGENT_ERROR, False, outcome.reason or "no reason given")


IGNORED_ENDPOINT = (
    "the agent made no request to the harness endpoint (it may be calling the internet directly): "
    "pass task.base_url to your client"
)


def _ignored_endpoint(
    agent: AgentFn, outcome: Outcome, raised: BaseException | None,
    exchanges: Sequence[Exchange], problems: Sequence[str], *, reason_said: bool = False
) -> str | None:
    """Why a run that never reached the harness is the agent's wiring, not the model or the API.

    Not one request arrived, and the run failed for want of one: the agent's client could not
    connect (a client built without task.base_url, after the SDK's retries), a command failed after
    it started, or the agent ended well with the script or cassette unplayed. An agent that fails
    before asking for anything, or a command that cannot start, is not this: that is its own failure.
    `reason_said`: the agent's failure is already among the run's reasons, so it is not repeated here."""
    if exchanges:
        return None
    failed_to_connect = outcome.status == "error" and (
        _connection_error(raised) is not None or (isinstance(agent, CommandAgent) and agent.ran_and_failed(outcome))
    )
    # An agent that ended well having asked nothing left the script or cassette unplayed for that.
    answered_alone = outcome.status != "error" and bool(problems)
    if not failed_to_connect and not answered_alone:
        return None
    if reason_said or outcome.status != "error" or not outcome.reason:
        return IGNORED_ENDPOINT
    return f"{IGNORED_ENDPOINT} (the agent's run: {outcome.reason})"


def _unreachable(run: PlannedRun, outcome: Outcome, raised: BaseException | None,
                 exchanges: Sequence[Exchange]) -> str | None:
    """Why a live or record run is the harness's error, not the agent's failure: the API was never
    reached, so the agent got no answer at all and nothing about it was tested.

    Only when no request got any answer: an agent that fails after the API answered it once has
    been tested, and its failure (even a later connection error) stays its own."""
    if run.mode not in ("live", "record") or outcome.status != "error":
        return None
    if any(exchange.status is not None for exchange in exchanges):
        return None
    connection = _connection_error(raised)
    if connection is None and not exchanges:
        return None  # the agent failed before asking anything: that is the agent's failure
    cause = connection.__cause__ if connection is not None and connection.__cause__ is not None else connection
    detail = f"{type(cause).__name__}: {cause}" if cause is not None else outcome.reason
    return (
        f"the API could not be reached (connection error: {detail}); nothing about the agent was tested. "
        "Check the network, ANTHROPIC_BASE_URL and any proxy, then run again."
    )


# Connection errors by class name, so that those of any SDK version or framework count (litellm's,
# httpx's, an SDK 0.x's), not only the classes this process imported.
_CONNECTION_ERRORS = frozenset({"APIConnectionError", "APITimeoutError", "ConnectError",
                                "ConnectTimeout", "ConnectionError"})


def _connection_error(raised: BaseException | None) -> BaseException | None:
    """A connection error among what the agent raised and its causes, if any."""
    seen: set[int] = set()
    while raised is not None and id(raised) not in seen:
        if any(cls.__name__ in _CONNECTION_ERRORS for cls in type(raised).__mro__):
            return raised
        seen.add(id(raised))
        raised = raised.__cause__ or raised.__context__
    return None


def _session_args(run: PlannedRun, options: RunOptions) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if run.mode in ("replay", "record") or (run.mode == "scripted" and options.record):
        args["cassette"] = run.cassette
        args["rerecord_hint"] = rerecord_hint(run)
    if options.record_mode is not None:
        args["record_mode"] = options.record_mode
    if run.mode == "scripted":
        args["script"] = script_of(run.source)
    return args


def rerecord_hint(run: PlannedRun) -> str:
    """How to record this run's cassette again, as the `harness run` command to type.

    The transport's own advice speaks of `open_session`, which a user of the command line never
    calls; the scripted way is offered only when the scenario has a script to play.
    """
    live = f"harness run {run.source.path} --mode record (live API, needs ANTHROPIC_API_KEY)"
    if run.source.scenario.script is None:
        return f"{live}; or give the scenario a `script` and use --record (offline, no key)"
    return f"harness run {run.source.path} --record (plays the scenario's script, offline), or {live}"


def script_of(source: ScenarioFile) -> Script:
    """The scripted model's script: read from its file, or validated from the inline steps."""
    script = source.scenario.script
    if isinstance(script, str):
        return load_script(source.resolve(script))
    return parse_script(script, source=f"{source.path}:script")


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
