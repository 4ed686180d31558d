"""End of the session: the results file, the report, and the `harness` section of pytest's summary."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._console import inert, render_rich
from ..errors import HarnessError
from ._state import state_of
from ._xdist import merge_workers

if TYPE_CHECKING:
    from ..results._model import RunResult
    from ..scenario import ScenarioFile


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = state_of(session.config)
    state.close()
    if state.worker_id is not None:
        return  # the controller merges the worker's file, which it named in pytest_configure_node
    unreachable = state.unreachable_scenarios()
    if unreachable:
        state.warnings.append(unreachable)
    if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and state.shard_dropped:
        # A shard may hold none of the collected tests (fewer tests than shards, or an unlucky split);
        # pytest's "no tests ran" (exit 5) would fail that CI matrix job although nothing is wrong.
        session.exitstatus = pytest.ExitCode.OK
        state.notes.append(
            f"--harness-shard {session.config.getoption('harness_shard')}: this shard holds none of the "
            f"{state.shard_dropped} collected test(s); the other shards run them"
        )
    try:
        if state.worker_files:
            merge_workers(state)
        elif state.results_path is not None and state.writer is None:
            from ..results._store import write_results

            write_results(state.results_path, [])  # asked for a results file: an empty one says nothing ran
        if state.report_dir is not None and state.results:
            state.report_page = write_report(state.results, state.report_dir)
    except HarnessError as exc:
        state.problems.append(str(exc))
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    finally:
        if state.temp_dir is not None:
            shutil.rmtree(state.temp_dir, ignore_errors=True)




def write_report(results: list[RunResult], out_dir: Path) -> Path:
    """The HTML report of the runs, as `harness report` writes it; needs the report package."""
    try:
        from ..report import build_report
    except ImportError as exc:
        raise HarnessError(f"--harness-report: the report package cannot be loaded ({exc})") from exc
    try:
        return build_report(results, out_dir)
    except HarnessError:
        raise
    except Exception as exc:
        # A report that cannot be built must not turn the session into an INTERNALERROR that hides the
        # test outcomes and the summary; the results file is already written, `harness report` can retry.
        raise HarnessError(
            f"--harness-report: the report could not be written to {out_dir} ({type(exc).__name__}: {exc}); "
            "the results are intact, retry with `harness report RESULTS -o DIR`"
        ) from exc


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The `harness` section: the table of runs `harness run` prints, drawn by rich the same way (styled
    and fitted to the width when pytest styles its output, plain lines when it does not: a pipe, a CI
    log, captured output), then the totals and what the session wrote. Untrusted text is made inert."""
    state = state_of(config)
    if state.worker_id is not None:
        return
    if not (state.results or state.problems or state.warnings or state.notes):
        return

    def write(line: str, **markup: bool) -> None:
        terminalreporter.write_line(inert(line), **markup)

    terminalreporter.section("harness")
    if state.results:
        from ..results._table import plain_runs_table, runs_table

        writer = config.get_terminal_writer()
        if writer.hasmarkup:
            terminalreporter.write(render_rich(runs_table(table_rows(state.results), width=writer.fullwidth),
                                               styled=True, width=writer.fullwidth))
        else:
            terminalreporter.write(plain_runs_table(table_rows(state.results)))
        for line in summary_lines(state.results):
            write(line)
        mode = config.getoption("harness_mode")
        from ..run import mode_replaced

        replaced = mode_replaced("--harness-mode", mode, _sources_of(state.results)) if mode else None
        if replaced is not None:
            write(replaced)
    for note in state.notes:
        write(note)
    for warning in state.warnings:
        write(f"warning: {warning}", yellow=True)
    for problem in state.problems:
        write(f"error: {problem}", red=True)
    if state.results_path is not None and state.results_path.exists():
        write(f"results: {state.results_path}")
    if state.report_page is not None:
        write(f"report: {state.report_page}")


def table_rows(results: list[RunResult]) -> list[tuple[str, ...]]:
    """A row per run, by run id; the cell named as `harness run` names it (`-r<n>` when repeated)."""
    from ..results._table import run_row
    from ..run import Cell

    repeats: Counter[tuple[str, str | None, str, str | None]] = Counter()
    for r in results:
        key = (r.scenario, r.case, r.model, r.effort)
        repeats[key] = max(repeats[key], r.repeat + 1)
    return [run_row(r, Cell(r.model, r.effort, r.repeat).label(repeats[(r.scenario, r.case, r.model, r.effort)]))
            for r in sorted(results, key=lambda r: r.run_id)]


def summary_lines(results: list[RunResult]) -> list[str]:
    """`N run(s): P passed, F failed`, then findings counted by code and severity."""
    statuses = Counter(r.status for r in results)
    parts = [f"{statuses[s]} {s}" for s in ("passed", "failed", "error") if statuses[s] or s != "error"]
    lines = [f"{len(results)} run(s): {', '.join(parts)}"]
    by_code = Counter((f.code, f.severity) for r in results for f in r.findings)
    if by_code:
        counted = ", ".join(
            f"{code} x{count}" + (" (warning)" if severity == "warning" else "")
            for (code, severity), count in sorted(by_code.items())
        )
        lines.append(f"findings by code: {counted}")
    else:
        lines.append("findings by code: none")
    return lines


def _sources_of(results: list[RunResult]) -> list[ScenarioFile]:
    """The scenario files the runs came from, read again (under xdist only the workers collected them);
    one that no longer loads is left out: its own error was reported when it was collected."""
    from ..scenario import load_scenario

    sources: list[ScenarioFile] = []
    for path in sorted({r.scenario_path for r in results}):
        try:
            sources.append(load_scenario(path))
        except HarnessError:
            continue
    return sources
