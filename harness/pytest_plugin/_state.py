"""What the plugin keeps for one pytest session, in the config's stash (so pytester's inner runs stay apart)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..cost import PriceTable
    from ..results._model import RunResult
    from ..results._store import ResultsWriter

DEFAULT_SCENARIO_GLOB = ["scenarios/*.yaml"]


class State:
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
        self.prices: PriceTable | None = None
        """`--harness-prices`: what the scenario runs are priced with; None: the shipped table."""
        self.unpriced_said = False
        """Under xdist, the controller has said which models of the paid runs have no price (or that none lack one)."""
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

    def check_results_path(self) -> None:
        """`--harness-results` naming a file the harness did not write (a scenario, maybe one this session
        collects) is one usage error before anything runs, as `harness run --results` refuses it."""
        if self.results_path is None or self.worker_id is not None:
            return
        from .._output import refuse_foreign_results
        from ..errors import HarnessError

        try:
            refuse_foreign_results(self.results_path)
        except HarnessError as exc:
            raise pytest.UsageError(f"--harness-results: {exc}") from None

    def check_report_dir(self) -> None:
        """`--harness-report DIR` whose index.html the harness did not write (a site's own page) is one usage
        error before anything runs, as `harness run --report` refuses it."""
        if self.report_dir is None or self.worker_id is not None:
            return
        from .._output import PAGE_START, refuse_foreign
        from ..errors import HarnessError

        try:
            refuse_foreign(self.report_dir / "index.html", "a harness report page", PAGE_START)
        except HarnessError as exc:
            raise pytest.UsageError(f"--harness-report: {exc}") from None

    def load_prices(self) -> None:
        """Read `--harness-prices` once for the session: a broken file is one usage error naming its line,
        before any test runs. The price table is loaded only when asked for (it brings pydantic along)."""
        path = self.config.getoption("harness_prices")
        if not path:
            return
        from ..cost import load_prices
        from ..errors import HarnessError

        try:
            self.prices = load_prices(path)
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None

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
            from ..results._store import ResultsWriter

            # One session, one results file: a file left by an earlier session is started over.
            self.own_path.unlink(missing_ok=True)
            self.writer = ResultsWriter(self.own_path)
        self.writer.write(result)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


STATE = pytest.StashKey[State]()
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


def state_of(config: pytest.Config) -> State:
    return config.stash[STATE]


def worker_file(base: Path, worker_id: str) -> Path:
    """`results.jsonl` -> `results.gw0.jsonl`: the file one xdist worker writes."""
    return base.with_name(f"{base.stem}.{worker_id}{base.suffix or '.jsonl'}")
