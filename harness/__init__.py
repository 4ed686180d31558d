"""A trace-based test and evaluation harness for agent loops on the Anthropic Messages API."""

from .agents import Limits, Task, ToolError, ToolResult
from .checks import CheckContext, Finding, check_trace, rule
from .errors import HarnessError
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
    "check_trace",
    "rule",
]
