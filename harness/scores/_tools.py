"""The tool-call scorer: precision, recall and F1 of the calls made against the calls expected.

A made call matches an expected one when the names are equal and every argument the expected call
names compares equal by its comparator; each call matches at most one other (the largest pairing,
so that partial inputs cannot make a greedy pairing miss a valid one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from .._strict import Regex
from ._context import ScoreContext, ToolCall
from ._model import Score
from ._options import Options
from ._registry import scorer

Made = TypeVar("Made")
Wanted = TypeVar("Wanted")


class Comparator(Options):
    """How one argument is compared; give exactly one key."""

    exact: Any = None
    """Equal to this value, whole (a mapping must have no other keys)."""
    subset: Any = None
    """A mapping whose keys all compare equal (the argument may hold others); for a list, every item
    given is in the argument."""
    regex: Regex | None = None
    """The argument, as text, matches this regular expression (re.search)."""
    number: float | None = None
    """A number (or numeric text) within `tolerance` of this one."""
    tolerance: float = Field(default=0.0, ge=0)
    custom: str | None = None
    """'module:function' called with (actual, expected_call_input): True or a number in [0, 1] >= 0.5 matches."""

    @field_validator("custom")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", value):
            raise ValueError(f"custom is 'module:function', got {value!r}")
        return value

    @model_validator(mode="after")
    def _one(self) -> Comparator:
        given = [k for k in ("exact", "subset", "regex", "number", "custom") if k in self.model_fields_set]
        if len(given) != 1:
            raise ValueError("give exactly one of exact, subset, regex, number, custom"
                             + (f" (got {', '.join(given)})" if given else ""))
        if "tolerance" in self.model_fields_set and given != ["number"]:
            raise ValueError("tolerance goes with number")
        return self


class ExpectedToolCall(Options):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    """Arguments compared by value: a mapping as a subset, anything else exactly. Arguments not given
    are not compared."""
    match: dict[str, Comparator] = Field(default_factory=dict)
    """Arguments compared another way: {order_id: {regex: '^A'}, amount: {number: 25, tolerance: 0.01}}."""

    @model_validator(mode="after")
    def _apart(self) -> ExpectedToolCall:
        both = sorted(set(self.input) & set(self.match))
        if both:
            raise ValueError(f"argument(s) {', '.join(both)} given in both input and match; give each once")
        return self


class ToolCallsOptions(Options):
    calls: list[ExpectedToolCall]
    """The calls a good run makes, in any order."""
    metric: Literal["f1", "precision", "recall"] = "f1"
    """The score's value: f1 (both), precision (no call it should not make), recall (no call missing)."""
    tools: list[str] | None = None
    """Only calls to these tools count (e.g. leave out read-only lookups); default: every call."""

    def imports(self) -> Iterator[tuple[tuple[str | int, ...], str]]:
        """Each `custom` comparator's 'module:function', with where it is in the options: imported
        before any run starts, so a typo fails there and not after a paid run."""
        for i, want in enumerate(self.calls):
            for key, comparator in want.match.items():
                if comparator.custom is not None:
                    yield ("calls", i, "match", key, "custom"), comparator.custom


@scorer("tool_calls", options=ToolCallsOptions)
def tool_calls(ctx: ScoreContext, options: ToolCallsOptions) -> Score:
    """Precision, recall and F1 of the tool calls made against the expected ones (arguments compared)."""
    from pathlib import Path

    from ..scenario._fixtures import import_callable

    made = [c for c in ctx.tool_calls if options.tools is None or c.name in options.tools]
    customs: dict[str, Callable[..., Any]] = {}
    for want in options.calls:
        for comparator in want.match.values():
            if comparator.custom is not None and comparator.custom not in customs:
                customs[comparator.custom] = import_callable(comparator.custom, near=Path(ctx.scenario_path).parent)
    owner = pair_calls(made, options.calls, lambda call, want: _fits(call, want, customs))
    matched = sum(1 for holder in owner if holder is not None)
    precision = matched / len(made) if made else (1.0 if not options.calls else 0.0)
    recall = matched / len(options.calls) if options.calls else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    paired = {holder for holder in owner if holder is not None}
    extra = [f"{c.name} {c.input!r}" for i, c in enumerate(made) if i not in paired]
    missing = [_shown(w) for w, holder in zip(options.calls, owner, strict=True) if holder is None]
    parts = [f"{matched} of {len(made)} call(s) made matched {len(options.calls)} expected"]
    if extra:
        parts.append(f"not expected: {'; '.join(extra)}")
    if missing:
        parts.append(f"not made: {'; '.join(missing)}")
    values = {"precision": precision, "recall": recall, "f1": f1}
    return Score("tool_calls", values[options.metric], "; ".join(parts), details=values)


def _shown(want: ExpectedToolCall) -> str:
    args: dict[str, Any] = dict(want.input)
    args.update({k: c.model_dump(exclude_defaults=True) for k, c in want.match.items()})
    return f"{want.name} {args!r}"


def _fits(call: ToolCall, want: ExpectedToolCall, customs: dict[str, Callable[..., Any]]) -> bool:
    if call.name != want.name:
        return False
    given = call.input if isinstance(call.input, dict) else {}
    for key, value in want.input.items():
        if key not in given or not _subset(given[key], value):
            return False
    for key, comparator in want.match.items():
        if key not in given or not _compare(given[key], comparator, given, customs):
            return False
    return True


def _subset(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _subset(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return all(any(_subset(a, e) for a in actual) for e in expected)
    return bool(actual == expected)


def _compare(actual: Any, comparator: Comparator, call_input: dict[str, Any],
             customs: dict[str, Callable[..., Any]]) -> bool:
    if "exact" in comparator.model_fields_set:
        return bool(actual == comparator.exact)
    if "subset" in comparator.model_fields_set:
        return _subset(actual, comparator.subset)
    if comparator.regex is not None:
        return isinstance(actual, (str, int, float)) and re.search(comparator.regex, str(actual)) is not None
    if comparator.number is not None:
        try:
            number = float(actual) if not isinstance(actual, bool) else None
        except (TypeError, ValueError):
            number = None
        return number is not None and abs(number - comparator.number) <= comparator.tolerance + 1e-9
    assert comparator.custom is not None
    verdict = customs[comparator.custom](actual, call_input)
    if isinstance(verdict, (int, float)) and not isinstance(verdict, bool):
        return bool(verdict >= 0.5)
    return bool(verdict)


def pair_calls(made: Sequence[Made], expected: Sequence[Wanted],
               fits: Callable[[Made, Wanted], bool]) -> list[int | None]:
    """Largest pairing of made calls with expected ones (Kuhn's augmenting paths: partial inputs can
    make a greedy pairing miss a valid one); per expected call, the index of the made call paired with
    it, or None. The tool_calls scorer and the tools_called expectation both pair this way."""
    owner: list[int | None] = [None] * len(expected)
    fit = [[fits(call, want) for want in expected] for call in made]

    def augment(i: int, seen: set[int]) -> bool:
        for j in range(len(expected)):
            if j in seen or not fit[i][j]:
                continue
            seen.add(j)
            holder = owner[j]
            if holder is None or augment(holder, seen):
                owner[j] = i
                return True
        return False

    for i in range(len(made)):
        augment(i, set())
    return owner
