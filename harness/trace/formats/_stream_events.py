"""The events of a streamed Messages answer as JSON: one per line (JSON lines), or a JSON list.

Each event is the `data` of its SSE frame (`{"type": "message_start", "message": {...}}`), or the
frame itself (`{"event": "message_start", "data": {...}}`); both are rebuilt into the event stream
the answer was, and reassembled like any recorded stream.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import CassetteError
from .._model import Exchange
from ._base import HEAD_BYTES, Recording, RecordingFormat

STREAM_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop",
                           "message_delta", "message_stop", "ping", "error"})


def _event_type(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type", value.get("event"))
    return kind if isinstance(kind, str) and kind in STREAM_EVENTS else None


def _first_line(recording: Recording) -> Any:
    """The file's first line parsed as JSON, when it is a JSON object (None otherwise)."""
    head = recording.head.lstrip(b"\xef\xbb\xbf \t\r\n")
    end = head.find(b"\n")
    line = head if end < 0 else head[:end]
    # An object ends with "}": anything else is not parsed, which a one-line JSON file's whole
    # 64 KiB head would be, only to fail at its cut end (a third of reading a small cassette).
    # UTF-16 and UTF-32, which json.loads reads too, put NUL bytes after it.
    if b"\x00" not in line:
        if line.rstrip(b" \t\r")[-1:] != b"}":
            return None
        if end < 0 and len(recording.head) < HEAD_BYTES and (parsed := recording.as_json) is not None:
            # The line is the whole file, which is parsed as JSON once: a small one-line cassette
            # was parsed whole here and again as the document.
            return parsed[0]
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested past what json.loads reads
        return None


_OPENING_EVENTS = ("message_start", "ping")
"""A stream opens with message_start (a ping may come first); a lone `{"type": "error"}` is an error body."""


def sniff(recording: Recording) -> bool:
    if _event_type(_first_line(recording)) in _OPENING_EVENTS:
        return True
    document = recording.document
    return isinstance(document, list) and bool(document) and _event_type(document[0]) in _OPENING_EVENTS


def read(recording: Recording) -> list[Exchange]:
    events = _events(recording)
    frames = []
    for i, (line, event) in enumerate(events):
        data = event.get("data") if "event" in event and isinstance(event.get("data"), dict) else event
        kind = _event_type(event)
        if kind is None:
            raise CassetteError(recording.path,
                                f"expected a stream event with a type ({', '.join(sorted(STREAM_EVENTS))})",
                                line=line, key=f"event {i}")
        frames.append(f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n")
    return recording.answer_alone(f"{len(frames)} stream event(s) as JSON", "text/event-stream", "".join(frames))


def _events(recording: Recording) -> list[tuple[int | None, dict[str, Any]]]:
    """(line, event) of each event, from JSON lines or a JSON list."""
    document = recording.document
    if isinstance(document, list):
        return [(None, e) if isinstance(e, dict) else _not_an_event(recording, None, i, e)
                for i, e in enumerate(document)]
    text = recording.text or ""
    events: list[tuple[int | None, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise CassetteError(recording.path, f"is not a JSON event ({exc})", line=number) from exc
        if not isinstance(event, dict):
            _not_an_event(recording, number, len(events), event)
        events.append((number, event))
    return events


def _not_an_event(recording: Recording, line: int | None, i: int, value: Any) -> Any:
    raise CassetteError(recording.path, f"expected a stream event object, got {type(value).__name__}",
                        line=line, key=f"event {i}")


FORMAT = RecordingFormat(
    name="stream-events",
    description="the events of a streamed answer as JSON lines or a JSON list ({\"type\": \"message_start\", ...})",
    sniff=sniff,
    read=read,
    suffixes=(".jsonl", ".ndjson", ".json", ".txt"),
    markers=(b'{"type":"message_start"', b'{"type": "message_start"', b'{"event":"message_start"',
             b'{"event": "message_start"'),
)
