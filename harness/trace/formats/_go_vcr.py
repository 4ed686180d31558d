"""go-vcr cassettes, v1 and v2 (`version: 1|2`, `interactions:` with `request.url`), as Go agents record.

The outline is VCR.py's, but the request names its URL `url` (not `uri`), the response carries its
status twice (`status: "200 OK"` beside `code: 200`), and v2 adds what Go's http.Request holds
(proto, host, content_length, form) and how long the answer took (`duration: 2.24s`).
"""

from __future__ import annotations

import re
from typing import Any

from ..._yaml import Loc
from .._model import Exchange
from . import _vcrpy
from ._base import Recording, RecordingFormat, status_code

_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def sniff(recording: Recording) -> bool:
    document = recording.document
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        return False
    first = next(iter(document["interactions"]), None)
    if not isinstance(first, dict):
        return False
    request, response = first.get("request"), first.get("response")
    return (isinstance(request, dict) and "url" in request and "uri" not in request) or (
        isinstance(response, dict) and "code" in response and not isinstance(response.get("status"), dict))


def read(recording: Recording) -> list[Exchange]:
    return _vcrpy.read_interactions(recording, "interactions", _read_interaction)


def _read_interaction(recording: Recording, index: int, item: dict[str, Any], key: str,
                      at: Loc) -> Exchange:
    request, response = _vcrpy.request_and_response(recording, item, key, at)
    url = request.get("url")
    if not isinstance(url, str):
        raise recording.fail(f"{key}.request.url", "expected the request URL as a string", at, "request", "url")
    method = _vcrpy.request_method(recording, request, key, at)
    status: int | None = None
    response_headers: Any = None
    response_body: Any = None
    duration: float | None = None
    if response is not None:
        status = status_code(response.get("code")) or status_code(response.get("status"))
        if status is None:
            raise recording.fail(f"{key}.response.code", "expected an HTTP status: `code: 200` or `status: 200 OK`, "
                                 f"got code {response.get('code')!r}, status {response.get('status')!r}",
                                 at, "response", "code")
        response_headers = _vcrpy.headers(recording, response.get("headers"), key, at, "response")
        response_body = _vcrpy.body(recording, response, key, at, "response")
        duration = _duration(response.get("duration"))
    return recording.exchange(
        index, method, url,
        _vcrpy.headers(recording, request.get("headers"), key, at, "request"),
        _vcrpy.body(recording, request, key, at, "request"),
        status, response_headers, response_body,
        duration_s=duration, source_line=recording.line_of(at),
    )


def _duration(value: Any) -> float | None:
    """Seconds from a Go duration ("2.2413465s", "1m3s", "850ms") or integer nanoseconds; None if neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value / 1e9 if value >= 0 else None
    if not isinstance(value, str) or not value:
        return None
    parts = _GO_DURATION.findall(value)
    if not parts or "".join(number + unit for number, unit in parts) != value:
        return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


FORMAT = RecordingFormat(
    name="go-vcr",
    description="a go-vcr cassette (v1 or v2 YAML: `interactions:` with `request.url`)",
    sniff=sniff,
    read=read,
    suffixes=(".yaml", ".yml"),
    markers=(b"interactions",),
)
