"""Cost: the pricing table (a data file shipped with the package) and the cost of calls and traces."""

from ._cost import CallCost, call_model, cost_of_call, cost_of_trace, cost_of_usage
from ._prices import ModelPrice, PriceTable, ServerToolPrice, load_prices

__all__ = [
    "CallCost",
    "ModelPrice",
    "PriceTable",
    "ServerToolPrice",
    "call_model",
    "cost_of_call",
    "cost_of_trace",
    "cost_of_usage",
    "load_prices",
]
