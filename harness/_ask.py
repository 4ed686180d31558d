"""Ask a model for one structured answer, through a forced tool: how the judge and the simulated
user talk to their models. The call goes through the client it is given (the session's harness
client), so it is recorded, replayed and scripted like every other call of the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import MalformedReply

if TYPE_CHECKING:
    import anthropic

RAW_REPLY_CHARS = 4000
"""How much of a malformed reply an error shows: enough to see what the model did instead."""


@dataclass(frozen=True)
class Asked:
    """The forced tool's input, and the reply it came in (for errors and details)."""

    answer: dict[str, Any]
    raw: str
    """The reply's content blocks as JSON."""
    model: str


def ask(
    client: anthropic.Anthropic,
    *,
    who: str,
    model: str,
    system: str,
    prompt: str,
    tool: dict[str, Any],
    max_tokens: int,
    effort: str | None = None,
) -> Asked:
    """Call `model` with `tool` forced and return the tool's input. `who` names the caller in errors
    ("the judge", "the simulated user"). A reply without that tool call raises MalformedReply
    showing the raw reply; an API error propagates as the SDK raises it."""
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": prompt}],
        "tools": [tool],
        "tool_choice": {"type": "tool", "name": tool["name"]},
    }
    if effort is not None:
        params["output_config"] = {"effort": effort}
    response = client.messages.create(**params)
    blocks = [block.to_dict(mode="json", exclude_none=True) for block in response.content]
    raw = json.dumps(blocks, ensure_ascii=False)
    for block in blocks:
        if (block.get("type") == "tool_use" and block.get("name") == tool["name"]
                and isinstance(block.get("input"), dict)):
            return Asked(block["input"], raw, str(response.model))
    raise MalformedReply(
        f"{who} ({model}) did not call the {tool['name']} tool it was asked to (stop_reason "
        f"{response.stop_reason}); raw reply: {shorten(raw)}"
    )


def shorten(raw: str) -> str:
    return raw if len(raw) <= RAW_REPLY_CHARS else raw[:RAW_REPLY_CHARS] + f"… ({len(raw):,} characters)"
