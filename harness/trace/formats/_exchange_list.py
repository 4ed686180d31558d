"""A JSON list of `{"request": body, "response": body}` exchanges: the form of docs/rules.md's examples.

Each item is one `POST /v1/messages` as sent and received, with optional `status` (default 200),
`request_headers`, `response_headers`, `at` (seconds since the run started) and `duration_s`: what
a rule's example holds (`harness.checks.Example`), so an example pasted into a file is checked as
the test suite checks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import CassetteError
from .._model import Exchange
from ._base import Recording, RecordingFormat

MESSAGES_URL = "https://api.anthropic.com/v1/messages"
_KEYS = frozenset({"request", "response", "status", "request_headers", "response_headers", "at", "duration_s"})


def sniff(recording: Recording) -> bool:
    if b'"request"' not in recording.head or not recording.head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return False
    document = recording.document
    if not (isinstance(document, list) and document and isinstance(document[0], dict)):
        return False
    request = document[0].get("request")  # a Messages request: its keys then must be an exchange's
    return isinstance(request, dict) and ("messages" in request or "model" in request)


def read(recording: Recording) -> list[Exchange]:
    exchanges = []
    for i, item in enumerate(recording.document):
        def fail(expected: str, key: str = "", at: int = i) -> CassetteError:
            return CassetteError(recording.path, expected, key=f"[{at}]{'.' if key else ''}{key}")

        if not isinstance(item, dict) or "request" not in item:
            raise fail('expected an exchange: {"request": body, "response": body}')
        unknown = sorted(map(str, item.keys() - _KEYS))
        if unknown:
            raise fail(f"unknown key(s) {', '.join(unknown)}; an exchange has {', '.join(sorted(_KEYS))}")
        status = item.get("status", 200)
        if not isinstance(status, int) or isinstance(status, bool):
            raise fail(f"expected an HTTP status number, got {status!r}", "status")
        for key in ("request_headers", "response_headers"):
            if not isinstance(item.get(key, {}), Mapping):
                raise fail("expected a mapping of header names to values", key)
        for key in ("at", "duration_s"):
            if not _seconds(item.get(key)):
                raise fail(f"expected a number of seconds, got {item[key]!r}", key)
        exchanges.append(recording.exchange(
            i, "POST", MESSAGES_URL,
            # Every SDK sends anthropic-version; without it a recording is taken to have dropped its headers.
            {"anthropic-version": "2023-06-01", **item.get("request_headers", {})},
            item["request"], status, item.get("response_headers", {}), item.get("response"),
            started_at=item.get("at"), duration_s=item.get("duration_s"),
        ))
    return exchanges


def _seconds(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


FORMAT = RecordingFormat(
    name="exchange-list",
    description='a JSON list of {"request", "response"} exchanges (the examples of docs/rules.md)',
    sniff=sniff,
    read=read,
    suffixes=(".json",),
)
