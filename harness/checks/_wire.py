"""What every rule family reads off the wire: content blocks, normalized JSON, and a per-trace index.

The families ask the same questions (which call follows this one in its thread, where its answer
sits in the next request, which messages a request adds); `trace_index` answers them once per trace
so that no rule rescans the calls.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import asdict, dataclass, is_dataclass
from itertools import pairwise
from typing import Any

from ..trace._model import Call, Trace
from ..trace._normalize import as_key
from ..trace._normalize import (  # re-exported: the families import them from here
    canonical as canonical,
)
from ..trace._normalize import (
    content_blocks as content_blocks,
)
from ..trace._normalize import (
    normalize as normalize,
)
from ..trace._normalize import (
    normalize_blocks as normalize_blocks,
)
from ..trace._normalize import (
    normalize_message as normalize_message,
)

KNOWN_STOP_REASONS = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"})


def role(message: Any) -> str | None:
    """The message's role when it is a string; a message without one (or with a list there) has none."""
    value = message.get("role") if isinstance(message, dict) else None
    return value if isinstance(value, str) else None


def blocks(message: Any) -> list[dict[str, Any]]:
    """A message's content as blocks; a plain string is one text block."""
    if not isinstance(message, dict):
        return []
    return content_blocks(message.get("content"))


def of_type(items: list[dict[str, Any]], kind: str) -> list[tuple[int, dict[str, Any]]]:
    return [(i, b) for i, b in enumerate(items) if b.get("type") == kind]


def is_human_turn(message: Any) -> bool:
    """A user message that says something new: not only tool_result blocks."""
    return role(message) == "user" and any(b.get("type") != "tool_result" for b in blocks(message))


def result_text(block: dict[str, Any]) -> str:
    """The text a tool_result carries, whether its content is a string or text blocks."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content_blocks(content) if b.get("type") == "text")


def same_message(a: Any, b: Any) -> bool:
    return bool(a == b or normalize_message(a) == normalize_message(b))


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def as_dict(value: Any) -> dict[str, Any]:
    """An option given as a dict or as a dataclass (e.g. `agents.Limits`)."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return dict(value) if isinstance(value, dict) else {}


def declared_tools(call: Call) -> set[str] | None:
    """Names of the tools the request declares; None when the request has no `tools` (or was not recorded)."""
    tools = call.request.get("tools")
    if not isinstance(tools, list):
        return None
    return {str(t.get("name")) for t in tools if isinstance(t, dict)}


def answered(call: Call) -> bool:
    """The call got a whole message back (not an error, not a stream cut mid-way)."""
    return call.response is not None and call.final.stream_complete


def has_request(call: Call) -> bool:
    """The request was recorded (response-only recordings keep only the answer)."""
    return "messages" in call.request


@dataclass(frozen=True)
class Answer:
    """Where a call's response sits in the next request of its thread."""

    next: Call
    index: int | None
    """Index in `next.messages` of the assistant message that re-sends the response; None when absent."""
    merged: bool
    """The response continued a trailing assistant message (prefill, paused turn) and was merged into it."""
    rest: int
    """Index in `next.messages` where the messages added after the answer begin."""


class Turn:
    """What the rules read of one message, made once per message object (`TraceIndex.turn`): the
    requests of a thread re-send the very message objects, and every rule family asks the same."""

    __slots__ = ("message", "role", "blocks", "tool_uses", "tool_results", "use_ids", "result_ids", "only_results")

    def __init__(self, message: Any, answers: dict[int, tuple[list[Any], list[dict[str, Any]]]]) -> None:
        self.message = message
        """Kept so that its id is not reused by another message while the turn is cached."""
        self.role = role(message)
        content = message.get("content") if isinstance(message, dict) else None
        known = answers.get(id(content))
        # An assistant turn mostly re-sends a response's very content list (a recording shares it),
        # whose blocks its call made already.
        self.blocks = known[1] if known is not None and known[0] is content else content_blocks(content)
        """`blocks(message)`: read it, never change it."""
        self.tool_uses: list[tuple[int, dict[str, Any]]] = []
        """(block index, block) of each tool_use block."""
        self.tool_results: list[tuple[int, dict[str, Any]]] = []
        """(block index, block) of each tool_result block."""
        self.use_ids: list[str] = []
        """The id of each tool_use block, in order, as a string."""
        self.result_ids: list[str] = []
        """The tool_use_id of each tool_result block, in order, as a string."""
        for i, block in enumerate(self.blocks):
            kind = block.get("type")
            if kind == "tool_use":
                self.tool_uses.append((i, block))
                self.use_ids.append(str(block.get("id")))
            elif kind == "tool_result":
                self.tool_results.append((i, block))
                self.result_ids.append(str(block.get("tool_use_id")))
        self.only_results = len(self.tool_results) == len(self.blocks)
        """Every block is a tool_result (none, for a message without blocks)."""


class Row:
    """One call as the rules read it, made once per trace (`TraceIndex.rows`): each rule used to ask
    every call for its request, messages, response and stop_reason again, a pass per rule."""

    __slots__ = ("call", "request", "has_request", "messages", "response", "answered", "stop_reason", "content",
                 "tool_uses")

    def __init__(self, call: Call) -> None:
        self.call = call
        self.request = call.request
        self.has_request = "messages" in self.request
        """`has_request(call)`: the request was recorded."""
        self.messages = call.messages
        final = call.attempts[-1]
        self.response = response = final.response_body if final.ok else None  # `call.response`, asked once
        self.answered = response is not None and final.stream_complete
        """`answered(call)`: a whole message came back."""
        self.stop_reason = as_key(response.get("stop_reason")) if response is not None else None
        self.content = call.content if response is not None else []
        self.tool_uses = [(i, b) for i, b in enumerate(self.content) if b.get("type") == "tool_use"]
        """(block index, block) of each tool_use block of the response."""


class TraceIndex:
    """Thread neighbours, answers and request regions of one trace, computed once."""

    def __init__(self, trace: Trace) -> None:
        # No reference to the trace itself: the module cache must not keep a dropped trace alive.
        self.calls = trace.calls
        self.next: dict[int, Call] = {}
        self.prev: dict[int, Call] = {}
        for thread in trace.threads:
            for a, b in pairwise(thread.calls):
                self.next[a] = self.calls[b]
                self.prev[b] = self.calls[a]
        self._answers: dict[int, Answer | None] = {}
        self._starts: dict[int, int] = {}
        self._by_messages: dict[str, list[int]] | None = None
        self._by_body: dict[str, list[int]] | None = None
        self._turns: dict[int, Turn] = {}
        self._declared: dict[int, tuple[Any, frozenset[str]]] = {}
        self._by_stop: dict[str | None, list[Call]] | None = None
        self._rows: list[Row] | None = None
        self._answer_blocks: dict[int, tuple[list[Any], list[dict[str, Any]]]] = {}
        """Each response's content list by id, beside its blocks (`Row.content`), for the turns that
        re-send it."""
        self._added: dict[int, list[tuple[int, Turn]]] = {}
        self.memo: dict[str, Any] = {}
        """Results a family computes once and several of its rules share."""

    @property
    def rows(self) -> list[Row]:
        """Each call's `Row`, in trace order (`rows[call.index]`)."""
        if self._rows is None:
            self._rows = [Row(call) for call in self.calls]
            for row in self._rows:
                content = row.response.get("content") if row.response is not None else None
                if isinstance(content, list):
                    self._answer_blocks[id(content)] = (content, row.content)
        return self._rows

    def turn(self, message: Any) -> Turn:
        """The message's `Turn`, made once per message object of the trace."""
        cached = self._turns.get(id(message))
        if cached is None or cached.message is not message:
            if self._rows is None:
                _ = self.rows  # the responses' blocks, which assistant turns re-send
            cached = self._turns[id(message)] = Turn(message, self._answer_blocks)
        return cached

    @property
    def final_call(self) -> Call | None:
        """The run's last call: what the run's outcome reports on."""
        return self.calls[-1] if self.calls else None

    def declared_tools(self, call: Call) -> frozenset[str] | None:
        """`declared_tools(call)`, made once per `tools` list: a loop sends the same tools on every call,
        and a recording shares that list between the requests that send it equal."""
        tools = call.request.get("tools")
        if not isinstance(tools, list):
            return None
        cached = self._declared.get(id(tools))
        if cached is None or cached[0] is not tools:
            cached = self._declared[id(tools)] = (tools, frozenset(str(t.get("name")) for t in tools
                                                                   if isinstance(t, dict)))
        return cached[1]

    def answered_with(self, *stop_reasons: str) -> list[Call]:
        """The calls answered whole (`answered`) with one of `stop_reasons`, in trace order: each L rule
        judges one stop_reason, and asking every call for its stop_reason was a pass per rule."""
        if self._by_stop is None:
            self._by_stop = {}
            for row in self.rows:
                if row.answered:
                    self._by_stop.setdefault(row.stop_reason, []).append(row.call)
        if len(stop_reasons) == 1:
            return self._by_stop.get(stop_reasons[0], [])
        return sorted((c for reason in stop_reasons for c in self._by_stop.get(reason, [])), key=lambda c: c.index)

    def answer(self, call: Call) -> Answer | None:
        if call.index not in self._answers:
            self._answers[call.index] = self._find_answer(call)
        return self._answers[call.index]

    def _find_answer(self, call: Call) -> Answer | None:
        nxt = self.next.get(call.index)
        if nxt is None:
            return None
        rows = self.rows
        row = rows[call.index]
        if row.response is None:
            return None
        before, after = row.messages, rows[nxt.index].messages
        k = len(before)
        if k < len(after) and role(after[k]) == "assistant":
            return Answer(nxt, k, False, k + 1)
        if before and role(before[-1]) == "assistant" and k - 1 < len(after) and role(after[k - 1]) == "assistant":
            return Answer(nxt, k - 1, True, k)
        if len(after) <= k:
            # A projected (shortened) history: the answer is the last assistant message, if any.
            for i in range(len(after) - 1, max(len(after) - 3, -1), -1):
                if role(after[i]) == "assistant":
                    return Answer(nxt, i, False, i + 1)
            return Answer(nxt, None, False, len(after))
        return Answer(nxt, None, False, k)

    def start(self, call: Call) -> int:
        """First index of the messages this request adds to its thread (0 for a thread's first call)."""
        if call.index not in self._starts:
            prev = self.prev.get(call.index)
            n = 0
            if prev is not None:
                before, after = self.rows[prev.index].messages, self.rows[call.index].messages
                if after[: len(before)] == before:
                    n = len(before)
                else:
                    for x, y in zip(before, after, strict=False):
                        if not same_message(x, y):
                            break
                        n += 1
                answer = self.answer(prev)
                if answer is not None and answer.index is not None:
                    n = min(n, answer.index)
            self._starts[call.index] = n
        return self._starts[call.index]

    def added(self, call: Call) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, message) for each message this request adds to its thread."""
        messages = self.rows[call.index].messages
        for i in range(self.start(call), len(messages)):
            message = messages[i]
            if isinstance(message, dict):
                yield i, message

    def added_turns(self, call: Call) -> list[tuple[int, Turn]]:
        """(index, turn) of each message this request adds to its thread (`added`), made once per call:
        the T, W and H families each walk them."""
        cached = self._added.get(call.index)
        if cached is None:
            cached = self._added[call.index] = [(i, self.turn(m)) for i, m in self.added(call)]
        return cached

    def is_answer(self, call: Call, message_index: int) -> Call | None:
        """The previous call whose response this message of `call`'s request re-sends, if it is one."""
        prev = self.prev.get(call.index)
        if prev is None:
            return None
        answer = self.answer(prev)
        return prev if answer is not None and answer.index == message_index else None

    def later_with_messages(self, call: Call) -> list[Call]:
        """Later calls whose request `messages` equal this call's: the same history sent again."""
        if self._by_messages is None:
            self._by_messages = {}
            for c in self.calls:
                if has_request(c):
                    self._by_messages.setdefault(canonical(c.messages), []).append(c.index)
        found = self._by_messages.get(canonical(call.messages), [])
        return [self.calls[i] for i in found if i > call.index]

    def later_with_body(self, call: Call) -> list[Call]:
        """Later calls whose request body is exactly this call's."""
        if self._by_body is None:
            self._by_body = {}
            for c in self.calls:
                if has_request(c):
                    self._by_body.setdefault(canonical(c.request), []).append(c.index)
        found = self._by_body.get(canonical(call.request), [])
        return [self.calls[i] for i in found if i > call.index]


_INDEXES: dict[int, tuple[weakref.ref[Trace], TraceIndex]] = {}


def trace_index(trace: Trace) -> TraceIndex:
    """The index of a trace, built on first use and shared by every rule that runs on it."""
    key = id(trace)
    cached = _INDEXES.get(key)
    if cached is not None and cached[0]() is trace:
        return cached[1]
    index = TraceIndex(trace)

    def forget(_ref: weakref.ref[Trace]) -> None:
        _INDEXES.pop(key, None)

    _INDEXES[key] = (weakref.ref(trace, forget), index)
    return index


def limits_option(options: dict[str, Any]) -> dict[str, Any]:
    """The `limits` option as a dict of steps / tokens / wall_time_s / tool_errors (None = not set)."""
    return as_dict(options.get("limits"))


def policy(options: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """A workflow policy list, top-level or under `policies` (the shape `Task.policies` carries)."""
    value = options.get(name)
    if value is None:
        value = as_dict(options.get("policies")).get(name)
    return [p for p in value or [] if isinstance(p, dict)]
