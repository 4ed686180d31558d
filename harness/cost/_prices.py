"""The pricing table: the shipped `prices.yaml`, optionally merged with a user's file.

Model ids are resolved to a priced base model through the table's aliases and by dropping a dated
snapshot suffix; a model that still has no entry is unpriced, which callers must show as such.

A user's file is validated (`_price_file`, pydantic) before its table is built; the shipped file is
built as it is, without importing pydantic (about 0.15 s of CPU in each process building a
report), and a test validates it and holds the table built so equal to this one.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

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


SHIPPED = "harness/cost/prices.yaml"
"""The shipped file, as its errors name it."""


def _shipped() -> dict[str, Any]:
    from .._yaml import parse_yaml  # here: yaml is imported only by a process that reads a prices file

    text = resources.files("harness.cost").joinpath("prices.yaml").read_text(encoding="utf-8")
    data = parse_yaml(text, SHIPPED).data
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


def as_text(value: Any) -> Any:
    """A note (`source`, `date`) as it was written: an unquoted `date: 2026-01-01` is a date to YAML."""
    return value.isoformat() if isinstance(value, datetime.date) else value


def build_table(data: dict[str, Any]) -> PriceTable:
    """The table of a prices file's data, taken as valid (`_price_file.check_prices`): prices as floats,
    notes as text, a server tool's `usage_key` `<name>_requests` unless given."""
    models = {
        name: ModelPrice(model=name, input=float(entry["input"]), output=float(entry["output"]),
                         cache_write_5m=float(entry["cache_write_5m"]), cache_write_1h=float(entry["cache_write_1h"]),
                         cache_read=float(entry["cache_read"]), source=as_text(entry.get("source", "")),
                         date=as_text(entry.get("date", "")))
        for name, entry in data.get("models", {}).items()
    }
    tools = {
        name: ServerToolPrice(name=name, per_1000=float(entry["per_1000"]),
                              usage_key=as_text(entry.get("usage_key")) or f"{name}_requests",
                              source=as_text(entry.get("source", "")), date=as_text(entry.get("date", "")))
        for name, entry in data.get("server_tools", {}).items()
    }
    return PriceTable(models=models, aliases=dict(data.get("aliases", {})), server_tools=tools)


_DEFAULT: PriceTable | None = None


def load_prices(user_file: str | os.PathLike[str] | None = None) -> PriceTable:
    """The shipped table, with `user_file` (same YAML shape) merged over it when given."""
    global _DEFAULT
    if user_file is None:
        if _DEFAULT is None:
            _DEFAULT = build_table(_shipped())  # not validated here: a test does (tests/cost)
        return _DEFAULT
    # Here: pydantic (about 0.15 s of CPU with the models of `_price_file`) only for a user's file.
    from .._yaml import parse_yaml, read_text
    from ._price_file import check_prices

    path = Path(user_file)
    document = parse_yaml(read_text(path, what="prices file"), str(path))
    override = document.data
    if not isinstance(override, dict):
        raise InputError(str(path), "a prices file is a mapping with models:, aliases:, server_tools:")
    # Validated after the merge: a key the user misspelt is still there to be refused (the shipped
    # price would otherwise stay in force, silently), and every line named is in the user's file.
    merged = _merge(_shipped(), override)
    check_prices(merged, str(path), document.line_of)
    return dataclasses.replace(build_table(merged), file=str(path))


def keep_shipped(table: PriceTable) -> None:
    """Take `table` as the shipped table `load_prices()` returns: read by another process (`harness
    report`'s, which gives it to its worker, so that the worker reads no YAML)."""
    global _DEFAULT
    _DEFAULT = table
