"""Ruby VCR cassettes (`http_interactions:`): the VCR.py outline, with Psych's `!binary` bodies."""

from __future__ import annotations

from .._model import Exchange
from . import _vcrpy
from ._base import Recording, RecordingFormat


def sniff(recording: Recording) -> bool:
    document = recording.document
    return isinstance(document, dict) and "http_interactions" in document


def read(recording: Recording) -> list[Exchange]:
    return _vcrpy.read_interactions(recording, "http_interactions", _vcrpy.read_interaction)


FORMAT = RecordingFormat(
    name="ruby-vcr",
    description="a Ruby VCR cassette (`http_interactions:`)",
    sniff=sniff,
    read=read,
    suffixes=(".yaml", ".yml", ".json"),
    markers=(b"http_interactions",),
)
