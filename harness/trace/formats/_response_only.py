"""Response-only JSON (`{status, headers, body}`): an answer kept without the request that got it."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import CassetteError
from .._model import Exchange
from ._base import UNKNOWN_MESSAGES_URL, Recording, RecordingFormat


def sniff(recording: Recording) -> bool:
    document = recording.document
    return isinstance(document, dict) and "status" in document and ("body" in document or "headers" in document)


def read(recording: Recording) -> list[Exchange]:
    document = recording.document
    status = document.get("status")
    if isinstance(status, dict):
        status = status.get("code")
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        raise CassetteError(recording.path, f"expected an HTTP status number, got {status!r}", key="status")
    headers = document.get("headers")
    if headers is not None and not isinstance(headers, Mapping):
        raise CassetteError(recording.path, "expected a mapping of header names to values", key="headers")
    exchange = recording.exchange(0, "POST", UNKNOWN_MESSAGES_URL, None, None, status, headers, document.get("body"))
    answer = exchange.response_body
    if exchange.streamed or (isinstance(answer, dict) and answer.get("type") in ("message", "error")):
        recording.notes.append(
            "response-only recording: the request was not kept; the answer is checked as a Messages call")
    else:
        exchange.method, exchange.url = "", ""
        recording.notes.append(
            "response-only recording: the request was not kept and the answer is not a Messages answer")
    return [exchange]


FORMAT = RecordingFormat(
    name="response-only",
    description="a response-only JSON object ({status, headers, body})",
    sniff=sniff,
    read=read,
    suffixes=(".json",),
    markers=(b'"status"',),
)
