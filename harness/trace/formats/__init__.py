"""Recording formats: one module each, registered in `FORMATS`; `read_recording` picks and reads.

Adding a format is one new module and one line here. The module defines

    def sniff(recording: Recording) -> bool     # is this file mine? cheap, never raises
    def read(recording: Recording) -> list[Exchange]   # every exchange; CassetteError when broken
    (optionally) def load(recording, whole_run) -> Trace  # a format that holds more than exchanges
    FORMAT = RecordingFormat(name=..., description=..., sniff=sniff, read=read,
                             suffixes=(".yaml", ...), markers=(b"...", ...))

and its `FORMAT` goes into `FORMATS` below. A `Recording` holds the file's bytes (`data`, `head`),
its text and its parsed JSON/YAML `document` with the YAML node tree for line numbers, each
computed once whichever format asks first. Build exchanges with `recording.exchange(...)` (the one
door to an `Exchange`: bodies inflated, streams reassembled, secrets scrubbed) and add what had to
be guessed to `recording.notes`.

Order matters: the first format whose `sniff` says yes reads the file. Formats recognised from
their opening bytes come first, so a file that is not JSON or YAML is never parsed as such; among
document formats, the more specific shape comes before the one it resembles (go-vcr before
VCR.py: both have `interactions:`).
"""

from __future__ import annotations

from ...errors import CassetteError, NotARecording
from .._model import Exchange
from . import (
    _exchange_list,
    _go_vcr,
    _har,
    _httprr,
    _messages_response,
    _nock,
    _otlp,
    _response_only,
    _ruby_vcr,
    _sse_dump,
    _stream_events,
    _vcr_interaction,
    _vcrpy,
)
from ._base import HEAD_BYTES, UNKNOWN_MESSAGES_URL, Recording, RecordingFormat, recording_suffix

FORMATS: tuple[RecordingFormat, ...] = (
    _httprr.FORMAT,
    _otlp.FORMAT,  # before the document formats: a JSON-lines export is never parsed as YAML
    _sse_dump.FORMAT,
    _stream_events.FORMAT,
    _go_vcr.FORMAT,
    _vcrpy.FORMAT,
    _ruby_vcr.FORMAT,
    _har.FORMAT,
    _nock.FORMAT,
    _exchange_list.FORMAT,
    _vcr_interaction.FORMAT,
    _response_only.FORMAT,
    _messages_response.FORMAT,
)
"""Every format the readers know, in the order they are tried."""


def expected_formats() -> str:
    """The formats as a user would recognise them, for messages that say what was expected."""
    descriptions = [f.description for f in FORMATS]
    return ", ".join(descriptions[:-1]) + f" or {descriptions[-1]}"


def detect(recording: Recording) -> RecordingFormat | None:
    """The first registered format that claims the file (asked once per recording: the sniffs of a
    one-line JSON file read its whole head, a tenth of checking a small cassette)."""
    if recording.detected is None:
        found = next((f for f in FORMATS if f.sniff(recording)), None)
        if found is None and _otlp.named_near_start(recording):
            # No format claims it, and it names an export's key near its start (an export wrapped
            # in another object): the export's reader says what it expected there.
            found = _otlp.FORMAT
        recording.detected = (found,)
    return recording.detected[0]


def read_recording(recording: Recording) -> list[Exchange]:
    """Every exchange of a recording, read by the format that claims it.

    Raises NotARecording when no format claims the file: it names the formats tried and what the file
    looks like, or why it does not parse as JSON or YAML. A file that does not parse but holds a
    format's marker is a broken recording: plain CassetteError, as for a broken file of a known format.
    """
    found = detect(recording)
    if found is not None:
        return found.read(recording)
    error = recording.parse_error
    if error is not None:
        if _has_marker(recording):
            raise error
        # Not parseable and nothing in it names a recording: some other file (a folder scan skips it).
        raise NotARecording(error.path, error.problem, line=error.line, key=error.key) from error
    tried = ", ".join(f.name for f in FORMATS)
    raise NotARecording(recording.path, f"is not a recording: it is {recording.describe()}; tried {tried} "
                                        f"(expected {expected_formats()})")


def worth_reading(name: str, head: bytes) -> bool:
    """Whether a folder scan should read this file: a format keeps files under its suffix, or the
    file opens with a format's marker (an httprr trace has no fixed suffix)."""
    suffix = recording_suffix(name)
    return any(suffix in f.suffixes or any(head.startswith(m) for m in f.markers) for f in FORMATS)


def _has_marker(recording: Recording) -> bool:
    return any(marker in recording.head for f in FORMATS for marker in f.markers)


__all__ = ["FORMATS", "HEAD_BYTES", "UNKNOWN_MESSAGES_URL", "Recording", "RecordingFormat", "CassetteError",
           "detect", "expected_formats", "read_recording", "worth_reading"]
