"""A score: how good one run was by one measure, a value in [0, 1] (or a label) with the reason.

Scores are stored in each results line (`"scores": [...]`), shown in the report, compared across
cells, and decide pass through `expect.min_score`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ScoreKind = Literal["graded", "judge"]


@dataclass(frozen=True)
class Score:
    """One measure of one run."""

    name: str
    """The scorer's name in the scenario (`tool_calls`, `final_text`, a custom scorer's function name,
    or the `name:` given to the entry)."""
    value: float | None
    """In [0, 1]; None when the scorer gave a label with no value, or could not score the run."""
    reason: str
    """Why this value, in words: what was expected and what the run did."""
    label: str | None = None
    """A category the scorer chose (e.g. `correct`, `partial`), when it speaks in labels."""
    kind: ScoreKind = "graded"
    """graded: computed from the run; judge: given by a model reading the run."""
    details: dict[str, Any] | None = field(default=None, compare=False)
    """What the scorer measured on the way (e.g. precision and recall beside F1), for the report."""

    @property
    def disagreement(self) -> bool:
        """A judge asked several times gave verdicts that disagree: a score to look at before trusting."""
        return bool((self.details or {}).get("disagreement"))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "reason": self.reason, "label": self.label,
                "kind": self.kind, "details": self.details}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Score:
        value = data.get("value")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise TypeError(f"score value is {type(value).__name__} {value!r}")
        return cls(name=str(data["name"]), value=None if value is None else float(value),
                   reason=str(data.get("reason", "")),
                   label=data.get("label"), kind=data.get("kind", "graded"), details=data.get("details"))


ScoreLike = Any
"""What a scorer function may return: a Score, a bool (1.0 / 0.0), a number in [0, 1], a label
(str), or a tuple `(value_or_label, reason)`."""


def as_score(returned: ScoreLike, *, name: str, kind: ScoreKind = "graded",
             labels: Mapping[str, float] | None = None) -> Score:
    """The Score a scorer's return value means; a TypeError or ValueError saying what was wrong."""
    if isinstance(returned, Score):
        score = returned
        if score.name != name or score.kind != kind:
            score = Score(name, score.value, score.reason, score.label, kind, score.details)
        if score.value is None and score.label is not None and labels and score.label in labels:
            score = Score(name, float(labels[score.label]), score.reason, score.label, kind, score.details)
        _check_value(score.value)
        return score
    reason = ""
    if isinstance(returned, tuple):
        if len(returned) != 2 or not isinstance(returned[1], str):
            raise TypeError("a tuple returned by a scorer is (value or label, reason)")
        returned, reason = returned
    if isinstance(returned, bool):
        return Score(name, 1.0 if returned else 0.0, reason or ("yes" if returned else "no"), kind=kind)
    if isinstance(returned, (int, float)):
        _check_value(float(returned))
        return Score(name, float(returned), reason, kind=kind)
    if isinstance(returned, str):
        value = None if labels is None or returned not in labels else float(labels[returned])
        return Score(name, value, reason, label=returned, kind=kind)
    raise TypeError(
        "a scorer returns a Score, a bool, a number in [0, 1], a label (str) or (value, reason); got "
        f"{type(returned).__name__}"
    )


def _check_value(value: float | None) -> None:
    if value is not None and (math.isnan(value) or not 0.0 <= value <= 1.0):
        raise ValueError(f"a score's value is in [0, 1]; got {value}")
