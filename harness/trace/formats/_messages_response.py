"""A bare Messages API response object (`{"type": "message", "role": "assistant", "content": [...]}`),
as TypeScript and Python projects keep fixtures: the answer alone, without status or request."""

from __future__ import annotations

from .._model import Exchange
from ._base import Recording, RecordingFormat


def sniff(recording: Recording) -> bool:
    document = recording.document
    return (isinstance(document, dict) and document.get("type") == "message" and document.get("role") == "assistant"
            and isinstance(document.get("content"), list))


def read(recording: Recording) -> list[Exchange]:
    return recording.answer_alone("a bare Messages response", "application/json", recording.document)


FORMAT = RecordingFormat(
    name="messages-response",
    description='a bare Messages response object (JSON with "type": "message")',
    sniff=sniff,
    read=read,
    suffixes=(".json",),
    markers=(b'{"type":"message"', b'{"id":"msg_'),
)
