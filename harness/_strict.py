"""Strict pydantic models for the files a user writes, and their errors in the user's terms.

Scenarios, scripts and price files are each described by models that forbid unknown keys. When a
file does not validate, `explain` turns pydantic's errors into one `InputError` (or the subclass the
caller names): the file, the line, the key path, and for an unknown key the valid keys of that
mapping with the closest one. A model may say more about its own keys through two class variables:
`key_hints` (an unknown key -> why it is wrong there) and `missing_hints` (a required key -> what it is).
"""

from __future__ import annotations

import datetime
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, ClassVar, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from ._hints import closest
from ._yaml import Loc, format_loc
from .errors import InputError

LineOf = Callable[[Loc], "int | None"]
Problem = Callable[[Any, Loc], "str | None"]
"""A caller's own wording for one pydantic error (given the error and its data path), or None."""


class StrictModel(BaseModel):
    """A mapping of a user's file: unknown keys are errors, values are not coerced (`"3"` is not 3)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True)

    key_hints: ClassVar[Mapping[str, str]] = {}
    """Unknown key -> a hint said after the valid keys (e.g. where the key belongs instead)."""
    missing_hints: ClassVar[Mapping[str, str]] = {}
    """Required key -> the whole message when it is missing."""


def _compiles(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return value


Regex = Annotated[str, AfterValidator(_compiles)]
"""A regular expression in a user's file (used with re.search): one that does not compile is an error
saying why, when the file is read, not when a run first uses it."""


def kind(value: Any) -> str:
    """What a value is, in a message: `a number (42)`, `a list`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value!r})" if len(value) < 40 else "a string"
    # What else YAML reads: `2024-01-01` (a time after it too) is a date, `!!binary` bytes (a Sequence,
    # never "a list"), `!!set` a set; Python's names of them ("not date") meant nothing to a user.
    if isinstance(value, datetime.date):
        return f"a date ({value.isoformat()})"
    if isinstance(value, bytes | bytearray):
        return "binary data (!!binary)"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, Sequence):
        return "a list"
    if isinstance(value, set | frozenset):
        return "a set (!!set)"
    return type(value).__name__


def said(message: str) -> WrapValidator:
    """Annotate a scalar type so that any failure reads `<message>, got <what was given>`.

    The type and its constraints stay in the JSON schema; only the error's wording is ours.
    """

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise ValueError(f"{message}, got {kind(value)}") from None

    return WrapValidator(validate)


def explain(exc: ValidationError, data: Any, model: Any, *, source: str, line_of: LineOf,
            error: type[InputError] = InputError, render: Callable[[Loc], str] = format_loc,
            problem: Problem | None = None) -> InputError:
    """One error for the whole file: its first problem by line, then the others, one per line.

    `render` writes a data path as the key the message names; `problem` may word an error itself.
    """
    by_loc: dict[Loc, list[str]] = {}
    for item in exc.errors(include_url=False):
        path, owner = _walk(model, item["loc"])
        loc = _data_loc(path, data)
        # A value that fits no member of a union gets one error per member: say them as one.
        texts = by_loc.setdefault(loc, [])
        text = (problem(item, loc) if problem else None) or _problem(item, loc, owner)
        if text not in texts:
            texts.append(text)
    problems = sorted(((line_of(loc), render(loc), "; or ".join(texts)) for loc, texts in by_loc.items()),
                      key=lambda p: p[0] or 0)
    line, key, text = problems[0]
    for other_line, other_key, other in problems[1:]:
        where = source if other_line is None else f"{source}:{other_line}"
        text += f"\n  {where}: {other_key + ': ' if other_key else ''}{other}"
    return error(source, text, line=line, key=key or None)


def _data_loc(loc: tuple[Any, ...], data: Any) -> Loc:
    """Pydantic's error location with union-member tags removed: only steps that exist in the data,
    plus a last step naming a missing or unknown key."""
    kept: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
            kept.append(part)
        elif isinstance(current, Sequence) and not isinstance(current, str) and isinstance(part, int) \
                and 0 <= part < len(current):
            current = current[part]
            kept.append(part)
        elif index == len(loc) - 1 and isinstance(current, Mapping):
            kept.append(part)
    return tuple(kept)


def _problem(item: Any, loc: Loc, owner: type[BaseModel] | None) -> str:
    kind_ = item["type"]
    name = str(loc[-1]) if loc else ""
    if kind_ == "extra_forbidden":
        valid = [info.alias or name for name, info in owner.model_fields.items()] if owner else []
        text = f"unknown key; valid keys: {', '.join(valid)}"
        hint = _class_var(owner, "key_hints").get(name)
        if hint:
            return f"{text} ({hint})"
        guess = closest(name, valid)
        return text + (f" (did you mean {guess!r}?)" if guess else "")
    if kind_ == "missing":
        return _class_var(owner, "missing_hints").get(name, "required key is missing")
    if kind_ in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a mapping, got {kind(item.get('input'))}"
    if kind_ in ("list_type", "tuple_type"):
        return f"must be a list, got {kind(item.get('input'))}"
    # Our own validators raise ValueError; pydantic prefixes its text with "Value error, ".
    return str(item["msg"]).removeprefix("Value error, ")


def _class_var(owner: type[BaseModel] | None, name: str) -> Mapping[str, str]:
    value = getattr(owner, name, None) if owner else None
    return value if isinstance(value, Mapping) else {}


def _walk(root: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], type[BaseModel] | None]:
    """Pydantic's error location without its union tags, and the model holding the last step of
    the path (whose keys an unknown or missing key is about)."""
    path: list[Any] = []
    current: Any = root
    for index, part in enumerate(loc):
        current = _unwrap(current, part)
        if isinstance(current, tuple):  # a union member chosen by its tag: the tag is not a key
            current = current[0]
            continue
        if index == len(loc) - 1:
            path.append(part)
            break
        path.append(part)
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            current = info.annotation if info else None
        elif typing.get_origin(current) in (list, tuple, dict, Sequence, Mapping):
            current = typing.get_args(current)[-1] if typing.get_args(current) else None
        else:
            current = None
    owner = current if isinstance(current, type) and issubclass(current, BaseModel) else None
    return tuple(path), owner


def _unwrap(annotation: Any, part: Any) -> Any:
    """Optional[X] / X | None / Annotated[X, ...] -> X. In a union, the member named by `part` (its
    tag or class name) comes back as a 1-tuple, meaning `part` was consumed; otherwise the first
    model, or the first container."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            for member in members:
                if isinstance(part, str) and part in (_tag(member), getattr(_strip(member), "__name__", None)):
                    return (_strip(member),)
            stripped = [_strip(a) for a in members]
            models = [a for a in stripped if isinstance(a, type) and issubclass(a, BaseModel)]
            containers = [a for a in stripped if typing.get_origin(a) in (list, tuple, dict)]
            annotation = (models or containers or stripped)[0]
        else:
            return annotation


def _tag(annotation: Any) -> str | None:
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            tag = getattr(meta, "tag", None)
            if isinstance(tag, str):
                return tag
    return None


def _strip(annotation: Any) -> Any:
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
