"""`harness run`'s pipeline: plan scenarios x matrix cells, make each run, check it, store its result."""

from ..scores import tool_calls
from ._execute import RunOptions, build_task, check_options, execute, outcome_of, usage_of
from ._expect import evaluate, verdict
from ._plan import Cell, Overrides, PlannedRun, load_all, mode_replaced, plan, plan_one
from ._runner import RunReport, check_cases, resolve_agents, run_all

__all__ = [
    "Cell",
    "Overrides",
    "PlannedRun",
    "RunOptions",
    "RunReport",
    "build_task",
    "check_cases",
    "check_options",
    "evaluate",
    "execute",
    "load_all",
    "mode_replaced",
    "outcome_of",
    "plan",
    "plan_one",
    "resolve_agents",
    "run_all",
    "tool_calls",
    "usage_of",
    "verdict",
]
