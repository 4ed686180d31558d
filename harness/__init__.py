"""A trace-based test and evaluation harness for agent loops on the Anthropic Messages API.

The public names below are imported on first use, so `harness check` and `import harness.trace`
do not pay for importing the anthropic SDK when they never talk to a model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CheckContext": "harness.checks",
    "Finding": "harness.checks",
    "check_trace": "harness.checks",
    "rule": "harness.checks",
    "HarnessError": "harness.errors",
    "Limits": "harness.agents._task",
    "Task": "harness.agents._task",
    "ToolError": "harness.agents._task",
    "ToolResult": "harness.agents._task",
    "Outcome": "harness.trace",
    "Trace": "harness.trace",
    "assert_expectations": "harness.pytest_plugin",
    "assert_no_violations": "harness.pytest_plugin",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .agents._task import Limits, Task, ToolError, ToolResult
    from .checks import CheckContext, Finding, check_trace, rule
    from .errors import HarnessError
    from .pytest_plugin import assert_expectations, assert_no_violations
    from .trace import Outcome, Trace


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
