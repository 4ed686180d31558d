"""M rules: a subagent starts from its brief, not from the coordinator's history.

A subagent shows on the wire as a new thread with another system prompt or tool set; threads are
filed under their first two messages, so finding an inherited history is a lookup, not a scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..trace._model import Call, Trace
from ._examples import MODEL
from ._registry import CheckContext, Example, Finding, rule
from ._wire import canonical, has_request, normalize_message, same_message

_INHERITED = 2
"""Leading messages shared with another thread that show its history was carried over."""


def _agent(call: Call) -> tuple[str, tuple[str, ...]]:
    tools = call.request.get("tools")
    names = tuple(str(t.get("name")) for t in tools if isinstance(t, dict)) if isinstance(tools, list) else ()
    return canonical(call.request.get("system")), names


def _history(call: Call) -> list[Any]:
    """The history a call leaves behind: its messages, plus its answer when that makes the opening pair."""
    messages = call.messages
    if len(messages) == 1 and call.response is not None:
        return [messages[0], {"role": "assistant", "content": call.content}]
    return messages


def _opens_with_history(call: Call) -> bool:
    return len(call.messages) >= _INHERITED and has_request(call)


def _opening(messages: list[Any]) -> str:
    return canonical([normalize_message(m) for m in messages[:_INHERITED]])


@rule(
    "M001", "A subagent thread does not inherit another thread's history",
    reads=("content",),
    why="A subagent handed the coordinator's whole history pays for every token of it, drifts toward the "
        "coordinator's task instead of its own, and may see data it was not meant to see.",
    fix="Start each subagent from an explicit brief: its objective, the output expected, its tools and "
        "sources, and only the context it needs.",
    example=Example((
        {"request": {"model": MODEL, "system": "You coordinate research.",
                     "messages": [{"role": "user", "content": "Compare the EU and US markets"}]},
         "request_headers": {"x-harness-thread": "coordinator"},
         "response": {"content": [{"type": "text", "text": "I will split this in two."}], "stop_reason": "end_turn"}},
        {"request": {"model": MODEL, "system": "You research one market.", "messages": [
            {"role": "user", "content": "Compare the EU and US markets"},
            {"role": "assistant", "content": [{"type": "text", "text": "I will split this in two."}]},
            {"role": "user", "content": "Research the EU market"}]},
         "request_headers": {"x-harness-thread": "coordinator/research-eu"},
         "response": {"content": [{"type": "text", "text": "The EU market..."}], "stop_reason": "end_turn"}},
    )),
)
def subagent_starts_from_brief(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A thread with another system prompt or tool set (a subagent) does not open with another thread's
    history: its first request holds the brief written for it, not the coordinator's messages. Threads
come from the wire (a request that extends another's history continues its thread) or from the
`x-harness-thread` header the harness sets on the runs it drives."""
    # Only a thread's first call that opens with a pair of messages can inherit one: the calls after the
    # last such opening are never looked up, so they are not filed (most runs have no such opening,
    # and filing every thread's opening as canonical JSON was most of this rule's time).
    openings = [call.index for call in trace.calls if call.step == 1 and _opens_with_history(call)]
    if not openings:
        return
    # Opening pair of messages -> {thread: (its latest call so far, the history that call leaves)}.
    by_opening: dict[str, dict[int, tuple[Call, list[Any]]]] = {}
    # The opening a thread was last filed under, with its raw messages: most calls repeat it verbatim.
    filed: dict[int, tuple[list[Any], str]] = {}
    for call in trace.calls[: openings[-1] + 1]:
        if not has_request(call):
            continue
        if call.step == 1 and len(call.messages) >= _INHERITED:
            for thread, (other, history) in by_opening.get(_opening(call.messages), {}).items():
                if thread == call.thread or _agent(other) == _agent(call):
                    continue
                shared = 0
                for a, b in zip(history, call.messages, strict=False):
                    if not same_message(a, b):
                        break
                    shared += 1
                what = "system prompt" if _agent(other)[0] != _agent(call)[0] else "tools"
                yield ctx.finding(
                    "M001",
                    call,
                    f"this thread opens with {shared} messages of thread {other.thread}'s history (step {other.step}) "
                    f"under another {what}: a subagent inheriting the coordinator's history; give it only an "
                    "explicit brief",
                    message_index=shared - 1,
                )
                break
        history = _history(call)
        if len(history) >= _INHERITED:
            pair = history[:_INHERITED]
            known = filed.get(call.thread)
            key = known[1] if known is not None and known[0] == pair else _opening(pair)
            filed[call.thread] = (pair, key)
            by_opening.setdefault(key, {})[call.thread] = (call, history)
