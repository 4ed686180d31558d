"""Agents under test: the contract (`Task`), the reference loop of the seeds, and deliberately buggy loops."""

from ._task import Limits, Task, ToolError, ToolResult

__all__ = ["Limits", "Task", "ToolError", "ToolResult"]
