"""The pricing table: the shipped `prices.yaml`, optionally merged with a user's file.

Model ids are resolved to a priced base model through the table's aliases and by dropping a dated
snapshot suffix; a model that still has no entry is unpriced, which callers must show as such.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError

from .._strict import StrictModel, explain, said
from .._yaml import Loc, parse_yaml, read_text
from ..errors import InputError

_DATE_SUFFIX = re.compile(r"-\d{8}$")


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens of one model, with where the numbers come from."""

    model: str
    """The base model id the prices are listed under (no alias, no date suffix)."""
    input: float
    output: float
    cache_write_5m: float
    """Cache writes with the default 5-minute TTL."""
    cache_write_1h: float
    """Cache writes with the 1-hour TTL."""
    cache_read: float
    source: str = ""
    """Where the numbers were read (the pricing page, and how)."""
    date: str = ""
    """When they were read, so a stale price can be spotted."""

    @property
    def rates(self) -> tuple[float, float, float, float, float]:
        """The numbers a call is priced by (not where or when they were read): what two tables must
        agree on to price the model alike."""
        return (self.input, self.output, self.cache_write_5m, self.cache_write_1h, self.cache_read)


@dataclass(frozen=True)
class ServerToolPrice:
    """USD per 1,000 uses of a server tool, counted from `usage.server_tool_use[usage_key]`."""

    name: str
    per_1000: float
    usage_key: str
    """The key of `usage.server_tool_use` that counts this tool's uses, e.g. `web_search_requests`."""
    source: str = ""
    """Where the price was read."""
    date: str = ""
    """When it was read."""


@dataclass(frozen=True)
class PriceTable:
    """Every price known, after merging; look models up with `model_price`."""

    models: dict[str, ModelPrice]
    aliases: dict[str, str] = field(default_factory=dict)
    """Model id -> the base model it is billed as (e.g. a `-latest` name)."""
    server_tools: dict[str, ServerToolPrice] = field(default_factory=dict)
    file: str | None = None
    """The user's prices file merged over the shipped table (`--prices FILE`), as given; None for the
    shipped table alone."""

    @property
    def label(self) -> str:
        """Which table this is, in one word or path: the user's file, or `shipped`."""
        return self.file or "shipped"

    def for_models(self, models: Iterable[str]) -> PriceTable:
        """This table cut to what prices `models` (their entries, the aliases that lead to them) and its
        server tools: what a run's result keeps of the table it was priced with, so that reading the
        result back prices its calls as the run did, whatever table is shipped by then."""
        kept: dict[str, ModelPrice] = {}
        aliases: dict[str, str] = {}
        for model in models:
            # The names `base_model` looks up: the id, then its undated form.
            for name in (model, _DATE_SUFFIX.sub("", self.aliases.get(model, model))):
                if name in self.aliases:
                    aliases[name] = self.aliases[name]
            price = self.model_price(model)
            if price is not None:
                kept[price.model] = price
        return PriceTable(models=kept, aliases=aliases, server_tools=dict(self.server_tools), file=self.file)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PriceTable:
        tools = data.get("server_tools", {})
        return cls(models={name: ModelPrice(**entry) for name, entry in data.get("models", {}).items()},
                   aliases=dict(data.get("aliases", {})),
                   server_tools={name: ServerToolPrice(**entry) for name, entry in tools.items()},
                   file=data.get("file"))

    def base_model(self, model: str) -> str:
        """The id a model is priced under: alias resolved, dated snapshot suffix dropped."""
        name = self.aliases.get(model, model)
        if name not in self.models:
            undated = _DATE_SUFFIX.sub("", name)
            name = self.aliases.get(undated, undated)
        return name

    def model_price(self, model: str | None) -> ModelPrice | None:
        """The prices `model` is billed at, or None when it has none (unpriced, never free)."""
        if not model:
            return None
        return self.models.get(self.base_model(model))


def tables_said(priced_with: dict[str, int]) -> str:
    """`2 with prices.yaml, 3 with the shipped table`: how many runs each table (by `PriceTable.label`) priced."""
    return ", ".join(f"{n} with {'the shipped table' if label == 'shipped' else label}"
                     for label, n in priced_with.items())


def keep_rates(kept: dict[str, set[tuple[float, ...]]], table: PriceTable | None) -> None:
    """Add to `kept` each model's rates as a run priced with a prices file kept them (`RunResult.prices`):
    tables are told apart by these, not only by name, since one prices file edited between two runs is
    two tables under one name. A run priced with the shipped table keeps none (None), only the name
    `shipped`: the table installed now may not be the one it ran with, so of such runs the name is all
    there is to compare."""
    if table is not None:
        for model, price in table.models.items():
            kept.setdefault(model, set()).add(price.rates)


def count_tables(labels: Iterable[str]) -> dict[str, int]:
    """How many of the labels name each table, in the order first met."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return counts


def _shipped() -> dict[str, Any]:
    text = resources.files("harness.cost").joinpath("prices.yaml").read_text(encoding="utf-8")
    data = parse_yaml(text, "harness/cost/prices.yaml").data
    assert isinstance(data, dict)
    return data


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Key-by-key merge, so a user's file can change one price of one model and keep the rest."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


Price = Annotated[float, Field(ge=0, allow_inf_nan=False), said("price must be a non-negative number")]


def _text(value: Any) -> Any:
    # An unquoted `date: 2026-01-01` is a date to YAML; it is kept as the text it was written as.
    return value.isoformat() if isinstance(value, datetime.date) else value


Note = Annotated[str, BeforeValidator(_text), said("must be a string")]


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


def _build(data: dict[str, Any], path: str, line_of: Callable[[Loc], int | None]) -> PriceTable:
    try:
        table = PriceFile.model_validate(data)
    except ValidationError as exc:
        raise explain(exc, data, PriceFile, source=path, line_of=line_of) from None
    models = {name: ModelPrice(model=name, **entry.model_dump()) for name, entry in table.models.items()}
    tools = {
        name: ServerToolPrice(name=name, per_1000=entry.per_1000, usage_key=entry.usage_key or f"{name}_requests",
                              source=entry.source, date=entry.date)
        for name, entry in table.server_tools.items()
    }
    return PriceTable(models=models, aliases=dict(table.aliases), server_tools=tools)


_DEFAULT: PriceTable | None = None


def load_prices(user_file: str | os.PathLike[str] | None = None) -> PriceTable:
    """The shipped table, with `user_file` (same YAML shape) merged over it when given."""
    global _DEFAULT
    if user_file is None:
        if _DEFAULT is None:
            _DEFAULT = _build(_shipped(), "harness/cost/prices.yaml", _no_lines)
        return _DEFAULT
    path = Path(user_file)
    document = parse_yaml(read_text(path, what="prices file"), str(path))
    override = document.data
    if not isinstance(override, dict):
        raise InputError(str(path), "a prices file is a mapping with models:, aliases:, server_tools:")
    # Validated after the merge: a key the user misspelt is still there to be refused (the shipped
    # price would otherwise stay in force, silently), and every line named is in the user's file.
    table = _build(_merge(_shipped(), override), str(path), document.line_of)
    return dataclasses.replace(table, file=str(path))


def _no_lines(loc: Loc) -> int | None:
    return None
