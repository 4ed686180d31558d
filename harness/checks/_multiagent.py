"""M rules: a subagent starts from its brief, not from the coordinator's history (seed 001 §4).

A subagent shows on the wire as a new thread with another system prompt or tool set; threads are
filed under their first two messages, so finding an inherited history is a lookup, not a scan.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..trace._model import Call, Trace
from ._registry import CheckContext, Finding, rule
from ._wire import canonical, has_request, same_message

_INHERITED = 2
"""Leading messages shared with another thread that show its history was carried over."""


def _agent(call: Call) -> tuple[str, tuple[str, ...]]:
    tools = call.request.get("tools")
    names = tuple(str(t.get("name")) for t in tools if isinstance(t, dict)) if isinstance(tools, list) else ()
    return canonical(call.request.get("system")), names


@rule("M001", "A subagent thread does not inherit another thread's history")
def subagent_starts_from_brief(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    # Opening pair of messages -> (thread, latest call of that thread so far), in call order.
    by_opening: dict[str, dict[int, Call]] = {}
    for call in trace.calls:
        if not has_request(call) or len(call.messages) < _INHERITED:
            continue
        key = canonical(call.messages[:_INHERITED])
        holders = by_opening.setdefault(key, {})
        if call.step == 1:
            for thread, other in holders.items():
                if thread == call.thread or _agent(other) == _agent(call):
                    continue
                shared = 0
                for a, b in zip(other.messages, call.messages):
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
        holders[call.thread] = call
