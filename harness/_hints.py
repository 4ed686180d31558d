"""The "did you mean" of an unknown key, shared by every file the harness validates."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def closest(typo: str, valid: Sequence[str]) -> str | None:
    """The valid key a typo most likely meant. Swapped letters (`modle`) are the commonest slip and
    difflib scores them low (`modle` is nearer `mode` than `model` for it), so a key with exactly
    the typo's letters wins first."""
    anagrams = [key for key in valid if sorted(key) == sorted(typo)]
    if anagrams:
        return anagrams[0]
    close = difflib.get_close_matches(typo, list(valid), n=1)
    return close[0] if close else None
