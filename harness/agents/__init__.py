"""Agents under test: the contract (`Task`), a correct reference loop, and deliberately buggy loops."""

from . import buggy
from ._command import CommandAgent
from ._reference import async_reference_agent, coordinator_agent, reference_agent
from ._registry import AGENTS, AgentFn, resolve_agent
from ._task import Limits, Task, ToolError, ToolResult

__all__ = [
    "AGENTS",
    "AgentFn",
    "CommandAgent",
    "Limits",
    "Task",
    "ToolError",
    "ToolResult",
    "async_reference_agent",
    "buggy",
    "coordinator_agent",
    "reference_agent",
    "resolve_agent",
]
