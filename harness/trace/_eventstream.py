"""Amazon's binary event stream (`application/vnd.amazon.eventstream`): how Amazon Bedrock streams a
Messages answer (`/model/{id}/invoke-with-response-stream`). Each frame carries one of the API's own
stream events, base64 inside a JSON payload (`{"bytes": "..."}`); they are read back here into the
server-sent events the API itself sends, so that one reassembly (`_sse.reassemble_stream`) rebuilds
the answer whichever way it came.

A frame: its total length and its headers' length (uint32 each), the CRC32 of those 8 bytes, the
headers, the payload, and the CRC32 of everything before it. A header: its name's length (uint8), the
name, a value type (uint8) and the value. The frame's `:message-type` header says what it is: an
`event` (`:event-type` `chunk` for a stream event), an `exception` (`:exception-type`, the payload a
JSON `{"message": ...}`) or an `error` (`:error-code`, `:error-message`).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from typing import Any

_PRELUDE = struct.Struct("!III")
_CRC = struct.Struct("!I")
_FRAME_OVERHEAD = _PRELUDE.size + _CRC.size
# By value type: how many bytes a value of fixed size takes (bools none); types 6 and 7 (bytes, string)
# carry a uint16 length first.
_FIXED_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
_SIZED = struct.Struct("!H")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_MESSAGES_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop",
                              "message_delta", "message_stop", "ping"})
"""The Messages API's own stream events (`error` aside: any stream may end on one)."""


def looks_like_event_stream(data: bytes) -> bool:
    """Whether `data` opens with an event-stream frame's prelude whose CRC holds: told apart from any
    text or JSON body by that checksum, whatever the recording kept of the content type (Bedrock
    answers an error as JSON under the event stream's content type)."""
    return len(data) >= _PRELUDE.size and zlib.crc32(data[:8]) == _PRELUDE.unpack_from(data)[2]


def event_stream_as_sse(data: bytes) -> tuple[str | None, list[str]]:
    """The server-sent events that the stream's frames carry, as text, and what could not be read (a
    whole stream has nothing to say): a frame cut short or damaged ends the reading there, and the
    answer then reads as a stream cut short. The events' JSON is passed on as it came, for the one
    reader of stream events to parse (and to say what in it is wrong).

    No text (None) when no frame carries a Messages stream event: other models on Bedrock (Amazon
    Nova, Bedrock's Converse API) stream events of their own in the same frames, no Messages answer."""
    events: list[str] = []
    notes: list[str] = []
    first_skipped = ""
    skipped = 0
    of_messages = False  # whether a frame carried a Messages stream event (asked until one did)
    at = 0
    while at < len(data):
        try:
            headers, payload, following = _frame(data, at)
        except _Unreadable as exc:
            notes.append(f"Amazon event stream: the frame at byte {at:,} {exc}; read up to there")
            break
        at = following
        try:
            name, event = _event(headers, payload)
        except _NotAnEvent as exc:
            skipped += 1  # counted, not kept: a stream of a million empty frames is no million notes
            first_skipped = first_skipped or f"frame {len(events) + skipped} {exc}"
            continue
        of_messages = of_messages or (not name and _is_messages_event(event))
        lines = "".join(f"data: {line}\n" for line in _LINE_BREAK.split(event))
        events.append((f"event: {name}\n" if name else "") + lines + "\n")
    if not of_messages:
        return None, notes
    if skipped:
        more = f" (and {skipped - 1} frame(s) more)" if skipped > 1 else ""
        notes.insert(0, f"Amazon event stream: {first_skipped}; skipped{more}")
    return "".join(events), notes


def _is_messages_event(text: str) -> bool:
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(event, dict) and event.get("type") in _MESSAGES_EVENTS


class _Unreadable(ValueError):
    """What is wrong with a frame that ends the reading: nothing after it can be found."""


class _NotAnEvent(ValueError):
    """Why a whole frame carries no stream event."""


def _frame(data: bytes, at: int) -> tuple[bytes, bytes, int]:
    """The headers and payload of the frame at byte `at` (checksums checked), and where the next starts."""
    if len(data) - at < _FRAME_OVERHEAD:
        raise _Unreadable("is cut short")
    total, headers_length, prelude_crc = _PRELUDE.unpack_from(data, at)
    if zlib.crc32(data[at:at + 8]) != prelude_crc:
        raise _Unreadable("fails its prelude checksum")
    end = at + total
    if total < _FRAME_OVERHEAD + headers_length:
        raise _Unreadable(f"says it is {total:,} bytes long, too short for its own {headers_length:,} bytes of "
                          "headers and its checksums")
    if end > len(data):
        raise _Unreadable(f"says it is {total:,} bytes long, which the data does not hold")
    if zlib.crc32(data[at:end - _CRC.size]) != _CRC.unpack_from(data, end - _CRC.size)[0]:
        raise _Unreadable("fails its checksum")
    start = at + _PRELUDE.size
    return data[start:start + headers_length], data[start + headers_length:end - _CRC.size], end


def _headers(data: bytes) -> dict[str, Any] | None:
    headers: dict[str, Any] = {}
    at = 0
    try:
        while at < len(data):
            name_length = data[at]
            name = data[at + 1:at + 1 + name_length].decode("utf-8")
            kind = data[at + 1 + name_length]
            at += 2 + name_length
            if kind in (6, 7):
                (size,) = _SIZED.unpack_from(data, at)
                value: Any = data[at + 2:at + 2 + size]
                headers[name] = value.decode("utf-8", "replace") if kind == 7 else value
                at += 2 + size
            elif kind in _FIXED_SIZES:
                headers[name] = kind == 0 if kind in (0, 1) else data[at:at + _FIXED_SIZES[kind]]
                at += _FIXED_SIZES[kind]
            else:
                return None
    except (IndexError, struct.error, UnicodeDecodeError):
        return None
    return headers if at == len(data) else None


def _event(encoded_headers: bytes, payload: bytes) -> tuple[str, str]:
    """The name (empty: the event names itself) and JSON text of the stream event a frame carries; an
    exception the API's own `error` event."""
    headers = _headers(encoded_headers)
    if headers is None:
        raise _NotAnEvent("has headers that do not parse")
    kind = headers.get(":message-type")
    if kind == "exception":
        return "error", _error(str(headers.get(":exception-type") or "exception"), _message(payload))
    if kind == "error":
        return "error", _error(str(headers.get(":error-code") or "error"), str(headers.get(":error-message") or ""))
    if kind != "event" or headers.get(":event-type") != "chunk":
        raise _NotAnEvent(f"({kind} {headers.get(':event-type')!r}) carries no stream event")
    try:
        chunk = json.loads(payload)
        return "", base64.b64decode(chunk["bytes"], validate=True).decode("utf-8")
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # binascii's and UTF-8's errors are ValueErrors
        raise _NotAnEvent(f"carries no stream event ({type(exc).__name__}: {exc})") from exc


def _message(payload: bytes) -> str:
    try:
        body = json.loads(payload)
    except (ValueError, RecursionError):
        return payload.decode("utf-8", "replace")
    return str(body.get("message") or body.get("Message") or "") if isinstance(body, dict) else str(body)


def _error(kind: str, message: str) -> str:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}, ensure_ascii=False)
