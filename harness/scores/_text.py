"""Final-text scorers: how the run's final answer compares with the expected one."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pydantic import Field, model_validator

from .._strict import Regex
from ._context import ScoreContext
from ._model import Score
from ._options import Options
from ._registry import scorer

_NUMBER = re.compile(r"(?<![\w.])(?:[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+)")


class FinalTextOptions(Options):
    """Give exactly one of equals, normalized, contains, regex, numeric."""

    equals: str | None = None
    """The final text is exactly this."""
    normalized: str | None = None
    """The final text is this once both are normalised: case folded, accents, punctuation, symbols
    and repeated whitespace dropped."""
    contains: str | list[str] | None = None
    """Substring(s) the final text contains; the value is the share of them found."""
    regex: Regex | None = None
    """A regular expression found in the final text (re.search)."""
    numeric: float | None = None
    """A number the final text states (thousands separators allowed), within `tolerance`."""
    tolerance: float = Field(default=0.0, ge=0)
    """With numeric: the largest absolute difference that still counts as equal."""
    ignore_case: bool = False
    """With equals, contains, regex: compare without regard to case."""

    @model_validator(mode="after")
    def _one(self) -> FinalTextOptions:
        given = [k for k in ("equals", "normalized", "contains", "regex", "numeric") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of equals, normalized, contains, regex, numeric"
                             + (f" (got {', '.join(given)})" if given else ""))
        return self


def normalize(text: str) -> str:
    """Case folded, accents, punctuation and symbols dropped, whitespace collapsed:
    `¡Héllo,  World!` -> `hello world`."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    # Every punctuation mark and symbol by its Unicode category (P*, S*), not only the ASCII ones.
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) and unicodedata.category(c)[0] not in "PS")
    return " ".join(kept.split())


def numbers_in(text: str) -> list[float]:
    return [float(found.replace(",", "")) for found in _NUMBER.findall(text)]


@scorer("final_text", options=FinalTextOptions)
def final_text(ctx: ScoreContext, options: FinalTextOptions) -> Score:
    """The final answer equals, contains, matches or states the expected text or number."""
    text = ctx.final_text
    if text is None:
        return Score("final_text", 0.0, "the run has no final text")
    shown = _short(text)

    def fold(value: str) -> str:
        return value.casefold() if options.ignore_case else value

    if options.equals is not None:
        ok = fold(text) == fold(options.equals)
        return Score("final_text", float(ok), f"expected {options.equals!r}, got {shown}")
    if options.normalized is not None:
        ok = normalize(text) == normalize(options.normalized)
        return Score("final_text", float(ok),
                     f"normalised, expected {normalize(options.normalized)!r}, got {normalize(text)[:120]!r}")
    if options.contains is not None:
        needles = [options.contains] if isinstance(options.contains, str) else options.contains
        found = [n for n in needles if fold(n) in fold(text)]
        missing = [n for n in needles if n not in found]
        value = len(found) / len(needles) if needles else 1.0
        reason = f"{len(found)} of {len(needles)} found in {shown}"
        if missing:
            reason += f"; missing: {', '.join(map(repr, missing))}"
        return Score("final_text", value, reason, details={"found": found, "missing": missing})
    if options.regex is not None:
        ok = re.search(options.regex, text, re.IGNORECASE if options.ignore_case else 0) is not None
        return Score("final_text", float(ok), f"/{options.regex}/ {'matches' if ok else 'does not match'} {shown}")
    assert options.numeric is not None
    return _numeric(text, options.numeric, options.tolerance)


def _numeric(text: str, expected: float, tolerance: float) -> Score:
    found = numbers_in(text)
    # A hair of slack so that 0.1 + 0.2 states 0.3: decimal text is not binary floating point.
    close = [n for n in found if abs(n - expected) <= tolerance + 1e-9 * max(1.0, abs(expected))]
    want = f"{expected:g}" + (f" ± {tolerance:g}" if tolerance else "")
    if close:
        return Score("final_text", 1.0, f"states {close[0]:g}, expected {want}", details={"numbers": found})
    said = ", ".join(f"{n:g}" for n in found) or "no number"
    return Score("final_text", 0.0, f"expected {want}; the final text states {said}", details={"numbers": found})


def _short(text: Any, size: int = 120) -> str:
    return repr(text if len(text) <= size else text[: size - 3] + "...")
