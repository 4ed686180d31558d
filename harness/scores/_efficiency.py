"""The efficiency scorer: how much of a budget of steps, tokens or cost the run left unspent."""

from __future__ import annotations

from pydantic import Field, model_validator

from ._context import ScoreContext
from ._model import Score
from ._options import Options
from ._registry import scorer


class EfficiencyOptions(Options):
    """Give one or more budgets; the value is the mean share of them the run left unspent."""

    max_steps: int | None = Field(default=None, ge=1)
    """Model calls the task deserves at most."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Tokens (input + output + cache creation + cache read) the task deserves at most."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Dollars the task deserves at most; a run whose cost is unknown (an unpriced model) gets no value."""

    @model_validator(mode="after")
    def _some(self) -> EfficiencyOptions:
        if self.max_steps is None and self.max_tokens is None and self.max_cost_usd is None:
            raise ValueError("give at least one budget: max_steps, max_tokens, max_cost_usd")
        return self


@scorer("efficiency", options=EfficiencyOptions)
def efficiency(ctx: ScoreContext, options: EfficiencyOptions) -> Score:
    """The share of a budget (steps, tokens, cost) the run left unspent: 1 - used / budget, at least 0."""
    parts: dict[str, float] = {}
    said: list[str] = []
    if options.max_steps is not None:
        parts["steps"] = _left(ctx.steps, options.max_steps)
        said.append(f"{ctx.steps} of {options.max_steps} steps")
    if options.max_tokens is not None:
        parts["tokens"] = _left(ctx.usage.total, options.max_tokens)
        said.append(f"{ctx.usage.total} of {options.max_tokens} tokens")
    if options.max_cost_usd is not None:
        if ctx.cost_usd is None:
            # Unpriced is unknown, never free: no value rather than a flattering one.
            return Score("efficiency", None, "cost unknown: a model of the run has no price; "
                         + ", ".join(said + [f"budget ${options.max_cost_usd:g}"]), details=dict(parts))
        parts["cost"] = _left(ctx.cost_usd, options.max_cost_usd)
        said.append(f"${ctx.cost_usd:.4f} of ${options.max_cost_usd:g}")
    value = sum(parts.values()) / len(parts)
    return Score("efficiency", value, "used " + ", ".join(said), details=parts)


def _left(used: float, budget: float) -> float:
    return max(0.0, 1.0 - used / budget)
