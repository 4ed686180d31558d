"""nock fixtures (`nock.back`, `nock.recorder` with `output_objects`): a JSON list of
`{scope, method, path, body, status, response, rawHeaders}`, as Node and TypeScript projects record.

`response` is the body as parsed JSON, as text (an event stream), or, for a compressed answer, a list
of hex-encoded chunks; `rawHeaders` alternates names and values (`headers` is a mapping in old nock).
"""

from __future__ import annotations

import binascii
from typing import Any

from ...errors import CassetteError
from .._model import Exchange
from ._base import Recording, RecordingFormat, status_code


def _is_interaction(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("scope"), str) and "method" in value and "path" in value


def sniff(recording: Recording) -> bool:
    document = recording.document
    return isinstance(document, list) and bool(document) and _is_interaction(document[0])


def read(recording: Recording) -> list[Exchange]:
    exchanges = []
    for i, item in enumerate(recording.document):
        key = f"[{i}]"
        if not _is_interaction(item):
            raise CassetteError(recording.path, "expected a nock interaction {scope, method, path, status, response}",
                                key=key)
        method, path = item.get("method"), item.get("path")
        if not isinstance(method, str) or not isinstance(path, str):
            raise CassetteError(recording.path, "expected method and path strings", key=key)
        status = status_code(item.get("status", 200))
        if status is None:
            raise CassetteError(recording.path, f"expected an HTTP status number, got {item.get('status')!r}",
                                key=f"{key}.status")
        exchanges.append(recording.exchange(
            i, method, item["scope"].rstrip("/") + path,
            _headers(recording, item.get("reqheaders"), f"{key}.reqheaders"),
            item.get("body"),
            status,
            _headers(recording, item.get("rawHeaders", item.get("headers")), f"{key}.rawHeaders"),
            _response(recording, item.get("response"), f"{key}.response"),
        ))
    return exchanges


def _headers(recording: Recording, value: Any, key: str) -> Any:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, list) and len(value) % 2 == 0:
        return [(str(value[n]), str(value[n + 1])) for n in range(0, len(value), 2)]
    raise CassetteError(recording.path, "expected a mapping of headers or a flat list of names and values", key=key)


def _response(recording: Recording, value: Any, key: str) -> Any:
    # nock writes a compressed body as its chunks in hex; the bytes are inflated like any body.
    if isinstance(value, list) and value and all(isinstance(c, str) for c in value):
        try:
            return b"".join(binascii.unhexlify(chunk) for chunk in value)
        except (binascii.Error, ValueError):
            return value  # a JSON list answer after all
    return value


FORMAT = RecordingFormat(
    name="nock",
    description="a nock fixture (JSON list of {scope, method, path, status, response})",
    sniff=sniff,
    read=read,
    suffixes=(".json",),
    markers=(b'"scope"',),
)
