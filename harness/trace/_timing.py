"""How long the model took, as kept in our cassettes beside each recorded answer.

A replay answers in milliseconds; what the model took when the answer was recorded is the latency
people compare settings by. Each interaction's vcrpy `response` mapping carries it under an extra
`harness` key: vcrpy loads and saves a response's extra keys unchanged and its stubs read only
`status`, `headers` and `body`, so the file stays a plain vcrpy cassette. Kept per response rather
than as a list in `metadata`, because vcrpy drops and reorders interactions ("all" mode,
`drop_unused_requests`, new episodes appended) and a parallel list would silently fall out of step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._model import Exchange

RESPONSE_KEY = "harness"
"""The extra key of a vcrpy `response` mapping that holds `{started_at, duration_s}`."""

REPLAY_EXTENSION = "harness.replay"
"""httpx2 response extension a cassette transport sets on a played answer: the recorded timing, so
the capture above it can tell a replay (and what the model once took) from a live answer."""


def timing_entry(started_at: float, duration_s: float) -> dict[str, float]:
    # Milliseconds of start and 0.1 ms of duration: finer is clock noise, and it keeps the YAML short.
    return {"started_at": round(started_at, 3), "duration_s": round(duration_s, 4)}


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def recorded_timing(response: Any) -> tuple[float | None, float | None]:
    """(started_at, duration_s) a cassette response holds, each None when absent or not a sane number
    (an old cassette, a foreign one, a hand edit)."""
    entry = response.get(RESPONSE_KEY) if isinstance(response, dict) else None
    if not isinstance(entry, dict):
        return None, None
    return _seconds(entry.get("started_at")), _seconds(entry.get("duration_s"))


def attempt_latency(exchange: Exchange, replay_run: bool = False) -> float | None:
    """What the model took for one attempt: the recorded time when the cassette kept it, the measured
    one for a live or scripted answer, and None for a replayed answer the cassette kept no time for.

    `replay_run` (the result's mode is replay) covers results written before exchanges said they were
    replayed (trace schema 1): their duration_s is the replay's few milliseconds, never the model's.
    """
    if exchange.recorded_duration_s is not None:
        return exchange.recorded_duration_s
    return None if exchange.replayed or replay_run else exchange.duration_s
