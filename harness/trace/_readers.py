"""Read recorded HTTP traffic, whatever wrote it, into exchanges and a trace.

The formats themselves live in `formats/`, one module each; this module opens the file, lets the
registry pick the format, and rebuilds the threads.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ._model import Exchange, Trace
from ._threads import build_trace
from .formats import Recording, detect, read_recording
from .formats._base import read_recording_bytes


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a recording's bodies are parsed.

    Parsing allocates many dicts that all stay alive; each collection would walk all of them again,
    which more than doubles the read time of a large cassette. Nothing read here forms cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_trace(path: str | Path, *, whole_run: bool = False) -> Trace:
    """Read a recording and rebuild its calls and threads."""
    name = str(path)
    recording = Recording(name, read_recording_bytes(name))
    with gc_paused():
        found = detect(recording)
        if found is not None and found.load is not None:
            return found.load(recording, whole_run)
        exchanges, notes = read_recording(recording), recording.notes
        trace = build_trace(exchanges, str(path), whole_run=whole_run, notes=notes)
    if not trace.calls:
        trace.notes.append(
            "no Messages API traffic (POST /v1/messages) in this file; nothing to check"
            if exchanges
            else "no interactions recorded in this file; nothing to check"
        )
    return trace


def read_exchanges(path: str | Path, *, secrets: Iterable[str] = ()) -> tuple[list[Exchange], list[str]]:
    """Every exchange of a recording in order, and notes on what was skipped or guessed."""
    name = str(path)
    recording = Recording(name, read_recording_bytes(name), tuple(secrets))
    with gc_paused():
        return read_recording(recording), recording.notes
