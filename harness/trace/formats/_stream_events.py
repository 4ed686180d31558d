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
from ._base import Recording, RecordingFormat

STREAM_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop",
                           "message_delta", "message_stop", "ping", "error"})


def _event_type(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type", value.get("event"))
    return kind if isinstance(kind, str) and kind in STREAM_EVENTS else None


def _first_line(recording: Recording) -> Any:
    line = recording.head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
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
