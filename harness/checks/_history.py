"""H rules: the history a loop re-sends is the one it got, never an assistant turn rebuilt by hand.

H001 compares a response with the assistant message the next request carries, block by block, in
normalized JSON; H002 checks that each request keeps the previous one's messages; H003 the roles.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..trace._model import Trace
from ..trace._normalize import resends_history
from ._examples import CONTEXT_EDITING_DOC, MODEL, THINKING_DOC, TOOL_CALLS_DOC, TOOLS
from ._registry import CheckContext, Example, Finding, rule
from ._wire import (
    answered,
    blocks,
    canonical,
    content_blocks,
    normalize,
    normalize_blocks,
    role,
    same_message,
    trace_index,
)


def _normalized_with_positions(items: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    # Empty text blocks are dropped by normalization (the API refuses them), so keep raw positions.
    return [(i, normalize(b)) for i, b in enumerate(items) if not (b.get("type") == "text" and b.get("text") == "")]


def _merge_continuation(prefill: list[tuple[int, Any]], response: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """A trailing assistant message extended by its continuation, text joined as the API would read it."""
    if prefill and response:
        last, first = prefill[-1][1], response[0][1]
        if (isinstance(last, dict) and isinstance(first, dict) and last.get("type") == first.get("type") == "text"
                and set(last) <= {"type", "text"} and set(first) <= {"type", "text"}):
            joined = {"type": "text", "text": str(last.get("text", "")) + str(first.get("text", ""))}
            return [*prefill[:-1], (prefill[-1][0], joined), *response[1:]]
    return [*prefill, *response]


def _kind(block: Any) -> str:
    return str(block.get("type")) if isinstance(block, dict) else type(block).__name__


def _field_change(kind: str, expected: dict[str, Any], actual: dict[str, Any]) -> str:
    keys = sorted(k for k in set(expected) | set(actual) if expected.get(k) != actual.get(k))
    if kind == "thinking" and "signature" in keys:
        return "signature dropped" if "signature" not in actual else "signature changed"
    if kind in ("thinking", "redacted_thinking") and keys:
        return f"{kind} {'edited' if keys[0] in ('thinking', 'data') else keys[0] + ' changed'}"
    if kind == "text" and "text" in keys:
        return "text edited"
    dropped = [k for k in keys if k not in actual]
    if dropped:
        return f"{', '.join(dropped)} dropped"
    added = [k for k in keys if k not in expected]
    if added:
        return f"{', '.join(added)} added"
    return f"{', '.join(keys)} changed"


def _unmatched(short: list[str], long: list[str]) -> list[int] | None:
    """Positions of `long` left over when `short` is matched in order inside it; None if it is not."""
    left, k = [], 0
    for n, kind in enumerate(long):
        if k < len(short) and short[k] == kind:
            k += 1
        else:
            left.append(n)
    return left if k == len(short) else None


def describe_difference(expected: list[tuple[int, Any]], actual: list[tuple[int, Any]]) -> tuple[int | None, str]:
    """The first difference between two block lists: (raw block index in `actual`, what differs in words)."""
    exp_kinds = [_kind(b) for _, b in expected]
    act_kinds = [_kind(b) for _, b in actual]
    if exp_kinds != act_kinds:
        dropped = _unmatched(act_kinds, exp_kinds)
        if dropped:
            names = ", ".join(f"{exp_kinds[n]} (response content[{expected[n][0]}])" for n in dropped)
            at = dropped[0] - sum(1 for n in dropped if n < dropped[0])
            return (actual[at][0] if at < len(actual) else None), f"block(s) dropped: {names}"
        added = _unmatched(exp_kinds, act_kinds)
        if added:
            names = ", ".join(f"{act_kinds[n]} at content[{actual[n][0]}]" for n in added)
            return actual[added[0]][0], f"block(s) added: {names}"
        if sorted(exp_kinds) == sorted(act_kinds):
            return None, f"blocks reordered ({', '.join(exp_kinds)} became {', '.join(act_kinds)})"
        return None, f"blocks replaced ({', '.join(exp_kinds)} became {', '.join(act_kinds)})"
    for (_, e), (where, a) in zip(expected, actual, strict=False):
        if e != a:
            kind = _kind(e)
            if not isinstance(e, dict) or not isinstance(a, dict):
                return where, f"{kind} block changed"
            return where, f"{_field_change(kind, e, a)} in the {kind} block"
    return None, "equal"


@rule(
    "H001", "The assistant message after a response is its content, whole and unedited",
    reads=("content", "answer"),
    why="The API checks thinking signatures and needs server tool blocks and compaction blocks back as they "
        "came: an edited turn is refused, or silently loses the reasoning, searches or summary it carried.",
    fix="Append the response's content as it came (`messages.append({'role': 'assistant', 'content': "
        "resp.content})`) instead of rebuilding the turn from its text.",
    docs=(THINKING_DOC, TOOL_CALLS_DOC),
    example=Example((
        {"request": {"model": MODEL, "tools": TOOLS, "thinking": {"type": "adaptive"},
                     "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "response": {"content": [{"type": "thinking", "thinking": "I should look it up.", "signature": "EqQBCkYIAx"},
                                  {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}], "stop_reason": "tool_use"}},
        {"request": {"model": MODEL, "tools": TOOLS, "thinking": {"type": "adaptive"}, "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]}]},
         "response": {"content": [{"type": "text", "text": "18C in Paris."}], "stop_reason": "end_turn"}},
    )),
)
def answer_resent_unedited(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """The assistant message that follows a response in the next request is that response's `content`,
    whole and unedited: the same blocks in the same order, `thinking` with its `signature`,
    `redacted_thinking`, server tool blocks, citations and compaction blocks included. Blocks are compared
    as normalized JSON (null optional fields dropped), so an SDK's re-serialization is not a change."""
    index = trace_index(trace)
    for row in index.rows:
        if not row.answered:
            continue
        call = row.call
        answer = index.answer(call)
        if answer is None or answer.index is None:
            continue
        sent = index.rows[answer.next.index].messages[answer.index]
        if not answer.merged and sent.get("content") == row.content:
            continue  # re-sent verbatim: nothing to normalize
        expected = _normalized_with_positions(row.content)
        if answer.merged:
            expected = _merge_continuation(_normalized_with_positions(blocks(call.messages[-1])), expected)
        actual = _normalized_with_positions(content_blocks(sent.get("content")))
        if [b for _, b in actual] == [b for _, b in expected]:
            continue
        block_index, what = describe_difference(expected, actual)
        yield ctx.finding(
            "H001",
            answer.next,
            f"the assistant turn at messages[{answer.index}] is not step {call.step}'s response as received: {what}; "
            "append resp.content whole (thinking with signature, server tool and compaction blocks included)",
            message_index=answer.index,
            block_index=block_index,
        )


def _describe_message_change(before: Any, after: Any) -> tuple[int | None, str]:
    if role(before) != role(after):
        return None, f"role changed from {role(before)} to {role(after)}"
    expected = _normalized_with_positions(blocks(before))
    actual = _normalized_with_positions(blocks(after))
    if [b for _, b in expected] == [b for _, b in actual]:
        return None, "message fields changed"
    block_index, what = describe_difference(expected, actual)
    return block_index, what.replace("response content", "previous content")


@rule(
    "H002", "History is append-only unless context management or a projection is declared",
    reads=("content", "request"),
    why="A history rewritten in place changes what the model saw: earlier facts vanish or change under it, "
        "and every edit also invalidates the prompt cache for all that follows.",
    fix="Only append to the history. To shrink it, use server-side context management (compaction, context "
        "editing) or declare the projection your loop applies.",
    docs=(CONTEXT_EDITING_DOC,),
    example=Example((
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "My order is 1234"}]},
         "response": {"content": [{"type": "text", "text": "Noted."}], "stop_reason": "end_turn"}},
        {"request": {"model": MODEL, "messages": [
            {"role": "user", "content": "My order is 9999"},
            {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            {"role": "user", "content": "Where is it?"}]},
         "response": {"content": [{"type": "text", "text": "On its way."}], "stop_reason": "end_turn"}},
    )),
)
def history_append_only(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """Each request's `messages` starts with the previous request's `messages`, unchanged: nothing
    dropped, edited or reordered. A request that declares `context_management` (the API edits the
    history) or a scenario that declares a client-side projection (option `history_projection`) is exempt."""
    if ctx.option("history_projection") is True:
        return
    index = trace_index(trace)
    rows = index.rows
    for row in rows:
        call = row.call
        prev = index.prev.get(call.index)
        if prev is None or not row.has_request or "context_management" in row.request:
            continue
        before, after = rows[prev.index].messages, row.messages
        if rows[prev.index].stop_reason == "refusal" and resends_history(before, after):
            continue  # a refused request sent again with text added: L004's finding, not an edit of history
        answer = index.answer(prev)
        # A trailing assistant message (prefill, paused turn) may be merged with its continuation.
        keep = len(before) - 1 if answer is not None and answer.merged else len(before)
        if after[:keep] == before[:keep]:
            continue
        for i in range(keep):
            if i >= len(after):
                yield ctx.finding(
                    "H002", call,
                    f"the history lost messages[{i}:] of step {prev.step}'s request ({keep - i} message(s)); keep "
                    "the history append-only, or declare context_management or a projection",
                )
                break
            if not same_message(before[i], after[i]):
                dropped = next((j for j in range(i + 1, keep) if same_message(before[j], after[i])), None)
                if dropped is not None:
                    yield ctx.finding(
                        "H002", call,
                        f"messages[{i}:{dropped}] of step {prev.step}'s request were dropped from the history; keep "
                        "the history append-only, or declare context_management or a projection",
                        message_index=i,
                    )
                    break
                block_index, what = _describe_message_change(before[i], after[i])
                yield ctx.finding(
                    "H002", call,
                    f"messages[{i}] differs from step {prev.step}'s request: {what}; keep the history append-only, "
                    "or declare context_management or a projection",
                    message_index=i, block_index=block_index,
                )
                break


def _paused_turns(trace: Trace) -> set[str]:
    """Responses that stopped on pause_turn, keyed as they are re-sent."""
    index = trace_index(trace)
    paused = index.memo.get("paused_turns")
    if paused is None:
        paused = {canonical(normalize_blocks(c.content)) for c in trace.calls if c.stop_reason == "pause_turn"}
        index.memo["paused_turns"] = paused
    return paused


def _continues_paused_turn(trace: Trace, message: Any) -> bool:
    # A correct loop appends every response, so a paused turn is followed by its continuation as a
    # second assistant message; the API joins consecutive turns of one role, so that is not an error.
    return canonical(normalize_blocks(blocks(message))) in _paused_turns(trace)


@rule(
    "H003", "Messages alternate user and assistant, starting with user",
    warning="when the API merges the consecutive turns into a valid one (a user turn's tool_results first)",
    reads=("content", "turns"),
    why="Two user messages in a row usually mean a response was never appended: the model answers without "
        "seeing what it said before. The API merges same-role turns, which hides the gap instead of fixing it, "
        "and refuses the merged turn when text comes before a tool_result.",
    fix="Append each response as the assistant turn before the next user message; send the tool_results "
        "first, in one user message; put system text in `system`.",
    example=Example((
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Hi"},
                                                   {"role": "user", "content": "Are you there?"}]},
         "response": {"content": [{"type": "text", "text": "Yes."}], "stop_reason": "end_turn"}},
    )),
)
def roles_alternate(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """The first message is a user message and roles alternate. The API merges consecutive messages of
    one role into one turn: where the merged turn is valid (a user turn's tool_results first) that is a
    warning; where it is not (text before a tool_result), or where the pair hides a dropped answer, an error."""
    index = trace_index(trace)
    for row in index.rows:
        call, messages = row.call, row.messages
        if not row.has_request or not messages:
            continue
        start = index.start(call)
        if start == 0 and role(messages[0]) != "user":
            first = (f"has role {role(messages[0])!r}" if isinstance(messages[0], dict)
                     else f"is {_kind_of(messages[0])}, not a message object")
            yield ctx.finding("H003", call, f"the first message {first}; a conversation opens with a user message",
                              message_index=0)
        run_start = max(start, 1) - 1
        last = index.turn(messages[run_start]).role if messages else None
        for i in range(max(start, 1), len(messages)):
            kind, before = index.turn(messages[i]).role, last
            last = kind
            if kind != before:
                run_start = i
            if kind not in ("user", "assistant"):
                yield ctx.finding("H003", call, f"messages[{i}] has role {kind!r}; only user and assistant "
                                  "alternate in messages (system goes in `system`)", message_index=i)
            elif kind == before and not (
                    kind == "assistant" and _continues_paused_turn(trace, messages[i - 1])):
                where = f"two {kind} messages in a row at messages[{i - 1}] and messages[{i}]"
                prev = index.prev.get(call.index)
                if kind == "user" and prev is not None and len(prev.messages) == i and answered(prev) and prev.content:
                    # The first ends the thread's previous request: what is missing between them is
                    # that call's answer (a loop that appends answers only while it runs tools), and
                    # merging the two user turns would hide it from the model for good.
                    yield ctx.finding("H003", call, f"{where}; step {prev.step}'s response ({prev.stop_reason}) was "
                                      "never appended between them; append resp.content as the assistant turn before "
                                      "the next user message", message_index=i)
                elif kind == "user" and _text_before_result(messages[run_start:i + 1]):
                    yield ctx.finding("H003", call, f"{where}; the API merges them into one turn, and that turn has "
                                      "text before a tool_result, which it refuses; send the tool_results first, in "
                                      "one user message", message_index=i)
                else:
                    yield ctx.finding("H003", call, f"{where}; the API merges them into one valid turn, but send one "
                                      f"{kind} message (merge them)", message_index=i, severity="warning")


def _text_before_result(run: list[Any]) -> bool:
    """Merged as the API merges consecutive user messages, a block other than tool_result precedes one."""
    seen_other = False
    for message in run:
        for block in blocks(message):
            if block.get("type") == "tool_result":
                if seen_other:
                    return True
            else:
                seen_other = True
    return False


def _kind_of(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"
