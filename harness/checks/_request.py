"""R rules: each request parameter sits where the API reads it (effort, betas, task budgets, strict
tools, model ids, formats).

A request repeats its configuration on every call of a thread, so each problem is reported once per
thread, at the first call that shows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from .._yaml import parse_yaml, read_text
from ..trace._model import Call, Trace
from ._examples import CONTEXT_EDITING_DOC, MODEL, TASK_BUDGETS_DOC, THINKING_DOC
from ._registry import CheckContext, Example, Finding, rule
from ._wire import has_request, role, trace_index

MODELS_FILE = Path(__file__).with_name("models.yaml")
"""What the API accepts per model (prefill), as data the rules read."""

_EDIT_BETAS = {
    "compact_20260112": "compact-2026-01-12",
    "clear_tool_uses_20250919": "context-management-2025-06-27",
    "clear_thinking_20251015": "context-management-2025-06-27",
}
TASK_BUDGET_BETA = "task-budgets-2026-03-13"
MIN_TASK_BUDGET = 20_000

# claude-opus-4-8, claude-sonnet-4-6-20260101, claude-sonnet-5, claude-haiku-4-5@20251001 (Vertex)
_MODEL_ID = re.compile(
    r"^claude-(?P<family>[a-z]+)-(?P<major>\d+)(?:-(?P<minor>\d{1,2})(?!\d))?(?:[-@](?P<date>\d{8}))?")
# claude-3-5-sonnet-20241022, claude-3-opus-20240229
_LEGACY_MODEL_ID = re.compile(
    r"^claude-(?P<major>\d+)(?:-(?P<minor>\d{1,2})(?!\d))?-(?P<family>[a-z]+)(?:[-@](?P<date>\d{8}))?")
UNDATED_SINCE = (4, 6)


def parse_model_id(model: str) -> tuple[str, tuple[int, int], str | None] | None:
    """(family, (major, minor), date suffix) of a Claude model id; None when it is not one."""
    # Every call of a run names its model, most of them the same one: each id is read once. A
    # recording's odd long value is read each time rather than kept.
    return _model_id(model) if len(model) <= _CACHED_MODEL_LENGTH else _read_model_id(model)


_CACHED_MODEL_LENGTH = 200


@lru_cache(maxsize=64)
def _model_id(model: str) -> tuple[str, tuple[int, int], str | None] | None:
    return _read_model_id(model)


def _read_model_id(model: str) -> tuple[str, tuple[int, int], str | None] | None:
    start = model.find("claude-")
    if start < 0:
        return None
    name = model[start:]
    match = _LEGACY_MODEL_ID.match(name) or _MODEL_ID.match(name)
    if match is None:
        return None
    version = (int(match["major"]), int(match["minor"] or 0))
    return match["family"], version, match["date"]


Problems = list[tuple[str, str]]
"""(key, message) pairs: the key says which problem it is, so that a thread reports it once."""


def _once_per_thread(trace: Trace, ctx: CheckContext, code: str,
                     check: Callable[[Call], Problems]) -> Iterator[Finding]:
    seen: set[tuple[int, str]] = set()
    for call in trace.calls:
        for key, message in check(call):
            if (call.thread, key) not in seen:
                seen.add((call.thread, key))
                yield ctx.finding(code, call, message)


def _betas(call: Call) -> set[str] | None:
    """Betas the request declared (header and body); None when the recording dropped the API headers."""
    headers = {k.lower(): v for k, v in call.final.request_headers.items()}
    body = call.request.get("betas")
    found = {b.strip() for b in str(headers.get("anthropic-beta", "")).split(",") if b.strip()}
    if isinstance(body, list):
        found |= {str(b) for b in body}
    # Every API request carries anthropic-version; a recording without it filtered the headers out,
    # so a missing beta header would say nothing about the request that was sent.
    if not found and "anthropic-version" not in headers:
        return None
    return found


@rule(
    "R001", "effort lives in output_config.effort, not at the top level",
    reads=("request",),
    why="`effort` at the top level is not where the API reads it: the request is refused or runs at the "
        "default effort, so the cost and depth you chose are not the ones you get.",
    fix="Send `output_config: {effort: ...}`.",
    docs=("https://platform.claude.com/docs/en/build-with-claude/effort",),
    example=Example((
        {"request": {"model": MODEL, "effort": "low", "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
    )),
)
def effort_in_output_config(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """The request sets `effort` inside `output_config`, not at its top level."""
    def check(call: Call) -> Problems:
        if "effort" in call.request:
            return [("effort", f"`effort: {call.request['effort']!r}` is at the top level of the request; "
                     "put it in output_config.effort")]
        return []

    yield from _once_per_thread(trace, ctx, "R001", check)


@rule(
    "R002", "Context-management edits and task budgets travel with their beta header",
    reads=("request", "headers"),
    why="Beta features are refused without their beta header: the run fails on its first call, or the "
        "context edits you rely on to stay within the window never happen.",
    fix="Send the beta with the feature (`anthropic-beta: context-management-2025-06-27`, or `betas=[...]` "
        "with the SDK's beta client).",
    docs=(CONTEXT_EDITING_DOC, TASK_BUDGETS_DOC),
    example=Example((
        {"request": {"model": MODEL, "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
                     "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
    )),
)
def betas_declared(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A request with a `context_management` edit declares its beta (`compact_20260112` needs
    `compact-2026-01-12`; `clear_tool_uses_20250919` and `clear_thinking_20251015` need
    `context-management-2025-06-27`), and one with `output_config.task_budget` declares
    `task-budgets-2026-03-13`, in the `anthropic-beta` header or the body's `betas`. Recordings that dropped
    the API headers are not judged."""
    def check(call: Call) -> Problems:
        needed: dict[str, str] = {}
        management = call.request.get("context_management")
        edits = management.get("edits") if isinstance(management, dict) else None
        for edit in edits if isinstance(edits, list) else []:
            kind = edit.get("type") if isinstance(edit, dict) else None
            # A type that is not a string (a list, an object) names no edit the API knows.
            if isinstance(kind, str) and kind in _EDIT_BETAS:
                needed.setdefault(_EDIT_BETAS[kind], f"context_management edit {kind}")
        output_config = call.request.get("output_config")
        if isinstance(output_config, dict) and "task_budget" in output_config:
            needed.setdefault(TASK_BUDGET_BETA, "output_config.task_budget")
        if not needed:
            return []
        betas = _betas(call)
        if betas is None:
            return []
        return [
            (beta, f"{what} needs the beta {beta!r}, which the request does not declare "
             f"(anthropic-beta: {', '.join(sorted(betas)) or 'none'})")
            for beta, what in needed.items() if beta not in betas
        ]

    yield from _once_per_thread(trace, ctx, "R002", check)


@rule(
    "R003", "output_config.task_budget.total is at least 20,000",
    reads=("request",),
    why="The API refuses a task budget below its minimum, so the run fails on its first call.",
    fix="Set task_budget.total to 20,000 or more, or leave the task budget out and enforce a smaller cap in "
        "the loop (limits.tokens).",
    docs=(TASK_BUDGETS_DOC,),
    example=Example((
        {"request": {"model": MODEL, "output_config": {"task_budget": {"type": "tokens", "total": 5000}},
                     "messages": [{"role": "user", "content": "Hi"}]},
         "request_headers": {"anthropic-beta": "task-budgets-2026-03-13"},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
    )),
)
def task_budget_minimum(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """`output_config.task_budget.total` is at least 20,000 tokens."""
    def check(call: Call) -> Problems:
        output_config = call.request.get("output_config")
        budget = output_config.get("task_budget") if isinstance(output_config, dict) else None
        total = budget.get("total") if isinstance(budget, dict) else None
        if isinstance(total, int | float) and total < MIN_TASK_BUDGET:
            return [("total", f"output_config.task_budget.total is {total}; the minimum is {MIN_TASK_BUDGET:,}")]
        return []

    yield from _once_per_thread(trace, ctx, "R003", check)


@rule(
    "R004", "strict sits on the tool, whose schema has additionalProperties: false and required",
    reads=("tools",),
    why="Strict tool use only guarantees inputs that match a closed schema: `strict` in the wrong place is "
        "ignored or refused, and an open schema is rejected for strict tools.",
    fix="Put `strict: true` next to `name` and `input_schema`, and close the schema with "
        "`additionalProperties: false` and `required`.",
    docs=("https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use",),
    example=Example((
        {"request": {"model": MODEL, "tools": [{"name": "get_weather", "strict": True, "input_schema": {
            "type": "object", "properties": {"city": {"type": "string"}}}}],
                     "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
    )),
)
def strict_tools_well_formed(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """`strict: true` is a field of the tool (`tools[].strict`), not of its `input_schema`, and a strict
    tool's schema has `additionalProperties: false` and lists its `required` properties."""
    # A loop sends the same tools on every call, and a recording shares that list between the requests
    # that send it equal: each list is judged once.
    judged: dict[int, tuple[Any, Problems]] = {}

    def check(call: Call) -> Problems:
        tools = call.request.get("tools")
        known = judged.get(id(tools))
        if known is not None and known[0] is tools:
            return known[1]
        problems: Problems = []
        judged[id(tools)] = (tools, problems)
        for n, tool in enumerate(tools if isinstance(tools, list) else []):
            if not isinstance(tool, dict):
                continue
            name = tool.get("name", f"tools[{n}]")
            schema = tool.get("input_schema")
            schema = schema if isinstance(schema, dict) else {}
            if "strict" in schema:
                problems.append((f"{name}:inside", f"tool {name!r} has `strict` inside input_schema; it is a "
                                 "field of the tool itself (tools[].strict: true)"))
            if tool.get("strict") is True or schema.get("strict") is True:
                missing = []
                if schema.get("additionalProperties") is not False:
                    missing.append("additionalProperties: false")
                # An object without properties has nothing to require; the API accepts it as is.
                if "required" not in schema and schema.get("properties"):
                    missing.append("required")
                if missing:
                    problems.append((f"{name}:schema", f"strict tool {name!r} lacks {' and '.join(missing)} in "
                                     "its input_schema"))
        return problems

    yield from _once_per_thread(trace, ctx, "R004", check)


@rule(
    "R005", "Model ids of generation 4.6 and later carry no date suffix",
    why="From generation 4.6 on a model's id has no dated snapshot form: a dated id names no model and the "
        "request fails.",
    fix="Use the model id as the models overview lists it.",
    docs=("https://platform.claude.com/docs/en/about-claude/models/overview",),
    example=Example((
        {"request": {"model": "claude-sonnet-4-6-20260217", "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
    )),
)
def undated_model_ids(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """Model ids of generation 4.6 and later carry no date suffix (`claude-opus-4-6`, never
    `claude-opus-4-6-20260205`); earlier generations may."""
    def check(call: Call) -> Problems:
        model = call.model
        parsed = parse_model_id(model) if model else None
        if parsed is None:
            return []
        family, version, date = parsed
        if date is None or version < UNDATED_SINCE:
            return []
        undated = f"claude-{family}-{version[0]}" + (f"-{version[1]}" if version[1] else "")
        return [(model or "", f"model {model!r} has a date suffix; ids of generation 4.6 and later have none "
                 f"(use {undated!r})")]

    yield from _once_per_thread(trace, ctx, "R005", check)


@rule(
    "R006", "Structured output uses output_config.format, not the legacy output_format",
    reads=("request",),
    why="`output_format` (with its structured-outputs beta header) only works during a transition period; "
        "a loop that relies on it breaks when it is removed.",
    fix="Send `output_config: {format: {type: 'json_schema', schema: ...}}` and drop the beta header.",
    docs=("https://platform.claude.com/docs/en/build-with-claude/structured-outputs",),
    example=Example((
        {"request": {"model": MODEL, "output_format": {"type": "json_schema", "schema": {"type": "object"}},
                     "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "{}"}], "stop_reason": "end_turn"}},
    )),
)
def output_config_format(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """Structured output is asked for with `output_config.format`, not the legacy top-level
    `output_format`."""
    def check(call: Call) -> Problems:
        if "output_format" in call.request:
            return [("output_format", "the request uses the legacy top-level `output_format`; structured output "
                     "goes in output_config.format (GA, no beta header)")]
        return []

    yield from _once_per_thread(trace, ctx, "R006", check)


@cache
def _models() -> dict[str, Any]:
    data = parse_yaml(read_text(MODELS_FILE), str(MODELS_FILE)).data
    return data if isinstance(data, dict) else {}


def refuses_prefill(model: str) -> bool:
    """Whether the API refuses a request ending with an assistant message on this model (models.yaml)."""
    prefill = _models().get("prefill") or {}
    if any(model.startswith(prefix) for prefix in prefill.get("refused_by") or ()):
        return True
    parsed = parse_model_id(model)
    since = prefill.get("refused_from_generation")
    return parsed is not None and isinstance(since, list) and parsed[1] >= tuple(since)



PREFILL_DOC = "https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-6"


@rule(
    "R007", "Extended thinking is not combined with tool_choice any or tool",
    why="With thinking enabled the API accepts only tool_choice auto or none; a request that forces a tool "
        "is refused with a 400, so the call never happens.",
    fix="Drop the forced tool_choice while thinking is on (use auto and say in the prompt which tool to use), "
        "or turn thinking off for the call that must force a tool.",
    docs=(THINKING_DOC,),
    example=Example((
        {"request": {"model": "claude-sonnet-4-5", "max_tokens": 4096,
                     "thinking": {"type": "enabled", "budget_tokens": 2048},
                     "tool_choice": {"type": "any"},
                     "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
                     "messages": [{"role": "user", "content": "Weather in Paris?"}]},
         "status": 400,
         "response": {"type": "error", "error": {"type": "invalid_request_error", "message":
                      "Thinking may not be enabled when tool_choice forces tool use."}}},
    )),
)
def thinking_without_forced_tools(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A request with `thinking: {type: enabled}` sets `tool_choice` to `auto` or `none` (or leaves it out).
    Adaptive thinking is not judged: the API was seen to accept it with `any`."""
    def check(call: Call) -> Problems:
        thinking = call.request.get("thinking")
        choice = call.request.get("tool_choice")
        if not (isinstance(thinking, dict) and thinking.get("type") == "enabled" and isinstance(choice, dict)):
            return []
        kind = choice.get("type")
        if kind not in ("any", "tool"):
            return []
        forced = f"tool_choice {kind}" + (f" ({choice.get('name')})" if kind == "tool" else "")
        return [("thinking+tool_choice", f"thinking is enabled together with {forced}, which the API refuses; "
                 "with thinking use tool_choice auto or none")]

    yield from _once_per_thread(trace, ctx, "R007", check)


@rule(
    "R008", "A request ends with an assistant message (prefill) only on a model that accepts prefill",
    why="Claude 4.6 and later refuse a prefilled assistant turn with a 400: a separate call that re-sends "
        "the answer as the last message (to get it structured, to continue it) fails on those models.",
    fix="End the request with a user turn. For a structured answer use output_config.format or a forced "
        "tool; to continue a cut answer, raise max_tokens.",
    docs=(PREFILL_DOC,),
    example=Example((
        {"request": {"model": "claude-opus-4-6", "max_tokens": 1024,
                     "messages": [{"role": "user", "content": "Weather in Paris?"},
                                  {"role": "assistant", "content": "{\"city\": \"Paris\", "}]},
         "response": {"content": [{"type": "text", "text": "\"conditions\": \"sunny\"}"}],
                      "stop_reason": "end_turn"}},
    )),
)
def prefill_only_where_accepted(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A request whose last message is an assistant message asks the model to continue it (a prefill,
    e.g. a separate structured-output call after the answer). Claude 4.6 and later refuse it with a 400;
    the models are listed in `harness/checks/models.yaml`. Re-sending a paused turn (pause_turn) is not
    a prefill."""
    index = trace_index(trace)
    for call in trace.calls:
        model = call.model
        if not model or not has_request(call) or not call.messages or role(call.messages[-1]) != "assistant":
            continue
        prev = index.prev.get(call.index)
        if prev is not None and prev.stop_reason == "pause_turn":
            continue
        if refuses_prefill(model):
            yield ctx.finding("R008", call, f"the request ends with an assistant message (a prefill), which {model} "
                              "refuses (400: the conversation must end with a user message); end with a user turn, "
                              "and get structured answers from output_config.format or a forced tool",
                              message_index=len(call.messages) - 1)
