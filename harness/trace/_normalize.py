"""Content as the API reads it: the comparison both thread reconstruction and the H rules rely on.

Two histories that differ only in request metadata (a cache breakpoint moved to the newest message,
null optional fields, a default the API assumes, an empty text block a stream produced) are the
same conversation. Thread reconstruction (`_threads`) and the rules (`checks._wire`) must agree on
that, or a moved breakpoint splits a thread the rules would have called unedited.
"""

from __future__ import annotations

import json
from typing import Any

# Fields a client adds to history blocks that say nothing about their content: a cache breakpoint
# moves to the newest message on every turn, so it is not an edit of the history.
TRANSPORT_FIELDS = frozenset({"cache_control"})
# Response fields whose value is the default the API assumes when a request omits them: typed
# request params of the SDKs do not carry them, so dropping them changes nothing.
DEFAULTS: dict[str, Any] = {"caller": {"type": "direct"}}


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as blocks; a plain string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": type(b).__name__, "value": b} for b in content]
    return []


def normalize(value: Any) -> Any:
    """JSON with null optional fields and cache breakpoints dropped, so equal content compares equal."""
    if isinstance(value, dict):
        return {
            k: normalize(v)
            for k, v in value.items()
            if v is not None and k not in TRANSPORT_FIELDS and DEFAULTS.get(k, DEFAULTS) != v
        }
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def normalize_blocks(items: list[dict[str, Any]]) -> list[Any]:
    # The API rejects empty text blocks in a request, so a client must drop the ones a stream produced.
    return [normalize(b) for b in items if not (b.get("type") == "text" and b.get("text") == "")]


def normalize_message(message: Any) -> Any:
    """A message with its content as normalized blocks (a string and one text block compare equal)."""
    if not isinstance(message, dict):
        return message
    out = normalize({k: v for k, v in message.items() if k != "content"})
    out["content"] = normalize_blocks(content_blocks(message.get("content")))
    return out


def canonical(value: Any) -> str:
    """One string per JSON value, key order ignored: a dictionary key or a hash input."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
