"""Scenario files as test items: one per scenario and matrix cell, run through the same `execute` as
`harness run`. Registered only when scenarios are asked for (`--harness-scenarios`, ini `harness_scenarios`).
"""

from __future__ import annotations

import dataclasses
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._modes import RecordMode
from ..errors import HarnessError
from ._record import cassette_mode, configured_record_mode
from ._state import state_of

if TYPE_CHECKING:
    from ..results._model import RunResult
    from ..run import PlannedRun
    from ..scenario import ScenarioFile


_SIGTERM_BEFORE = pytest.StashKey[Any]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """SIGTERM (a CI job's timeout, `kill`) ends the session as Ctrl-C does, as it ends `harness run`: an
    agent command runs in a session of its own, out of reach of a signal sent to pytest or its group,
    and is killed when its run ends, which the default SIGTERM, ending pytest outright, never let come,
    so the command and all it started went on running (and spending). Not where the session has a
    SIGTERM handler of its own, nor off the main thread (where Python sets none)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        session.config.stash[_SIGTERM_BEFORE] = signal.signal(signal.SIGTERM, _interrupt)


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_SIGTERM_BEFORE, None)
    if before is not None:
        signal.signal(signal.SIGTERM, before)
        del session.config.stash[_SIGTERM_BEFORE]


def _interrupt(number: int, frame: object) -> None:
    raise KeyboardInterrupt


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = state_of(parent.config)
    if file_path.suffix in (".yaml", ".yml") and state.collect_scenarios and state.is_scenario(file_path):
        return ScenarioCollector.from_parent(parent, path=file_path)
    return None


class ScenarioCollector(pytest.File):
    """One scenario file: loaded, its agent resolved and its cells planned, as at `harness run`."""

    def collect(self) -> Iterator[ScenarioItem]:
        from ..run import resolve_agents
        from ..scenario import load_scenario

        source = load_scenario(self.path)
        # Two files with one name would give their runs the same ids: results lines that collide, and a
        # merge of xdist workers' files that fails. `harness run` refuses it as well (run._plan).
        first = state_of(self.config).scenario_names.setdefault(source.name, self.path)
        if first != self.path:
            raise source.error(("name",), f"scenario name {source.name!r} is also used by {first}; "
                               "give each scenario its own `name`")
        agents, problems = resolve_agents([source])
        if problems:
            raise problems[0]
        for run in _planned(self.config, source):
            yield ScenarioItem.from_parent(self, name=run.run_id, run=run, agent=agents[str(source.path)])

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        # A malformed scenario is the user's input, not a crash: its message names file, line and key.
        if isinstance(excinfo.value, HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def _planned(config: pytest.Config, source: ScenarioFile) -> list[PlannedRun]:
    """A scenario's runs, one per matrix cell (and case), in the session's `--harness-mode`."""
    from ..run import Overrides, check_cases, plan_one

    runs, problems = check_cases(plan_one(source, Overrides(mode=config.getoption("harness_mode"))))
    if problems:
        raise problems[0]
    return runs


def collected_runs(config: pytest.Config, ids: Iterable[str]) -> list[PlannedRun]:
    """The scenario runs of collected node ids, planned again from their files: what the xdist controller,
    which collects nothing, knows of the items its workers collected. A file that no longer loads is left
    out: its worker reports its error."""
    from ..scenario import load_scenario

    names: dict[Path, set[str]] = {}
    for node_id in ids:
        relative, _, name = node_id.partition("::")
        path = config.rootpath / relative
        if state_of(config).is_scenario(path):
            names.setdefault(path, set()).add(name)
    runs: list[PlannedRun] = []
    for file, wanted in names.items():
        try:
            runs += [run for run in _planned(config, load_scenario(file)) if run.run_id in wanted]
        except HarnessError:
            continue
    return runs


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """Said under "collected N items", before anything runs, as `harness run` says it: the models of the
    runs that will call the API (live, record) that have no price. (Under xdist the controller collects
    nothing: `_xdist` says it from the workers' collection.)"""
    warning = unpriced_warning_of(config, [item.run for item in items if isinstance(item, ScenarioItem)])
    return [warning] if warning else []


def unpriced_warning_of(config: pytest.Config, runs: list[PlannedRun]) -> str | None:
    """The one line naming the models of the paid runs among `runs` that have no price, if any."""
    from .._modes import PAID_MODES
    from ..cost import load_prices
    from ..run._unpriced import unpriced_models, unpriced_warning

    paid = [run for run in (with_record_mode(config, r)[0] for r in runs) if run.mode in PAID_MODES]
    if not paid:
        return None
    table = state_of(config).prices or load_prices()
    return unpriced_warning(unpriced_models(paid, table, by_option=False), "--harness-prices", _shown_path)


def with_record_mode(config: pytest.Config, run: PlannedRun) -> tuple[PlannedRun, RecordMode | None]:
    """The run as `--harness-record-mode` makes it (a replay may record, and so call the API)."""
    chosen = configured_record_mode(config)
    if chosen is None or run.mode not in ("replay", "record"):
        return run, None
    mode, record_mode = cassette_mode(chosen, run.cassette)
    return dataclasses.replace(run, mode=mode), record_mode


class ScenarioFailed(Exception):
    """A scenario run that did not pass; carries its result for `repr_failure`."""

    def __init__(self, result: RunResult, expected_codes: Iterable[str]) -> None:
        super().__init__(result.run_id)
        self.result = result
        self.expected_codes = frozenset(expected_codes)


class ScenarioItem(pytest.Item):
    """One scenario in one matrix cell, run once through the same `execute` as `harness run`."""

    def __init__(self, *, run: PlannedRun, agent: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.agent = agent

    def runtest(self) -> None:
        from ..run import RunOptions, execute

        state = state_of(self.config)
        run, record_mode = with_record_mode(self.config, self.run)
        result = execute(run, self.agent, RunOptions(record_mode=record_mode, prices=state.prices))
        state.record(result)
        self.user_properties.append(("harness_run_id", result.run_id))
        self.user_properties.append(("harness_status", result.status))
        self.user_properties.append(("harness_mode", result.mode))
        if result.status != "passed":
            self.user_properties.append(("harness_why", result.why()))
        if result.status != "passed":
            raise ScenarioFailed(result, self.run.source.scenario.expect.findings)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            return describe_failure(excinfo.value.result, excinfo.value.expected_codes)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"scenario {self.name}"


def describe_failure(result: RunResult, expected_codes: Iterable[str] = ()) -> str:
    """Why a run did not pass, one line per reason (`RunResult.reasons`: findings first, then failed
    expectations, then the harness's own error), after a first line that names them in brief
    (`T001, expect final_text (failed, scripted; outcome completed)`).

    `expected_codes` is kept for callers that pass it; the result knows the codes its scenario expects.
    """
    outcome = result.outcome
    state = f"{result.status}, {result.mode}"
    if outcome is not None:
        state += f"; outcome {outcome.status}{f': {_first_line(outcome.reason)}' if outcome.reason else ''}"
    brief = list(dict.fromkeys(f.code for f in result.unexpected_errors))
    brief += [f"expect {e.name}" for e in result.failed_expectations]
    if result.error and not brief:
        head = f"harness error ({state}): {result.error.splitlines()[0]}"
    else:
        head = f"{', '.join(brief) or 'did not pass'} ({state})"
    lines = [head, f"  scenario file: {_shown_path(result.scenario_path)}"]
    lines += [f"  {line}" for line in result.reasons()]
    warnings = [f for f in result.findings if f.severity == "warning"]
    if warnings:
        lines.append(f"  ({len(warnings)} warning(s): {', '.join(sorted({f.code for f in warnings}))})")
    return "\n".join(lines)


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else text


_SHORT_WHY = 48
"""Characters of the reason put before the node id in pytest's short summary: with FAILED and an
ellipsis it fills most of an 80-column line, so the codes and the reason are never cut off."""


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    """A failed scenario item's word in the short summary (and -v) carries its codes and reason.

    pytest writes `FAILED <node id> - <message>` and drops the message when the node id alone fills
    the line, as a scenario's id (file, name and matrix cell) does at 80 columns: the reason is put
    in the word, before the id, instead.
    """
    if report.when != "call" or not report.failed:
        return None
    why = dict(report.user_properties).get("harness_why")
    if not isinstance(why, str) or not why:
        return None
    short = why if len(why) <= _SHORT_WHY else why[: _SHORT_WHY - 1] + "…"
    status = dict(report.user_properties).get("harness_status", "failed")
    word = "ERROR" if status == "error" else "FAILED"
    return "failed", "F", (f"{word} {short}", {"red": True})


def _shown_path(path: str) -> str:
    """A path relative to the current directory when it is below it, as the user typed it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path
