"""A trace-based test and evaluation harness for agent loops on the Anthropic Messages API."""

from .agents import Limits, Task, ToolError, ToolResult
from .checks import CheckContext, Finding, check_trace, rule
from .errors import HarnessError
from .pytest_plugin import assert_expectations, assert_no_violations
from .trace import Outcome, Trace

__all__ = [
    "CheckContext",
    "Finding",
    "HarnessError",
    "Limits",
    "Outcome",
    "Task",
    "ToolError",
    "ToolResult",
    "Trace",
    "assert_expectations",
    "assert_no_violations",
    "check_trace",
    "rule",
]
