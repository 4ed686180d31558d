"""A bare Messages API response object (`{"type": "message", "role": "assistant", "content": [...]}`),
as TypeScript and Python projects keep fixtures: the answer alone, without status or request."""

from __future__ import annotations

from .._model import Exchange
from ._base import UNKNOWN_MESSAGES_URL, Recording, RecordingFormat


def sniff(recording: Recording) -> bool:
    document = recording.document
    return (isinstance(document, dict) and document.get("type") == "message" and document.get("role") == "assistant"
            and isinstance(document.get("content"), list))


def read(recording: Recording) -> list[Exchange]:
    recording.notes.append("a bare Messages response: the request and the status were not kept; the answer is "
                           "checked as a Messages call answered 200")
    return [recording.exchange(0, "POST", UNKNOWN_MESSAGES_URL, None, None, 200,
                               {"content-type": "application/json"}, recording.document)]


FORMAT = RecordingFormat(
    name="messages-response",
    description='a bare Messages response object (JSON with "type": "message")',
    sniff=sniff,
    read=read,
    suffixes=(".json",),
    markers=(b'{"type":"message"', b'{"id":"msg_'),
)
