"""The options rules read, typed: a misspelt key is an error that names the valid ones, not a silent default.

`check_trace(trace, options=...)` takes a `CheckOptions` or a plain mapping validated into one. Rules
read them through `ctx.option(name)` / `ctx.options`, a plain dict: the W policies are flattened to the
top level and a plugin rule's own options (under `plugins`) sit beside the built-in ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._hints import closest
from ..errors import UsageError
from ._registry import DEFAULT_MAX_RETRIES


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class Limits(_Strict):
    """The run's limits; the agent must honour them and rules B001-B004 check it."""

    steps: int | None = Field(default=None, ge=1)
    """Most model calls in the run."""
    tokens: int | None = Field(default=None, ge=1)
    """Budget of cumulative input + output + cache_creation + cache_read tokens."""
    wall_time_s: float | None = Field(default=None, gt=0)
    """Deadline in seconds from the start of the run."""
    tool_errors: int | None = Field(default=None, ge=1)
    """Most consecutive tool errors before the run stops."""


class Prerequisite(_Strict):
    """`tool` runs only after `requires` succeeded earlier in the thread (rule W001)."""

    tool: str
    requires: str
    match: dict[str, str] = Field(default_factory=dict)
    """Argument of `tool` -> argument of `requires` that must be equal (e.g. customer_id: customer_id)."""


class Approval(_Strict):
    """`tool` runs only after `approval_tool` returned an approval for it (rule W002)."""

    tool: str
    approval_tool: str


class CircuitBreaker(_Strict):
    """After `failures` consecutive failures, `tool` is not called again within `cooldown_s` (rule W003)."""

    tool: str
    failures: int = Field(default=3, ge=1)
    cooldown_s: float = Field(default=30.0, ge=0)


class Policies(_Strict):
    """Workflow policies, given to the agent's dispatcher and checked by the W rules."""

    prerequisites: list[Prerequisite] = Field(default_factory=list)
    approvals: list[Approval] = Field(default_factory=list)
    circuit_breakers: list[CircuitBreaker] = Field(default_factory=list)


class CheckOptions(_Strict):
    """What the rules may be told besides the trace; every field is optional."""

    limits: Limits = Field(default_factory=Limits)
    """The run's declared limits (B001-B004; L002 lets B004 judge a run that reached one)."""
    max_consecutive_tool_errors: int | None = Field(default=None, ge=1)
    """T007's N; default: `limits.tool_errors`, else 3."""
    sequential_tools: tuple[str, ...] = ()
    """Tools with side effects that must not run concurrently (T008, with tool events)."""
    history_projection: bool = False
    """The agent sends a client-side projection of its history on purpose: H002 is off."""
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0)
    """Retries allowed per call (E001)."""
    output_tools: tuple[str, ...] = ()
    """Tools whose input is the run's answer (pydantic-ai's `final_result`, smolagents' `final_answer`):
    a thread may end on one without a tool_result (L002 says so in a note)."""
    prerequisites: list[Prerequisite] = Field(default_factory=list)
    """W001's prerequisites."""
    approvals: list[Approval] = Field(default_factory=list)
    """W002's approval gates."""
    circuit_breakers: list[CircuitBreaker] = Field(default_factory=list)
    """W003's circuit breakers."""
    policies: Policies = Field(default_factory=Policies)
    """The W policies nested as `Task.policies` carries them; a top-level list wins over its nested one."""
    plugins: dict[str, Any] = Field(default_factory=dict)
    """Options of plugin rules, read by them with `ctx.option(name)` like the built-in ones."""

    @field_validator("limits", "policies", mode="before")
    @classmethod
    def _from_dataclass(cls, value: Any) -> Any:
        # `agents.Limits` is a dataclass; a Task hands it over as is.
        return asdict(value) if is_dataclass(value) and not isinstance(value, type) else value

    @classmethod
    def of(cls, options: CheckOptions | Mapping[str, Any] | None) -> CheckOptions:
        """Options as given to `check_trace`: a CheckOptions, a mapping of its fields, or None."""
        if options is None:
            return cls()
        if isinstance(options, CheckOptions):
            return options
        unknown = [key for key in options if key not in cls.model_fields]
        if unknown:
            valid = sorted(cls.model_fields)
            hint = closest(str(unknown[0]), valid)
            raise UsageError(
                f"unknown check option {unknown[0]!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                + f"; valid options: {', '.join(valid)}; a plugin rule's own options go under 'plugins'"
            )
        try:
            return cls.model_validate(dict(options))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise UsageError(f"invalid check options: {problems}") from None

    def as_dict(self) -> dict[str, Any]:
        """The options as rules read them: plain values, the W policies at the top level."""
        values: dict[str, Any] = {
            "limits": self.limits.model_dump(exclude_none=True),
            "sequential_tools": list(self.sequential_tools),
            "history_projection": self.history_projection,
            "max_retries": self.max_retries,
            "output_tools": list(self.output_tools),
        }
        if self.max_consecutive_tool_errors is not None:
            values["max_consecutive_tool_errors"] = self.max_consecutive_tool_errors
        for name in ("prerequisites", "approvals", "circuit_breakers"):
            chosen = getattr(self, name) if name in self.model_fields_set else getattr(self.policies, name)
            values[name] = [item.model_dump() for item in chosen]
        return {**self.plugins, **values}
