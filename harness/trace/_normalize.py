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


# Block fields the rules use as identities (set members, dict keys, equality with declared names):
# a recording that holds a list or a number there must not make a rule crash on an unhashable value.
IDENTITY_FIELDS = ("type", "id", "name", "tool_use_id")


def as_key(value: Any) -> str | None:
    """A field the rules compare as an identity, as a string: None stays None, a string stays itself,
    anything else (a number, a list, an object a broken client wrote) becomes its canonical JSON."""
    if value is None or isinstance(value, str):
        return value
    return canonical(value)


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as blocks; a plain string is one text block.

    Every block comes back as a dict whose identity fields (type, id, name, tool_use_id) are strings
    or absent, so a rule can put them in a set or compare them without checking their shape first.
    A block that is not an object becomes `{"type": "<its JSON type>", "value": ...}`; a block with an
    odd identity field is a shallow copy with that field as its canonical JSON (the recording itself
    is never changed). Well-formed blocks are returned as they are, uncopied.
    """
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [_block(b) for b in content]
    return []


def tool_name(block: dict[str, Any]) -> str:
    """A tool_use block's name as findings show it: one without a name says so, never 'None'."""
    name = block.get("name")
    return name if name is not None else "no name"


def _block(block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        return {"type": type(block).__name__, "value": block}
    # Every block of every message passes here: the common case in one expression, no loop.
    get = block.get
    if (isinstance(get("type", ""), str) and isinstance(get("id", ""), str) and isinstance(get("name", ""), str)
            and isinstance(get("tool_use_id", ""), str)):
        return block
    for name in IDENTITY_FIELDS:
        value = block.get(name)
        if value is not None and not isinstance(value, str):
            return {k: (as_key(v) if k in IDENTITY_FIELDS else v) for k, v in block.items()}
    return block


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


def printable(text: str) -> str:
    """`text` with each lone surrogate written as its escape (`\\ud800`), so it can be encoded as UTF-8.

    JSON bodies may hold lone surrogates (`"\\ud800"` is valid JSON) and file names undecodable
    bytes (os.fsdecode's surrogateescape); quoted into a finding, a note or a page, either would make
    writing it to a UTF-8 stream raise. Inside a JSON string the escape is the same code unit again.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text



def _text_of(message: Any) -> str | None:
    """A message's text when it holds only text (a string or text blocks); None otherwise."""
    if not isinstance(message, dict):
        return None
    items = content_blocks(message.get("content"))
    if not all(b.get("type") == "text" for b in items):
        return None
    return "".join(str(b.get("text", "")) for b in items)


def resends_history(before: list[Any], after: list[Any]) -> bool:
    """`after` sends `before` again: unchanged, with user messages appended (no assistant turn between:
    the previous answer was not taken as a turn), or with text appended to its last user message.

    This is how a loop retries a request (e.g. a refusal): the same prompt, at most with a note added
    ("Error: ... Now let's retry"). A continuation that appends the assistant's answer first is not one.
    """
    if not before:
        return False
    n = len(before)
    if len(after) >= n and after[:n] == before:
        return all(isinstance(m, dict) and m.get("role") == "user" for m in after[n:])
    if len(after) != n or after[:-1] != before[:-1]:
        return False
    last_before, last_after = before[-1], after[-1]
    if not (isinstance(last_before, dict) and isinstance(last_after, dict)
            and last_before.get("role") == last_after.get("role") == "user"):
        return False
    old, new = _text_of(last_before), _text_of(last_after)
    if old is not None and new is not None:
        return len(new) > len(old) and new.startswith(old)
    # Blocks: the old ones unchanged, more appended.
    old_blocks, new_blocks = content_blocks(last_before.get("content")), content_blocks(last_after.get("content"))
    return len(new_blocks) > len(old_blocks) and new_blocks[: len(old_blocks)] == old_blocks
