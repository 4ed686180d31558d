"""The pricing table: the shipped `prices.yaml`, optionally merged with a user's file.

Model ids are resolved to a priced base model through the table's aliases and by dropping a dated
snapshot suffix; a model that still has no entry is unpriced, which callers must show as such.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .._hints import closest
from .._yaml import Loc, parse_yaml, read_text
from ..errors import InputError

_DATE_SUFFIX = re.compile(r"-\d{8}$")
_TOKEN_KEYS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
_MODEL_KEYS = (*_TOKEN_KEYS, "source", "date")
_TOOL_KEYS = ("per_1000", "usage_key", "source", "date")
_TOP_KEYS = ("schema", "currency", "models", "aliases", "server_tools")


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


def _number(path: str, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InputError(path, f"price must be a non-negative number, got {value!r}", key=where)
    return float(value)


def _build(data: dict[str, Any], path: str) -> PriceTable:
    models: dict[str, ModelPrice] = {}
    for name, entry in (data.get("models") or {}).items():
        if not isinstance(entry, dict):
            raise InputError(path, "a model's prices must be a mapping", key=f"models.{name}")
        missing = [k for k in _TOKEN_KEYS if k not in entry]
        if missing:
            raise InputError(path, f"missing {', '.join(missing)} (needs {', '.join(_TOKEN_KEYS)})", key=f"models.{name}")
        numbers = {k: _number(path, f"models.{name}.{k}", entry[k]) for k in _TOKEN_KEYS}
        models[str(name)] = ModelPrice(model=str(name), source=str(entry.get("source", "")),
                                       date=str(entry.get("date", "")), **numbers)
    tools: dict[str, ServerToolPrice] = {}
    for name, entry in (data.get("server_tools") or {}).items():
        if not isinstance(entry, dict) or "per_1000" not in entry:
            raise InputError(path, "a server tool needs per_1000", key=f"server_tools.{name}")
        tools[str(name)] = ServerToolPrice(
            name=str(name),
            per_1000=_number(path, f"server_tools.{name}.per_1000", entry["per_1000"]),
            usage_key=str(entry.get("usage_key", f"{name}_requests")),
            source=str(entry.get("source", "")),
            date=str(entry.get("date", "")),
        )
    aliases = {str(k): str(v) for k, v in (data.get("aliases") or {}).items()}
    return PriceTable(models=models, aliases=aliases, server_tools=tools)


_DEFAULT: PriceTable | None = None


def load_prices(user_file: str | os.PathLike[str] | None = None) -> PriceTable:
    """The shipped table, with `user_file` (same YAML shape) merged over it when given."""
    global _DEFAULT
    if user_file is None:
        if _DEFAULT is None:
            _DEFAULT = _build(_shipped(), "harness/cost/prices.yaml")
        return _DEFAULT
    path = Path(user_file)
    document = parse_yaml(read_text(path, what="prices file"), str(path))
    override = document.data
    if not isinstance(override, dict):
        raise InputError(str(path), "a prices file is a mapping with models:, aliases:, server_tools:")
    _check_keys(override, path, document.line_of)
    return _build(_merge(_shipped(), override), str(path))


def _check_keys(override: dict[Any, Any], path: Path, line_of: Callable[[Loc], int | None]) -> None:
    """Refuse a key the table does not read. The override is merged over the shipped table, so a
    misspelt price of a known model (`inptu: 2`) would leave the shipped price in force, silently."""
    _refuse_unknown(override, _TOP_KEYS, (), path, line_of)
    for section, valid in (("models", _MODEL_KEYS), ("server_tools", _TOOL_KEYS)):
        entries = override.get(section)
        if not isinstance(entries, dict):
            continue  # a wrong shape is reported by _build, with the rest of the table
        for name, entry in entries.items():
            if isinstance(entry, dict):
                _refuse_unknown(entry, valid, (section, str(name)), path, line_of)


def _refuse_unknown(mapping: dict[Any, Any], valid: tuple[str, ...], where: tuple[str, ...], path: Path,
                    line_of: Callable[[Loc], int | None]) -> None:
    for key in mapping:
        if str(key) in valid:
            continue
        loc = (*where, str(key))
        hint = closest(str(key), valid)
        problem = f"unknown key {str(key)!r}; valid keys: {', '.join(valid)}" + (f" (did you mean {hint!r}?)" if hint else "")
        raise InputError(str(path), problem, line=line_of(loc), key=".".join(loc))
