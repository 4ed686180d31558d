"""How a run reaches a model, and how a cassette is recorded: named once for every front.

The scenario format, the transport, `harness run` and the pytest plugin all offer these choices;
this module imports nothing, so the pytest plugin can name them without loading the harness.
"""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["replay", "record", "live", "scripted"]
"""replay a cassette (offline), record one from the live API, call the API live, or a scripted model."""
MODES: tuple[str, ...] = get_args(Mode)

RecordMode = Literal["none", "once", "new_episodes", "all"]
"""pytest-recording's record modes; what each does is written in `transport/_cassette.py`."""
RECORD_MODES: tuple[str, ...] = get_args(RecordMode)
PAID_MODES: tuple[str, ...] = ("live", "record")
"""The modes that call the API, which bills them; replay and scripted runs spend nothing."""
