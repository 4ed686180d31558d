"""Scores: how good a run was, by graded measures (tool calls, final text, efficiency), a project's
own `module:function` scorers and model-graded judges, all registered with `@scorer`."""

from ._context import ScoreContext, ToolCall, tool_calls
from ._model import Score, ScoreKind, as_score
from ._registry import BoundScorer, EntryError, ScoreEntry, ScorerInfo, bind, parse_entry, score_run, scorer, scorers

__all__ = [
    "BoundScorer",
    "EntryError",
    "Score",
    "ScoreContext",
    "ScoreEntry",
    "ScoreKind",
    "ScorerInfo",
    "ToolCall",
    "as_score",
    "bind",
    "parse_entry",
    "score_run",
    "scorer",
    "scorers",
    "tool_calls",
]
