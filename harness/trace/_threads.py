"""Group recorded exchanges into calls (retried attempts together) and calls into threads.

A thread is a conversation: a call continues a thread when its `messages` start with the thread's
last request's `messages` and add at least the assistant turn. An explicit thread key, set by the
harness when it ran the agent, wins over that reconstruction.
"""

from __future__ import annotations

from typing import Any

from ._model import Call, Exchange, Thread, Trace


def build_trace(
    exchanges: list[Exchange],
    source: str,
    *,
    whole_run: bool = False,
    notes: list[str] | None = None,
) -> Trace:
    """Turn exchanges in recording order into a trace of calls and threads."""
    notes = list(notes or [])
    skipped = [e for e in exchanges if not e.is_messages_call]
    if skipped:
        paths = sorted({f"{e.method} {e.url.split('?', 1)[0]}" for e in skipped})
        notes.append(f"{len(skipped)} exchange(s) are not Messages calls and were not checked: {', '.join(paths)}")
    calls = _group_attempts([e for e in exchanges if e.is_messages_call])
    threads = _assign_threads(calls)
    return Trace(
        source=source,
        exchanges=exchanges,
        calls=calls,
        threads=threads,
        whole_run=whole_run,
        notes=notes,
    )


def _retry_count(exchange: Exchange) -> int:
    try:
        return int(exchange.request_headers.get("x-stainless-retry-count", "0"))
    except ValueError:
        return 0


def _group_attempts(exchanges: list[Exchange]) -> list[Call]:
    """An exchange that re-sends the body of a call that failed is another attempt of that call."""
    calls: list[Call] = []
    for exchange in exchanges:
        previous = calls[-1] if calls else None
        if (
            previous is not None
            and not previous.final.ok
            and previous.final.request_body == exchange.request_body
            and previous.final.thread_key == exchange.thread_key
        ):
            previous.attempts.append(exchange)
            continue
        if previous is not None and _retry_count(exchange) > 0 and previous.final.request_body == exchange.request_body:
            previous.attempts.append(exchange)
            continue
        calls.append(Call(index=len(calls), thread=0, step=0, attempts=[exchange]))
    return calls


def _same_agent(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same system prompt and the same tool names: the same agent speaking."""
    def tool_names(request: dict[str, Any]) -> list[str]:
        tools = request.get("tools")
        if not isinstance(tools, list):
            return []
        return [str(t.get("name")) for t in tools if isinstance(t, dict)]

    return a.get("system") == b.get("system") and tool_names(a) == tool_names(b)


def _continuation_score(last: Call, call: Call) -> tuple[int, int] | None:
    """How well `call` continues the thread whose last call is `last`; None when it does not.

    Strict continuation keeps the previous history as a prefix and appends an assistant turn.
    A loose continuation (history edited, same agent, same opening message) is still linked so
    that the history rules can say what was edited.
    """
    before, after = last.messages, call.messages
    if len(after) <= len(before) or not before:
        return None
    if after[: len(before)] == before:
        appended = after[len(before)]
        exact = isinstance(appended, dict) and appended.get("role") == "assistant"
        return (2 if exact else 1, len(before))
    if after[0] == before[0] and _same_agent(last.request, call.request):
        appended = after[len(before)] if len(after) > len(before) else None
        if isinstance(appended, dict) and appended.get("role") in {"assistant", "user"}:
            return (0, _common_prefix(before, after))
    return None


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _assign_threads(calls: list[Call]) -> list[Thread]:
    threads: list[Thread] = []
    by_key: dict[str, Thread] = {}
    for call in calls:
        key = call.final.thread_key
        thread: Thread | None = None
        if key is not None:
            thread = by_key.get(key)
        else:
            best: tuple[tuple[int, int, int], Thread] | None = None
            for candidate in threads:
                if candidate.key is not None:
                    continue
                score = _continuation_score(calls[candidate.calls[-1]], call)
                if score is None:
                    continue
                ranked = (score[0], score[1], candidate.calls[-1])
                if best is None or ranked > best[0]:
                    best = (ranked, candidate)
            thread = best[1] if best else None
        if thread is None:
            thread = Thread(id=len(threads) + 1, key=key)
            threads.append(thread)
            if key is not None:
                by_key[key] = thread
                # "coordinator/research-1" is a subagent of "coordinator".
                parent = by_key.get(key.rsplit("/", 1)[0]) if "/" in key else None
                thread.parent = parent.id if parent else None
        thread.calls.append(call.index)
        call.thread = thread.id
        call.step = len(thread.calls)
    return threads
