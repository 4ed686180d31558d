"""A prices file's shape as pydantic models: what a user's file is validated against before its
table is built (`_prices.build_table`), so that an error names its file, line and key.

Imported only when a user's file is read: the shipped file is built without it (a test validates it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError

from .._strict import StrictModel, explain, said
from .._yaml import Loc
from ._prices import as_text

Price = Annotated[float, Field(ge=0, allow_inf_nan=False), said("price must be a non-negative number")]

Note = Annotated[str, BeforeValidator(as_text), said("must be a string")]


class _ModelEntry(StrictModel):
    """USD per million tokens of one model."""

    input: Price
    output: Price
    cache_write_5m: Price
    """Cache writes with the default 5-minute TTL."""
    cache_write_1h: Price
    """Cache writes with the 1-hour TTL."""
    cache_read: Price
    source: Note = ""
    """Where the numbers were read (the pricing page, and how)."""
    date: Note = ""
    """When they were read, so a stale price can be spotted."""


class _ServerToolEntry(StrictModel):
    """USD per 1,000 uses of a server tool."""

    per_1000: Price
    usage_key: Note | None = None
    """The key of `usage.server_tool_use` counting the uses; `<name>_requests` when not given."""
    source: Note = ""
    date: Note = ""


class PriceFile(StrictModel):
    """A prices file: the shipped `prices.yaml`, or a user's file of the same shape merged over it."""

    schema_: Annotated[int, Field(alias="schema")] = 1
    """The file format's version."""
    currency: Literal["USD"] = "USD"
    models: dict[str, _ModelEntry] = {}
    """Base model id -> its prices."""
    aliases: dict[str, Annotated[str, said("must be the model id it is billed as")]] = {}
    """Model id -> the base model it is billed as (e.g. a `-latest` name)."""
    server_tools: dict[str, _ServerToolEntry] = {}
    """Server tool name -> its price per 1,000 uses."""


def check_prices(data: dict[str, Any], path: str, line_of: Callable[[Loc], int | None]) -> PriceFile:
    """`data` as a valid prices file; else an InputError naming `path`, the line (`line_of`) and the key."""
    try:
        return PriceFile.model_validate(data)
    except ValidationError as exc:
        raise explain(exc, data, PriceFile, source=path, line_of=line_of) from None
