"""The cost of a model call and of a whole trace, from the `usage` each response reports.

Cache writes are priced by their TTL tier when the response splits them (`usage.cache_creation`),
else all at the 5-minute rate; server tools (web search) by their use counts. An unpriced model
gives None, never zero, so a total is never silently too low.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..trace._model import Call, Trace, frozen_record
from ._prices import PriceTable, load_prices

_MILLION = 1_000_000


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class CallCost:
    """What one call cost, split by what is billed, in USD."""

    model: str
    """The priced base model the call was billed as."""
    input_tokens: int
    output_tokens: int
    cache_write_5m_tokens: int
    """Cache writes at the 5-minute TTL (all of them when the response does not split by TTL)."""
    cache_write_1h_tokens: int
    cache_read_tokens: int
    server_tool_uses: dict[str, int] = field(default_factory=dict)
    """Uses of each priced server tool, by the price table's name (e.g. `web_search: 2`)."""
    input_usd: float = 0.0
    output_usd: float = 0.0
    cache_write_usd: float = 0.0
    cache_read_usd: float = 0.0
    server_tools_usd: float = 0.0

    @property
    def cache_write_tokens(self) -> int:
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens

    @property
    def total_usd(self) -> float:
        return self.input_usd + self.output_usd + self.cache_write_usd + self.cache_read_usd + self.server_tools_usd


def call_model(call: Call) -> str | None:
    """The model a call was billed as: the response's id when it has one, else the request's."""
    response = call.response
    if response and isinstance(response.get("model"), str):
        return str(response["model"])
    return call.model


def cost_of_usage(model: str | None, usage: dict[str, Any], prices: PriceTable | None = None) -> CallCost | None:
    """Price one response's `usage` block; None when the model has no price."""
    table = prices or load_prices()
    price = table.model_price(model)
    if price is None:
        return None
    split = usage.get("cache_creation")
    if isinstance(split, dict) and ("ephemeral_5m_input_tokens" in split or "ephemeral_1h_input_tokens" in split):
        write_5m = _count(split.get("ephemeral_5m_input_tokens"))
        write_1h = _count(split.get("ephemeral_1h_input_tokens"))
    else:
        # Without the TTL split the API's default (5-minute) tier is what was written.
        write_5m = _count(usage.get("cache_creation_input_tokens"))
        write_1h = 0
    uses: dict[str, int] = {}
    tools_usd = 0.0
    server = usage.get("server_tool_use")
    if isinstance(server, dict):
        for name, tool in table.server_tools.items():
            n = _count(server.get(tool.usage_key))
            if n:
                uses[name] = n
                tools_usd += n * tool.per_1000 / 1000
    input_tokens = _count(usage.get("input_tokens"))
    output_tokens = _count(usage.get("output_tokens"))
    read = _count(usage.get("cache_read_input_tokens"))
    # Made as CallCost(...) makes it, without a frozen record's object.__setattr__ per field: every call
    # of every run of a report is priced here.
    return frozen_record(CallCost, {
        "model": price.model,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_write_5m_tokens": write_5m,
        "cache_write_1h_tokens": write_1h,
        "cache_read_tokens": read,
        "server_tool_uses": uses,
        "input_usd": input_tokens * price.input / _MILLION,
        "output_usd": output_tokens * price.output / _MILLION,
        "cache_write_usd": (write_5m * price.cache_write_5m + write_1h * price.cache_write_1h) / _MILLION,
        "cache_read_usd": read * price.cache_read / _MILLION,
        "server_tools_usd": tools_usd,
    })


def cost_of_call(call: Call, prices: PriceTable | None = None) -> CallCost | None:
    """The cost of one call (its answered attempt; failed attempts bill nothing); None if unpriced."""
    return cost_of_usage(call_model(call), call.usage, prices)


def price_calls(trace: Trace, prices: PriceTable | None = None) -> list[CallCost | None]:
    """Each call's cost in the trace's call order (None when unpriced). The report prices a run's calls
    once with this and hands the list to every figure it makes: the run's cost, the ledgers and the
    steps shown would otherwise each price every call again."""
    return [cost_of_call(call, prices) for call in trace.calls]


def total_cost(calls: Sequence[Call], costs: Sequence[CallCost | None]) -> float | None:
    """Total USD of `calls` priced as `costs` (one each, in order); None as soon as one answered call
    is unpriced."""
    total = 0.0
    for call, cost in zip(calls, costs, strict=True):
        if cost is None:
            if call.response is None:
                continue  # a call that got no answer bills nothing, whatever its model
            return None
        total += cost.total_usd
    return total


def cost_of_trace(trace: Trace, prices: PriceTable | None = None) -> float | None:
    """Total USD of every call of a trace; None as soon as one answered call is unpriced."""
    return total_cost(trace.calls, price_calls(trace, prices))
