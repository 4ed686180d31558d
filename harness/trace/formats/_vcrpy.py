"""VCR.py cassettes (YAML or JSON with `interactions:`), pydantic-ai's `parsed_body` variant included.

Ruby VCR (`_ruby_vcr`) and go-vcr (`_go_vcr`) write the same outline and reuse the helpers here.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from typing import Any

from ..._yaml import Loc
from .._decode import base64_bytes
from .._model import Exchange
from .._timing import recorded_timing
from ._base import Recording, RecordingFormat, timestamp

InteractionReader = Callable[[Recording, int, dict[str, Any], str, Loc], Exchange]
"""(recording, index, item, its key as shown, its path in the document for line numbers)."""


def sniff(recording: Recording) -> bool:
    document = recording.document
    return isinstance(document, dict) and "interactions" in document


def read(recording: Recording) -> list[Exchange]:
    return read_interactions(recording, "interactions", read_interaction)


def read_interactions(recording: Recording, key: str, read_one: InteractionReader) -> list[Exchange]:
    """Each item of the top-level list `key`, checked to be a mapping, read by `read_one`."""
    interactions = recording.document[key]
    if interactions is None:
        return []
    if not isinstance(interactions, list):
        raise recording.fail(key, "expected a list of interactions", (key,))
    exchanges = []
    for i, item in enumerate(interactions):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise recording.fail(where, "expected a mapping with request and response", (key, i))
        exchanges.append(read_one(recording, i, item, where, (key, i)))
    return exchanges


def read_interaction(recording: Recording, index: int, item: dict[str, Any], key: str,
                     at: Loc) -> Exchange:
    request, response = request_and_response(recording, item, key, at)
    url = request.get("uri", request.get("url"))
    if not isinstance(url, str):
        raise recording.fail(_key(key, "request.uri"), "expected the request URL as a string", at, "request", "uri")
    method = request_method(recording, request, key, at)
    status: int | None = None
    response_headers: Any = None
    response_body: Any = None
    if response is not None:
        status = vcr_status(recording, response.get("status"), key, at)
        response_headers = headers(recording, response.get("headers"), key, at, "response")
        response_body = body(recording, response, key, at, "response")
    # Our cassettes keep the model's timing beside each answer. It goes to the recorded_* fields,
    # not started_at/duration_s: the checks that time retries and deadlines keep reading the
    # same fields whether or not a cassette has it, and the report labels it as recorded.
    recorded_started_at, recorded_duration_s = recorded_timing(response)
    return recording.exchange(
        index, method, url,
        headers(recording, request.get("headers"), key, at, "request"),
        body(recording, request, key, at, "request"),
        status, response_headers, response_body,
        started_at=timestamp(item.get("recorded_at")),
        recorded_started_at=recorded_started_at, recorded_duration_s=recorded_duration_s,
        source_line=recording.line_of(at),
    )


def request_and_response(recording: Recording, item: dict[str, Any], key: str,
                         at: Loc) -> tuple[dict[str, Any], dict[str, Any] | None]:
    request = item.get("request")
    if not isinstance(request, dict):
        raise recording.fail(_key(key, "request"), "expected a mapping with method, uri and body", at, "request")
    response = item.get("response")
    if response is not None and not isinstance(response, dict):
        raise recording.fail(_key(key, "response"), "expected a mapping with status, headers and body", at, "response")
    return request, response


def request_method(recording: Recording, request: dict[str, Any], key: str, at: Loc) -> str:
    method = request.get("method")
    if not isinstance(method, str):
        raise recording.fail(_key(key, "request.method"), "expected the HTTP method as a string", at,
                             "request", "method")
    return method


def vcr_status(recording: Recording, status: Any, key: str, at: Loc) -> int:
    """The status of the response of interaction `key`. Like `headers` and `body`, it is given the
    interaction's key and spells the key under it only to say what is wrong there: most files are not."""
    code = status.get("code") if isinstance(status, dict) else status
    if isinstance(code, str) and code.strip().isdigit():
        code = int(code)
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    raise recording.fail(_key(key, "response.status"), f"expected a mapping with code (an HTTP status), got {status!r}",
                         at, "response", "status")


def headers(recording: Recording, value: Any, key: str, at: Loc, side: str) -> Any:
    """The headers of the `side` ("request" or "response") of interaction `key`: a mapping of names to
    a value or a list of values, or a list of [name, value] pairs."""
    if value is None or isinstance(value, dict) or isinstance(value, Mapping):  # dict: no ABC check
        return value
    if isinstance(value, list) and all(isinstance(h, (list, tuple)) and len(h) == 2 for h in value):
        return [(str(n), str(v)) for n, v in value]
    raise recording.fail(_key(key, side, "headers"), "expected a mapping of header names to values", at,
                         side, "headers")


def body(recording: Recording, side: dict[str, Any], key: str, at: Loc, side_name: str) -> Any:
    """The body of the `side_name` mapping `side` of interaction `key`: `parsed_body`, a string,
    `{string: ...}` or base64."""
    if "parsed_body" in side:
        return side["parsed_body"]
    value = side.get("body")
    if value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        if "base64_string" in value:
            try:
                return base64_bytes(value["base64_string"] or "")
            except (binascii.Error, TypeError, ValueError) as exc:
                raise recording.fail(_key(key, side_name, "body.base64_string"), f"is not base64 ({exc})", at,
                                     side_name, "body") from exc
        string = value.get("string")
        if string is None or isinstance(string, (str, bytes, dict, list)):
            return string
    raise recording.fail(_key(key, side_name, "body"),
                         f"expected a string or a mapping with string, got {type(value).__name__}",
                         at, side_name, "body")


def _key(key: str, *under: str) -> str:
    """The key of what is under interaction `key`, as an error names it (`interactions[3].request.uri`;
    `request.uri` for an interaction that is the whole file)."""
    return ".".join(part for part in (key, *under) if part)


FORMAT = RecordingFormat(
    name="vcrpy",
    description="a VCR.py cassette (YAML or JSON with `interactions:`)",
    sniff=sniff,
    read=read,
    suffixes=(".yaml", ".yml", ".json"),
    markers=(b"interactions",),
)
