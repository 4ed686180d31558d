"""The requests of one recording hold the history they re-send once, and its nesting is measured once.

Each request of an agent loop re-sends the whole conversation, and its tools and system: parsed apart,
a thread of n calls holds n copies of its first message (three times the file's size for a 44 MB
cassette), and measuring each body's nesting (`MAX_DEPTH`) walked every copy again. `SharedHistory`
makes a request's history the very objects an earlier request of its thread holds; those sit where
they sat in a request already found within MAX_DEPTH, so only what is new to a request is walked.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 128
"""Nesting beyond which a body is kept as text only. Real Messages bodies stay far below it (a deep tool
schema is ~20 levels); the comparisons and rules walk bodies recursively, and Python's stack is not
deep enough for the ~1,000 levels json.loads accepts."""

THREADS_REMEMBERED = 16
"""Threads whose latest history a request is compared with: subagents interleave their calls."""

_SHARED_KEYS = ("tools", "system")
"""Request fields a loop sends the same on every call."""


def height(value: Any) -> int:
    """Levels of nested objects and arrays in parsed JSON (0 for a scalar), counted up to MAX_DEPTH + 1,
    a level at a time, without recursion (the point is not to overflow the stack).

    Parsed JSON holds plain dicts and lists only, so their types are compared, not asked with
    isinstance: twice as fast, on every value of every new turn."""
    level = [value] if type(value) is dict or type(value) is list else []
    levels = 0
    while level and levels <= MAX_DEPTH:
        levels += 1
        below = []
        for node in level:
            for child in node.values() if type(node) is dict else node:
                if type(child) is dict or type(child) is list:
                    below.append(child)
        level = below
    return levels


class SharedHistory:
    """What the requests read so far from one recording hold, for the next request to share."""

    def __init__(self) -> None:
        self._recent: list[list[Any]] = []
        """The `messages` of the latest requests kept, one per thread as threads interleave."""
        self._answers: list[list[Any]] = []
        """The content of the latest answers, which the next request of their thread re-sends."""
        self._last: dict[str, Any] | None = None
        """The latest request kept."""

    def share(self, body: dict[str, Any]) -> bool:
        """Make the history `body` re-sends the objects an earlier request holds, and say whether the
        body is nested at most MAX_DEPTH levels (the body is remembered for the next requests only then).

        Values are only ever replaced by equal ones (`==`, the same comparison the history rules make),
        never changed, so the trace reads the same; comparing histories then stops at the first shared
        message. What is shared sits where it sat in a request within MAX_DEPTH, at the same depth,
        so the body's nesting is that of what is new to it (an answer re-sent as a turn is new: it
        sat higher in its response).
        """
        deepest = 0  # levels under the body's own
        messages = body.get("messages")
        if isinstance(messages, list):
            deepest = 1 + self._share_messages(messages)
        last = self._last
        for key, value in body.items():
            if key == "messages" and isinstance(messages, list):
                continue
            if key in _SHARED_KEYS and last is not None and key in last and last[key] == value:
                body[key] = last[key]
            else:
                deepest = max(deepest, height(value))
        if 1 + deepest > MAX_DEPTH:
            return False
        if isinstance(messages, list) and messages:
            self._recent.append(messages)
            if len(self._recent) > THREADS_REMEMBERED:
                del self._recent[0]
        self._last = body
        return True

    def _share_messages(self, messages: list[Any]) -> int:
        """Share `messages` with the latest history that opens the same way; the highest of the
        messages new to it (0 when there are none)."""
        if not messages:
            return 0
        shared = 0
        for earlier in reversed(self._recent):
            if earlier[0] == messages[0]:
                most = min(len(earlier), len(messages))
                while shared < most and earlier[shared] == messages[shared]:
                    messages[shared] = earlier[shared]
                    shared += 1
                break
        highest = 0
        # The turns new to this request: an assistant turn re-sends an answer the file holds already.
        for message in messages[shared:]:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list) and message.get("role") == "assistant":
                answer = next((a for a in reversed(self._answers) if a == content), None)
                if answer is not None:
                    message["content"] = answer
            highest = max(highest, height(message))
        return highest

    def answered(self, response_body: Any) -> None:
        """Remember an answer's content, which the next request of its thread re-sends."""
        answer = response_body.get("content") if isinstance(response_body, dict) else None
        if isinstance(answer, list) and answer:
            self._answers.append(answer)
            if len(self._answers) > THREADS_REMEMBERED:
                del self._answers[0]
