"""Rebuild the message a streamed Messages answer carried, from its server-sent events.

Follows the anthropic SDK's `accumulate_event` on plain dicts, so a reassembled stream compares
equal to what the SDK hands an agent; it never raises on what it does not know, it notes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jiter

from ._json import loads

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class StreamResult:
    """What a stream said: the message it built, an in-stream error, and whether it ended."""

    message: dict[str, Any] | None
    """The reassembled message; None when no `message_start` arrived."""
    error: dict[str, Any] | None
    """The `error` object of an `error` event (e.g. overloaded_error), if one arrived."""
    complete: bool
    """True when `message_stop` arrived; False for a stream cut mid-way."""
    events: int
    """Number of events read (pings included)."""
    notes: list[str] = field(default_factory=list)
    """What was skipped or guessed: unknown deltas, undecodable data, out-of-order events."""


def iter_sse(text: str) -> Iterator[tuple[str | None, str]]:
    """Yield (event name, data) per event, per the SSE spec (CR, LF or CRLF; comments; multi-line data)."""
    event: str | None = None
    data: list[str] = []
    for line in _LINE_BREAK.split(text):
        if not line:
            if event is not None or data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    # The spec drops an unterminated last event; a recording that lost its trailing blank line
    # (YAML `|` block scalars clip it) still carries a real event, so it is kept.
    if event is not None or data:
        yield event, "\n".join(data)


def looks_like_sse(text: str) -> bool:
    head = text.lstrip()[:16]
    return head.startswith(("event:", "data:", ":"))


class _Accumulator:
    """The snapshot and the per-block buffers; text is joined once per block, not per delta."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.content: list[Any] = []
        self.parts: dict[tuple[int, str], list[str]] = {}
        self.notes: list[str] = []

    def block(self, index: Any, what: str) -> dict[str, Any] | None:
        if isinstance(index, int) and 0 <= index < len(self.content) and isinstance(self.content[index], dict):
            block: dict[str, Any] = self.content[index]
            return block
        self.notes.append(f"{what} for content block {index!r}, which never started; ignored")
        return None

    def append(self, index: int, block: dict[str, Any], key: str, piece: Any) -> None:
        parts = self.parts.get((index, key))
        if parts is None:
            start = block.get(key)
            parts = self.parts[(index, key)] = [start] if isinstance(start, str) and key != "input" else []
        if isinstance(piece, str):
            parts.append(piece)

    def flush(self, index: int) -> None:
        for key in ("text", "thinking", "input"):
            parts = self.parts.pop((index, key), None)
            if parts is None:
                continue
            block = self.content[index]
            if key != "input":
                block[key] = "".join(parts)
                continue
            raw = "".join(parts)
            # An empty buffer means the input came whole in content_block_start (normally {}).
            if raw:
                block["input"] = self._parse_input(index, raw)

    def _parse_input(self, index: int, raw: str) -> Any:
        try:
            return loads(raw)
        except ValueError:
            pass
        except RecursionError:
            self.notes.append(f"tool input of content block {index} is JSON nested too deep to read; kept as the raw "
                              "string")
            return raw
        try:
            # What the SDK shows for a cut or fine-grained stream: the JSON read as far as it goes.
            value = jiter.from_json(raw.encode("utf-8"), partial_mode="trailing-strings")
        except ValueError as exc:
            self.notes.append(f"tool input of content block {index} is not JSON ({exc}); kept as the raw string")
            return raw
        self.notes.append(f"tool input of content block {index} is incomplete JSON; kept the part that parses")
        return value

    def flush_all(self) -> None:
        for index in sorted({i for i, _ in self.parts}):
            self.flush(index)


def reassemble_stream(text: str) -> StreamResult:
    """Rebuild the final message of a Messages stream from its SSE text."""
    acc = _Accumulator()
    error: dict[str, Any] | None = None
    complete = False
    events = 0
    for name, data in iter_sse(text):
        events += 1
        if name == "ping" or not data:
            continue
        try:
            event = loads(data)  # each event's JSON: a stream of 1,000 tokens is hundreds of them
        except ValueError:
            acc.notes.append(f"event {events} ({name}) carries data that is not JSON; skipped")
            continue
        except RecursionError:
            acc.notes.append(f"event {events} ({name}) carries JSON nested too deep to read; skipped")
            continue
        if not isinstance(event, dict):
            acc.notes.append(f"event {events} ({name}) is not a JSON object; skipped")
            continue
        kind = event.get("type") or name
        if kind == "error" or name == "error":
            inner = event.get("error")
            error = inner if isinstance(inner, dict) else event
            continue
        if kind == "ping":
            continue
        if kind == "message_start":
            message = event.get("message")
            if not isinstance(message, dict):
                acc.notes.append(f"event {events}: message_start without a message object; skipped")
                continue
            if acc.message is not None:
                acc.notes.append(f"event {events}: a second message_start; the stream restarts from it")
            content = message.get("content")
            acc.content = content if isinstance(content, list) else []
            message["content"] = acc.content
            acc.message = message
            acc.parts.clear()
            continue
        if acc.message is None:
            acc.notes.append(f"event {events}: {kind} before message_start; ignored")
            continue
        if kind == "content_block_start":
            _start_block(acc, event)
        elif kind == "content_block_delta":
            _apply_delta(acc, event)
        elif kind == "content_block_stop":
            index = event.get("index")
            if isinstance(index, int) and acc.block(index, "content_block_stop") is not None:
                acc.flush(index)
        elif kind == "message_delta":
            _apply_message_delta(acc.message, event)
        elif kind == "message_stop":
            complete = True
        else:
            acc.notes.append(f"event {events}: unknown event type {kind!r}; ignored")
    acc.flush_all()
    return StreamResult(message=acc.message, error=error, complete=complete, events=events, notes=acc.notes)


def _start_block(acc: _Accumulator, event: dict[str, Any]) -> None:
    block = event.get("content_block")
    if not isinstance(block, dict):
        acc.notes.append("content_block_start without a content_block object; ignored")
        return
    index = event.get("index")
    if index != len(acc.content):
        acc.notes.append(f"content_block_start with index {index!r} while {len(acc.content)} block(s) exist")
    # Blocks may arrive whole (server_tool_use, web_search_tool_result, redacted_thinking, compaction).
    acc.content.append(block)
    if block.get("type") == "fallback" and acc.message is not None:
        target = block.get("to")
        if isinstance(target, dict) and "model" in target:
            acc.message["model"] = target["model"]


def _apply_delta(acc: _Accumulator, event: dict[str, Any]) -> None:
    index = event.get("index")
    delta = event.get("delta")
    if not isinstance(delta, dict):
        acc.notes.append(f"content_block_delta without a delta object at index {index!r}; ignored")
        return
    kind = delta.get("type")
    block = acc.block(index, f"{kind} delta")
    if block is None:
        return
    assert isinstance(index, int)
    block_type = block.get("type")
    if kind == "text_delta":
        if block_type == "text":
            acc.append(index, block, "text", delta.get("text"))
    elif kind == "input_json_delta":
        acc.append(index, block, "input", delta.get("partial_json"))
    elif kind == "thinking_delta":
        if block_type == "thinking":
            acc.append(index, block, "thinking", delta.get("thinking"))
    elif kind == "signature_delta":
        if block_type == "thinking":
            block["signature"] = delta.get("signature")
    elif kind == "citations_delta":
        if block_type == "text":
            citations = block.get("citations")
            if isinstance(citations, list) and citations:
                citations.append(delta.get("citation"))
            else:
                block["citations"] = [delta.get("citation")]
    elif kind == "compaction_delta":
        if block_type == "compaction":
            block["content"] = delta.get("content")
            block["encrypted_content"] = delta.get("encrypted_content")
    else:
        acc.notes.append(f"unknown delta type {kind!r} on content block {index} ({block_type}); not applied")


def _apply_message_delta(message: dict[str, Any], event: dict[str, Any]) -> None:
    delta = event.get("delta")
    delta = delta if isinstance(delta, dict) else {}
    message["stop_reason"] = delta.get("stop_reason")
    message["stop_sequence"] = delta.get("stop_sequence")
    if "stop_details" in delta or "stop_details" in message:
        message["stop_details"] = delta.get("stop_details")
    if delta.get("container") is not None:
        message["container"] = delta["container"]
    # The SDK reads these two from the event; some recorders put them inside the delta.
    for key in ("context_management", "input_transformations"):
        value = event.get(key, delta.get(key))
        if value is not None:
            message[key] = value
    usage = event.get("usage")
    if not isinstance(usage, dict):
        return
    snapshot = message.get("usage")
    if not isinstance(snapshot, dict):
        snapshot = message["usage"] = {}
    # Counts on message_delta are cumulative totals: they overwrite; an absent or null one keeps
    # the message_start value. output_tokens is always sent.
    for key, value in usage.items():
        if value is not None or key == "output_tokens":
            snapshot[key] = value
