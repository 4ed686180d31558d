"""`harness run [PATHS]`: run scenario files x matrix cells, check every trace, write results as they finish.

Exit status: 0 every run passed; 1 a run failed (an expectation or an error finding); 2 the harness
could not do its job (a malformed scenario, a run that could not be made); 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO, get_args

from .._console import inert, print_rich, rich_console
from .._modes import MODES, PAID_MODES, RECORD_MODES
from .._output import PAGE_START, refuse_foreign, refuse_foreign_results, refuse_unwritable
from ..cost import PriceTable
from ..errors import HarnessError, UsageError
from ..results import ResultsWriter, RunResult, iter_results, parse_shard, read_results, select_shard, write_results
from ..run import (
    Overrides,
    PlannedRun,
    RunOptions,
    RunReport,
    check_cases,
    load_all,
    mode_replaced,
    plan,
    resolve_agents,
    run_all,
)
from ..run._plan import path_part_problem
from ..run._runner import OnResult
from ..run._unpriced import Unpriced, unpriced_models, unpriced_warning
from ..scenario._model import Effort
from ..transport._ratelimit import holds_so_far
from ._plugins import load_plugins
from ._signals import sigterm_interrupts

DEFAULT_RESULTS = "results/results.jsonl"
PREVIOUS_RESULTS = "previous.jsonl"
"""Beside the default results file: the results the previous command left there, kept when a new
command starts it over."""
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
    parser.add_argument("--repeat", type=_positive, metavar="N",
                        help="repeat each cell N times (overrides matrix.repeats)")
    parser.add_argument(
        "--mode", choices=MODES,
        help="how the model is reached, for every scenario: replay a cassette (offline), record one (API key), "
        "live (API key), scripted (offline, the scenario's script). Default: each scenario's `mode` (replay); "
        "given, it wins over every scenario's own and says which it replaced",
    )
    parser.add_argument(
        "--record", action="store_true",
        help="run the scenarios' scripts (implies --mode scripted) and record each run to its cassette "
        "(how the shipped cassettes are made)",
    )
    parser.add_argument("--record-mode", choices=RECORD_MODES,
                        help="cassette record mode for record / scripted --record")
    parser.add_argument("-j", "--jobs", type=_positive, default=1, metavar="N",
                        help="runs at once (default 1): scripted and replayed runs in worker processes, "
                        "live and recorded ones on threads")
    parser.add_argument(
        "--timeout", type=_seconds, metavar="S",
        help="end any run still going after S seconds as outcome limit, like a scenario's limits.wall_time_s "
        "(the tighter of the two wins): later model calls are refused, an agent command is killed",
    )
    parser.add_argument(
        "--max-cost", type=_dollars, metavar="USD",
        help="stop starting runs once the runs that call the API (live, record) have cost USD by the price table, "
        "or one of them cost an unknown amount; the rest are listed as not made (exit 2). Runs under way finish",
    )
    parser.add_argument(
        "--prices", metavar="FILE",
        help="YAML prices merged over the shipped table (harness/cost/prices.yaml), as `harness report --prices`: "
        "what the runs cost, --max-cost and the report are priced with it",
    )
    parser.add_argument(
        "--results", metavar="PATH",
        help=f"results file, JSON Lines, one line per run as it ends (default {DEFAULT_RESULTS}, which each command "
        f"starts over, keeping the one before as {PREVIOUS_RESULTS}, unless it holds live or recorded runs); a file "
        "named here that already holds results is only continued (--resume, --retry-errors) or started over "
        "(--fresh) when asked",
    )
    start = parser.add_mutually_exclusive_group()
    start.add_argument(
        "--resume", action="store_true",
        help="continue the results file: skip the runs it already holds a result for, make the others "
        "(those an interrupt cut or never started) and append them",
    )
    start.add_argument(
        "--retry-errors", action="store_true",
        help="as --resume, and also make again the runs whose result is an error (the new line supersedes the old)",
    )
    start.add_argument("--fresh", action="store_true", help="empty the results file first and make every run")
    parser.add_argument(
        "--keep-failed", action="store_true",
        help="a recording run that does not pass keeps the previous cassette (always) and also writes what it "
        "recorded beside it as NAME.failed.yaml, for inspection",
    )
    parser.add_argument(
        "--disable", action="append", default=[], metavar="CODE",
        help="rule code(s) not checked in any scenario; repeatable, comma-separated lists accepted",
    )
    parser.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE",
        help="import a module whose @rule checks join the catalogue and whose @scorer scorers can be named in "
        "`score:` (as `harness check --plugin`); repeatable",
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
    parser.add_argument("--otlp-endpoint", metavar="URL|FILE", help="also send each run as an OpenTelemetry trace "
                        "(as `harness export --otlp`); a failed export is one line, never the run's status")
    parser.add_argument("--otlp-content", action="store_true", help="with --otlp-endpoint: include message content")
    parser.add_argument(
        "--baseline", metavar="BASE",
        help="compare the results with a baseline results file (as `harness diff BASE NEW`); exit 1 when "
        "anything regressed",
    )
    parser.set_defaults(func=run)


def _more_than_zero(unit: str) -> Callable[[str], float]:
    """An argparse type: a finite number of `unit` above 0."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"a number of {unit} was expected, got {text!r}") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
        return value

    return parse


_seconds = _more_than_zero("seconds")
_dollars = _more_than_zero("US dollars")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # argparse would say "invalid _positive value"
        raise argparse.ArgumentTypeError(f"a whole number of 1 or more was expected, got {text!r}") from None
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
    # Before the scenarios load: their `disable`, `expect.findings` and `score:` may name what a plugin adds.
    if not load_plugins(args.plugin):
        return 2
    disable = tuple(code.strip().upper() for item in args.disable for code in item.split(",") if code.strip())
    _check_codes(disable)
    from ..cost import load_prices

    prices = load_prices(args.prices)  # a broken prices file is refused before any scenario is read
    if not args.no_report:
        from ..report._processes import processes_told

        processes_told()  # a bad HARNESS_REPORT_PROCESSES is refused now, not once every run is done

    for model in args.model:  # said of the option, not of every scenario's `model:` line it replaces
        unusable = path_part_problem("--model", model)
        if unusable is not None:
            raise UsageError(unusable)
    sources, problems = load_all(args.paths)
    agents, agent_problems = resolve_agents(sources)
    problems.extend(agent_problems)
    sources = [s for s in sources if str(s.path) in agents]
    overrides = Overrides(
        models=tuple(args.model), efforts=tuple(args.effort), repeats=args.repeat, mode=args.mode
    )
    runs, plan_problems = plan(sources, overrides)
    runs, case_problems = check_cases(runs)
    plan_problems.extend(case_problems)
    # --record is how a replay scenario's cassette is made: it replaces no intent, so it says nothing.
    replaced = mode_replaced("--mode", args.mode, sources) if args.mode is not None and not args.record else None
    if replaced is not None:
        print(f"harness: {replaced}", file=err)
    if shard is not None:
        runs = select_shard(runs, *shard, key=lambda planned: planned.run_id)
    problems.extend(plan_problems)
    for problem in problems:
        print(f"harness: {problem}", file=err)
    if not runs and shard is None:  # a shard may be empty when there are fewer runs than shards
        print("harness: no scenario to run" + (" (every one is malformed)" if problems else ""), file=err)
        return 2

    paid = [run for run in runs if run.mode in PAID_MODES]
    _require_key_for(paid)
    unpriced = unpriced_models(paid, prices, by_option=bool(args.model))
    if args.max_cost is not None:
        _refuse_unpriced(unpriced)
    elif (warning := unpriced_warning(unpriced, "--prices")) is not None:
        print(warning, file=err)
    # Read before anything runs: a missing or malformed baseline found after a paid-for matrix is too late.
    baseline = read_results(args.baseline) if args.baseline else None
    if not args.no_report:
        # A planted symlink, a DIR that is a file or a folder that cannot be written is refused now, not
        # after the runs (as --results is: its file is opened before the first run).
        report_page = refuse_unwritable(Path(args.report) / "index.html",
                                        "nothing was run. Name another --report DIR, or give --no-report")
        refuse_foreign(report_page, "a harness report page", PAGE_START)  # a site's own index.html is kept

    options = RunOptions(
        record_mode=args.record_mode, record=args.record, disable=disable, keep_failed=args.keep_failed,
        timeout_s=args.timeout, prices=prices,
    )
    results_path = Path(args.results or DEFAULT_RESULTS)
    refuse_foreign_results(results_path)  # --fresh would empty it before a word
    with ResultsWriter(results_path, fresh=args.fresh) as writer:
        earlier = _earlier_results(writer, args, err)
        skipped = [run for run in runs if run.run_id in earlier]
        runs = [run for run in runs if run.run_id not in earlier]
        if skipped:
            print(f"harness: {len(skipped)} run(s) already have a result in {results_path}; skipped", file=err)
        held_before = holds_so_far()
        with sigterm_interrupts(), _progress(err) as on_result:
            on_result, cost_line = _harness_calls(on_result, prices)
            report = run_all(
                runs, agents, writer, jobs=args.jobs, options=options, on_result=on_result, max_cost_usd=args.max_cost
            )
    print_summary(report, out)
    print(_totals(report, len(runs), results_path, skipped=len(skipped)), file=out)
    cost = cost_line(_agents_cost(report))
    if cost:
        print(cost, file=out)
    holds, held_s = holds_so_far()
    if holds > held_before[0]:
        print(f"rate limits: {holds - held_before[0]} request(s) held {held_s - held_before[1]:.1f}s in all, until the "
              "API's retry-after or anthropic-ratelimit-*-reset let them go", file=out)
    if args.max_cost is not None:
        print(f"spend: ${report.spent_usd:.4f} of --max-cost ${args.max_cost:g} (runs that called the API)", file=out)
    # Resumed, the report and the diff speak of the whole results file; otherwise of this command's runs.
    # Either way their traces are read back from the file, one run at a time: the runs kept none.
    ours = None if skipped else {result.run_id for _, result in report.results}

    def finished() -> Iterator[RunResult]:
        return (result for result in iter_results(results_path) if ours is None or result.run_id in ours)

    if not args.no_report:
        from ..report import write_page
        from ..report._files import prepare_files

        # Given as `harness report` would be: the table only when --prices named one, so that the run's
        # page and a later `harness report` of the same results are the same page.
        given = prices if args.prices else None
        page = prepare_files([results_path], given, only=ours)
        print(f"report: {write_page(page, args.report)}", file=out)
    if args.otlp_endpoint:
        from .export import export_or_say

        export_or_say(list(finished()), args.otlp_endpoint, content=args.otlp_content, out=out, err=err)
    regressed = False
    if baseline is not None:
        from ..results import diff_results

        diff = diff_results(baseline, list(finished()))
        print(diff.to_text(), end="", file=out)
        regressed = diff.regressed
    if report.write_error is not None:
        print(f"harness: {report.write_error}; {len(report.not_made)} run(s) not made", file=err)
        return 2
    if report.interrupted:
        cut = ", ".join(r.run_id for r in report.cut) or "none"
        print(
            f"harness: interrupted: {len(report.results)} of {len(runs)} runs finished and are in {results_path}; "
            f"cut: {cut}. Run again with --resume to make the rest",
            file=err,
        )
        return 130
    # Resumed: the status is the whole results file's, as one uninterrupted command would have given.
    statuses: set[str] | None = {result.status for result in finished()} if skipped else None
    status = exit_status(report, problems=bool(problems), statuses=statuses)
    return 1 if status == 0 and regressed else status


def _earlier_results(writer: ResultsWriter, args: argparse.Namespace, err: TextIO) -> set[str]:
    """Run ids the results file already holds a final result for (with --resume / --retry-errors).

    Without either, a file that holds results is refused rather than emptied: it may be the only
    record of a paid-for live matrix. The default file is the exception, as `reports/latest` is:
    typing the same command twice runs it twice. It is started over, the earlier results kept beside
    it, unless they hold live or recorded runs (paid for, not made again for free)."""
    results_path = writer.path
    if args.fresh or not results_path.exists() or results_path.stat().st_size == 0:
        return set()
    held = read_results(results_path)
    if args.resume or args.retry_errors:
        return {r.run_id for r in held if not (args.retry_errors and r.status == "error")}
    paid = sum(1 for r in held if r.mode in PAID_MODES)
    if args.results is None and not paid:
        previous = results_path.with_name(PREVIOUS_RESULTS)
        write_results(previous, held)
        writer.start_over()
        print(f"harness: {results_path} held {len(held)} result(s) of an earlier command; they are now in {previous}",
              file=err)
        return set()
    what = f"{len(held)} result(s) from an earlier command" + (f", {paid} of them live or recorded" if paid else "")
    raise HarnessError(
        f"{results_path} already holds {what}; add --resume to make only "
        "the runs it lacks, --retry-errors to also make its errors again, or --fresh to start it over"
    )


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


def _refuse_unpriced(unpriced: list[Unpriced]) -> None:
    """With --max-cost, refuse before anything runs when a paid run's model (its agent's, judge's or
    simulated user's) has no price: its spend could not be counted, and counting it as free would let
    the cap be passed unseen."""
    for source, loc, model in unpriced[:1]:
        problem = (f"--max-cost: no price for model {model}, so what its calls spend cannot be counted; nothing was "
                   "run. Price it with --prices FILE (a YAML with the shape of harness/cost/prices.yaml), or run "
                   "without --max-cost")
        raise source.error(loc, problem) if loc is not None else HarnessError(f"--model {model}: {problem}")


def exit_status(report: RunReport, *, problems: bool, statuses: set[str] | None = None) -> int:
    """2 when the harness could not do its job (a malformed scenario, a run with an error nothing
    explains, a planned run not made); 1 when a run failed; 0 when every planned run passed.
    `statuses` are the results judged (by default the report's own)."""
    if statuses is None:
        statuses = {result.status for _, result in report.results}
    if problems or "error" in statuses or report.not_made or report.write_error is not None:
        return 2
    return 1 if "failed" in statuses else 0


def _check_codes(codes: tuple[str, ...]) -> None:
    from ..checks import rules

    unknown = sorted(set(codes) - set(rules()))
    if unknown:
        raise HarnessError(f"--disable: unknown rule code(s) {', '.join(unknown)}; known codes: {', '.join(rules())}")


@contextlib.contextmanager
def _progress(err: TextIO) -> Iterator[Callable[[int, int, PlannedRun, RunResult], None]]:
    """Progress on stderr: a bar redrawn in place on a terminal, one line per run elsewhere (CI logs).

    On a terminal only runs that did not pass get a line of their own, above the bar.
    """
    if not (hasattr(err, "isatty") and err.isatty()):
        def line(done: int, total: int, planned: PlannedRun, result: RunResult) -> None:
            why = _why(result)
            print(f"[{done}/{total}] {planned.label} {result.status}" + (f": {why}" if why else ""), file=err,
                  flush=True)

        yield line
        return

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    counts: dict[str, int] = {}
    # Redrawn when a run finishes, not by a timer thread: the bar moves only when something happened.
    progress = Progress(BarColumn(bar_width=30), MofNCompleteColumn(), TextColumn("{task.description}"),
                        console=rich_console(err), auto_refresh=False)
    task = progress.add_task("", total=None)

    def bar(done: int, total: int, planned: PlannedRun, result: RunResult) -> None:
        counts[result.status] = counts.get(result.status, 0) + 1
        if result.status != "passed":
            why = _why(result)
            # soft_wrap: a long reason is folded by the terminal, not cut into lines by rich.
            progress.console.print(inert(f"{planned.label} {result.status}" + (f": {why}" if why else "")),
                                   soft_wrap=True)
        tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        progress.update(task, completed=done, total=total, description=tally)
        progress.refresh()

    with progress:
        yield bar


def _harness_calls(on_result: OnResult, prices: PriceTable) -> tuple[OnResult, Callable[[float | None], str]]:
    """`on_result` counting, as each run finishes (its traces are dropped after), the harness's own
    calls (judges', simulated users'); and the line of the agents' total cost with what those calls
    cost beside it, in the report's words (empty when no run made any)."""
    from ..report._data import LedgerRow, count_harness_calls, total_cost_text

    own: dict[str, LedgerRow] = {}
    seen: dict[str, set[int]] = {}

    def counted(done: int, total: int, planned: PlannedRun, result: RunResult) -> None:
        count_harness_calls(own, seen, done, result, prices)
        on_result(done, total, planned, result)

    def cost_line(agents: float | None) -> str:
        return total_cost_text(agents, sorted(own.values(), key=lambda row: row.name)) if own else ""

    return counted, cost_line


def _agents_cost(report: RunReport) -> float | None:
    """What the finished runs' agents cost; None when one of them was unpriced (never counted as $0)."""
    costs = [result.cost_usd for _, result in report.results]
    return None if any(cost is None for cost in costs) else sum(cost for cost in costs if cost is not None)


def _why(result: RunResult) -> str:
    """The first reason a run did not pass, in one line."""
    return result.why()


def print_summary(report: RunReport, out: TextIO) -> None:
    """The table of every planned run (finished, cut or not made), then why each one that did not pass failed.

    Findings are shown whatever the outcome: on a run the harness could not finish (a replay miss),
    the rule the agent's changed request breaks is what explains the miss.
    """
    from ..results._table import plain_runs_table, run_row, runs_tables, scenario_case, unmade_row

    rows = [run_row(result, planned.cell.label(planned.repeats))
            for planned, result in sorted(report.results, key=lambda pair: pair[1].run_id)]
    for planned, status in [*((p, "cut") for p in report.cut), *((p, "not made") for p, _ in report.not_made)]:
        scenario = scenario_case(planned.scenario, planned.case)
        rows.append(unmade_row(scenario, planned.cell.label(planned.repeats), planned.mode, status))
    if hasattr(out, "isatty") and out.isatty():
        for table in runs_tables(rows, width=shutil.get_terminal_size().columns):
            print_rich(out, table)
    else:
        out.write(plain_runs_table(rows))
    failing = [(p, r) for p, r in report.results if r.status != "passed"]
    if failing or report.not_made:
        print("", file=out)
    for planned, result in sorted(failing, key=lambda pair: pair[1].run_id):
        print(f"{result.status.upper()} {planned.label} ({planned.source.path})", file=out)
        for line in result.reasons():
            print(f"    {line}", file=out)
    for planned, why in report.not_made:
        print(f"NOT MADE {planned.label} ({planned.source.path}): {why}", file=out)


def _totals(report: RunReport, planned: int, results_path: Path, *, skipped: int = 0) -> str:
    """`4 planned, 3 finished (2 passed, 1 failed), 1 not made`: every planned run is counted somewhere."""
    counts: dict[str, int] = {}
    for _, result in report.results:
        counts[result.status] = counts.get(result.status, 0) + 1
    parts = [f"{counts[s]} {s}" for s in ("passed", "failed", "error") if counts.get(s)]
    text = f"\n{planned} planned, {len(report.results)} finished" + (f" ({', '.join(parts)})" if parts else "")
    if report.cut:
        text += f", {len(report.cut)} cut"
    if report.not_made:
        text += f", {len(report.not_made)} not made"
    if skipped:
        text += f"; {skipped} already in the results file"
    return f"{text}; results in {results_path}"
