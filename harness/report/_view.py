"""Stored results -> the plain view data the templates render (no HTML here).

Each step carries only its request DELTA: the messages new since the previous call of the same
thread, so the history is shown once as it grew and the page grows with new content, not with
steps x history. A tool_result is shown beside the tool_use it answers, paired by id.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any

from ..checks._registry import Finding
from ..cost import CallCost, call_model
from ..trace._model import Call, Trace
from ..trace._timing import attempt_latency

# One encoder for every value: json.dumps would build one per call, for the few-key tool inputs a
# report of 10,000 runs shows by the ten thousand.
_PRETTY = json.JSONEncoder(indent=2, ensure_ascii=False, sort_keys=False, default=str)


def pretty_json(value: Any) -> str:
    """`value` as JSON indented by 2. With an indent, `json` encodes in pure Python; the values a report
    shows by the ten thousand (a tool's input: an object of strings and numbers) are written here as
    that encoder writes them, each string by the C function it uses itself (`encode_basestring`)."""
    if type(value) is dict and value:
        lines = []
        for key, item in value.items():
            text = encode_basestring(item) if type(item) is str else _scalar_json(item)
            if text is None or type(key) is not str:
                return _PRETTY.encode(value)
            lines.append(f"  {encode_basestring(key)}: {text}")
        return "{\n" + ",\n".join(lines) + "\n}"
    return _scalar_json(value) or _PRETTY.encode(value)


def _scalar_json(value: Any) -> str | None:
    """A JSON scalar as `_PRETTY` writes it; None for anything else (a float that is not finite too)."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return None


@dataclass
class BlockView:
    """One content block, reduced to what the template needs."""

    kind: str
    """text, thinking, redacted_thinking, tool_use, tool_result, server_tool_use, server_result, ref, other."""
    text: str = ""
    name: str = ""
    id: str = ""
    is_error: bool = False
    signature: bool = False
    result: BlockView | None = None
    """For a tool_use: its tool_result, paired by id."""
    result_step: int | None = None
    """Step of the request that carried the paired tool_result."""
    result_count: int = 0
    """How many tool_results answered this tool_use (T001 wants exactly one)."""
    anchor: str = ""
    """For a ref: the anchor of the tool_use its result is shown with."""


@dataclass
class MessageView:
    index: int
    """Position in the request's `messages`."""
    role: str
    blocks: list[BlockView]
    previous_response: bool = False
    """This assistant turn is the previous response, unedited; shown at the previous step already."""


@dataclass
class StepView:
    call_index: int
    thread: int
    step: int
    anchor: str
    model: str
    delta: list[MessageView]
    delta_from: int
    """Index of the first message new in this request."""
    history_edited: bool
    """The request does not start with the previous request's messages (history rewritten)."""
    system: str | None
    """The system prompt, when first seen or changed."""
    tools: list[str] | None
    """Tool names, when first seen or changed."""
    response: list[BlockView]
    stop_reason: str | None
    error: str | None
    attempts: list[str]
    """One line per attempt: status and duration."""
    latency_s: float | None
    """The model's time over the call's attempts; None when an attempt's is unknown (`attempt_latency`)."""
    usage: dict[str, int]
    cost: CallCost | None
    findings: list[Finding] = field(default_factory=list)
    expected: frozenset[str] = frozenset()
    """Codes the scenario expects (anti-pattern examples): shown as expected, not as the failure."""
    latency_recorded: bool = False
    """The latency is what the model took when the cassette was recorded, not measured in this run."""
    replayed: bool = False
    """The answers were played from a cassette: an unknown latency reads "n/a", not the replay's time."""


@dataclass
class ThreadView:
    id: int
    key: str | None
    parent: int | None
    anchor: str
    steps: list[StepView]


def _content_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else [content]


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            else:
                parts.append(pretty_json(item))
        return "\n".join(parts)
    return "" if content is None else pretty_json(content)


def block_view(block: Any) -> BlockView:
    if not isinstance(block, dict):
        return BlockView(kind="other", text=pretty_json(block))
    kind = str(block.get("type", ""))
    if kind == "text":
        return BlockView(kind="text", text=str(block.get("text", "")))
    if kind == "thinking":
        return BlockView(kind="thinking", text=str(block.get("thinking", "")), signature=bool(block.get("signature")))
    if kind == "redacted_thinking":
        return BlockView(kind="redacted_thinking", text="(redacted by the API)")
    if kind in {"tool_use", "server_tool_use", "mcp_tool_use"}:
        return BlockView(kind="tool_use" if kind == "tool_use" else "server_tool_use", name=str(block.get("name", "")),
                         id=str(block.get("id", "")), text=pretty_json(block.get("input")))
    if kind == "tool_result":
        return BlockView(kind="tool_result", id=str(block.get("tool_use_id", "")), text=_result_text(block),
                         is_error=bool(block.get("is_error")))
    if kind.endswith("_tool_result"):
        content = block.get("content")
        return BlockView(kind="server_result", name=kind, id=str(block.get("tool_use_id", "")),
                         text=pretty_json(content), is_error=isinstance(content, dict) and "error_code" in content)
    return BlockView(kind="other", name=kind, text=pretty_json(block))


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    # A thread's request nearly always sends the previous one's messages again, whole: one comparison of
    # the lists, in C, says so (7,500 -> 4,800 instructions a step); message by message only otherwise.
    if len(a) <= len(b) and b[: len(a)] == a:
        return len(a)
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _tool_names(request: dict[str, Any]) -> list[str]:
    tools = request.get("tools")
    if not isinstance(tools, list):
        return []
    names = []
    for t in tools:
        # Each step of a report's 50,000 asks: a name that is a string, as nearly all are, read once.
        name = t.get("name") if type(t) is dict else None
        names.append(name if type(name) is str
                     else str(t.get("name", t.get("type", "?"))) if isinstance(t, dict) else str(t))
    return names


def _system_text(request: dict[str, Any]) -> str | None:
    system = request.get("system")
    if system is None:
        return None
    if isinstance(system, str):
        return system
    return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in _content_blocks(system))


def step_anchor(run: int | str, call_index: int) -> str:
    return f"run-{run}-call-{call_index}"


def thread_views(run: int | str, trace: Trace, findings: list[Finding], call_costs: list[CallCost | None],
                 expected: frozenset[str] = frozenset(), *, replay_run: bool = False) -> list[ThreadView]:
    """Every thread's steps; `call_costs` are the trace's calls priced (`harness.cost._cost.price_calls`)."""
    by_call: dict[int, list[Finding]] = {}
    for finding in findings:
        index = finding_call(trace, finding)
        if index is not None:
            by_call.setdefault(index, []).append(finding)
    views: list[ThreadView] = []
    for thread in trace.threads:
        calls = trace.thread_calls(thread.id)
        views.append(ThreadView(id=thread.id, key=thread.key, parent=thread.parent,
                                anchor=f"run-{run}-thread-{thread.id}",
                                steps=_steps(run, calls, by_call, call_costs, expected, replay_run)))
    return views


def finding_call(trace: Trace, finding: Finding) -> int | None:
    """The trace-wide call index a finding points at (its `call`, else its thread and step)."""
    if finding.call is not None and 0 <= finding.call < len(trace.calls):
        return finding.call
    if finding.thread is not None and finding.step is not None and 0 < finding.thread <= len(trace.threads):
        ids = trace.threads[finding.thread - 1].calls
        if 0 < finding.step <= len(ids):
            return ids[finding.step - 1]
    return None


def request_deltas(calls: list[Call]) -> list[tuple[int, list[Any], bool]]:
    """Each call of a thread against the one before: the index of its first new message, the new
    messages, and whether the history before them was edited (does not start with the previous request's)."""
    deltas: list[tuple[int, list[Any], bool]] = []
    previous: list[Any] = []
    for call in calls:
        messages = call.messages
        start = _common_prefix(previous, messages)
        deltas.append((start, messages[start:], start < len(previous)))
        previous = messages
    return deltas


def new_tool_results(calls: list[Call],
                     deltas: list[tuple[int, list[Any], bool]]) -> Iterator[tuple[Call, dict[str, Any]]]:
    """Each tool_result block the thread's requests carry new, with the call that carried it."""
    for call, (_, delta, _) in zip(calls, deltas, strict=True):
        for message in delta:
            if isinstance(message, dict) and message.get("role") == "user":
                for block in _content_blocks(message.get("content")):
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        yield call, block


def _steps(run: int | str, calls: list[Call], by_call: dict[int, list[Finding]], call_costs: list[CallCost | None],
           expected: frozenset[str], replay_run: bool = False) -> list[StepView]:
    deltas = request_deltas(calls)
    # Where each tool_result travelled, so the tool_use can show it (lookahead over the thread).
    results: dict[str, list[tuple[int, BlockView]]] = {}
    for carrier, block in new_tool_results(calls, deltas):
        results.setdefault(str(block.get("tool_use_id", "")), []).append((carrier.step, block_view(block)))
    tool_use_anchor: dict[str, str] = {}
    steps: list[StepView] = []
    last_system: str | None = None
    last_tools: list[str] | None = None
    previous_content: Any = None
    for call, (start, delta, edited) in zip(calls, deltas, strict=True):
        anchor = step_anchor(run, call.index)
        request = call.request
        message_views: list[MessageView] = []
        for offset, message in enumerate(delta):
            index = start + offset
            if not isinstance(message, dict):
                message_views.append(MessageView(index, "?", [block_view(message)]))
                continue
            role = str(message.get("role", "?"))
            if (offset == 0 and role == "assistant" and previous_content is not None
                    and message.get("content") == previous_content):
                message_views.append(MessageView(index, role, [], previous_response=True))
                continue
            blocks: list[BlockView] = []
            for block in _content_blocks(message.get("content")):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    use_id = str(block.get("tool_use_id", ""))
                    target = tool_use_anchor.get(use_id)
                    if target is not None:
                        # Shown in full beside its tool_use; here only a pointer, so it is not rendered twice.
                        blocks.append(BlockView(kind="ref", id=use_id, is_error=bool(block.get("is_error")),
                                                anchor=target))
                        continue
                blocks.append(block_view(block))
            message_views.append(MessageView(index, role, blocks))
        response_blocks: list[BlockView] = []
        for block in call.content:
            view = block_view(block)
            if view.kind == "tool_use":
                answers = results.get(view.id, [])
                view.result_count = len(answers)
                if answers:
                    view.result_step, view.result = answers[0]
                tool_use_anchor[view.id] = f"{anchor}-tu-{view.id}"
            response_blocks.append(view)
        system = _system_text(request)
        tools = _tool_names(request)
        error = call.error
        usage = call.usage
        latencies = [attempt_latency(a, replay_run) for a in call.attempts]
        replayed = replay_run or any(a.replayed for a in call.attempts)
        steps.append(StepView(
            call_index=call.index,
            thread=call.thread,
            step=call.step,
            anchor=anchor,
            model=call_model(call) or "?",
            delta=message_views,
            delta_from=start,
            history_edited=edited,
            system=system if system != last_system else None,
            tools=tools if tools != last_tools else None,
            response=response_blocks,
            stop_reason=call.stop_reason,
            error=None if error is None else f"{error.get('type', 'error')}: {error.get('message', '')}",
            attempts=[_attempt_line(a.status, latency, a.stream_error, a.recorded_duration_s is not None)
                      for a, latency in zip(call.attempts, latencies, strict=True)],
            # Not a partial sum: a call whose retries' times are partly unknown would look faster than it was.
            latency_s=None if any(t is None for t in latencies) else sum(t for t in latencies if t is not None),
            latency_recorded=any(a.recorded_duration_s is not None for a in call.attempts),
            replayed=replayed,
            usage={k: int(usage.get(k) or 0)
                   for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                             "cache_read_input_tokens")},
            cost=call_costs[call.index],
            findings=by_call.get(call.index, []),
            expected=expected,
        ))
        last_system, last_tools = system, tools
        previous_content = call.content if call.response is not None else None
    return steps


def _attempt_line(status: int | None, duration: float | None, stream_error: dict[str, Any] | None,
                  recorded: bool = False) -> str:
    line = f"HTTP {status}" if status is not None else "no answer"
    if stream_error:
        line += f" ({stream_error.get('type', 'stream error')})"
    if duration is not None:
        line += f" in {duration:.2f}s" + (" (recorded)" if recorded else "")
    return line


def unique_content_size(trace: Trace) -> int:
    """Bytes of what a trace really says: each step's new messages and its response, counted once."""
    total = 0
    for thread in trace.threads:
        previous: list[Any] = []
        for call in trace.thread_calls(thread.id):
            messages = call.messages
            start = _common_prefix(previous, messages)
            new = messages[start:]
            # The assistant turn that repeats the previous response is not new content.
            if new and start == len(previous) and isinstance(new[0], dict) and new[0].get("role") == "assistant":
                new = new[1:]
            total += len(json.dumps(new, ensure_ascii=False)) + len(json.dumps(call.content, ensure_ascii=False))
            previous = messages
    return total

