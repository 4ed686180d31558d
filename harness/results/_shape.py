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
import json
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any, Literal, Union

from ..cost import PriceTable
from ..scores._model import Score
from ..trace._model import Call, Exchange, Trace, body_from_raw, frozen_record, resolve_server_threads
from ._model import RunResult

Path = tuple[str | int, ...]
Problem = tuple[Path, str]
Checker = Callable[[Any], "Problem | None"]

# The widest integer the readers' tables hold (pandas' int64): a longer one is no count of ours.
_INT_LIMIT = 2**63 - 1
# 2**63 as a float. A finite float is within -_INT_LIMIT..._INT_LIMIT exactly when it is strictly within
# -_FLOAT_LIMIT..._FLOAT_LIMIT: no float lies between 2**63 - 1 and 2**63 (the floats next to 2**63 are
# 1,024 apart), nor between their negatives; and neither NaN nor an infinity is strictly within them.
_FLOAT_LIMIT = float(2**63)

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


def _written_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields of a `cls` record a results line holds: neither private nor left unwritten."""
    unwritten = _UNWRITTEN.get(cls, ())
    return [f for f in dataclasses.fields(cls) if not f.name.startswith("_") and f.name not in unwritten]


class _Writer:
    """The source of the `_passes` functions: a test per type hint, as a Python expression."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"_L": _INT_LIMIT, "_F": _FLOAT_LIMIT, "_strings": _strings, "_M": object()}
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
        for f in _written_fields(cls):
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
            if inner == f"(type({item}) is str)":
                return f"(type({var}) is {kind} and _strings({values}))"
            if inner == f"(type({item}) is dict)":
                return f"(type({var}) is {kind} and set(map(type, {values})) <= {{dict}})"
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
            # A float against the float bounds (`_FLOAT_LIMIT`): against the integer one, each comparison
            # made integers of the float, five times the work (six floats an exchange).
            return f"((type({var}) is float and -_F < {var} < _F) or (type({var}) is int and -_L <= {var} <= _L))"
        if hint is str:
            return f"(type({var}) is str)"
        return "True"  # a type the checkers do not know either (`_scalar`)


def _strings(values: Iterable[Any]) -> bool:
    """Every item of `values` is a string (headers, notes): joined, in C, in less than half the time
    `set(map(type, values)) <= {str}` took (two header maps an exchange). A string of a subclass of str
    passes, as the checkers pass it (`isinstance`); JSON reads none."""
    try:
        "".join(values)
    except TypeError:
        return False
    return True


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
        return inside[0] if inside else ((), f"expected {expected}, got {json_kind(value)}")

    return check


def _literal(choices: tuple[Any, ...]) -> Checker:
    said = f"expected one of {', '.join(map(repr, choices))}"

    def check(value: Any) -> Problem | None:
        return None if isinstance(value, str) and value in choices else ((), f"{said}, got {json_kind(value)}")

    return check


def _items(item: Checker) -> Checker:
    simple = _SIMPLE.get(item)

    def check(value: Any) -> Problem | None:
        if not isinstance(value, list):
            return (), f"expected a list, got {json_kind(value)}"
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
            return (), f"expected an object, got {json_kind(value)}"
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
        for f in _written_fields(cls)
    ]

    def check(value: Any) -> Problem | None:
        if not isinstance(value, dict):
            return (), f"expected an object, got {json_kind(value)}"
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
        return (), f"{said}, got {json_kind(value)}"

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
                    return f"prices.{group}.{name}.{key}", f"expected a number of 0 or more, got {json_kind(value)}"
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


def json_kind(value: Any) -> str:
    """What a JSON value is, in a message: `a number (42)`, `a string ('x')`, `an object`."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) > _INT_LIMIT:
        return "a number too large for 64 bits"
    # Said apart from the number it is no longer: "expected a number, got a number (1e+20)" read as no reason.
    if isinstance(value, float) and not math.isfinite(value):
        return f"{json.dumps(value)}, which is no finite number"
    if isinstance(value, float) and not -_FLOAT_LIMIT < value < _FLOAT_LIMIT:
        return f"a number too large for 64 bits ({value!r})"
    if isinstance(value, int | float | str) and len(repr(value)) < 40:
        return f"a {'string' if isinstance(value, str) else 'number'} ({value!r})"
    return {list: "a list", str: "a string", type(None): "null"}.get(type(value), "a number")


# Reading a line in one pass. A line with nothing wrong was walked twice: by `_passes`, each key looked up
# and tested, then by `RunResult.from_dict`, each key looked up again (renamed to the field's own name
# string, `field_arguments`) and passed by keyword to the records' constructors. `read_checked` reads it
# once: code written from the record types, as `_passes` is, takes each key's value, tests it with the
# very expression `_passes` tests it with, and hands it to the record's constructor by the field's name
# written in the code (an interned string, matched at once). It only reads lines as they nearly all are:
# anything else (a key that is wrong, unknown, or missing, a reference that does not resolve, a record
# that refuses its values) is read again the two-step way, `shape_problem` then `from_dict`, which says
# what is wrong as it always did (tests/results/test_malformed_results.py holds the two ways to the same
# records on every damaged line they both read).


class _Unusual(Exception):  # noqa: N818 - not an error: the line is read again, the two-step way
    """The line is not as `read_checked` reads lines: it is read again by `shape_problem` and `from_dict`."""


def read_checked(data: Mapping[str, Any]) -> RunResult | None:
    """The run of a results line whose every key is right, made as `RunResult.from_dict(data)` makes it;
    None when `shape_problem` may have something to say of it, or `from_dict` may refuse it."""
    try:
        return _reader()(data)
    except Exception:  # noqa: BLE001 - whatever it is, the two-step reading says it in its words
        return None


@cache
def _reader() -> Callable[[Any], RunResult]:
    writer = _ReadWriter()
    name = writer.reader(RunResult)
    exec("\n\n".join(writer.sources), writer.namespace)  # noqa: S102 - our own code, from the record types
    read: Callable[[Any], RunResult] = writer.namespace[name]
    return read


def _trace_of(source: str, exchanges: list[Exchange], calls: list[dict[str, Any]], threads: list[Any],
              tool_executions: list[Any], outcome: Any, whole_run: bool, notes: list[str],
              missing: dict[str, str], written: dict[str, Any]) -> Trace:
    """The trace as `Trace.from_dict` makes it of its keys' values, read and checked already (`written`:
    the trace as the line writes it, whose cross references are checked here, as `shape_problem` does)."""
    if _references(written, "trace") is not None:
        raise _Unusual
    by_index = {e.index: e for e in exchanges}
    # By position, in the records' field order (index, thread, step, attempts; source ... missing): a call
    # by keyword matches each name, for every call of every run.
    made = [Call(c["index"], c["thread"], c["step"], [by_index[i] for i in c["attempts"]]) for c in calls]
    resolve_server_threads(made)
    return Trace(source, exchanges, made, threads, tool_executions, outcome, whole_run, list(notes), dict(missing))


def _scores_of(scores: list[dict[str, Any]]) -> tuple[Score, ...]:
    return tuple(Score.from_dict(s) for s in scores)


def _prices_of(prices: dict[str, Any] | None) -> PriceTable | None:
    if prices is None:
        return None
    if _negative_price(prices) is not None:
        raise _Unusual
    return PriceTable.from_dict(prices)


# Fields read otherwise than as their type says: tested only (the records' own types), then made by a
# function of their values. A trace's calls name their attempts by index (the trace makes them), a run's
# scores and prices are read by their own `from_dict`, a few lines a file.
_MADE_BY: dict[tuple[type, str], Any] = {(RunResult, "scores"): _scores_of, (RunResult, "prices"): _prices_of}
# Records made of their keys by a function of the reader's: a trace (its calls, its threads resolved).
_ASSEMBLED: dict[type, Any] = {Trace: _trace_of}
# Records whose `from_dict` reads the keys it knows and leaves the others: no test for unknown keys.
_TAKES_ANY_KEY = frozenset({Trace})


class _ReadWriter(_Writer):
    """The source of `read_checked`'s functions: one per record type, reading and testing each key."""

    def __init__(self) -> None:
        super().__init__()
        self.namespace.update({"_U": _Unusual, "_body": body_from_raw, "_frozen": frozen_record})
        self._readers: dict[type, str] = {}

    def _constant(self, value: Any) -> str:
        name = f"_c{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def reader(self, cls: type) -> str:
        """The name of the function making a record of `cls` of its keys, or raising `_Unusual`."""
        if cls in self._readers:
            return self._readers[cls]
        name = self._readers[cls] = f"_read_{cls.__name__}_{len(self._readers)}"
        hints = typing.get_type_hints(cls)
        derived = _DERIVED.get(cls, frozenset())
        body = [f"def {name}(value):", "    if type(value) is not dict:", "        raise _U"]
        read = _written_fields(cls)
        if cls not in _TAKES_ANY_KEY:  # a key that names no field: `from_dict` refuses it, in its words
            keys = self._constant(frozenset(f.name for f in read))
            body += [f"    if not value.keys() <= {keys}:", "        raise _U"]
        names: dict[str, str] = {}
        for i, f in enumerate(read):
            var = names[f.name] = f"v{i}"
            hint = _AS_WRITTEN.get((cls, f.name), hints[f.name])
            body.append(f"    {var} = value.get({f.name!r}, _M)")
            body.append(f"    if {var} is _M:")
            if f.name in derived:
                body.append("        pass")  # made of the raw text below, as `from_dict` makes it
            elif f.default is not dataclasses.MISSING:
                body.append(f"        {var} = {self._constant(f.default)}")
            elif f.default_factory is not dataclasses.MISSING:
                body.append(f"        {var} = {self._constant(f.default_factory)}()")
            else:
                body.append("        raise _U")
            taken = self._value(cls, f.name, hint, var)
            if taken:  # nothing to test nor make of a value of any type (`Any`: an exchange's bodies)
                body += ["    else:", *("    " + line for line in taken)]
        if cls is Exchange:  # a body the line leaves out is the one its raw text gives (`Exchange.from_dict`)
            raw_request, raw_response, streamed = names["raw_request"], names["raw_response"], names["streamed"]
            body += [f"    if {names['request_body']} is _M:",
                     f"        {names['request_body']} = _body({raw_request}, False)",
                     f"    if {names['response_body']} is _M:",
                     f"        {names['response_body']} = _body({raw_response}, bool({streamed}))"]
        if cls in _ASSEMBLED:
            arguments = ", ".join(f"{f.name}={names[f.name]}" for f in read if f.name in _assembled_fields(cls))
            body.append(f"    return {self._constant(_ASSEMBLED[cls])}({arguments}, written=value)")
        elif _frozen_whole(cls, read):  # a finding: made without object.__setattr__ per field
            values = ", ".join(f"{f.name!r}: {names[f.name]}" for f in read)
            body.append(f"    return _frozen({self._constant(cls)}, {{{values}}})")
        elif [f.name for f in read] == [f.name for f in dataclasses.fields(cls) if f.init]:
            # Every parameter, in order: passed by position, not matched by name (twenty of an exchange).
            body.append(f"    return {self._constant(cls)}({', '.join(names[f.name] for f in read)})")
        else:
            arguments = ", ".join(f"{f.name}={names[f.name]}" for f in read)
            body.append(f"    return {self._constant(cls)}({arguments})")
        self.sources.append("\n".join(body))
        return name

    def _value(self, cls: type, name: str, hint: Any, var: str) -> list[str]:
        """Lines testing `var`, the value of key `name`, and making it the field's value."""
        made = _MADE_BY.get((cls, name))
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        record = _record_of(hint)
        if made is None and record is not None and record not in _ASSEMBLED_ELSEWHERE:
            reader = self.reader(record)
            if origin in (list, tuple):
                kind = "list" if origin is list else "tuple"
                return [f"    if type({var}) is not list:", "        raise _U",
                        f"    {var} = {kind}(map({reader}, {var}))"]
            if origin in (Union, types.UnionType):
                if set(args) != {record, type(None)}:
                    raise TypeError(f"{cls.__name__}.{name}: no reader for {hint}")
                return [f"    if {var} is not None:", f"        {var} = {reader}({var})"]
            return [f"    {var} = {reader}({var})"]
        test = self.test(hint, var, 0)
        lines = [] if test == "True" else [f"    if not {test}:", "        raise _U"]
        if made is not None:
            lines.append(f"    {var} = {self._constant(made)}({var})")
        return lines


# A trace's calls, as the line writes them (indices of its exchanges), are made by the trace's reader.
_ASSEMBLED_ELSEWHERE = frozenset({Call})


def _assembled_fields(cls: type) -> frozenset[str]:
    """The keys an `_ASSEMBLED` function takes: its parameters but the record as written."""
    return frozenset(typing.get_type_hints(_ASSEMBLED[cls])) - {"written", "return"}


def _frozen_whole(cls: type, read: list[dataclasses.Field[Any]]) -> bool:
    """`cls` is a frozen record whose every field is read, with nothing for `__post_init__` to do: one
    `frozen_record` can make as its `__init__` does."""
    params = getattr(cls, "__dataclass_params__", None)
    return (params is not None and params.frozen and not hasattr(cls, "__post_init__")
            and [f.name for f in read] == [f.name for f in dataclasses.fields(cls)] and all(f.init for f in read))


def _record_of(hint: Any) -> type | None:
    """The record type `hint` holds (itself, a list or tuple of it, or it or None); None for none."""
    for candidate in (hint, *typing.get_args(hint)):
        if dataclasses.is_dataclass(candidate) and isinstance(candidate, type):
            return candidate
    return None
