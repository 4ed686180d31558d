"""A `text/event-stream` dump: the body of a streamed Messages answer as it came (`event:`/`data:` lines)."""

from __future__ import annotations

from .._model import Exchange
from .._sse import looks_like_sse
from ._base import Recording, RecordingFormat


def sniff(recording: Recording) -> bool:
    head = recording.head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith((b"event:", b"data:", b":")):
        return False
    text = head.decode("utf-8", errors="replace")
    return looks_like_sse(text) and "message_start" in text


def read(recording: Recording) -> list[Exchange]:
    return recording.answer_alone("an event-stream dump", "text/event-stream", recording.data)


FORMAT = RecordingFormat(
    name="sse-dump",
    description="a text/event-stream dump of a streamed answer (`event: message_start` ...)",
    sniff=sniff,
    read=read,
    suffixes=(".sse", ".txt", ".stream", ".events", ".eventstream"),
    markers=(b"event: message_start", b"event:message_start"),
)
