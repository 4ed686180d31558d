"""Load scenario files from YAML, keeping the line of every key so errors can point at it.

A scenario that does not validate raises `ScenarioError` naming the file, the line, the key path
(`tools[1].fixture.ouptut`) and, for an unknown key, the valid keys of that mapping.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._hints import closest
from .._strict import explain, kind
from .._yaml import Loc, format_loc, parse_yaml, read_text
from ..errors import ScenarioError, ScriptError
from ..scores._registry import EntryError, ScoreEntry, parse_entry
from ..trace._model import HARNESS_ROLES
from ..transport.scripted import Script, parse_script
from ._cases import Case, Renderer, TemplateProblem, inline_cases, read_dataset
from ._model import Scenario

SUFFIXES = (".yaml", ".yml")

@dataclass(frozen=True)
class ScenarioFile:
    """A validated scenario and where it came from."""

    path: Path
    scenario: Scenario
    lines: dict[Loc, int] = field(default_factory=dict, repr=False)
    """Line (1-based) of every key and list item, by its path in the document."""
    case: Case | None = None
    """The case this scenario was rendered for (see `case_files`); None for the file as written."""
    data: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    """The document as written, kept for a scenario with cases to render each of them from."""
    score_entries: tuple[ScoreEntry, ...] = ()
    """The `score:` entries checked against the scorers registered (empty until a case is rendered,
    for a scenario with cases: its entries may hold templates)."""

    @property
    def has_cases(self) -> bool:
        return self.scenario.cases is not None or self.scenario.dataset is not None

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def name(self) -> str:
        return self.scenario.name or self.path.stem

    def line_of(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest ancestor the file spells out."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(loc[:end])
            if line is not None:
                return line
        return None

    def error(self, loc: Loc, problem: str) -> ScenarioError:
        """A ScenarioError about the value at `loc` in this file (and about its case, when it has one)."""
        if self.case is not None:
            problem = f"{problem} (case {self.case.id!r}, {self.case.origin})"
        return ScenarioError(str(self.path), problem, line=self.line_of(loc), key=format_loc(loc) or None)

    def resolve(self, relative: str) -> Path:
        """A path written in the scenario, relative to the scenario file."""
        path = Path(relative)
        return path if path.is_absolute() else Path(os.path.normpath(self.path.parent / path))


def load_scenario(path: str | Path) -> ScenarioFile:
    """Read and validate one scenario file; raises ScenarioError pointing at the first problem."""
    path = Path(path)
    return parse_scenario(read_text(path, error=ScenarioError), path)


def parse_scenario(text: str, path: str | Path) -> ScenarioFile:
    """Validate a scenario given as YAML text; `path` is where it is said to come from."""
    path = Path(path)
    data, lines = _parse_yaml(text, path)
    if data is None:
        raise ScenarioError(str(path), "the file is empty; a scenario needs at least a prompt", line=1)
    if not isinstance(data, dict):
        raise ScenarioError(str(path), f"a scenario is a mapping of keys, not {kind(data)}", line=1)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        where = ScenarioFile(path=path, scenario=Scenario.model_construct(), lines=lines)
        raise explain(exc, data, Scenario, source=str(path), error=ScenarioError,
                      line_of=lambda loc: where.line_of(loc) or 1, problem=_problem) from None
    source = ScenarioFile(path=path, scenario=scenario, lines=lines,
                          data=data if scenario.cases is not None or scenario.dataset is not None else None)
    if source.has_cases:
        if scenario.dataset is not None and not source.resolve(scenario.dataset).is_file():
            raise source.error(("dataset",),
                               f"no dataset file at {source.resolve(scenario.dataset)} (paths "
                               "are relative to this file)")
    else:
        _check_script(source)
        source = _with_scores(source)
    return source


def _with_scores(source: ScenarioFile) -> ScenarioFile:
    """The scenario with its `score:` entries checked against the registry, and `expect.min_score`
    against the scores' names."""
    entries: list[ScoreEntry] = []
    for index, written in enumerate(source.scenario.score):
        try:
            entries.append(parse_entry(written))
        except EntryError as exc:
            raise source.error(("score", index, *exc.loc), exc.problem) from None
    names = [entry.name for entry in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        index = names.index(twice[0], names.index(twice[0]) + 1)
        raise source.error(("score", index),
                           f"two scores are named {twice[0]!r}; give one of them `name:` to tell them apart")
    min_score = source.scenario.expect.min_score
    if min_score is not None and not entries:
        raise source.error(("expect", "min_score"), "min_score needs scores: list scorers under `score:`")
    if isinstance(min_score, dict):
        for key in min_score:
            if key != "mean" and key not in names:
                raise source.error(("expect", "min_score", key),
                                   f"no score is named {key!r}; the scores are: "
                                   f"{', '.join(names)} (or `mean` of them all)")
    return dataclasses.replace(source, score_entries=tuple(entries))


def case_files(source: ScenarioFile) -> list[ScenarioFile]:
    """One scenario per case, its templates rendered with the case's vars and validated again.

    A scenario without cases is its own only case. Raises ScenarioError naming the scenario's line
    and the case (with its dataset file, line and row) for a missing variable or a rendered value
    that does not validate."""
    scenario = source.scenario
    if not source.has_cases:
        return [source]
    if scenario.cases is not None:
        cases = inline_cases(scenario.cases)
    else:
        assert scenario.dataset is not None
        dataset = source.resolve(scenario.dataset)
        cases = read_dataset(dataset, str(dataset))
    seen: dict[str, Case] = {}
    renderer = Renderer()
    assert source.data is not None
    written = {k: v for k, v in source.data.items() if k not in ("cases", "dataset")}
    files: list[ScenarioFile] = []
    for case in cases:
        first = seen.setdefault(case.id, case)
        if first is not case:
            raise ScenarioError(str(source.path),
                                f"case id {case.id!r} is used twice: {first.origin} and {case.origin}; "
                                "run ids must tell cases apart",
                                line=source.line_of(("dataset",) if scenario.dataset else ("cases",)))
        rendered_source = ScenarioFile(path=source.path, scenario=scenario, lines=source.lines, case=case)
        try:
            data = renderer.render_data(written, case.vars)
        except TemplateProblem as exc:
            raise rendered_source.error(exc.loc, exc.problem) from None
        try:
            rendered = Scenario.model_validate(data)
        except ValidationError as exc:
            error = explain(exc, data, Scenario, source=str(source.path), error=ScenarioError,
                            line_of=lambda loc: source.line_of(loc) or 1, problem=_problem)
            raise ScenarioError(error.path, f"{error.problem} (case {case.id!r}, {case.origin})", line=error.line,
                                key=error.key) from None
        one = ScenarioFile(path=source.path, scenario=rendered, lines=source.lines, case=case)
        _check_script(one)
        files.append(_with_scores(one))
    return files


def _check_script(source: ScenarioFile) -> None:
    """Validate the scripted model's steps now, so a typo in them points into this file."""
    script = source.scenario.script
    if isinstance(script, str):
        if not source.resolve(script).is_file():
            raise source.error(("script",),
                               f"no script file at {source.resolve(script)} (paths are relative to this file)")
        return
    if script is None:
        return
    try:
        parse_script(script, source=str(source.path))
    except ScriptError as exc:
        step, _, key = (exc.key or "").partition(": ")
        loc: Loc = ("script",)
        if step.startswith("step "):
            loc += (int(step.removeprefix("step ")) - 1,)
            loc += tuple(part for part in key.replace("[", ".").replace("]", "").split(".") if part)
        loc = tuple(int(p) if isinstance(p, str) and p.isdigit() else p for p in loc)
        raise source.error(loc, exc.problem) from None


def check_script_tools(source: ScenarioFile, script: Script, *, own_tools: bool = False) -> None:
    """Every tool a scripted `tool_use` names is one the scenario declares: a misspelt name in the
    script (`lookup_ordr`) would otherwise reach the agent as a call to an unknown tool and be
    reported as the agent's fault. Raises a ScenarioError (or ScriptError, for a script file) at
    the step, with the nearest declared name.

    Not checked when the scenario expects T006 (it tests a call to an unknown tool), nor when it
    declares no tools and `own_tools` says its agent brings its own."""
    scenario = source.scenario
    declared = [tool.name for tool in scenario.tools]
    if "T006" in scenario.expect.findings or (not declared and own_tools):
        return
    for step in script:
        if step.thread in HARNESS_ROLES:
            continue  # the judge's or the simulated user's answer: no tool of the agent's
        for name in step.tool_names:
            if name in declared:
                continue
            guess = closest(name, declared)
            problem = (
                f"tool_use names {name!r}, a tool this scenario does not declare"
                + (f" (did you mean {guess!r}?)" if guess else "")
                + (f"; declared tools: {', '.join(declared)}" if declared else "; it declares no `tools`")
                + ". A scripted call to an unknown tool is what T006 tests: say so with `expect: {findings: [T006]}`"
            )
            if isinstance(scenario.script, str):
                raise ScriptError(script.source, f"{problem} ({source.path})", line=step.line,
                                  key=f"step {step.number}")
            raise source.error(_name_loc(scenario.script, step.number - 1, name), problem)


def _name_loc(steps: list[dict[str, Any]] | None, index: int, name: str) -> Loc:
    """Where, in an inline script, step `index` spells the tool name `name` (the step itself failing that)."""
    loc: Loc = ("script", index)
    found = _find_name(steps[index] if steps else None, name)
    return loc + found if found is not None else loc


def _find_name(value: Any, name: str) -> Loc | None:
    if isinstance(value, dict):
        if value.get("name") == name:
            return ("name",)
        items: Iterable[tuple[str | int, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _find_name(item, name)
        if found is not None:
            return (key, *found)
    return None


def find_scenarios(paths: Iterable[str | Path]) -> list[Path]:
    """Scenario files named by `paths`: files as given, directories searched recursively, sorted.

    A folder's cassettes are not scenarios: they are told apart by content, not by place, so a
    project may keep `cassettes/` under `scenarios/`.
    """
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file() and not is_cassette(p))
            )
        elif path.exists():
            if is_cassette(path):
                raise ScenarioError(str(path), "this is a cassette (recorded interactions), not a scenario")
            found.append(path)
        else:
            raise ScenarioError(str(path), "no such file or directory")
    return found


def is_cassette(path: Path) -> bool:
    """The file is a vcrpy cassette: a top-level `interactions` key, which no scenario has.

    A line scan, not a parse: cassettes are large, and this runs on every file of a scenarios folder.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return False
    if path.suffix == ".json":
        return b'"interactions"' in head
    return any(line.startswith((b"interactions:", b'"interactions":')) for line in head.splitlines())


def _parse_yaml(text: str, path: Path) -> tuple[Any, dict[Loc, int]]:
    document = parse_yaml(text, str(path), error=ScenarioError)
    return document.data, document.index()


def _problem(error: Any, loc: Loc) -> str | None:
    if loc == ("prompt",) and error["type"] == "string_type" and isinstance(error.get("input"), list):
        # A list here is several user turns: say which key takes them.
        return "prompt is one user message (a string); for several user turns, one after another, use `turns`"
    return None
