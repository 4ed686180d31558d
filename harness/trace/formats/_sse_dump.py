"""A `text/event-stream` dump: the body of a streamed Messages answer as it came (`event:`/`data:` lines)."""

from __future__ import annotations

from .._model import Exchange
from .._sse import looks_like_sse
from ._base import UNKNOWN_MESSAGES_URL, Recording, RecordingFormat


def sniff(recording: Recording) -> bool:
    head = recording.head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith((b"event:", b"data:", b":")):
        return False
    text = head.decode("utf-8", errors="replace")
    return looks_like_sse(text) and "message_start" in text


def read(recording: Recording) -> list[Exchange]:
    recording.notes.append("an event-stream dump: the request and the status were not kept; the stream is "
                           "reassembled and checked as a Messages call answered 200")
    return [recording.exchange(0, "POST", UNKNOWN_MESSAGES_URL, None, None, 200,
                               {"content-type": "text/event-stream"}, recording.data)]


FORMAT = RecordingFormat(
    name="sse-dump",
    description="a text/event-stream dump of a streamed answer (`event: message_start` ...)",
    sniff=sniff,
    read=read,
    suffixes=(".sse", ".txt", ".stream", ".events", ".eventstream"),
    markers=(b"event: message_start", b"event:message_start"),
)
