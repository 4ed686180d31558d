"""Scores: how good a run was, by graded measures (tool calls, final text, efficiency), a project's
own `module:function` scorers and model-graded judges, all registered with `@scorer`.

The names are imported on first use: a results file's scores are `Score`s (`_model`), and reading
them must not import the registry's pydantic models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_dir, lazy_exports

_EXPORTS = {
    "ScoreContext": "._context",
    "ToolCall": "._context",
    "tool_calls": "._context",
    "Score": "._model",
    "ScoreKind": "._model",
    "as_score": "._model",
    "BoundScorer": "._registry",
    "EntryError": "._registry",
    "ScoreEntry": "._registry",
    "ScorerInfo": "._registry",
    "bind": "._registry",
    "parse_entry": "._registry",
    "score_run": "._registry",
    "scorer": "._registry",
    "scorers": "._registry",
}

# Literal, so that linters and readers see the public names; a test keeps it equal to _EXPORTS.
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

if TYPE_CHECKING:
    from ._context import ScoreContext, ToolCall, tool_calls
    from ._model import Score, ScoreKind, as_score
    from ._registry import (
        BoundScorer,
        EntryError,
        ScoreEntry,
        ScorerInfo,
        bind,
        parse_entry,
        score_run,
        scorer,
        scorers,
    )


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__dir__ = lazy_dir(_EXPORTS, globals())
