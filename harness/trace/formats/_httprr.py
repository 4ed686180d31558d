"""Go httprr traces (`httprr trace v1`): raw HTTP requests and answers, as Go's x/net and langchaingo record."""

from __future__ import annotations

import re

from ...errors import CassetteError
from .._model import Exchange
from ._base import Recording, RecordingFormat

_MAGIC = b"httprr trace v1"
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_HEADER_LINE_BREAK = re.compile(rb"\r?\n")


def sniff(recording: Recording) -> bool:
    return recording.head.startswith(_MAGIC)


def read(recording: Recording) -> list[Exchange]:
    data, path = recording.data, recording.path
    first_break = data.find(b"\n")
    offset = len(data) if first_break < 0 else first_break + 1
    exchanges: list[Exchange] = []
    while offset < len(data):
        line = data.count(b"\n", 0, offset) + 1
        end = data.find(b"\n", offset)
        sizes = data[offset:end if end >= 0 else len(data)].split()
        if end < 0 or len(sizes) != 2 or not all(s.isdigit() for s in sizes):
            raise CassetteError(path, "expected a record header 'N M' (byte lengths of request and response)",
                                line=line, key=f"record {len(exchanges)}")
        n, m = int(sizes[0]), int(sizes[1])
        start = end + 1
        if start + n + m > len(data):
            raise CassetteError(path, f"record says {n}+{m} bytes but only {len(data) - start} remain",
                                line=line, key=f"record {len(exchanges)}")
        raw_request, raw_response = data[start:start + n], data[start + n:start + n + m]
        offset = start + n + m
        method, target, req_headers, req_body = _parse_http(raw_request, path, line, len(exchanges), "request")
        _, status_word, resp_headers, resp_body = _parse_http(raw_response, path, line, len(exchanges), "response")
        url = target
        if target.startswith("/"):
            host = next((v for k, v in req_headers if k.lower() == "host"), "")
            url = f"https://{host}{target}"
        exchanges.append(recording.exchange(len(exchanges), method, url, req_headers, req_body,
                                            int(status_word) if status_word.isdigit() else None,
                                            resp_headers, resp_body, source_line=line))
    return exchanges


def _parse_http(raw: bytes, path: str, line: int, record: int,
                side: str) -> tuple[str, str, list[tuple[str, str]], bytes]:
    """Split a raw HTTP message into its start line's first two words, headers and decoded body."""
    match = _HEAD_END.search(raw)
    head, body = (raw[:match.start()], raw[match.end():]) if match else (raw, b"")
    lines = _HEADER_LINE_BREAK.split(head)
    start = lines[0].decode("latin-1").split(" ", 2)
    if len(start) < 2:
        raise CassetteError(path, f"expected an HTTP {side} line, got {lines[0][:60]!r}", line=line,
                            key=f"record {record}.{side}")
    headers: list[tuple[str, str]] = []
    for header in lines[1:]:
        name, colon, value = header.decode("latin-1").partition(":")
        if colon:
            headers.append((name.strip(), value.strip()))
    if any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers):
        body = _dechunk(body)
    return start[0], start[1], headers, body


def _dechunk(body: bytes) -> bytes:
    out = bytearray()
    at = 0
    while at < len(body):
        end = body.find(b"\n", at)
        if end < 0:
            break
        size_text = body[at:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return body  # not really chunked: keep what was recorded
        if size == 0:
            break
        out += body[end + 1:end + 1 + size]
        at = end + 1 + size
        at += 2 if body[at:at + 2] == b"\r\n" else 1
    return bytes(out)


FORMAT = RecordingFormat(
    name="httprr",
    description="a Go httprr trace (`httprr trace v1`)",
    sniff=sniff,
    read=read,
    suffixes=(".httprr",),
    markers=(_MAGIC,),
)
