"""The Messages API's wire format, as the scripted model speaks it: messages, SSE events, errors.

Shapes follow real recorded traffic (`corpus/`): compact JSON, `message_start` with empty content,
text and tool input sent as deltas, whole blocks sent in `content_block_start`, one `ping`, and
the error envelope `{"type": "error", "error": {...}, "request_id": ...}`.
"""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._script import Step

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# Small pieces, so that a stream has several deltas per block like the real API's.
TEXT_CHUNK_CHARS = 12
JSON_CHUNK_CHARS = 10


class IdMaker:
    """Ids and signatures in the API's shapes, from a seeded RNG so a run is reproducible."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def _token(self, length: int) -> str:
        # What `rng.choice(_BASE62)` draws, character by character (6 random bits, drawn again when
        # past the alphabet), so the ids a seed gives are the ones it always gave; without choice's
        # two calls a character, which made ids a visible share of a short scripted run.
        bits = self._rng.getrandbits
        chars: list[str] = []
        while len(chars) < length:
            drawn = bits(6)
            if drawn < len(_BASE62):
                chars.append(_BASE62[drawn])
        return "".join(chars)

    def message_id(self) -> str:
        return "msg_01" + self._token(22)

    def tool_use_id(self) -> str:
        return "toolu_01" + self._token(22)

    def server_tool_use_id(self) -> str:
        return "srvtoolu_01" + self._token(22)

    def request_id(self) -> str:
        return "req_011C" + self._token(20)

    def opaque(self, size: int) -> str:
        """Base64 bytes standing for a thinking signature or encrypted data the client must echo back."""
        return base64.b64encode(self._rng.randbytes(size)).decode("ascii")


def resolve_content(step: Step, ids: IdMaker) -> list[dict[str, Any]]:
    """The step's blocks with every missing id, signature and link filled in."""
    blocks: list[dict[str, Any]] = []
    last_server_tool_use: str | None = None
    for given in step.content:
        block = dict(given)
        kind = block["type"]
        if kind == "tool_use" and "id" not in block:
            block = {"type": kind, "id": ids.tool_use_id(), **given}
        elif kind == "server_tool_use":
            if "id" not in block:
                block = {"type": kind, "id": ids.server_tool_use_id(), **given}
            last_server_tool_use = block["id"]
        elif kind == "web_search_tool_result" and "tool_use_id" not in block and last_server_tool_use:
            # Scripts name the search once; the result answers the server_tool_use just before it.
            block = {"type": kind, "tool_use_id": last_server_tool_use, **given}
        elif kind == "thinking" and "signature" not in block:
            block["signature"] = ids.opaque(96)
        elif kind == "redacted_thinking" and "data" not in block:
            block["data"] = ids.opaque(64)
        blocks.append(block)
    return blocks


def dumps(value: Any) -> str:
    """Compact JSON, as the API writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def estimate_tokens(value: Any) -> int:
    """About four characters a token: deterministic, and grows with what is sent or said."""
    return max(1, len(json.dumps(value, sort_keys=True, ensure_ascii=False)) // 4)


def count_input_tokens(body: Any) -> int:
    """The input tokens of a request: what the model reads (system, tools, messages)."""
    if not isinstance(body, Mapping):
        return 1
    read = {key: body[key] for key in ("system", "tools", "messages") if key in body}
    return estimate_tokens(read)


def usage_for(step: Step, body: Any, content: list[dict[str, Any]]) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": count_input_tokens(body),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": estimate_tokens(content) if content else 1,
    }
    usage.update(step.usage or {})
    return usage


def build_message(
    step: Step,
    *,
    message_id: str,
    content: list[dict[str, Any]],
    request_body: Any,
) -> dict[str, Any]:
    """The message a non-streamed request gets, and that a streamed one must rebuild exactly."""
    requested = request_body.get("model") if isinstance(request_body, Mapping) else None
    return {
        "model": step.model or (requested if isinstance(requested, str) else "claude-scripted"),
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": step.stop_reason,
        "stop_sequence": step.stop_sequence,
        "stop_details": step.stop_details,
        "usage": usage_for(step, request_body, content),
    }


def error_envelope(kind: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def sse_event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {dumps(data)}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    """Split at word ends into pieces of about `size` characters (never empty, rejoin to `text`)."""
    pieces: list[str] = []
    current = ""
    for word in re.findall(r"\S+\s*|\s+", text):
        current += word
        if len(current) >= size:
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _fixed_chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def block_events(index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """`content_block_start`, its deltas and `content_block_stop` for one block."""
    kind = block["type"]
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        if "citations" in block:
            start["citations"] = []
            deltas += [{"type": "citations_delta", "citation": c} for c in block["citations"]]
        deltas += [{"type": "text_delta", "text": piece} for piece in _chunks(block["text"], TEXT_CHUNK_CHARS)]
    elif kind in ("tool_use", "server_tool_use"):
        # The real API opens with an empty input and an empty first delta, then streams the JSON.
        start = {**block, "input": {}}
        deltas.append({"type": "input_json_delta", "partial_json": ""})
        if block["input"]:
            deltas += [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _fixed_chunks(dumps(block["input"]), JSON_CHUNK_CHARS)
            ]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas += [{"type": "thinking_delta", "thinking": p} for p in _chunks(block["thinking"], TEXT_CHUNK_CHARS)]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "compaction":
        start = {key: value for key, value in block.items() if key not in ("content", "encrypted_content")}
        start["content"] = None
        delta: dict[str, Any] = {"type": "compaction_delta", "content": block.get("content")}
        if "encrypted_content" in block:
            delta["encrypted_content"] = block["encrypted_content"]
        deltas.append(delta)
    else:
        # redacted_thinking, web_search_tool_result and any other block arrive whole.
        start = block
    events: list[tuple[str, dict[str, Any]]] = [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def stream_events(message: dict[str, Any]) -> list[bytes]:
    """The whole stream of a message, from `message_start` to `message_stop`."""
    usage = message["usage"]
    # message_start reports the first token only; message_delta carries the cumulative totals.
    start_usage = {**usage, "output_tokens": min(1, int(usage.get("output_tokens", 0)))}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "stop_sequence": None, "stop_details": None,
            "usage": start_usage,
        }}),
    ]
    for index, block in enumerate(message["content"]):
        events += block_events(index, block)
    # One keep-alive ping, where the API sends it: after the first block opens (or after the start).
    events.insert(2 if message["content"] else 1, ("ping", {"type": "ping"}))
    delta_usage = {
        key: usage[key]
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                    "output_tokens", "server_tool_use")
        if key in usage
    }
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {
            "stop_reason": message["stop_reason"],
            "stop_sequence": message["stop_sequence"],
            "stop_details": message["stop_details"],
        },
        "usage": delta_usage,
    }))
    events.append(("message_stop", {"type": "message_stop"}))
    return [sse_event(name, data) for name, data in events]


@dataclass
class Reply:
    """What to send back for one request, independent of how it travels (in-process or HTTP)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes] = field(default_factory=list)
    """The body, in the pieces it is sent in (one per SSE event for a stream)."""
    streamed: bool = False
    delay_s: float = 0.0
    cut: bool = False
    """After the chunks, drop the connection instead of ending the body."""
    no_response: bool = False
    """Drop the connection before any answer (a cut on a non-streamed request)."""
    step: Step | None = None
    """The step this reply plays, if any (None for count_tokens, models, or past the script's end)."""
    request_line: str = ""
    """The request it answers, `POST /v1/messages`, for the log."""

    def describe(self) -> str:
        """One line for a console: the request, the step that answered it, and how it was sent."""
        answered = f"step {self.step.number} ({self.step.describe()})" if self.step else f"HTTP {self.status}"
        how = " cut" if self.cut else " dropped" if self.no_response else ""
        fault = self.step.stream_error if self.step else None
        if fault is not None:
            # Else the log reads as a clean end_turn while the client got an error: say which.
            how += (
                f" with event: error {fault.type} after {fault.after} event(s)"
                if self.streamed
                else f" answered as HTTP {self.status} {fault.type}"
            )
        kind = " stream" if self.streamed else ""
        return f"{self.request_line} -> {answered}{kind}{how}"

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)
