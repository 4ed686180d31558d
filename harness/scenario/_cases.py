"""A scenario's cases: read from `cases:` or a `dataset:` file, and rendered one scenario per case.

A case's vars fill the Jinja templates (`{{ name }}`) of the keys a case may change: prompt, turns,
system, tools, an inline script, the simulated user, expect and score. A template that is a whole value
(`amount: "{{ amount }}"`) gives the variable itself, so a number stays a number; any other
template gives text. A variable the case lacks is an error naming the scenario's line and the case
(with its dataset row), never an empty string.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jinja2

from .._yaml import Loc, decode, parse_yaml, read_bytes
from ..errors import ScenarioError

TEMPLATED = ("prompt", "turns", "system", "tools", "script", "user", "expect", "score")
"""The keys a case's vars are rendered into; the others (agent, model, matrix, mode...) are the
scenario's, the same for every case."""

DATASET_SUFFIXES = (".jsonl", ".csv", ".yaml", ".yml")

_WHOLE = re.compile(r"^\{\{(?P<expr>(?:(?!\}\}|\{\{).)*)\}\}$", re.DOTALL)
_NAME = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
_OTHER_SYNTAX = re.compile(r"\{[{%#]")
_JINJA_LITERALS = frozenset({"true", "false", "none", "True", "False", "None"})
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


@dataclass(frozen=True)
class Case:
    """One case, and where it was written (for errors)."""

    id: str
    vars: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    """`cases[2]` or `data/refunds.csv:4 (row 3)`: where a user finds this case."""


def read_dataset(path: Any, shown: str) -> list[Case]:
    """The cases of a dataset file; ScenarioError naming the file and line of a row that cannot be used."""
    from pathlib import Path

    path = Path(path)
    if path.suffix not in DATASET_SUFFIXES:
        raise ScenarioError(shown,
                            f"a dataset is a .jsonl, .csv or .yaml file, not {path.suffix or 'a file without suffix'}")
    hint = " (from a spreadsheet: CSV UTF-8)"
    text = decode(read_bytes(path, error=ScenarioError, what="dataset"), shown, error=ScenarioError, hint=hint)
    rows = (_jsonl(text, shown) if path.suffix == ".jsonl"
            else _csv(text, shown) if path.suffix == ".csv" else _yaml(text, shown))
    cases: list[Case] = []
    for number, (line, row) in enumerate(rows, start=1):
        where = f"{shown}:{line} (row {number})"
        cases.append(_case(row, number, where, lambda problem, line=line: ScenarioError(shown, problem, line=line)))
    if not cases:
        raise ScenarioError(shown, "the dataset has no rows; a dataset holds one case per row")
    return cases


def inline_cases(entries: list[Any]) -> list[Case]:
    """The cases written in the scenario (already validated by its model)."""
    return [Case(entry.id or str(n), dict(entry.vars), f"cases[{n - 1}]") for n, entry in enumerate(entries, start=1)]


def _case(row: Any, number: int, where: str, error: Any) -> Case:
    if not isinstance(row, dict):
        raise error(f"a dataset row is an object of variables (and an optional id), not a {type(row).__name__}")
    row = dict(row)
    raw_id = row.pop("id", None)
    if set(row) == {"vars"} and isinstance(row["vars"], dict):
        row = dict(row["vars"])
    bad = [k for k in row if not isinstance(k, str) or not k.isidentifier()]
    if bad:
        raise error(f"variable name {bad[0]!r} is not a name a template can use (letters, digits, _)")
    case_id = str(number) if raw_id in (None, "") else str(raw_id)
    if re.search(r"[\[\]/\\\x00]", case_id) or case_id.startswith(".") or len(case_id) > 120:
        raise error(f"case id {case_id!r} cannot be used: it is part of run ids and file names "
                    "(no [ ] / \\, no leading '.', at most 120 characters)")
    return Case(case_id, row, where)


def _jsonl(text: str, shown: str) -> Iterator[tuple[int, Any]]:
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            yield line, json.loads(content)
        except json.JSONDecodeError as exc:
            raise ScenarioError(shown, f"not a JSON object ({exc.msg.removesuffix(' at')}, column {exc.colno}); a "
                                ".jsonl dataset holds one JSON object a line", line=line) from None


def _csv(text: str, shown: str) -> Iterator[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        if not reader.fieldnames:
            return
        names = [n.strip() for n in reader.fieldnames]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ScenarioError(shown, f"column(s) named twice in the header: {', '.join(twice)}", line=1)
        reader.fieldnames = names
        start = reader.line_num + 1
        for row in reader:
            if None in row or any(value is None for value in row.values()):
                raise ScenarioError(shown, f"this row has {'more' if None in row else 'fewer'} cells than the header "
                                    f"has columns ({len(names)})", line=start)
            yield start, row
            start = reader.line_num + 1
    except csv.Error as exc:
        raise ScenarioError(shown, f"not valid CSV ({exc})", line=reader.line_num) from None


def _yaml(text: str, shown: str) -> Iterator[tuple[int, Any]]:
    document = parse_yaml(text, shown, error=ScenarioError)
    if not isinstance(document.data, list):
        raise ScenarioError(shown,
                            "a .yaml dataset is a list of cases (mappings of variables, with an optional id)", line=1)
    for index, row in enumerate(document.data):
        yield document.line_of((index,)) or 1, row


class TemplateProblem(Exception):
    """A template that cannot be rendered with a case's vars; `loc` is where in the scenario."""

    def __init__(self, loc: Loc, problem: str) -> None:
        super().__init__(problem)
        self.loc = loc
        self.problem = problem


class Renderer:
    """Renders the templated keys of a scenario's data, compiling each template once for every case."""

    def __init__(self) -> None:
        self._compiled: dict[str, Callable[..., Any]] = {}

    def render_data(self, data: dict[str, Any], variables: dict[str, Any]) -> dict[str, Any]:
        rendered = dict(data)
        for key in TEMPLATED:
            if key in data and not (key == "script" and isinstance(data[key], str)):
                rendered[key] = self._render(data[key], variables, (key,))
        return rendered

    def _render(self, value: Any, variables: dict[str, Any], loc: Loc) -> Any:
        if isinstance(value, str):
            return self._text(value, variables, loc) if ("{{" in value or "{%" in value) else value
        if isinstance(value, list):
            return [self._render(item, variables, (*loc, i)) for i, item in enumerate(value)]
        if isinstance(value, dict):
            return {k: self._render(v, variables, (*loc, k)) for k, v in value.items()}
        return value

    def _text(self, text: str, variables: dict[str, Any], loc: Loc) -> Any:
        compiled = self._compiled.get(text)
        if compiled is None:
            compiled = self._compile(text, loc)
            self._compiled[text] = compiled
        try:
            value = compiled(**variables)
            if isinstance(value, jinja2.Undefined):
                str(value)  # a StrictUndefined raises UndefinedError, naming the variable, when used
            return value
        except jinja2.UndefinedError as exc:
            known = ", ".join(sorted(variables)) or "none"
            raise TemplateProblem(loc, f"{exc.message}; this case's vars: {known}") from None
        except Exception as exc:  # noqa: BLE001 - a filter or expression failing on this case's values
            raise TemplateProblem(loc, f"the template fails for this case ({type(exc).__name__}: {exc})") from None

    def _compile(self, text: str, loc: Loc) -> Callable[..., Any]:
        names = _NAME.findall(text)
        if names and not _JINJA_LITERALS.intersection(names) and not _OTHER_SYNTAX.search(_NAME.sub("", text)):
            # Only `{{ name }}` placeholders: filled without building a Jinja context per case (the
            # bulk of the cost of a large dataset), with what Jinja would give.
            return _names_only(text, names)
        whole = _WHOLE.match(text)
        try:
            return (_ENV.compile_expression(whole.group("expr"), undefined_to_none=False) if whole
                    else _ENV.from_string(text).render)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateProblem(loc, f"not a valid template ({exc.message})") from None


def _names_only(text: str, names: list[str]) -> Callable[..., Any]:
    """A template of `{{ name }}` placeholders only: the variable itself when it is the whole text,
    else the text with each placeholder replaced by the variable as text (as Jinja renders it)."""
    whole = names[0] if len(names) == 1 and _NAME.fullmatch(text) else None

    def fill(**variables: Any) -> Any:
        for name in names:
            if name not in variables:
                raise jinja2.UndefinedError(f"'{name}' is undefined")
        if whole is not None:
            return variables[whole]
        return _NAME.sub(lambda found: str(variables[found.group(1)]), text)

    return fill
