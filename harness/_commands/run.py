"""`harness run [PATHS]`: run scenario files x matrix cells, check every trace, write results as they finish.

Exit status: 0 every run passed; 1 a run failed (an expectation or an error finding); 2 the harness
could not do its job (a malformed scenario, a run that could not be made); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO, get_args

from ..checks import Finding
from ..errors import HarnessError
from ..results import ResultsWriter, RunResult, parse_shard, select_shard
from ..run import Overrides, PlannedRun, RunOptions, RunReport, load_all, plan, resolve_agents, run_all
from .._modes import MODES, RECORD_MODES
from ..scenario._model import Effort
from ._signals import sigterm_interrupts

DEFAULT_RESULTS = "results/results.jsonl"
DEFAULT_REPORT = "reports/latest"
EFFORTS: tuple[str, ...] = get_args(Effort)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run scenarios against their cassettes, a scripted model or the live API, and check them",
        description=(
            "Run every scenario file under PATHS in every cell of its matrix, check each run's trace against "
            "the invariants and the scenario's expectations, and append each result to the results file the "
            "moment it finishes. Exit 0: all passed; 1: a run failed; 2: a scenario is malformed or a run "
            "could not be made; 130: interrupted (finished results are kept)."
        ),
    )
    parser.add_argument(
        "paths", nargs="*", default=["scenarios"], metavar="PATH",
        help="scenario files or folders, searched recursively for *.yaml / *.yml (default: scenarios)",
    )
    parser.add_argument(
        "--model", action="append", default=[], metavar="M",
        help="run with this model instead of the scenario's model/matrix; repeatable",
    )
    parser.add_argument(
        "--effort", action="append", default=[], metavar="E", choices=EFFORTS,
        help=f"run with this effort instead of the scenario's; repeatable ({', '.join(EFFORTS)})",
    )
    parser.add_argument("--repeat", type=_positive, metavar="N", help="repeat each cell N times (overrides matrix.repeats)")
    parser.add_argument(
        "--mode", choices=MODES,
        help="how the model is reached, for every scenario: replay a cassette (offline), record one (API key), "
        "live (API key), scripted (offline, the scenario's script). Default: each scenario's `mode` (replay)",
    )
    parser.add_argument(
        "--record", action="store_true",
        help="run the scenarios' scripts (implies --mode scripted) and record each run to its cassette "
        "(how the shipped cassettes are made)",
    )
    parser.add_argument("--record-mode", choices=RECORD_MODES, help="cassette record mode for record / scripted --record")
    parser.add_argument("-j", "--jobs", type=_positive, default=1, metavar="N", help="runs at once (default 1)")
    parser.add_argument(
        "--results", default=DEFAULT_RESULTS, metavar="PATH",
        help=f"results file, JSON Lines, emptied at the start of the command (default {DEFAULT_RESULTS})",
    )
    parser.add_argument(
        "--disable", action="append", default=[], metavar="CODE",
        help="rule code(s) not checked in any scenario; repeatable, comma-separated lists accepted",
    )
    parser.add_argument(
        "--shard", metavar="K/N",
        help="run only the K-th of N shards (1-based), chosen by a hash of each run id so adding a scenario "
        "moves no other run; join the shards' results with `harness merge`",
    )
    parser.add_argument(
        "--report", default=DEFAULT_REPORT, metavar="DIR",
        help=f"write the HTML report of this run's results to DIR/index.html (default {DEFAULT_REPORT})",
    )
    parser.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    parser.add_argument(
        "--baseline", metavar="BASE",
        help="compare the results with a baseline results file (as `harness diff BASE NEW`); exit 1 when "
        "anything regressed",
    )
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if args.record and args.mode not in (None, "scripted"):
        raise HarnessError(
            f"--record records the scripted model's answers and cannot go with --mode {args.mode}; "
            "to record the live API use --mode record"
        )
    if args.record:
        args.mode = "scripted"
    shard = parse_shard(args.shard) if args.shard else None
    disable = tuple(code.strip().upper() for item in args.disable for code in item.split(",") if code.strip())
    _check_codes(disable)

    sources, problems = load_all(args.paths)
    agents, agent_problems = resolve_agents(sources)
    problems.extend(agent_problems)
    sources = [s for s in sources if str(s.path) in agents]
    overrides = Overrides(
        models=tuple(args.model), efforts=tuple(args.effort), repeats=args.repeat, mode=args.mode
    )
    runs, plan_problems = plan(sources, overrides)
    if shard is not None:
        runs = select_shard(runs, *shard, key=lambda planned: planned.run_id)
    problems.extend(plan_problems)
    for problem in problems:
        print(f"harness: {problem}", file=err)
    if not runs and shard is None:  # a shard may be empty when there are fewer runs than shards
        print("harness: no scenario to run" + (" (every one is malformed)" if problems else ""), file=err)
        return 2

    _require_key_for([run for run in runs if run.mode in ("record", "live")])

    options = RunOptions(record_mode=args.record_mode, record=args.record, disable=disable)
    results_path = Path(args.results)
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text("", encoding="utf-8")  # one command, one results file: a re-run starts it over
    with sigterm_interrupts(), ResultsWriter(results_path) as writer:
        report = run_all(runs, agents, writer, jobs=args.jobs, options=options, on_result=_progress(err))
    print_summary(report, out)
    print(_totals(report, len(runs), results_path), file=out)
    finished = [result for _, result in report.results]
    if not args.no_report:
        from ..report import build_report

        print(f"report: {build_report(finished, args.report)}", file=out)
    regressed = False
    if args.baseline:
        from ..results import diff_results, read_results

        diff = diff_results(read_results(args.baseline), finished)
        print(diff.to_text(), end="", file=out)
        regressed = diff.regressed
    if report.interrupted:
        cut = ", ".join(r.run_id for r in report.cut) or "none"
        print(
            f"harness: interrupted: {len(report.results)} of {len(runs)} runs finished and are in {results_path}; "
            f"cut: {cut}",
            file=err,
        )
        return 130
    status = exit_status(report, problems=bool(problems))
    return 1 if status == 0 and regressed else status


def _require_key_for(runs: list[PlannedRun]) -> None:
    """Stop before anything runs when runs need the API and no key is set.

    Otherwise each of them fails alone with the same message, and the results file, emptied at the
    start of the command, has lost the previous results for nothing.
    """
    from ..transport._live import require_api_key

    if runs:
        try:
            require_api_key(runs[0].mode)
        except HarnessError as exc:
            names = sorted({run.scenario for run in runs})
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            raise HarnessError(f"{exc} (needed by {len(runs)} run(s) of {shown}; nothing was run)") from None


def exit_status(report: RunReport, *, problems: bool) -> int:
    statuses = {result.status for _, result in report.results}
    if problems or "error" in statuses:
        return 2
    return 1 if "failed" in statuses else 0


def _check_codes(codes: tuple[str, ...]) -> None:
    from ..checks import rules

    unknown = sorted(set(codes) - set(rules()))
    if unknown:
        raise HarnessError(f"--disable: unknown rule code(s) {', '.join(unknown)}; known codes: {', '.join(rules())}")


def _progress(err: TextIO) -> Any:
    """Progress on stderr: a bar redrawn in place on a terminal, one line per run elsewhere (CI logs).

    On a terminal only runs that did not pass get a line of their own, above the bar.
    """
    if not (hasattr(err, "isatty") and err.isatty()):
        def line(done: int, total: int, planned: PlannedRun, result: RunResult) -> None:
            why = _why(result)
            print(f"[{done}/{total}] {planned.label} {result.status}" + (f": {why}" if why else ""), file=err, flush=True)

        return line

    counts: dict[str, int] = {}

    def bar(done: int, total: int, planned: PlannedRun, result: RunResult) -> None:
        counts[result.status] = counts.get(result.status, 0) + 1
        if result.status != "passed":
            why = _why(result)
            err.write(f"\r\033[K{planned.label} {result.status}" + (f": {why}" if why else "") + "\n")
        width = 30
        filled = width * done // max(total, 1)
        tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        err.write(f"\r\033[K[{'#' * filled}{'.' * (width - filled)}] {done}/{total}  {tally}")
        if done == total:
            err.write("\n")
        err.flush()

    return bar


def _why(result: RunResult) -> str:
    """The first reason a run did not pass, in one line."""
    if result.status == "error":
        return (result.error or "").splitlines()[0] if result.error else ""
    if result.status == "passed":
        return ""
    crash = _agent_crash(result)
    if crash:
        # The exception is the cause; the findings it leads to (L002 on a dangling tool_use) are effects.
        return f"the agent raised: {crash}"
    for expectation in result.expectations:
        if not expectation.passed:
            return f"{expectation.name}: {expectation.message}"
    for finding in _unexpected(result):
        return f"{finding.code} at {finding.where()}: {finding.message}"
    return ""


def _agent_crash(result: RunResult) -> str:
    """The exception an agent let out, when no `outcome` expectation already speaks of it: one that
    holds (`outcome: error` was wanted) or one that fails and quotes the exception itself."""
    outcome = result.outcome
    if outcome is None or outcome.status != "error" or not outcome.reason:
        return ""
    if any(e.name == "outcome" for e in result.expectations):
        return ""
    return outcome.reason.splitlines()[0]


def _unexpected(result: RunResult) -> list[Finding]:
    """Error findings the scenario did not ask for: the ones that fail a run."""
    expected = {e.name.removeprefix("findings.") for e in result.expectations if e.name.startswith("findings.")}
    return [f for f in result.findings if f.severity == "error" and f.code not in expected]


def print_summary(report: RunReport, out: TextIO) -> None:
    """The table of every finished run, then why each one that did not pass failed."""
    rows = [("scenario", "cell", "status", "steps", "tokens", "cost", "findings")]
    for planned, result in sorted(report.results, key=lambda pair: pair[1].run_id):
        cost = "-" if result.cost_usd is None else f"${result.cost_usd:.4f}"
        # A run the harness could not make (replay miss, leaked key) has a trace the harness cut,
        # not the agent: its findings (e.g. E001 on the missed call) would point at the wrong culprit.
        codes = [] if result.status == "error" else sorted({f.code for f in result.findings if f.severity == "error"})
        rows.append(
            (
                planned.scenario,
                planned.cell.label(planned.repeats),
                result.status,
                str(result.steps),
                str(result.usage.total),
                cost,
                ",".join(codes) or "-",
            )
        )
    for planned in report.cut:
        rows.append((planned.scenario, planned.cell.label(planned.repeats), "cut", "-", "-", "-", "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    numeric = {3, 4, 5}
    for number, row in enumerate(rows):
        cells = [cell.rjust(widths[i]) if i in numeric and number else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        print("  ".join(cells).rstrip(), file=out)
    failing = [(p, r) for p, r in report.results if r.status != "passed"]
    if failing:
        print("", file=out)
    for planned, result in sorted(failing, key=lambda pair: pair[1].run_id):
        print(f"{result.status.upper()} {planned.label} ({planned.source.path})", file=out)
        if result.error:
            for line in result.error.splitlines():
                print(f"    {line}", file=out)
        if result.cassette_not_written:
            # A record run that kept the old cassette must say so: otherwise it looks re-recorded.
            print(f"    {result.cassette_not_written}", file=out)
        if result.status == "error":
            continue  # what could not run has no meaningful expectations or findings
        crash = _agent_crash(result)
        if crash:
            print(f"    the agent raised: {crash}", file=out)
        for expectation in result.expectations:
            if not expectation.passed:
                print(f"    expect {expectation.name}: {expectation.message}", file=out)
        for finding in _unexpected(result):
            print(f"    {finding.code} {finding.where()}: {finding.message}", file=out)


def _totals(report: RunReport, planned: int, results_path: Path) -> str:
    counts: dict[str, int] = {}
    for _, result in report.results:
        counts[result.status] = counts.get(result.status, 0) + 1
    parts = [f"{counts[s]} {s}" for s in ("passed", "failed", "error") if counts.get(s)]
    if report.cut:
        parts.append(f"{len(report.cut)} cut")
    return f"\n{planned} run(s): {', '.join(parts) or 'none finished'}; results in {results_path}"
