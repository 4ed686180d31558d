"""Agents by name, so a scenario file or the CLI can say which agent to run.

Names are "reference", "reference-async", "coordinator" and "buggy.<name>"; anything else is an
import path "package.module:function" to the user's own agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .._imports import import_user_module, raised_at_import
from ..errors import HarnessError
from ..trace._model import Outcome
from ._reference import async_reference_agent, coordinator_agent, reference_agent
from ._task import Task
from .buggy import BUGGY_AGENTS

AgentFn = Callable[[Any, Task], str | Outcome] | Callable[[Any, Task], Awaitable[str | Outcome]]
"""`agent(client, task)`, sync with `anthropic.Anthropic` or async with `anthropic.AsyncAnthropic`."""

AGENTS: dict[str, AgentFn] = {
    "reference": reference_agent,
    "reference-async": async_reference_agent,
    "coordinator": coordinator_agent,
    **{f"buggy.{name}": agent for name, agent in BUGGY_AGENTS.items()},
}


def resolve_agent(spec: str, *, near: Path | None = None) -> AgentFn:
    """The agent a name or an import path "package.module:function" points at.

    The current directory and `near` (the scenario's folder) are importable, as for `python`
    fixtures: `harness` is a console script, so without this a user's own package sitting next to
    their scenarios would not import unless installed, which is not how people first try an agent.
    """
    if spec in AGENTS:
        return AGENTS[spec]
    if ":" not in spec:
        raise HarnessError(
            f"unknown agent {spec!r}; use one of: {', '.join(AGENTS)}, or an import path 'package.module:function'"
        )
    module_name, _, attribute = spec.partition(":")
    try:
        module = import_user_module(module_name, near=near)
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name is not None and (
                module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise HarnessError(
                f"agent {spec!r}: cannot import {module_name!r}: {exc}; run from the folder holding your package, "
                "or pip install -e it"
            ) from exc
        # Found, but its own import failed (a dependency not installed): where to run from is not the
        # fix, the user's line that imports it is.
        raise HarnessError(f"agent {spec!r}: cannot import {module_name!r}: {raised_at_import(exc)}") from exc
    agent = getattr(module, attribute, None)
    if not callable(agent):
        raise HarnessError(f"agent {spec!r}: {module_name} has no callable {attribute!r}")
    resolved: AgentFn = agent
    return resolved
