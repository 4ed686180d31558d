"""One VCR interaction alone (`{"request": {method, uri, ...}, "response": {status, ...}}`, JSON or
YAML): what a recorder that keeps each call in a file of its own writes (the test agent of Datadog's
dd-trace-py, for one). It is read as an interaction of a VCR.py cassette is, `url` for `uri` included."""

from __future__ import annotations

from .._model import Exchange
from ._base import Recording, RecordingFormat
from ._vcrpy import read_interaction

_KEYS = frozenset({"request", "response", "recorded_at"})


def sniff(recording: Recording) -> bool:
    document = recording.document
    if not isinstance(document, dict) or not document.keys() <= _KEYS:
        return False
    request = document.get("request")
    # Claimed on the request's HTTP keys, not their values: a broken one is then told what its key lacks.
    return isinstance(request, dict) and any(key in request for key in ("method", "uri", "url"))


def read(recording: Recording) -> list[Exchange]:
    return [read_interaction(recording, 0, recording.document, "", ())]


FORMAT = RecordingFormat(
    name="vcr-interaction",
    description="one VCR interaction alone ({request: {method, uri}, response}, as dd-trace-py keeps a call)",
    sniff=sniff,
    read=read,
    suffixes=(".yaml", ".yml", ".json"),
)
