"""Scenarios x matrix cells -> the list of runs to make, each with its model, effort, repeat and cassette.

The command line's --model/--effort/--repeat/--mode replace the scenario's own values. Cells that
would share one cassette are refused before anything runs, since they would overwrite each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._modes import Mode
from ..errors import HarnessError
from ..scenario import ScenarioFile, case_files, find_scenarios, is_cassette, load_scenario

SINGLE_CASSETTE = "../cassettes/{stem}.yaml"
CELL_CASSETTE = "../cassettes/{stem}/{model}-{effort}-r{repeat}.yaml"
CASE_CASSETTE = "../cassettes/{stem}/{case}.yaml"
CASE_CELL_CASSETTE = "../cassettes/{stem}/{case}/{model}-{effort}-r{repeat}.yaml"


@dataclass(frozen=True)
class Cell:
    """One point of the matrix."""

    model: str
    effort: str | None
    repeat: int
    """0-based."""

    @property
    def effort_label(self) -> str:
        return self.effort or "default"

    def label(self, repeats: int) -> str:
        """`claude-sonnet-5-high`, with `-r<n>` when the cell is repeated."""
        text = f"{self.model}-{self.effort_label}"
        return text + (f"-r{self.repeat}" if repeats > 1 else "")


@dataclass(frozen=True)
class PlannedRun:
    """One run to make: a scenario in one cell, in one mode."""

    source: ScenarioFile
    cell: Cell
    repeats: int
    mode: Mode
    cassette: Path

    @property
    def scenario(self) -> str:
        return self.source.name

    @property
    def case(self) -> str | None:
        """The case's id, for a scenario with cases."""
        return self.source.case.id if self.source.case is not None else None

    @property
    def run_id(self) -> str:
        case = f"[{self.case}]" if self.case is not None else ""
        return f"{self.scenario}{case}[{self.cell.model}-{self.cell.effort_label}-r{self.cell.repeat}]"

    @property
    def label(self) -> str:
        case = f" [{self.case}]" if self.case is not None else ""
        return f"{self.scenario}{case} [{self.cell.label(self.repeats)}]"


@dataclass(frozen=True)
class Overrides:
    """What the command line says instead of the scenario."""

    models: tuple[str, ...] = ()
    efforts: tuple[str | None, ...] = ()
    repeats: int | None = None
    mode: Mode | None = None


MAX_CELLS = 100_000
"""The most runs one scenario (one case of it) may plan: models x efforts x repeats. Every planned run is
held in memory and its cassette path checked before the first starts, so a mistyped `--repeat
99999999999999999999` planned in silence until the process was killed for its memory (100,000 plan in
about 15 s, ten times the 10,000-run reports the harness is measured on)."""


def cells_of(source: ScenarioFile, overrides: Overrides = Overrides()) -> tuple[list[Cell], int]:
    """The scenario's cells (models x efforts x repeats) and its number of repeats."""
    scenario = source.scenario
    matrix = scenario.matrix
    models: list[str] = list(overrides.models) or (list(matrix.models) if matrix
                                                   and matrix.models else [scenario.model])
    efforts: list[str | None] = (
        list(overrides.efforts) or (list(matrix.efforts) if matrix and matrix.efforts else [scenario.effort])
    )
    repeats = overrides.repeats or (matrix.repeats if matrix else 1)
    count = len(models) * len(efforts) * repeats
    if count > MAX_CELLS:
        said = f"--repeat {repeats}" if overrides.repeats else f"repeats: {repeats}"
        raise source.error(("matrix", "repeats") if matrix and not overrides.repeats else (),
                           f"{len(models)} model(s) x {len(efforts)} effort(s) x {said} is {count:,} runs; "
                           f"at most {MAX_CELLS:,} are planned for one scenario (each case); lower the repeats")
    cells = [Cell(m, e, r) for m in models for e in efforts for r in range(repeats)]
    return cells, repeats


def mode_replaced(option: str, mode: str, sources: Iterable[ScenarioFile]) -> str | None:
    """The one line saying that `option` (`--mode replay`) replaced the `mode:` some scenarios set, or
    None when none sets another. Precedence: the command line, then the scenario's `mode`, then replay."""
    replaced = [s for s in sources if "mode" in s.scenario.model_fields_set and s.scenario.mode != mode]
    if not replaced:
        return None
    shown = ", ".join(f"{s.name} ({s.scenario.mode})" for s in replaced[:5])
    more = f" and {len(replaced) - 5} more" if len(replaced) > 5 else ""
    return (f"{option} {mode} wins over the `mode:` of {len(replaced)} scenario(s): {shown}{more}; "
            f"every run is made in mode {mode}")


def load_all(paths: Iterable[str | Path]) -> tuple[list[ScenarioFile], list[HarnessError]]:
    """Every scenario under `paths`, and one error per file that does not load (the others still run)."""
    sources: list[ScenarioFile] = []
    problems: list[HarnessError] = []
    for given in paths:
        try:
            files = find_scenarios([given])
        except HarnessError as exc:
            problems.append(exc)
            continue
        for path in files:
            try:
                sources.append(load_scenario(path))
            except HarnessError as exc:
                problems.append(exc)
    return sources, problems


def plan(sources: list[ScenarioFile],
         overrides: Overrides = Overrides()) -> tuple[list[PlannedRun], list[HarnessError]]:
    """Every run of every scenario, scenario by scenario, cell by cell; and one error per scenario
    that cannot be planned (its runs are left out, the others' are kept)."""
    runs: list[PlannedRun] = []
    problems: list[HarnessError] = []
    names: dict[str, ScenarioFile] = {}
    scenario_files = frozenset(source.path.resolve() for source in sources)
    for source in sources:
        first = names.setdefault(source.name, source)
        if first is not source:
            # Run ids, and so result lines, would collide.
            problems.append(
                source.error(("name",),
                             f"scenario name {source.name!r} is also used by {first.path}; give "
                             "each scenario its own `name`")
            )
            continue
        try:
            runs.extend(plan_one(source, overrides, scenario_files=scenario_files))
        except HarnessError as exc:
            problems.append(exc)
    return runs, problems


def plan_one(
    source: ScenarioFile, overrides: Overrides = Overrides(), *, scenario_files: frozenset[Path] = frozenset()
) -> list[PlannedRun]:
    """The runs of one scenario. Refused before anything runs: a matrix value that would take a
    cassette path out of its folder, and a cassette path that is a scenario (this one or one of
    `scenario_files`) or any existing file that is not a cassette, which a recording would replace."""
    cells, repeats = cells_of(source, overrides)
    for cell in cells:
        _check_path_part(source, "model", cell.model)
        if cell.effort is not None:
            _check_path_part(source, "effort", cell.effort)
    scenario = source.scenario
    if source.has_cases:
        template = scenario.cassette or (CASE_CASSETTE if len(cells) == 1 else CASE_CELL_CASSETTE)
    else:
        template = scenario.cassette or (SINGLE_CASSETTE if len(cells) == 1 else CELL_CASSETTE)
    if "{name" in template:
        _check_path_part(source, "name", source.name)
    mode = overrides.mode or scenario.mode
    if mode == "scripted" and scenario.script is None:
        raise source.error(("mode",), "mode scripted needs a `script` (inline steps or a path) for the scripted model")
    runs: list[PlannedRun] = []
    by_cassette: dict[Path, PlannedRun] = {}
    for one in case_files(source):
        for cell in cells:
            cassette = source.resolve(_render(one, template, cell))
            run = PlannedRun(source=one, cell=cell, repeats=repeats, mode=mode, cassette=cassette)
            other = by_cassette.setdefault(cassette, run)
            if other is not run:
                raise source.error(
                    ("cassette",),
                    f"runs {other.label} and {run.label} would share the cassette {cassette}; put "
                    + ("{case}, " if source.has_cases else "")
                    + "{model}, {effort} and {repeat} in `cassette` to give each its own",
                )
            _check_cassette_path(source, cassette, scenario_files)
            runs.append(run)
    return runs


def path_part_problem(key: str, value: str) -> str | None:
    """Why `value` cannot be part of a file name, or None. Matrix values (and the scenario's name,
    where `cassette` uses it) become parts of file names: none may name a folder or climb out of one."""
    if not value or "/" in value or "\\" in value or value.startswith(".") or "\0" in value:
        return (f"{key} {value!r} cannot be part of a file name (no '/', '\\', leading '.' or '..'); "
                "it names the run's cassette and results")
    return None


def _check_path_part(source: ScenarioFile, key: str, value: str) -> None:
    problem = path_part_problem(key, value)
    if problem is not None:
        raise source.error(("matrix", f"{key}s") if source.scenario.matrix and key != "name" else (key,), problem)


def _check_cassette_path(source: ScenarioFile, cassette: Path, scenario_files: frozenset[Path]) -> None:
    resolved = cassette.resolve()
    if resolved == source.path.resolve() or resolved in scenario_files:
        raise source.error(
            ("cassette",),
            f"the cassette path {cassette} is a scenario file: recording would replace it. "
            "Put cassettes in a file of their own, e.g. `cassette: ../cassettes/{stem}.yaml`",
        )
    if cassette.is_dir():
        raise source.error(("cassette",), f"the cassette path {cassette} is a folder; name a file in it")
    if cassette.exists() and not is_cassette(cassette):
        raise source.error(
            ("cassette",),
            f"{cassette} exists and is not a cassette (no `interactions`): the harness never writes over a file "
            "it did not create. Move that file or name another cassette path",
        )


def _render(source: ScenarioFile, template: str, cell: Cell) -> str:
    fields: dict[str, Any] = {
        "stem": source.stem,
        "name": source.name,
        "model": cell.model,
        "effort": cell.effort_label,
        "repeat": cell.repeat,
    }
    if source.case is not None:
        fields["case"] = source.case.id
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError) as exc:
        placeholders = ("{stem}, {name}, " + ("{case}, " if source.case is not None else "")
                        + "{model}, {effort}, {repeat}")
        raise source.error(("cassette",), f"bad placeholder in {template!r} ({exc}); use {placeholders}") from None

