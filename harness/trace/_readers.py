"""Read recorded HTTP traffic, whatever wrote it, into exchanges and a trace.

`exchange_from_http` is the single door from raw HTTP to an `Exchange` (readers and the live
recorder both use it). The readers detect the format from the content: VCR.py YAML/JSON (and
pydantic-ai's `parsed_body`), Ruby VCR, HAR 1.2, Go httprr, and response-only JSON.
"""

from __future__ import annotations

import base64
import binascii
import gc
import gzip
import json
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import yaml

from .._yaml import MAX_INT_DIGITS, child_value, node_line, parse_yaml, read_bytes
from ..errors import CassetteError
from ._model import Exchange, Trace
from ._scrub import default_secrets, scrub_headers
from ._sse import looks_like_sse, reassemble_stream
from ._threads import build_trace
from ._timing import recorded_timing

EXPECTED_FORMATS = (
    "a VCR.py cassette (YAML or JSON with `interactions:`), a Ruby VCR cassette (`http_interactions:`), "
    "a HAR 1.2 file (`log.entries`), a Go httprr trace (`httprr trace v1`), "
    "or a response-only JSON object ({status, headers, body})"
)

UNKNOWN_MESSAGES_URL = "unknown://request-not-recorded/v1/messages"
"""URL given to a response-only recording whose answer is a Messages answer: the request is unknown."""

_GZIP_MAGIC = b"\x1f\x8b"
_LONG_NUMBER = re.compile(r"\d{%d,}" % (MAX_INT_DIGITS + 1))
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_HEADER_LINE_BREAK = re.compile(rb"\r?\n")


# --- one HTTP exchange ---------------------------------------------------------------------------


def exchange_from_http(
    index: int,
    method: str,
    url: str,
    request_headers: Mapping[str, Any] | Iterable[tuple[str, str]] | None,
    request_body: bytes | str | Mapping[str, Any] | list[Any] | None,
    status: int | None,
    response_headers: Mapping[str, Any] | Iterable[tuple[str, str]] | None,
    response_body: bytes | str | Mapping[str, Any] | list[Any] | None,
    *,
    started_at: float | None = None,
    duration_s: float | None = None,
    replayed: bool = False,
    recorded_started_at: float | None = None,
    recorded_duration_s: float | None = None,
    source_line: int | None = None,
    secrets: Iterable[str] = (),
    notes: list[str] | None = None,
) -> Exchange:
    """Turn one raw HTTP request and answer into an Exchange: headers scrubbed, bodies decoded once.

    Bodies may be bytes (possibly gzip/deflate), text, or already-parsed JSON (pydantic-ai's
    `parsed_body`). A streamed answer is reassembled; what had to be guessed is appended to `notes`.
    """
    # The environment's own key is always scrubbed, whoever calls this.
    secrets = (*secrets, *default_secrets())
    where = f"exchange {index}" + (f" (line {source_line})" if source_line else "")
    said: list[str] = notes if notes is not None else []
    req_headers = scrub_headers(request_headers, secrets)
    resp_headers = scrub_headers(response_headers, secrets)
    raw_request, parsed_request = _decode_body(request_body, req_headers, said, f"{where}: request")
    raw_response, parsed_response = _decode_body(response_body, resp_headers, said, f"{where}: response")

    streamed = False
    stream_error: dict[str, Any] | None = None
    stream_complete = True
    content_type = resp_headers.get("content-type", "").lower()
    if raw_response is not None and parsed_response is None and (
        "text/event-stream" in content_type or looks_like_sse(raw_response)
    ):
        result = reassemble_stream(raw_response)
        streamed = True
        parsed_response = result.message
        stream_error = result.error
        stream_complete = result.complete
        said.extend(f"{where}: {note}" for note in result.notes)
        if not result.complete and result.error is None:
            said.append(f"{where}: the stream ends without message_stop (cut after {result.events} events)")
    elif "text/event-stream" in content_type and parsed_response is not None:
        # The API answers errors as JSON even when `stream: true` was asked.
        said.append(f"{where}: content-type says text/event-stream but the body is JSON; read as JSON")

    return Exchange(
        index=index,
        method=(method or "").upper(),
        url=url,
        request_headers=req_headers,
        request_body=parsed_request,
        status=status,
        response_headers=resp_headers,
        response_body=parsed_response,
        streamed=streamed,
        stream_error=stream_error,
        stream_complete=stream_complete,
        raw_request=raw_request,
        raw_response=raw_response,
        started_at=started_at,
        duration_s=duration_s,
        replayed=replayed,
        recorded_started_at=recorded_started_at,
        recorded_duration_s=recorded_duration_s,
        source_line=source_line,
        thread_key=req_headers.get("x-harness-thread") or None,
    )


MAX_DEPTH = 128
"""Nesting beyond which a body is kept as text only. Real Messages bodies stay far below it (a deep tool
schema is ~20 levels); the comparisons and rules walk bodies recursively, and Python's stack is not
deep enough for the ~1,000 levels json.loads accepts."""


def _decode_body(body: Any, headers: dict[str, str], notes: list[str], where: str) -> tuple[str | None, Any]:
    """(text as recorded, parsed JSON or None). Compressed bytes are inflated first."""
    if body is None:
        return None, None
    if isinstance(body, (Mapping, list)):
        if _too_deep(body):
            # Already parsed (parsed_body) and too deep even to serialize safely: nothing is kept.
            notes.append(f"{where}: body is nested deeper than {MAX_DEPTH} levels; not kept, not checked")
            return None, None
        return json.dumps(body, ensure_ascii=False), body
    if isinstance(body, (bytes, bytearray)):
        text = _bytes_to_text(bytes(body), headers.get("content-encoding", "").lower(), notes, where)
    else:
        text = str(body)
    try:
        parsed = _parse_json(text)
    except RecursionError:
        parsed = MAX_DEPTH  # marker: too deep for json.loads itself
    if parsed is MAX_DEPTH or (parsed is not None and _text_too_deep(text)):
        notes.append(f"{where}: body is nested deeper than {MAX_DEPTH} levels; kept as text, not checked")
        return text, None
    return text, parsed


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")


def _text_too_deep(text: str) -> bool:
    """Nesting beyond MAX_DEPTH in JSON text, at C speed: the same answer as `_too_deep` on its parse.

    Walking every parsed node in Python cost more than parsing itself. Here strings are dropped, then
    only brackets kept, then each pass removes the innermost empty pairs: one level per pass.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    for _ in range(MAX_DEPTH):
        brackets = _EMPTY_PAIR.sub("", brackets)
        if not brackets:
            return False
    return True


def _too_deep(value: Any) -> bool:
    """Nesting beyond MAX_DEPTH, found without recursion (the point is not to overflow the stack)."""
    if not isinstance(value, (dict, list)):
        return False
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH):
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
        if not level:
            return False
    return True


def _bytes_to_text(data: bytes, encoding: str, notes: list[str], where: str) -> str:
    # The gzip magic is trusted over the header: recorders drop or keep content-encoding at will.
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            notes.append(f"{where}: body looks gzip-compressed but does not inflate ({exc}); kept as is")
    elif "deflate" in encoding:
        try:
            data = zlib.decompress(data)
        except zlib.error:
            try:
                data = zlib.decompress(data, -zlib.MAX_WBITS)
            except zlib.error as exc:
                notes.append(f"{where}: content-encoding deflate but the body does not inflate ({exc}); kept as is")
    elif "br" in [part.strip() for part in encoding.split(",")]:
        notes.append(f"{where}: brotli-compressed body cannot be decoded here; kept as is")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        notes.append(f"{where}: body is not UTF-8; undecodable bytes replaced")
        return data.decode("utf-8", errors="replace")


def _parse_json(text: str) -> Any:
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# --- whole files ---------------------------------------------------------------------------------


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a recording's bodies are parsed.

    Parsing allocates many dicts that all stay alive; each collection would walk all of them again,
    which more than doubles the read time of a large cassette. Nothing read here forms cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_trace(path: str | Path, *, whole_run: bool = False) -> Trace:
    """Read a recording and rebuild its calls and threads."""
    with gc_paused():
        exchanges, notes = read_exchanges(path)
        trace = build_trace(exchanges, str(path), whole_run=whole_run, notes=notes)
    if not trace.calls:
        trace.notes.append(
            "no Messages API traffic (POST /v1/messages) in this file; nothing to check"
            if exchanges
            else "no interactions recorded in this file; nothing to check"
        )
    return trace


def read_exchanges(path: str | Path, *, secrets: Iterable[str] = ()) -> tuple[list[Exchange], list[str]]:
    """Every exchange of a recording in order, and notes on what was skipped or guessed."""
    with gc_paused():
        return _read_exchanges(str(path), tuple(secrets))


def _read_exchanges(name: str, secrets: tuple[str, ...]) -> tuple[list[Exchange], list[str]]:
    path = Path(name)
    data = read_bytes(path, error=CassetteError, what="recording")
    reader = _Reader(name, secrets)
    if data.startswith(b"httprr trace v1"):
        return reader.httprr(data), reader.notes
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CassetteError(name, f"is not UTF-8 text (byte {exc.start}); expected {EXPECTED_FORMATS}") from exc
    if text.lstrip()[:1] in ("{", "["):
        try:
            document = json.loads(text)
        except RecursionError as exc:
            raise CassetteError(name, "is nested too deeply to be read as JSON (over ~1,000 levels); "
                                f"expected {EXPECTED_FORMATS}") from exc
        except json.JSONDecodeError as exc:
            if path.suffix.lower() in (".json", ".har"):
                raise CassetteError(name, f"is not valid JSON ({exc.msg}, column {exc.colno})", line=exc.lineno) from exc
        except ValueError as exc:  # an integer longer than Python reads
            long_number = _LONG_NUMBER.search(text)
            line = text.count("\n", 0, long_number.start()) + 1 if long_number else None
            raise CassetteError(name, f"holds an integer of more than {MAX_INT_DIGITS:,} digits; not read",
                                line=line) from exc
        else:
            return reader.document(document, None), reader.notes
    document = parse_yaml(text, name, error=CassetteError, recording=True, unique_keys=False,
                          hint=f"; expected {EXPECTED_FORMATS}")
    return reader.document(document.data, document.root), reader.notes


class _Reader:
    """One file being read: its name for errors, the secrets to scrub, and the notes so far."""

    def __init__(self, path: str, secrets: tuple[str, ...]) -> None:
        self.path = path
        self.secrets = secrets
        self.notes: list[str] = []

    def fail(self, key: str, problem: str, node: yaml.Node | None = None, *keys: str | int) -> CassetteError:
        return CassetteError(self.path, problem, line=node_line(node, keys), key=key)

    def exchange(self, index: int, method: str, url: str, request_headers: Any, request_body: Any,
                 status: int | None, response_headers: Any, response_body: Any, **where: Any) -> Exchange:
        return exchange_from_http(index, method, url, request_headers, request_body, status, response_headers,
                                  response_body, secrets=self.secrets, notes=self.notes, **where)

    def document(self, document: Any, root: yaml.Node | None) -> list[Exchange]:
        if isinstance(document, dict):
            if "interactions" in document:
                return self.vcr(document["interactions"], "interactions", child_value(root, "interactions"))
            if "http_interactions" in document:
                return self.vcr(document["http_interactions"], "http_interactions", child_value(root, "http_interactions"))
            log = document.get("log")
            if isinstance(log, dict) and "entries" in log:
                return self.har(log["entries"])
            if "status" in document and ("body" in document or "headers" in document):
                return [self.response_only(document)]
            keys = ", ".join(sorted(map(str, document))[:8]) or "none"
            raise CassetteError(self.path, f"top-level keys ({keys}) match no known recording; expected {EXPECTED_FORMATS}",
                                line=node_line(root, ()))
        kind = type(document).__name__ if document is not None else "an empty document"
        raise CassetteError(self.path, f"holds {kind}, not a recording; expected {EXPECTED_FORMATS}")

    # VCR.py (YAML/JSON, pydantic-ai's parsed_body) and Ruby VCR share one shape.
    def vcr(self, interactions: Any, key: str, node: yaml.Node | None) -> list[Exchange]:
        if interactions is None:
            return []
        if not isinstance(interactions, list):
            raise self.fail(key, "expected a list of interactions", node)
        items = node.value if isinstance(node, yaml.SequenceNode) else [None] * len(interactions)
        return [self.vcr_interaction(i, item, f"{key}[{i}]", item_node)
                for i, (item, item_node) in enumerate(zip(interactions, items))]

    def vcr_interaction(self, index: int, item: Any, key: str, node: yaml.Node | None) -> Exchange:
        if not isinstance(item, dict):
            raise self.fail(key, "expected a mapping with request and response", node)
        request = item.get("request")
        if not isinstance(request, dict):
            raise self.fail(f"{key}.request", "expected a mapping with method, uri and body", node, "request")
        response = item.get("response")
        if response is not None and not isinstance(response, dict):
            raise self.fail(f"{key}.response", "expected a mapping with status, headers and body", node, "response")
        url = request.get("uri", request.get("url"))
        if not isinstance(url, str):
            raise self.fail(f"{key}.request.uri", "expected the request URL as a string", node, "request", "uri")
        method = request.get("method")
        if not isinstance(method, str):
            raise self.fail(f"{key}.request.method", "expected the HTTP method as a string", node, "request", "method")
        status: int | None = None
        response_headers: Any = None
        response_body: Any = None
        if response is not None:
            status = self.vcr_status(response.get("status"), f"{key}.response.status", node)
            response_headers = self.vcr_headers(response.get("headers"), f"{key}.response.headers", node, "response")
            response_body = self.vcr_body(response, f"{key}.response", node, "response")
        started_at = _timestamp(item.get("recorded_at"))
        # Our cassettes keep the model's timing beside each answer. It goes to the recorded_* fields,
        # not started_at/duration_s: the checks that time retries and deadlines keep reading the
        # same fields whether or not a cassette has it, and the report labels it as recorded.
        recorded_started_at, recorded_duration_s = recorded_timing(response)
        return self.exchange(
            index, method, url,
            self.vcr_headers(request.get("headers"), f"{key}.request.headers", node, "request"),
            self.vcr_body(request, f"{key}.request", node, "request"),
            status, response_headers, response_body,
            started_at=started_at, recorded_started_at=recorded_started_at, recorded_duration_s=recorded_duration_s,
            source_line=node_line(node, ()),
        )

    def vcr_status(self, status: Any, key: str, node: yaml.Node | None) -> int | None:
        code = status.get("code") if isinstance(status, dict) else status
        if isinstance(code, str) and code.strip().isdigit():
            code = int(code)
        if isinstance(code, int) and not isinstance(code, bool):
            return code
        raise self.fail(key, f"expected a mapping with code (an HTTP status), got {status!r}", node, "response", "status")

    def vcr_headers(self, headers: Any, key: str, node: yaml.Node | None, side: str) -> Any:
        if headers is None or isinstance(headers, Mapping):
            return headers
        if isinstance(headers, list) and all(isinstance(h, (list, tuple)) and len(h) == 2 for h in headers):
            return [(str(n), str(v)) for n, v in headers]
        raise self.fail(key, "expected a mapping of header names to values", node, side, "headers")

    def vcr_body(self, side: dict[str, Any], key: str, node: yaml.Node | None, side_name: str) -> Any:
        if "parsed_body" in side:
            return side["parsed_body"]
        body = side.get("body")
        if body is None or isinstance(body, (str, bytes)):
            return body
        if isinstance(body, dict):
            if "base64_string" in body:
                try:
                    return base64.b64decode(body["base64_string"] or "")
                except (binascii.Error, TypeError, ValueError) as exc:
                    raise self.fail(f"{key}.body.base64_string", f"is not base64 ({exc})", node, side_name, "body") from exc
            string = body.get("string")
            if string is None or isinstance(string, (str, bytes)):
                return string
            if isinstance(string, (dict, list)):
                return string
        raise self.fail(f"{key}.body", f"expected a string or a mapping with string, got {type(body).__name__}",
                        node, side_name, "body")

    def har(self, entries: Any) -> list[Exchange]:
        if not isinstance(entries, list):
            raise CassetteError(self.path, "expected a list of entries", key="log.entries")
        exchanges = []
        for i, entry in enumerate(entries):
            key = f"log.entries[{i}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
                raise CassetteError(self.path, "expected an entry with request and response", key=key)
            request = entry["request"]
            response: dict[str, Any] = entry["response"] if isinstance(entry.get("response"), dict) else {}
            if not isinstance(request.get("url"), str) or not isinstance(request.get("method"), str):
                raise CassetteError(self.path, "expected method and url strings", key=f"{key}.request")
            post: dict[str, Any] = request["postData"] if isinstance(request.get("postData"), dict) else {}
            content: dict[str, Any] = response["content"] if isinstance(response.get("content"), dict) else {}
            status = response.get("status")
            if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
                raise CassetteError(self.path, f"expected an HTTP status number, got {status!r}", key=f"{key}.response.status")
            duration = entry.get("time")
            exchanges.append(self.exchange(
                i, request["method"], request["url"],
                _har_headers(request.get("headers"), self.path, f"{key}.request.headers"),
                self.har_text(post, f"{key}.request.postData"),
                status or None,  # HAR writes 0 when no answer came
                _har_headers(response.get("headers"), self.path, f"{key}.response.headers"),
                self.har_text(content, f"{key}.response.content"),
                started_at=_timestamp(entry.get("startedDateTime")),
                duration_s=duration / 1000 if isinstance(duration, (int, float)) and duration >= 0 else None,
            ))
        return exchanges

    def har_text(self, holder: dict[str, Any], key: str) -> str | bytes | None:
        text = holder.get("text")
        if text is None:
            return None
        if not isinstance(text, str):
            raise CassetteError(self.path, f"expected text, got {type(text).__name__}", key=f"{key}.text")
        if holder.get("encoding") == "base64":
            try:
                return base64.b64decode(text)
            except (binascii.Error, ValueError) as exc:
                raise CassetteError(self.path, f"is marked base64 but does not decode ({exc})", key=f"{key}.text") from exc
        return text

    def response_only(self, document: dict[str, Any]) -> Exchange:
        status = document.get("status")
        if isinstance(status, dict):
            status = status.get("code")
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise CassetteError(self.path, f"expected an HTTP status number, got {status!r}", key="status")
        headers = document.get("headers")
        if headers is not None and not isinstance(headers, Mapping):
            raise CassetteError(self.path, "expected a mapping of header names to values", key="headers")
        exchange = self.exchange(0, "POST", UNKNOWN_MESSAGES_URL, None, None, status, headers, document.get("body"))
        answer = exchange.response_body
        if exchange.streamed or (isinstance(answer, dict) and answer.get("type") in ("message", "error")):
            self.notes.append("response-only recording: the request was not kept; the answer is checked as a Messages call")
        else:
            exchange.method, exchange.url = "", ""
            self.notes.append("response-only recording: the request was not kept and the answer is not a Messages answer")
        return exchange

    def httprr(self, data: bytes) -> list[Exchange]:
        first_break = data.find(b"\n")
        offset = len(data) if first_break < 0 else first_break + 1
        exchanges: list[Exchange] = []
        while offset < len(data):
            line = data.count(b"\n", 0, offset) + 1
            end = data.find(b"\n", offset)
            sizes = data[offset:end if end >= 0 else len(data)].split()
            if end < 0 or len(sizes) != 2 or not all(s.isdigit() for s in sizes):
                raise CassetteError(self.path, "expected a record header 'N M' (byte lengths of request and response)",
                                    line=line, key=f"record {len(exchanges)}")
            n, m = int(sizes[0]), int(sizes[1])
            start = end + 1
            if start + n + m > len(data):
                raise CassetteError(self.path, f"record says {n}+{m} bytes but only {len(data) - start} remain",
                                    line=line, key=f"record {len(exchanges)}")
            raw_request, raw_response = data[start:start + n], data[start + n:start + n + m]
            offset = start + n + m
            method, target, req_headers, req_body = _parse_http(raw_request, self.path, line, len(exchanges), "request")
            _, status_word, resp_headers, resp_body = _parse_http(raw_response, self.path, line, len(exchanges), "response")
            url = target
            if target.startswith("/"):
                host = next((v for k, v in req_headers if k.lower() == "host"), "")
                url = f"https://{host}{target}"
            exchanges.append(self.exchange(len(exchanges), method, url, req_headers, req_body,
                                           _status_code(status_word), resp_headers, resp_body, source_line=line))
        return exchanges


def _parse_http(raw: bytes, path: str, line: int, record: int, side: str) -> tuple[str, str, list[tuple[str, str]], bytes]:
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


def _status_code(status_word: str) -> int | None:
    return int(status_word) if status_word.isdigit() else None


def _har_headers(headers: Any, path: str, key: str) -> list[tuple[str, str]]:
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


def _timestamp(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp()  # Ruby VCR: "Tue, 01 Apr 2025 12:00:00 GMT"
    except (TypeError, ValueError):
        return None
