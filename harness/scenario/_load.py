"""Load scenario files from YAML, keeping the line of every key so errors can point at it.

A scenario that does not validate raises `ScenarioError` naming the file, the line, the key path
(`tools[1].fixture.ouptut`) and, for an unknown key, the valid keys of that mapping.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, Tag, ValidationError

from .._hints import closest
from .._yaml import Loc, format_loc, parse_yaml, read_text
from ..errors import ScenarioError, ScriptError
from ..transport.scripted import parse_script
from ._model import Scenario

SUFFIXES = (".yaml", ".yml")

@dataclass(frozen=True)
class ScenarioFile:
    """A validated scenario and where it came from."""

    path: Path
    scenario: Scenario
    lines: dict[Loc, int] = field(default_factory=dict, repr=False)
    """Line (1-based) of every key and list item, by its path in the document."""

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
        """A ScenarioError about the value at `loc` in this file."""
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
        raise ScenarioError(str(path), f"a scenario is a mapping of keys, not a {type(data).__name__}", line=1)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _explain(exc, data, lines, path) from None
    source = ScenarioFile(path=path, scenario=scenario, lines=lines)
    _check_script(source)
    return source


def _check_script(source: ScenarioFile) -> None:
    """Validate the scripted model's steps now, so a typo in them points into this file."""
    script = source.scenario.script
    if isinstance(script, str):
        if not source.resolve(script).is_file():
            raise source.error(("script",), f"no script file at {source.resolve(script)} (paths are relative to this file)")
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


def _explain(exc: ValidationError, data: Any, lines: dict[Loc, int], path: Path) -> ScenarioError:
    """Turn pydantic's errors into one ScenarioError: the first problem in the file, then the others."""
    by_loc: dict[Loc, list[str]] = {}
    for error in exc.errors(include_url=False):
        loc = _data_loc(error["loc"], data)
        # A value that fits no member of a union gets one error per member: say them as one.
        texts = by_loc.setdefault(loc, [])
        text = _problem(error, loc, tags=frozenset(str(p) for p in error["loc"]) - frozenset(str(p) for p in loc))
        if text not in texts:
            texts.append(text)
    problems = sorted(((_line(loc, lines), format_loc(loc), "; or ".join(texts)) for loc, texts in by_loc.items()),
                      key=lambda p: p[0])
    line, key, problem = problems[0]
    for other_line, other_key, other in problems[1:]:
        problem += f"\n  {path}:{other_line}: {other_key + ': ' if other_key else ''}{other}"
    return ScenarioError(str(path), problem, line=line, key=key or None)


def _data_loc(loc: tuple[Any, ...], data: Any) -> Loc:
    """Pydantic's error location with union-member tags removed: only steps that exist in the data,
    plus a last step naming a missing or unknown key."""
    kept: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        if isinstance(current, dict) and part in current:
            current = current[part]
            kept.append(part)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
            kept.append(part)
        elif index == len(loc) - 1 and isinstance(current, dict):
            kept.append(part)
    return tuple(kept)


def _line(loc: Loc, lines: dict[Loc, int]) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


def _problem(error: Any, loc: Loc, tags: frozenset[str] = frozenset()) -> str:
    """`tags`: the union members pydantic's location names (e.g. `persona user`), so that an unknown
    key lists the keys of the member that was tried, not of the union's first one."""
    kind = error["type"]
    if kind == "extra_forbidden":
        valid = _keys_at(loc[:-1], tags)
        hint = closest(str(loc[-1]), valid)
        problem = f"unknown key; valid keys: {', '.join(valid)}"
        return problem + (f" (did you mean {hint!r}?)" if hint else "")
    if kind == "missing":
        return "required key is missing"
    if loc == ("prompt",) and kind == "string_type" and isinstance(error.get("input"), list):
        # A list here is several user turns: say which key takes them.
        return "prompt is one user message (a string); for several user turns, one after another, use `turns`"
    message = str(error["msg"])
    # Our own validators raise ValueError; pydantic prefixes its text with "Value error, ".
    return message.removeprefix("Value error, ")


def _keys_at(loc: Loc, tags: frozenset[str] = frozenset()) -> list[str]:
    """The field names of the model that sits at `loc` in a Scenario document."""
    current: Any = Scenario
    for part in loc:
        current = _unwrap(current, tags)
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            current = info.annotation if info else None
        elif typing.get_origin(current) in (list, dict):
            current = typing.get_args(current)[-1]
        else:
            return []
    current = _unwrap(current, tags)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _unwrap(annotation: Any, tags: frozenset[str] = frozenset()) -> Any:
    """Optional[X] / X | None / Annotated[X, ...] -> X, preferring the union member tagged with one
    of `tags`, else a model or a container."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            tagged = [_strip(a) for a in typing.get_args(annotation) if _tag(a) in tags]
            if tagged:
                annotation = tagged[0]
                continue
            members = [_strip(a) for a in typing.get_args(annotation) if a is not type(None)]
            models = [a for a in members if isinstance(a, type) and issubclass(a, BaseModel)]
            containers = [a for a in members if typing.get_origin(a) in (list, dict)]
            annotation = (models or containers or members)[0]
        else:
            return annotation


def _tag(annotation: Any) -> str | None:
    """The discriminator tag of an `Annotated[X, Tag(...)]` union member, if any."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    return next((meta.tag for meta in typing.get_args(annotation)[1:] if isinstance(meta, Tag)), None)


def _strip(annotation: Any) -> Any:
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
