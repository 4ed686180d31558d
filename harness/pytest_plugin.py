"""The harness as a pytest plugin: scenario files as test items, fixtures for a project's own tests.

Loaded through the `pytest11` entry point, so it is present in every pytest session of an environment
that has the harness installed, and does nothing there unless asked (options, marker or fixtures).
It is a thin front: scenarios run through `harness.run`, clients come from `harness.transport`.

Options (command line / ini)
    --harness-scenarios            collect scenario files as tests (ini `harness_scenarios = true`);
                                   one item per scenario x matrix cell, e.g. `refund-basic[claude-sonnet-5-high-r0]`
    harness_scenario_glob (ini)    which files are scenarios, relative to the rootdir, space-separated
                                   patterns (default `scenarios/*.yaml`); pytest must also be pointed at
                                   them (`pytest scenarios tests`, or `testpaths`)
    --harness-mode MODE            run every scenario in this mode instead of its own (replay, record, live, scripted)
    --harness-record-mode MODE     none | once | new_episodes | all (ini `harness_record_mode`)
    --harness-results PATH         write each scenario run's result there (JSON Lines, like `harness run`)
    --harness-report DIR           write the HTML report of the scenario runs there at the end
    --harness-shard K/N            keep only the K-th of N shards of the collected items (CI matrix jobs):
                                   scenario items by run id, other tests by node id, as `harness run --shard`;
                                   an empty shard exits 0, not pytest's 5, so its matrix job stays green

Record mode, the same four modes as pytest-recording, decided in this order (first one set wins):
    1. the command line, `--harness-record-mode`
    2. the ini file, `harness_record_mode`
    3. the test's marker, `@pytest.mark.harness(record_mode=...)`
    4. `none`: replay only, offline; a request the cassette does not hold fails the test.
The command line wins so that CI can force `none` whatever a test or the ini asks for. For a cassette:
`none` replays; `once` replays an existing cassette and records a missing one; `new_episodes` replays
what matches and records the rest; `all` records everything again. Recording calls the live API and
needs ANTHROPIC_API_KEY. A test with `script=` always talks to its scripted model; when its marker
also names a `cassette`, that cassette is written from the script (`once`: only when missing;
`new_episodes`, `all`: again; `none`: never), and never replays in the script's place. A scenario item applies a record mode
given on the command line or in the ini to scenarios in mode replay or record; scripted and live
scenarios keep their mode.

Under pytest-xdist every worker writes its results to `<results>.<worker id>.jsonl` beside the
results file, and the controller merges them (`merge_results`) into the results file and the report.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

# Only the error classes at import time: this module is loaded into every pytest session of an
# environment that has the harness installed, used or not, and `harness.results` alone pulls in
# deepdiff (and pandas when it is installed), about a second. Everything else is imported where used.
from ._modes import MODES, RECORD_MODES, RecordMode
from ._secrets import add_secret_variable, redact
from .errors import HarnessError, MissingApiKey, UnplayedInteractions, UsageError

if TYPE_CHECKING:
    import anthropic

    from .checks._registry import Finding
    from .results._model import RunResult
    from .results._store import ResultsWriter
    from .run import PlannedRun
    from .trace._model import Outcome, Trace
    from .transport import Session
    from .transport.scripted import ScriptedModel

MARKER_KEYS = ("cassette", "script", "record_mode")
DEFAULT_SCENARIO_GLOB = ["scenarios/*.yaml"]


# --- record mode -----------------------------------------------------------------------------


def resolve_record_mode(command_line: str | None, ini: str | None, marker: str | None) -> RecordMode:
    """The record mode that applies: command line, then ini, then marker, then `none` (see the module docstring)."""
    for where, value in (("--harness-record-mode", command_line), ("harness_record_mode", ini),
                         ("@pytest.mark.harness(record_mode=...)", marker)):
        if value:
            if value not in RECORD_MODES:
                raise pytest.UsageError(f"{where}: {value!r} is not a record mode; use one of {', '.join(RECORD_MODES)}")
            return value  # type: ignore[return-value]
    return "none"


def _configured_record_mode(config: pytest.Config) -> RecordMode | None:
    """The record mode set for the whole session (command line or ini), or None when neither sets one."""
    command_line = config.getoption("harness_record_mode")
    ini = _ini_record_mode(config)
    return resolve_record_mode(command_line, ini, None) if command_line or ini else None


def _ini_record_mode(config: pytest.Config) -> str | None:
    """The ini file's `harness_record_mode`, None when it is not set (an empty value is not set)."""
    return str(config.getini("harness_record_mode") or "").strip() or None


def cassette_mode(record_mode: RecordMode, cassette: Path) -> tuple[Literal["replay", "record"], RecordMode | None]:
    """The transport mode a cassette needs under a record mode: only recording talks to the API."""
    if record_mode == "none" or (record_mode == "once" and cassette.exists()):
        return "replay", None
    return "record", record_mode


def _record_mode_source(request: pytest.FixtureRequest) -> str:
    """Where the test's record mode came from, for messages: the user must know what to change."""
    config = request.config
    if config.getoption("harness_record_mode"):
        return "from --harness-record-mode"
    if _ini_record_mode(config):
        return "from the ini option harness_record_mode"
    if _marker_kwargs(request).get("record_mode"):
        return "from @pytest.mark.harness(record_mode=...)"
    return "the default"


def _rerecord_hint(nodeid: str) -> str:
    """How to record a test's cassette again, as the pytest command to type (the transport's own
    advice names open_session, which a test never calls)."""
    return (
        f"`pytest {nodeid} --harness-record-mode=all` (live API, needs ANTHROPIC_API_KEY; new_episodes keeps "
        "what still matches), or @pytest.mark.harness(script=[...], cassette=...) to write it from a scripted model"
    )


# --- options and state -----------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "agent harness (scenarios, cassettes, scripted models)")
    group.addoption("--harness-scenarios", action="store_true", default=False,
                    help="collect scenario files (ini harness_scenario_glob) as test items, one per matrix cell")
    group.addoption("--harness-mode", choices=MODES, default=None,
                    help="run every scenario in this mode instead of its own")
    group.addoption("--harness-record-mode", choices=RECORD_MODES, default=None,
                    help="cassette record mode; wins over ini harness_record_mode and the harness marker (default: none)")
    group.addoption("--harness-secret", action="append", default=[], metavar="NAME",
                    help="an environment variable whose value is redacted from every report and file, "
                    "besides ANTHROPIC_API_KEY (repeatable)")
    group.addoption("--harness-results", metavar="PATH", default=None,
                    help="write each scenario run's result to this JSON Lines file (merged over xdist workers)")
    group.addoption("--harness-report", metavar="DIR", default=None,
                    help="write the HTML report of the scenario runs to this directory at the end of the session")
    group.addoption("--harness-shard", metavar="K/N", default=None,
                    help="run only the K-th of N shards (1-based) of the collected tests, chosen by a hash of the "
                    "run id (scenarios) or node id (other tests); join the results with `harness merge`")
    parser.addini("harness_scenarios", "collect scenario files as test items", type="bool", default=False)
    parser.addini("harness_scenario_glob", "scenario file patterns relative to the rootdir", type="args",
                  default=DEFAULT_SCENARIO_GLOB)
    parser.addini("harness_record_mode", "cassette record mode: none, once, new_episodes or all", default="")


class _State:
    """What the plugin keeps for one pytest session (one per config, so pytester's inner runs stay apart)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[RunResult] = []
        """Results of the scenario items run in this process, or, on the xdist controller, the merged ones."""
        results = config.getoption("harness_results")
        self.results_path: Path | None = Path(results).absolute() if results else None
        report = config.getoption("harness_report")
        self.report_dir: Path | None = Path(report).absolute() if report else None
        self.writer: ResultsWriter | None = None
        self.own_path: Path | None = self.results_path
        """Where this process appends its results: the results file, or its worker's own file."""
        self.worker_files: list[Path] = []
        """Controller: the file each xdist worker was told to write."""
        self.temp_dir: Path | None = None
        self.warnings: list[str] = []
        self.problems: list[str] = []
        self.report_page: Path | None = None
        self.notes: list[str] = []
        """Lines for the end-of-session section that are neither warnings nor errors."""
        self.shard_dropped: int | None = None
        """With --harness-shard: how many collected tests belong to other shards."""
        self._scenario_files: set[Path] | None = None
        self.scenario_names: dict[str, Path] = {}
        """Scenario name -> the first file collected with it."""
        workerinput = getattr(config, "workerinput", None)
        self.worker_id: str | None = workerinput["workerid"] if workerinput else None
        if workerinput and workerinput.get("harness_results_base"):
            self.own_path = worker_file(Path(workerinput["harness_results_base"]), workerinput["workerid"])
        elif workerinput:
            self.own_path = None

    @property
    def collect_scenarios(self) -> bool:
        return bool(self.config.getoption("harness_scenarios") or self.config.getini("harness_scenarios"))

    @property
    def scenario_files(self) -> set[Path]:
        if self._scenario_files is None:
            root = self.config.rootpath
            patterns: list[str] = list(self.config.getini("harness_scenario_glob"))
            self._scenario_files = {p.resolve() for pattern in patterns for p in root.glob(pattern) if p.is_file()}
        return self._scenario_files

    def is_scenario(self, path: Path) -> bool:
        return path.resolve() in self.scenario_files

    def unreachable_scenarios(self) -> str | None:
        """Why asking for scenarios collects none, when pytest is not pointed at them.

        pytest only offers the files under the paths it collects (the command line, else `testpaths`),
        so `pytest --harness-scenarios` with `testpaths = tests` silently runs no scenario at all.
        Worked out from the arguments, not from the items, so the xdist controller, which collects
        nothing itself, can say it too.
        """
        if not self.collect_scenarios:
            return None
        patterns = " ".join(self.config.getini("harness_scenario_glob"))
        if not self.scenario_files:
            return (f"--harness-scenarios: no file under {self.config.rootpath} matches harness_scenario_glob "
                    f"({patterns}); set it to where the scenario files are")
        if self.config.args_source == pytest.Config.ArgsSource.ARGS:
            return None  # the user named what to collect (one test file, say): leaving scenarios out is their choice
        base = self.config.invocation_params.dir
        roots = [(base / arg.split("::", 1)[0]).resolve() for arg in self.config.args]
        if any(root == f or root in f.parents for f in self.scenario_files for root in roots):
            return None
        # Folders as the user would type them, from where pytest was started.
        folders = sorted({os.path.relpath(f.parent, base) for f in self.scenario_files})
        return (f"--harness-scenarios: {len(self.scenario_files)} scenario file(s) match harness_scenario_glob "
                f"({patterns}) but none is under the paths pytest collects ({' '.join(self.config.args)}); "
                f"name them too (`pytest {' '.join(folders)} {' '.join(self.config.args)}`) or add "
                f"{' '.join(folders)} to testpaths")

    def record(self, result: RunResult) -> None:
        self.results.append(result)
        if self.own_path is None:
            return
        if self.writer is None:
            from .results._store import ResultsWriter

            # One session, one results file: a file left by an earlier session is started over.
            self.own_path.unlink(missing_ok=True)
            self.writer = ResultsWriter(self.own_path)
        self.writer.write(result)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


_STATE = pytest.StashKey[_State]()
_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


def _state(config: pytest.Config) -> _State:
    return config.stash[_STATE]


def worker_file(base: Path, worker_id: str) -> Path:
    """`results.jsonl` -> `results.gw0.jsonl`: the file one xdist worker writes."""
    return base.with_name(f"{base.stem}.{worker_id}{base.suffix or '.jsonl'}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "harness(cassette=None, script=None, record_mode=None): the cassette or scripted model behind the "
        "harness_client fixture, and the record mode (the command line and the ini win over it)",
    )
    config.stash[_STATE] = _State(config)
    for name in config.getoption("harness_secret", default=[]) or []:
        add_secret_variable(name)
    # A misspelt ini record mode is one usage error for the session, not one setup error per test
    # that uses a harness fixture (or none at all, when no test does).
    _configured_record_mode(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller, before a worker starts: tell it where its own results file goes."""
    state = _state(node.config)
    if not (state.collect_scenarios or state.results_path or state.report_dir):
        return
    if state.results_path is not None:
        base = state.results_path
    else:
        if state.temp_dir is None:
            state.temp_dir = Path(tempfile.mkdtemp(prefix="harness-results-"))
        base = state.temp_dir / "results.jsonl"
    own = worker_file(base, node.gateway.id)
    # A worker that runs no scenario writes nothing, so a file of an earlier session must not be taken for its.
    own.unlink(missing_ok=True)
    state.worker_files.append(own)
    node.workerinput["harness_results_base"] = str(base)


# --- scenario files as test items --------------------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    spec = config.getoption("harness_shard")
    if not spec:
        return
    from .results._merge import parse_shard, shard_of

    try:
        k, n = parse_shard(spec)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc).replace("--shard", "--harness-shard")) from None
    # A scenario's run id is the key `harness run --shard` uses, so both fronts split runs alike.
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        key = item.run.run_id if isinstance(item, ScenarioItem) else item.nodeid
        (keep if shard_of(key, n) == k else drop).append(item)
    state = _state(config)
    state.shard_dropped = len(drop)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        # The xdist controller collects nothing itself; this is how it learns that an empty shard
        # is empty on purpose (see pytest_testnodedown).
        workeroutput["harness_shard_dropped"] = len(drop)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: how many tests a worker's shard left out (every worker sees the same collection)."""
    dropped = getattr(node, "workeroutput", {}).get("harness_shard_dropped")
    if dropped is not None:
        state = _state(node.config)
        state.shard_dropped = max(state.shard_dropped or 0, int(dropped))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = _state(parent.config)
    if file_path.suffix in (".yaml", ".yml") and state.collect_scenarios and state.is_scenario(file_path):
        return ScenarioCollector.from_parent(parent, path=file_path)
    return None


class ScenarioCollector(pytest.File):
    """One scenario file: loaded, its agent resolved and its cells planned, as at `harness run`."""

    def collect(self) -> Iterator[ScenarioItem]:
        from .run import Overrides, plan_one, resolve_agents
        from .scenario import load_scenario

        source = load_scenario(self.path)
        # Two files with one name would give their runs the same ids: results lines that collide, and a
        # merge of xdist workers' files that fails. `harness run` refuses it as well (run._plan).
        first = _state(self.config).scenario_names.setdefault(source.name, self.path)
        if first != self.path:
            raise source.error(("name",), f"scenario name {source.name!r} is also used by {first}; "
                               "give each scenario its own `name`")
        agents, problems = resolve_agents([source])
        if problems:
            raise problems[0]
        mode = self.config.getoption("harness_mode")
        for run in plan_one(source, Overrides(mode=mode)):
            yield ScenarioItem.from_parent(self, name=run.run_id, run=run, agent=agents[str(source.path)])

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        # A malformed scenario is the user's input, not a crash: its message names file, line and key.
        if isinstance(excinfo.value, HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


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
        from .run import RunOptions, execute

        state = _state(self.config)
        run, record_mode = self._with_record_mode(self.run)
        result = execute(run, self.agent, RunOptions(record_mode=record_mode))
        state.record(result)
        self.user_properties.append(("harness_run_id", result.run_id))
        self.user_properties.append(("harness_status", result.status))
        self.user_properties.append(("harness_mode", result.mode))
        if result.status != "passed":
            self.user_properties.append(("harness_why", result.why()))
        if result.status != "passed":
            raise ScenarioFailed(result, self.run.source.scenario.expect.findings)

    def _with_record_mode(self, run: PlannedRun) -> tuple[PlannedRun, RecordMode | None]:
        chosen = _configured_record_mode(self.config)
        if chosen is None or run.mode not in ("replay", "record"):
            return run, None
        mode, record_mode = cassette_mode(chosen, run.cassette)
        return dataclasses.replace(run, mode=mode), record_mode

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


def finding_text(finding: Finding) -> str:
    """A finding as every text output shows it (`Finding.line`)."""
    return finding.line()


def _shown_path(path: str) -> str:
    """A path relative to the current directory when it is below it, as the user typed it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


# --- fixtures for a project's own tests --------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # Fixture teardown needs to know whether the test failed: a failed test keeps its old cassette
    # and is not also blamed for the answers it never got to use.
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    _redact_report(report)
    return report


def _redact_report(report: pytest.TestReport) -> None:
    """A failure's text and captured output go to the terminal and to --junitxml: never the key.

    An agent's error message can quote the key it was given; the report is rewritten only when
    something was redacted, so every other failure keeps pytest's own formatting.
    """
    if report.longrepr is not None:
        text = str(report.longrepr)
        clean = redact(text)
        if clean != text:
            report.longrepr = clean
    report.sections = [(title, redact(content)) for title, content in report.sections]


def _test_failed(item: pytest.Item) -> bool:
    reports = item.stash.get(_REPORTS, {})
    return any(r.failed for r in reports.values())


def _marker_kwargs(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("harness")
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(MARKER_KEYS))
    if marker.args or unknown:
        given = ", ".join([repr(a) for a in marker.args] + unknown)
        raise pytest.UsageError(
            f"{request.node.nodeid}: @pytest.mark.harness takes keywords {', '.join(MARKER_KEYS)} only (got {given})"
        )
    return dict(marker.kwargs)


@pytest.fixture
def harness_record_mode(request: pytest.FixtureRequest) -> RecordMode:
    """The record mode for this test: command line, then ini, then the `harness` marker, then `none`."""
    config = request.config
    return resolve_record_mode(
        config.getoption("harness_record_mode"),
        _ini_record_mode(config),
        _marker_kwargs(request).get("record_mode"),
    )


def default_cassette(request: pytest.FixtureRequest) -> Path:
    """`cassettes/<module>/<test name>.yaml` beside the test module, as pytest-recording names them."""
    name = request.node.name
    if request.cls is not None:
        name = f"{request.cls.__name__}.{name}"
    safe = re.sub(r"[^\w.\-\[\]]", "_", name)
    return request.path.parent / "cassettes" / request.path.stem / f"{safe}.yaml"


def _relative_to_test(request: pytest.FixtureRequest, value: str | Path) -> Path:
    path = Path(value)
    return path if path.is_absolute() else request.path.parent / path


@pytest.fixture
def harness_session(request: pytest.FixtureRequest, harness_record_mode: RecordMode) -> Iterator[Session]:
    """The transport behind `harness_client`: the marker's scripted model, or the test's cassette.

    On teardown it settles like a run: a recorded cassette is written, and replayed or scripted answers
    the test left unused fail it (UnplayedInteractions) unless the test already failed.
    """
    from .transport import open_session

    kwargs = _marker_kwargs(request)
    script = kwargs.get("script")
    given_cassette = kwargs.get("cassette")
    node = request.node.nodeid
    source = _record_mode_source(request)
    if script is not None:
        if isinstance(script, (str, Path)):
            script = _relative_to_test(request, script)
        cassette = _relative_to_test(request, given_cassette) if given_cassette is not None else None
        # The script always answers; open_session decides from the record mode whether the cassette
        # is (re)written from it.
        session = open_session("scripted", script=script, cassette=cassette,
                               record_mode=harness_record_mode if cassette is not None else None)
    else:
        cassette = _relative_to_test(request, given_cassette) if given_cassette is not None else default_cassette(request)
        mode, record_mode = cassette_mode(harness_record_mode, cassette)
        if mode == "replay" and not cassette.exists():
            # pytrace=False: the user's setup is wrong, not the plugin; its traceback would only hide the advice.
            pytest.fail(
                f"no cassette at {cassette} (record mode {harness_record_mode!r}, {source}); record it with "
                f"`pytest {node} --harness-record-mode=once` (calls the API, needs ANTHROPIC_API_KEY), point "
                "@pytest.mark.harness(cassette=...) at one, or give @pytest.mark.harness(script=[...]) to answer "
                "from a scripted model",
                pytrace=False,
            )
        opened: Session | None = None
        try:
            opened = open_session(mode, cassette=cassette, record_mode=record_mode, rerecord_hint=_rerecord_hint(node))
        except MissingApiKey:
            pass  # failed below, outside the handler: "During handling of the above exception" is noise here
        if opened is None:
            pytest.fail(
                f"ANTHROPIC_API_KEY is not set, and record mode {harness_record_mode!r} ({source}) would record "
                f"{cassette} from the live API. Set it to record; or run offline: "
                f"`--harness-record-mode=none` replays {'it' if cassette.exists() else 'existing cassettes only'}, "
                "and @pytest.mark.harness(script=[...], cassette=...) records from a scripted model",
                pytrace=False,
            )
        session = opened
    try:
        yield session
    finally:
        failed = _test_failed(request.node)
        try:
            session.close(run_failed=failed)
        except UnplayedInteractions:
            # Replay still counts unplayed answers after a failed run; the test's own failure is the news.
            if not failed:
                raise


@pytest.fixture
def harness_client(harness_session: Session) -> anthropic.Anthropic:
    """An `anthropic.Anthropic` bound to the test's cassette (default `cassettes/<module>/<test>.yaml`)
    or, with `@pytest.mark.harness(script=[...])`, to a scripted model. For async code use
    `harness_session.async_client()`."""
    return harness_session.client()


class TraceOf:
    """Calling it gives the trace of everything that went through the test's harness clients so far."""

    def __init__(self, session: Session, source: str) -> None:
        self._session = session
        self._source = source

    def __call__(self, *, whole_run: bool = False) -> Trace:
        """`whole_run=True` when the test ran a whole agent loop, so what is missing at the end is an error."""
        from .trace import build_trace

        return build_trace(list(self._session.exchanges), self._source, whole_run=whole_run)


@pytest.fixture
def harness_trace(request: pytest.FixtureRequest, harness_session: Session) -> TraceOf:
    """A callable: `harness_trace()` is the trace of what ran through `harness_client` until now."""
    return TraceOf(harness_session, request.node.nodeid)


@pytest.fixture
def scripted_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., ScriptedModel]]:
    """A factory: `scripted_model([{"text": "Hi"}])` gives a `ScriptedModel` (`.client()`, `.serve()`).

    Every model made is checked at teardown with `assert_complete()`, so steps the code under test
    never asked for fail the test, unless it already failed for another reason.
    """
    from .transport.scripted import ScriptedModel

    made: list[ScriptedModel] = []

    def make(script: Any, **options: Any) -> ScriptedModel:
        if isinstance(script, (str, Path)):
            script = _relative_to_test(request, script)
        model = ScriptedModel(script, **options)
        made.append(model)
        return model

    yield make
    if not _test_failed(request.node):
        for model in made:
            model.assert_complete()


# --- assertion helpers -----------------------------------------------------------------------


def _as_trace(trace: Trace | Callable[[], Trace]) -> Trace:
    from .trace._model import Trace

    return trace if isinstance(trace, Trace) else trace()


def assert_no_violations(
    trace: Trace | Callable[[], Trace],
    disabled: Iterable[str] = (),
    *,
    options: Mapping[str, Any] | None = None,
    whole_run: bool | None = None,
    warnings: bool = False,
) -> list[Finding]:
    """Fail with every error finding of the trace (`CODE thread T, step S: reason`); return all findings.

    `disabled` are rule codes not checked; `warnings=True` fails on warnings too.
    """
    __tracebackhide__ = True  # the failure points at the user's assert line, not at this helper
    from .checks._registry import check_trace

    actual = _as_trace(trace)
    findings = check_trace(actual, disabled=disabled, options=dict(options or {}), whole_run=whole_run)
    failing = [f for f in findings if f.severity == "error" or warnings]
    if failing:
        listed = "\n".join(f"  {finding_text(f)}" for f in failing)
        raise AssertionError(f"{len(failing)} violation(s) in {actual.source}:\n{listed}")
    return findings


def assert_expectations(
    trace: Trace | Callable[[], Trace],
    expect: Mapping[str, Any] | None = None,
    *,
    outcome: Outcome | str | None = None,
    disabled: Iterable[str] = (),
    options: Mapping[str, Any] | None = None,
    **keys: Any,
) -> None:
    """Fail unless the trace meets expectations written like a scenario's `expect:` mapping.

    `assert_expectations(harness_trace, tools_called={"calls": [{"name": "get_customer"}]}, max_steps=3,
    outcome="Refund issued.")`: a string `outcome` is the final text of a completed run; None takes the
    trace's own outcome. Unknown keys fail with the valid ones, as in a scenario file.
    """
    __tracebackhide__ = True
    from pydantic import ValidationError

    from .checks._registry import check_trace
    from .cost import cost_of_trace
    from .run import evaluate, usage_of
    from .scenario import Expect
    from .trace._model import Outcome

    actual = _as_trace(trace)
    try:
        expected = Expect.model_validate({**dict(expect or {}), **keys})
    except ValidationError as exc:
        valid = ", ".join(Expect.model_fields)
        raise UsageError(f"assert_expectations: not a scenario `expect` (valid keys: {valid}):\n{exc}") from None
    if isinstance(outcome, str):
        outcome = Outcome(status="completed", final_text=outcome)
    findings = check_trace(actual, disabled=disabled, options=dict(options or {}))
    usage = usage_of(actual)
    results = evaluate(expected, trace=actual, outcome=outcome or actual.outcome, findings=findings, usage=usage,
                       cost_usd=cost_of_trace(actual))
    failed = [r for r in results if not r.passed]
    if failed:
        listed = "\n".join(f"  expect {r.name}: {r.message}" for r in failed)
        raise AssertionError(f"{len(failed)} expectation(s) not met in {actual.source}:\n{listed}")


# --- end of session: merge, report, summary ----------------------------------------------------


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = _state(session.config)
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
            _merge_workers(state)
        elif state.results_path is not None and state.writer is None:
            from .results._store import write_results

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


def _merge_workers(state: _State) -> None:
    from .results._merge import merge_results
    from .results._store import write_results

    files = [f for f in state.worker_files if f.exists()]
    state.results = merge_results(files, warnings=state.warnings) if files else []
    if state.results_path is not None:
        write_results(state.results_path, state.results)
    # The merged file holds every line; worker files left beside it would be merged twice by a later glob.
    for file in files:
        file.unlink(missing_ok=True)


def write_report(results: list[RunResult], out_dir: Path) -> Path:
    """The HTML report of the runs, as `harness report` writes it; needs the report package."""
    try:
        from .report import build_report
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
    state = _state(config)
    if state.worker_id is not None:
        return
    if not (state.results or state.problems or state.warnings or state.notes):
        return
    write = terminalreporter.write_line
    terminalreporter.section("harness")
    if state.results:
        for line in summary_lines(state.results):
            write(line)
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
