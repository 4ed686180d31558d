"""What a results line must hold before any reader builds on it, said as the key that is wrong.

A results file is JSON a person may edit, a tool may write, or a disk may damage. The records read
from it are plain dataclasses that check nothing, so a wrong type surfaced far away, in the report's
arithmetic or the diff's sorting ("argument after ** must be a mapping", "unsupported operand").
Here every key is checked against the type its record declares (read from the dataclasses, so the
check follows the format), the trace's cross references (attempts, thread calls) are checked to
resolve, and the prices a run kept to be 0 or more: the first problem is one line naming the key
path, e.g. `trace.exchanges[0].duration_s: expected a number or null, got a string ('x')`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, Union

from ..trace._model import Call, Exchange, Trace
from ._model import RunResult

Path = tuple[str | int, ...]
Problem = tuple[Path, str]
Checker = Callable[[Any], "Problem | None"]

# The widest integer the readers' tables hold (pandas' int64): a longer one is no count of ours.
_INT_LIMIT = 2**63 - 1

# Where the line's JSON is not the record's field: a call's attempts and a thread's calls are indices.
_AS_WRITTEN: dict[tuple[type, str], Any] = {(Call, "attempts"): list[int]}
# Fields the line may leave out although the record needs them: derived on read (a body written once,
# as its raw text), or never written (the call's cached conversation).
_DERIVED: dict[type, frozenset[str]] = {Exchange: frozenset({"request_body", "response_body"})}
# Fields a results line never holds: the runs of a multi-run recording exist only while it is checked.
_UNWRITTEN: dict[type, frozenset[str]] = {Trace: frozenset({"runs"})}


def shape_problem(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first key of a results line that is not what its record declares, and what is wrong with
    it (`expected a number, got a string ('x')`); None when every key is right."""
    if not _passes(RunResult)(data):
        found = _compile(RunResult)(data)
        if found is not None:
            return _named(found[0]), found[1]
    return (_references(data.get("trace"), "trace") or _references(data.get("harness_trace"), "harness_trace")
            or _negative_price(data.get("prices")))


# Each type is compiled once into a checker: a report reads 100,000 lines, and re-reading the type
# hints for every value (or naming every key on the way) would cost more than parsing the JSON.
@cache
def _compile(hint: Any) -> Checker:
    checker = _compile_new(hint)
    if hint is str:
        _SIMPLE[checker] = str  # strings need no more than their type (an int also needs its bound)
    return checker


_SIMPLE: dict[Checker, type] = {}


def _compile_new(hint: Any) -> Checker:
    origin = typing.get_origin(hint)
    if hint is Any:
        return _fine
    if origin in (Union, types.UnionType):
        return _union(typing.get_args(hint))
    if origin is Literal:
        return _literal(typing.get_args(hint))
    if origin in (list, tuple):
        return _items(_compile(typing.get_args(hint)[0]))
    if origin is dict:
        return _values(_compile(typing.get_args(hint)[1]))
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _record(hint)
    return _scalar(hint)


# A line with nothing wrong, the common case, is passed by code written once for the record types:
# one function per record, each key's test written in it (`type(v) is int and ...`), no call per value
# nor a key path kept on the way, a third of the checkers' time. It only says "all right": a line it
# does not pass is checked again by the checkers above, which name the key, so it must never pass a
# value they refuse (tests/results/test_malformed_results.py holds the two to the same verdicts).
@cache
def _passes(cls: type) -> Callable[[Any], bool]:
    writer = _Writer()
    name = writer.record(cls)
    exec("\n\n".join(writer.sources), writer.namespace)  # noqa: S102 - our own code, from the record types
    passes: Callable[[Any], bool] = writer.namespace[name]
    return passes


class _Writer:
    """The source of the `_passes` functions: a test per type hint, as a Python expression."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"_L": _INT_LIMIT, "_isfinite": math.isfinite, "_M": object()}
        self.sources: list[str] = []
        self._records: dict[type, str] = {}

    def record(self, cls: type) -> str:
        """The name of the function passing a record of `cls`; the same keys as `_record` checks."""
        if cls in self._records:
            return self._records[cls]
        name = self._records[cls] = f"_{cls.__name__}_{len(self._records)}"
        hints = typing.get_type_hints(cls)
        derived = _DERIVED.get(cls, frozenset())
        body = [f"def {name}(value):", "    if type(value) is not dict:", "        return False"]
        for f in dataclasses.fields(cls):
            if f.name.startswith("_") or f.name in _UNWRITTEN.get(cls, ()):
                continue
            required = (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                        and f.name not in derived)
            test = self.test(_AS_WRITTEN.get((cls, f.name), hints[f.name]), "v", 0)
            if test == "True" and not required:
                continue  # any value will do, or none (an exchange's bodies): nothing to look up
            body.append(f"    v = value.get({f.name!r}, _M)")
            if required:
                body += ["    if v is _M:", "        return False"]
            if test != "True":
                body += [f"    if {'' if required else 'v is not _M and '}not {test}:", "        return False"]
        body.append("    return True")
        self.sources.append("\n".join(body))
        return name

    def test(self, hint: Any, var: str, depth: int) -> str:
        """An expression true when `var` is right for `hint` (as its checker from `_compile` says)."""
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if hint is Any:
            return "True"
        if origin in (Union, types.UnionType):
            # null first: one comparison, and many optional fields are null on most lines.
            tests = [self.test(member, var, depth) for member in sorted(args, key=lambda m: m is not type(None))]
            return "True" if "True" in tests else "(" + " or ".join(tests) + ")"
        if origin is Literal:
            choices = f"_choices_{len(self.namespace)}"
            self.namespace[choices] = frozenset(args)
            return f"(type({var}) is str and {var} in {choices})"
        if origin in (list, tuple, dict):
            item = f"_{depth}"
            inner = self.test(args[0] if origin is not dict else args[1], item, depth + 1)
            kind = "dict" if origin is dict else "list"
            if inner == "True":
                return f"(type({var}) is {kind})"
            values = f"{var}.values()" if origin is dict else var
            # Items of one type (headers, ids) and records are tested without a generator: `map` calls
            # in C, where a generator resumes Python code for each item (500,000 in a 10,000-run report).
            one_type = next((name for name in ("str", "dict") if inner == f"(type({item}) is {name})"), None)
            if one_type is not None:
                return f"(type({var}) is {kind} and set(map(type, {values})) <= {{{one_type}}})"
            if inner == f"(type({item}) is int and -_L <= {item} <= _L)":
                # Indices (a call's attempts): their type and bounds in C too, the bounds by the extremes.
                return (f"(type({var}) is {kind} and set(map(type, {values})) <= {{int}}"
                        f" and (not {var} or (-_L <= min({values}) and max({values}) <= _L)))")
            record = inner.removesuffix(f"({item})")  # `_Exchange_9(_0)`: a record's function
            if record.isidentifier():
                return f"(type({var}) is {kind} and all(map({record}, {values})))"
            return f"(type({var}) is {kind} and all({inner} for {item} in {values}))"
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return f"{self.record(hint)}({var})"
        if hint is type(None):
            return f"({var} is None)"
        if hint is bool:
            return f"({var} is True or {var} is False)"
        if hint is int:
            return f"(type({var}) is int and -_L <= {var} <= _L)"
        if hint is float:
            return f"(((type({var}) is float and _isfinite({var})) or type({var}) is int) and -_L <= {var} <= _L)"
        if hint is str:
            return f"(type({var}) is str)"
        return "True"  # a type the checkers do not know either (`_scalar`)


def _fine(value: Any) -> Problem | None:
    return None


def _union(members: tuple[Any, ...]) -> Checker:
    checkers = [_compile(member) for member in members]
    nullable = type(None) in members
    expected = " or ".join(_expected(member) for member in members)

    def check(value: Any) -> Problem | None:
        if value is None and nullable:
            return None
        found: list[Problem] = []
        for checker in checkers:
            problem = checker(value)
            if problem is None:
                return None  # the members after the one it is are not asked: their messages would go unread
            found.append(problem)
        # A value of the right kind with something wrong inside it: say what is wrong inside.
        inside = [problem for problem in found if problem[0]]
        return inside[0] if inside else ((), f"expected {expected}, got {_kind(value)}")

    return check


def _literal(choices: tuple[Any, ...]) -> Checker:
    said = f"expected one of {', '.join(map(repr, choices))}"

    def check(value: Any) -> Problem | None:
        return None if isinstance(value, str) and value in choices else ((), f"{said}, got {_kind(value)}")

    return check


def _items(item: Checker) -> Checker:
    simple = _SIMPLE.get(item)

    def check(value: Any) -> Problem | None:
        if not isinstance(value, list):
            return (), f"expected a list, got {_kind(value)}"
        if simple is not None and all(type(inner) is simple for inner in value):
            return None  # the common case, without a call per item
        for i, inner in enumerate(value):
            found = item(inner)
            if found is not None:
                return (i, *found[0]), found[1]
        return None

    return check


def _values(item: Checker) -> Checker:
    simple = _SIMPLE.get(item)

    def check(value: Any) -> Problem | None:
        if not isinstance(value, dict):
            return (), f"expected an object, got {_kind(value)}"
        if simple is not None and all(type(inner) is simple for inner in value.values()):
            return None  # headers: the common case, without a call per value
        for key, inner in value.items():
            found = item(inner)
            if found is not None:
                return (str(key), *found[0]), found[1]
        return None

    return check


def _record(cls: type) -> Checker:
    hints = typing.get_type_hints(cls)
    derived = _DERIVED.get(cls, frozenset())
    fields = [
        (f.name, _compile(_AS_WRITTEN.get((cls, f.name), hints[f.name])),
         f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name not in derived)
        for f in dataclasses.fields(cls) if not f.name.startswith("_") and f.name not in _UNWRITTEN.get(cls, ())
    ]

    def check(value: Any) -> Problem | None:
        if not isinstance(value, dict):
            return (), f"expected an object, got {_kind(value)}"
        for name, checker, required in fields:
            if name not in value:
                if required:
                    return (name,), "missing"
                continue
            found = checker(value[name])
            if found is not None:
                return (name, *found[0]), found[1]
        return None

    return check


def _scalar(hint: Any) -> Checker:
    said = f"expected {_expected(hint)}"

    def wrong(value: Any) -> Problem:
        return (), f"{said}, got {_kind(value)}"

    # One checker per type, its test written in it: a line holds a hundred scalars or more, and a
    # call to a separate test for each would cost a good part of the whole check.
    if hint is type(None):
        return lambda value: None if value is None else wrong(value)
    if hint is bool:
        return lambda value: None if value is True or value is False else wrong(value)
    if hint is int:
        # The type itself, not isinstance: a bool is an int to isinstance, and no count.
        return lambda value: None if type(value) is int and -_INT_LIMIT <= value <= _INT_LIMIT else wrong(value)
    if hint is float:
        return lambda value: None if _is_number(value) else wrong(value)
    if hint is str:
        return lambda value: None if isinstance(value, str) else wrong(value)
    return _fine  # a type this check does not know: left to the record's own reading


def _is_number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            and -_INT_LIMIT <= value <= _INT_LIMIT)


def _named(path: Path) -> str:
    """A key path as a reader writes it: `trace.exchanges[0].duration_s`."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")


def _references(trace: Any, path: str) -> tuple[str, str] | None:
    """A trace's cross references resolve: threads are numbered 1, 2, ... in order, each call has
    attempts, each attempt names an exchange the trace holds, and calls and threads name each other
    by position."""
    if not isinstance(trace, dict):
        return None
    exchanges = {e["index"] for e in trace["exchanges"]}
    threads, calls = trace["threads"], trace["calls"]
    for i, thread in enumerate(threads):
        if thread["id"] != i + 1:
            return f"{path}.threads[{i}].id", f"expected {i + 1} (threads are numbered 1, 2, ...), got {thread['id']}"
        for j, index in enumerate(thread.get("calls", [])):
            if not 0 <= index < len(calls):
                return f"{path}.threads[{i}].calls[{j}]", f"names call {index}; the trace holds {len(calls)}"
    for i, call in enumerate(calls):
        if not 1 <= call["thread"] <= len(threads):
            return f"{path}.calls[{i}].thread", f"names thread {call['thread']}; the trace holds {len(threads)}"
        if not call["attempts"]:
            return f"{path}.calls[{i}].attempts", "is empty; a call has at least one attempt"
        for j, index in enumerate(call["attempts"]):
            if index not in exchanges:
                return f"{path}.calls[{i}].attempts[{j}]", f"names exchange {index}, which the trace does not hold"
    return None


def _negative_price(prices: Any) -> tuple[str, str] | None:
    """A kept price is 0 or more, as a prices file's must be: its record's type takes any finite
    number, and a negative price would make a run cost less than nothing."""
    if not isinstance(prices, dict):
        return None
    for group in ("models", "server_tools"):
        for name, entry in prices.get(group, {}).items():
            for key, value in entry.items():
                # Checked against its record already: a value that is no string is a price.
                if isinstance(value, int | float) and value < 0:
                    return f"prices.{group}.{name}.{key}", f"expected a number of 0 or more, got {_kind(value)}"
    return None


def _expected(hint: Any) -> str:
    if hint is type(None):
        return "null"
    origin = typing.get_origin(hint)
    if origin in (list, tuple):
        return "a list"
    if origin is dict or dataclasses.is_dataclass(hint):
        return "an object"
    if origin is Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(hint)))
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(hint, str(hint))


def _kind(value: Any) -> str:
    """What a JSON value is, in a message: `a number (42)`, `a string ('x')`, `an object`."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) > _INT_LIMIT:
        return "a number too large for 64 bits"
    if isinstance(value, int | float | str) and len(repr(value)) < 40:
        return f"a {'string' if isinstance(value, str) else 'number'} ({value!r})"
    return {list: "a list", str: "a string", type(None): "null"}.get(type(value), "a number")
