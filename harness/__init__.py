"""A trace-based test and evaluation harness for agent loops on the Anthropic Messages API.

What a user needs is importable from here: the agent contract (`Task`, `Outcome`, `ToolError`,
`ToolResult`, `Limits`), the seam (`open_session`, `Session`, `ScriptedModel`), traces and their
checks (`load_trace`, `Trace`, `check_trace`, `rule`, `CheckContext`, `Finding`), scores (`Score`,
`ScoreContext`, `scorer`), the assertions of
the pytest plugin, and `HarnessError`, the base of every error in `harness.errors`.

The names are imported on first use, so `harness check` and `import harness.trace` do not pay for
importing the anthropic SDK when they never talk to a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from ._version import __version__ as __version__

_EXPORTS = {
    "Limits": "harness.agents._task",
    "Task": "harness.agents._task",
    "ToolError": "harness.agents._task",
    "ToolResult": "harness.agents._task",
    "CheckContext": "harness.checks",
    "Finding": "harness.checks",
    "check_trace": "harness.checks",
    "rule": "harness.checks",
    "HarnessError": "harness.errors",
    "assert_expectations": "harness._assertions",
    "assert_no_violations": "harness._assertions",
    "Outcome": "harness.trace",
    "Trace": "harness.trace",
    "load_trace": "harness.trace",
    "Score": "harness.scores",
    "ScoreContext": "harness.scores",
    "scorer": "harness.scores",
    "Session": "harness.transport",
    "open_session": "harness.transport",
    "ScriptedModel": "harness.transport.scripted",
}

# Literal, so that linters and readers see the public names; a test keeps it equal to _EXPORTS.
__all__ = [
    "CheckContext",
    "Finding",
    "HarnessError",
    "Limits",
    "Outcome",
    "Score",
    "ScoreContext",
    "ScriptedModel",
    "Session",
    "Task",
    "ToolError",
    "ToolResult",
    "Trace",
    "assert_expectations",
    "assert_no_violations",
    "check_trace",
    "load_trace",
    "open_session",
    "rule",
    "scorer",
]

if TYPE_CHECKING:
    from ._assertions import assert_expectations, assert_no_violations
    from .agents._task import Limits, Task, ToolError, ToolResult
    from .checks import CheckContext, Finding, check_trace, rule
    from .errors import HarnessError
    from .scores import Score, ScoreContext, scorer
    from .trace import Outcome, Trace, load_trace
    from .transport import Session, open_session
    from .transport.scripted import ScriptedModel


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return list(__all__)
