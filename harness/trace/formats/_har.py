"""HAR 1.2 files (`log.entries`), as browsers, Playwright and Mirascope write them."""

from __future__ import annotations

import binascii
from typing import Any

from ...errors import CassetteError
from .._decode import base64_bytes
from .._model import Exchange
from ._base import Recording, RecordingFormat, timestamp


def sniff(recording: Recording) -> bool:
    document = recording.document
    log = document.get("log") if isinstance(document, dict) else None
    return isinstance(log, dict) and "entries" in log


def read(recording: Recording) -> list[Exchange]:
    path = recording.path
    entries = recording.document["log"]["entries"]
    if not isinstance(entries, list):
        raise CassetteError(path, "expected a list of entries", key="log.entries")
    exchanges = []
    for i, entry in enumerate(entries):
        key = f"log.entries[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
            raise CassetteError(path, "expected an entry with request and response", key=key)
        request = entry["request"]
        response: dict[str, Any] = entry["response"] if isinstance(entry.get("response"), dict) else {}
        if not isinstance(request.get("url"), str) or not isinstance(request.get("method"), str):
            raise CassetteError(path, "expected method and url strings", key=f"{key}.request")
        post: dict[str, Any] = request["postData"] if isinstance(request.get("postData"), dict) else {}
        content: dict[str, Any] = response["content"] if isinstance(response.get("content"), dict) else {}
        status = response.get("status")
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise CassetteError(path, f"expected an HTTP status number, got {status!r}", key=f"{key}.response.status")
        duration = entry.get("time")
        exchanges.append(recording.exchange(
            i, request["method"], request["url"],
            _headers(request.get("headers"), path, f"{key}.request.headers"),
            _text(post, path, f"{key}.request.postData"),
            status or None,  # HAR writes 0 when no answer came
            _headers(response.get("headers"), path, f"{key}.response.headers"),
            _text(content, path, f"{key}.response.content"),
            started_at=timestamp(entry.get("startedDateTime")),
            duration_s=duration / 1000 if isinstance(duration, (int, float)) and duration >= 0 else None,
        ))
    return exchanges


def _text(holder: dict[str, Any], path: str, key: str) -> str | bytes | None:
    text = holder.get("text")
    if text is None:
        return None
    if not isinstance(text, str):
        raise CassetteError(path, f"expected text, got {type(text).__name__}", key=f"{key}.text")
    if holder.get("encoding") == "base64":
        try:
            return base64_bytes(text)
        except (binascii.Error, ValueError) as exc:
            raise CassetteError(path, f"is marked base64 but does not decode ({exc})", key=f"{key}.text") from exc
    return text


def _headers(headers: Any, path: str, key: str) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if not isinstance(headers, list):
        raise CassetteError(path, "expected a list of {name, value}", key=key)
    pairs = []
    for i, header in enumerate(headers):
        if not isinstance(header, dict) or "name" not in header:
            raise CassetteError(path, "expected {name, value}", key=f"{key}[{i}]")
        pairs.append((str(header["name"]), str(header.get("value", ""))))
    return pairs


FORMAT = RecordingFormat(
    name="har",
    description="a HAR 1.2 file (`log.entries`)",
    sniff=sniff,
    read=read,
    suffixes=(".har", ".json"),
    markers=(b'"log"',),
)
