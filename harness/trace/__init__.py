"""Wire exchanges -> calls -> threads: the trace every check reads."""

from ._model import Call, Exchange, Outcome, ToolExecution, Thread, Trace
from ._threads import build_trace

__all__ = ["Call", "Exchange", "Outcome", "ToolExecution", "Thread", "Trace", "build_trace"]
