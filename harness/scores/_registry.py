"""Scorers: registered by name with `@scorer`, built-ins and a project's own alike.

A scenario's `score:` lists entries, each a scorer name, `module:function`, or a one-key mapping of
either to its options: `{final_text: {contains: refund}}`, `{"mypkg.scores:tone": {strict: true}}`.
Every entry may also carry `name:` (the score's name, to tell two entries of one scorer apart) and
`labels:` (the value of each label the scorer may give). A registered scorer declares its options
as a strict pydantic model, so a typo in them is an error pointing at the line; a `module:function`
scorer is called with its options as keyword arguments.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ._context import ScoreContext
from ._model import Score, ScoreKind, ScoreLike, as_score

ScorerFn = Callable[..., ScoreLike]
"""A registered scorer: `fn(ctx, options)`, options being its options model (or None without one)."""

COMMON_KEYS = ("name", "labels")
"""Keys every score entry may carry beside the scorer's own options."""

_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

BUILTIN_MODULES = ("harness.scores._tools", "harness.scores._text",
                   "harness.scores._efficiency", "harness.scores._judge")
"""Modules that register the built-in scorers when imported; a scorer shipped with the harness is one
module here, registered with the same `@scorer` a project uses."""


@dataclass(frozen=True)
class ScorerInfo:
    """One registered scorer."""

    name: str
    function: ScorerFn
    options: type[BaseModel] | None
    """The strict model of its options; None when it takes none."""
    kind: ScoreKind
    description: str


_REGISTRY: dict[str, ScorerInfo] = {}
_builtins_loaded = False


def scorer(name: str, *, options: type[BaseModel] | None = None,
           kind: ScoreKind = "graded") -> Callable[[ScorerFn], ScorerFn]:
    """Register `fn(ctx, options)` as the scorer `name`; its docstring's first line describes it.

    `options` is a pydantic model (forbid extra keys) of what the scenario entry may set. Registering
    a name twice replaces the first (a project may override a built-in on purpose).
    """
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"a scorer name is lower_snake_case, got {name!r}")

    def register(fn: ScorerFn) -> ScorerFn:
        doc = (fn.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = ScorerInfo(name, fn, options, kind, doc[0] if doc else "")
        return fn

    return register


def scorers() -> dict[str, ScorerInfo]:
    """Every registered scorer by name, built-ins first loaded."""
    _load_builtins()
    return dict(_REGISTRY)


def _load_builtins() -> None:
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        for module in BUILTIN_MODULES:
            importlib.import_module(module)


class EntryError(ValueError):
    """A score entry that cannot be used; `loc` is where in the entry (below `score[i]`)."""

    def __init__(self, loc: tuple[str | int, ...], problem: str) -> None:
        super().__init__(problem)
        self.loc = loc
        self.problem = problem


@dataclass(frozen=True)
class ScoreEntry:
    """One entry of a scenario's `score:`, checked against the registry."""

    name: str
    """The score's name: `name:` if given, else the scorer's name (a function's name for module:function)."""
    scorer: str
    """A registered name, or `module:function`."""
    options: Any = None
    """The validated options model of a registered scorer; the keyword arguments of a custom one."""
    labels: Mapping[str, float] = field(default_factory=dict)
    kind: ScoreKind = "graded"

    @property
    def custom(self) -> bool:
        return ":" in self.scorer

    def imports(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Every 'module:function' the entry needs, with where it is below the entry: a custom
        scorer itself, and what its options name (an options model says so with an `imports()`
        method, as tool_calls does for its custom comparators)."""
        if self.custom:
            return [((), self.scorer)]
        named = getattr(self.options, "imports", None)
        return list(named()) if callable(named) else []


def parse_entry(entry: Any) -> ScoreEntry:
    """A `score:` entry as written -> ScoreEntry; EntryError says what is wrong and where."""
    given: Any
    if isinstance(entry, str):
        key, given = entry, {}
    elif isinstance(entry, dict) and len(entry) == 1:
        key, given = next(iter(entry.items()))
        given = {} if given is None else given
        if not isinstance(given, dict):
            raise EntryError((key,), f"the options of {key!r} are a mapping, not a {type(given).__name__}")
    else:
        raise EntryError((), "a score entry is a scorer name, 'module:function', or a mapping of one of them to its "
                             "options, e.g. `- final_text: {contains: refund}`")
    options = {k: v for k, v in given.items() if k not in COMMON_KEYS}
    name = given.get("name")
    if name is not None and (not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][\w.-]*", name)):
        raise EntryError((key, "name"), f"a score name is a word (letters, digits, _ . -), got {name!r}")
    labels = _labels(given.get("labels"), key)
    if ":" in key:
        if not _SPEC.match(key):
            raise EntryError((key,),
                             f"a custom scorer is 'module:function' (e.g. 'myproject.scores:tone'), got {key!r}")
        return ScoreEntry(name or key.rpartition(":")[2].rpartition(".")[2], key, options, labels)
    known = scorers()
    info = known.get(key)
    if info is None:
        from .._hints import closest

        hint = closest(key, list(known))
        raise EntryError((key,), f"unknown scorer {key!r}; built-in and registered scorers: {', '.join(sorted(known))}"
                         + (f" (did you mean {hint!r}?)" if hint else "")
                         + "; a scorer of your own is 'module:function', or registered by a --plugin module")
    if info.options is not None and "labels" in info.options.model_fields and labels:
        # A scorer that must know its labels to ask for one (a judge's verdict tool) declares them.
        options["labels"] = labels
    if info.options is None:
        if options:
            raise EntryError((key, next(iter(options))), f"scorer {key!r} takes no options (only name, labels)")
        validated: Any = None
    else:
        try:
            validated = info.options.model_validate(options)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            loc = tuple(first["loc"])
            problem = str(first["msg"]).removeprefix("Value error, ")
            if first["type"] == "extra_forbidden":
                problem = f"unknown option; {key} takes: {', '.join([*info.options.model_fields, *COMMON_KEYS])}"
            elif first["type"] == "missing":
                problem = "required option is missing"
            raise EntryError((key, *loc), problem) from None
    return ScoreEntry(name or key, key, validated, labels, info.kind)


def _labels(given: Any, key: str) -> dict[str, float]:
    if given is None:
        return {}
    if not isinstance(given, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in given.values()
    ):
        raise EntryError((key, "labels"),
                         "labels map each label to its value in [0, 1], e.g. {correct: 1, partial: 0.5}")
    return {str(k): float(v) for k, v in given.items()}


@dataclass(frozen=True)
class BoundScorer:
    """A score entry with its function found: what a run calls."""

    entry: ScoreEntry
    function: ScorerFn

    def __call__(self, ctx: ScoreContext) -> Score:
        entry = self.entry
        if entry.custom:
            returned = self.function(ctx, **(entry.options or {}))
        else:
            returned = self.function(ctx, entry.options)
        return as_score(returned, name=entry.name, kind=entry.kind, labels=entry.labels or None)


def bind(entries: Iterable[ScoreEntry], *, near: Any = None) -> list[BoundScorer]:
    """Find each entry's function: the registry's, or the imported `module:function`. ImportError,
    AttributeError or TypeError when a custom one cannot be imported."""
    from ..scenario._fixtures import import_callable

    bound: list[BoundScorer] = []
    for entry in entries:
        if entry.custom:
            bound.append(BoundScorer(entry, import_callable(entry.scorer, near=near)))
        else:
            bound.append(BoundScorer(entry, scorers()[entry.scorer].function))
    return bound


def score_run(bound: Iterable[BoundScorer], ctx: ScoreContext) -> tuple[list[Score], list[str]]:
    """Every score of a run, and what went wrong: a scorer that raised, returned something that is
    not a score, or returned a score the results file cannot hold gets a Score without value saying
    so, and one problem line (the run is then an error: its scores cannot be trusted)."""
    scores: list[Score] = []
    problems: list[str] = []
    for scorer_ in bound:
        entry = scorer_.entry
        why = None
        try:
            score = scorer_(ctx)
        except Exception as exc:  # a user's scorer failing is this run's error, not the harness's crash
            why = f"{type(exc).__name__}: {exc}"
        else:
            try:
                # The run's results line holds the score: one it cannot hold (a set or bytes in its
                # details) would cost the run its whole line, trace and cost with it, for the scorer's fault.
                json.dumps(score.to_dict())
            except (TypeError, ValueError, RecursionError) as exc:
                why = f"its score cannot be written to the results file ({type(exc).__name__}: {exc})"
        if why is None:
            scores.append(score)
        else:
            scores.append(Score(entry.name, None, f"the scorer failed: {why}", kind=entry.kind))
            problems.append(f"scorer {entry.name!r} ({entry.scorer}) failed: {why}")
    return scores, problems
