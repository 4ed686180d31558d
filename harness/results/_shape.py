"""What a results line must hold before any reader builds on it, said as the key that is wrong.

A results file is JSON a person may edit, a tool may write, or a disk may damage. The records read
from it are plain dataclasses that check nothing, so a wrong type surfaced far away, in the report's
arithmetic or the diff's sorting ("argument after ** must be a mapping", "unsupported operand").
Here every key is checked against the type its record declares (read from the dataclasses, so the
check follows the format), and the trace's cross references (attempts, thread calls) are checked to
resolve: the first problem is one line naming the key path, e.g. `trace.exchanges[0].duration_s:
expected a number or null, got a string ('x')`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, Union

from ..trace._model import Call, Exchange
from ._model import RunResult

# The widest integer the readers' tables hold (pandas' int64): a longer one is no count of ours.
_INT_LIMIT = 2**63 - 1

# Where the line's JSON is not the record's field: a call's attempts and a thread's calls are indices.
_AS_WRITTEN: dict[tuple[type, str], Any] = {(Call, "attempts"): list[int]}
# Fields the line may leave out although the record needs them: derived on read (a body written once,
# as its raw text), or never written (the call's cached conversation).
_DERIVED: dict[type, frozenset[str]] = {Exchange: frozenset({"request_body", "response_body"})}


def shape_problem(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first key of a results line that is not what its record declares, and what is wrong with
    it (`expected a number, got a string ('x')`); None when every key is right."""
    return _record(data, RunResult, "") or _references(data.get("trace"), "trace") or _references(
        data.get("harness_trace"), "harness_trace"
    )


@cache
def _plan(hint: Any) -> tuple[Any, tuple[Any, ...], bool]:
    """A hint's origin, arguments and whether it is a record: asked of `typing` once per hint, not once
    per value (a report reads millions of values)."""
    return typing.get_origin(hint), typing.get_args(hint), dataclasses.is_dataclass(hint) and isinstance(hint, type)


def _fits(value: Any, member: Any, path: str) -> bool:
    """`value` is of one member of a union: a scalar member asked directly, without making the
    message no one will read."""
    origin, _, record = _plan(member)
    if origin is None and not record:
        return member is Any or _scalar_fits(value, member)
    return _check(value, member, path) is None


def _check(value: Any, hint: Any, path: str) -> tuple[str, str] | None:
    if hint is Any:
        return None
    origin, args, record = _plan(hint)
    if origin is None and not record:  # a scalar: the most common value by far
        return None if _scalar_fits(value, hint) else (path, f"expected {_expected(hint)}, got {_kind(value)}")
    if origin in (Union, types.UnionType):
        members = args
        if any(_fits(value, member, path) for member in members):
            return None
        # A value of the right type with a wrong member inside: say what is wrong inside it.
        inner = [p for m in members if _is_container_of(value, m) and (p := _check(value, m, path))]
        if inner:
            return inner[0]
        return path, f"expected {' or '.join(_expected(m) for m in members)}, got {_kind(value)}"
    if origin is Literal:
        choices = args
        if value in choices:
            return None
        return path, f"expected one of {', '.join(map(repr, choices))}, got {_kind(value)}"
    if origin in (list, tuple):
        if not isinstance(value, list):
            return path, f"expected a list, got {_kind(value)}"
        item = args[0]
        return next((p for i, v in enumerate(value) if (p := _check(v, item, f"{path}[{i}]"))), None)
    if origin is dict:
        if not isinstance(value, dict):
            return path, f"expected an object, got {_kind(value)}"
        item = args[1]
        return next((p for k, v in value.items() if (p := _check(v, item, _key(path, k)))), None)
    if record:
        if not isinstance(value, dict):
            return path, f"expected an object, got {_kind(value)}"
        return _record(value, hint, path)
    return None if _scalar_fits(value, hint) else (path, f"expected {_expected(hint)}, got {_kind(value)}")


def _record(data: Mapping[str, Any], cls: type, path: str) -> tuple[str, str] | None:
    hints = _hints(cls)
    derived = _DERIVED.get(cls, frozenset())
    for field in dataclasses.fields(cls):
        if field.name.startswith("_"):
            continue
        key = _key(path, field.name)
        if field.name not in data:
            required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
            if required and field.name not in derived:
                return key, "missing"
            continue
        found = _check(data[field.name], _AS_WRITTEN.get((cls, field.name), hints[field.name]), key)
        if found is not None:
            return found
    return None


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


def _scalar_fits(value: Any, hint: Any) -> bool:
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if hint is int:
        return isinstance(value, int) and abs(value) <= _INT_LIMIT
    if hint is float:
        return isinstance(value, int | float) and math.isfinite(value) and abs(value) <= _INT_LIMIT
    if hint is str:
        return isinstance(value, str)
    return True  # a type this check does not know: left to the record's own reading


def _is_container_of(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (list, tuple):
        return isinstance(value, list)
    return isinstance(value, dict) and (origin is dict or dataclasses.is_dataclass(hint))


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


def _key(path: str, name: Any) -> str:
    return f"{path}.{name}" if path else str(name)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)

