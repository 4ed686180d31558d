"""The reference agent loop, done right, and the coordinator of subagents built on it.

`AgentLoop` is one thread's loop; each decision of the stop_reason table (rules L001-L006) is its own method,
so the deliberately buggy agents (`buggy.py`) differ from it by overriding a few lines.
"""

from __future__ import annotations

import inspect
import json
import re
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import anthropic
from anthropic.resources.messages import Messages
from anthropic.types import Message, ToolUseBlock

from ..trace._model import Outcome
from ._dispatch import Dispatcher
from ._task import Task, ToolResult

SAFETY_STEPS = 50
"""Step cap when the task declares none: a safety net set high (e.g. 50), never the way the loop stops."""
DEFAULT_TOOL_ERRORS = 3
"""Stop when tools fail 3 times in a row (rule T007)."""

_CREATE_PARAMS = frozenset(inspect.signature(Messages.create).parameters) - {"self"}

# R002: each server-side edit and the task budget travel with their own beta header.
_EDIT_BETAS = {
    "compact_20260112": "compact-2026-01-12",
    "clear_tool_uses_20250919": "context-management-2025-06-27",
    "clear_thinking_20251015": "context-management-2025-06-27",
}
_TASK_BUDGET_BETA = "task-budgets-2026-03-13"

Action = list[ToolUseBlock] | Outcome | None
"""What a response asks of the loop: run these tools, end with this outcome, or (None) call again."""


@dataclass
class RunBudget:
    """Counters of one run, shared by every thread (a coordinator and its subagents).

    Limits bound the run as a whole, so parallel subagents draw on one budget.
    """

    steps: int = 0
    tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take_step(self, limit: int | None) -> bool:
        """Count one more model call unless the step limit is reached; atomic across threads."""
        with self._lock:
            if limit is not None and self.steps >= limit:
                return False
            self.steps += 1
            return True

    def add_tokens(self, n: int) -> None:
        with self._lock:
            self.tokens += n


def required_betas(params: dict[str, Any]) -> list[str]:
    """The anthropic-beta values a request body needs (rule R002)."""
    betas: list[str] = []
    management = params.get("context_management")
    edits = management.get("edits", []) if isinstance(management, dict) else []
    for edit in edits:
        beta = _EDIT_BETAS.get(str(edit.get("type"))) if isinstance(edit, dict) else None
        if beta and beta not in betas:
            betas.append(beta)
    output_config = params.get("output_config")
    if isinstance(output_config, dict) and "task_budget" in output_config:
        betas.append(_TASK_BUDGET_BETA)
    return betas


def usage_tokens(response: Message) -> int:
    """Tokens of a call as budgets count them: input + output + cache creation + cache read."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0
    return sum(
        int(getattr(usage, name, 0) or 0)
        for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


def text_of(response: Message) -> str:
    return "".join(str(getattr(b, "text", "")) for b in response.content if b.type == "text")


class AgentLoop:
    """One thread's loop: call, read stop_reason, act; until the model ends its turn or a limit trips."""

    def __init__(
        self,
        task: Task,
        *,
        thread_key: str | None = None,
        budget: RunBudget | None = None,
        history: list[dict[str, Any]] | None = None,
    ) -> None:
        self.task = task
        self.thread_key = thread_key
        self.budget = budget or RunBudget()
        self.messages: list[dict[str, Any]] = list(history or [])
        self.pending_turns: deque[str] = deque(task.turns)
        self.request_overrides: dict[str, Any] = {}
        """Request fields for the next calls only (e.g. the coordinator's structured output)."""
        self.last_text: str | None = None
        """The latest non-empty text the model wrote: what a stopped run hands back."""
        self.consecutive_tool_errors = 0
        if self.pending_turns:
            self.add_turn(self.pending_turns.popleft())
        self.dispatcher = Dispatcher(
            task, thread_key, policies=self.policies(), sequential_tools=self.sequential_tools()
        )

    # -- what the loop is allowed: hooks the buggy agents override -------------------------------

    def policies(self) -> dict[str, Any]:
        return self.task.policies

    def sequential_tools(self) -> frozenset[str]:
        return self.task.sequential_tools

    def step_limit(self) -> int | None:
        return self.task.limits.steps if self.task.limits.steps is not None else SAFETY_STEPS

    def token_budget(self) -> int | None:
        return self.task.limits.tokens

    def tool_error_limit(self) -> int | None:
        return self.task.limits.tool_errors if self.task.limits.tool_errors is not None else DEFAULT_TOOL_ERRORS

    # -- the request ------------------------------------------------------------------------------

    def request_params(self) -> dict[str, Any]:
        """Body fields besides `messages`, as the task fixes them."""
        params = self.task.request_params()
        params.pop("extra_headers", None)
        for key, value in self.request_overrides.items():
            if isinstance(value, dict) and isinstance(params.get(key), dict):
                params[key] = {**params[key], **value}
            else:
                params[key] = value
        return params

    def headers(self, params: dict[str, Any]) -> dict[str, str]:
        headers = dict(self.task.extra_headers)
        present = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
        betas = present + [b for b in required_betas(params) if b not in present]
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        return headers

    def history(self) -> list[dict[str, Any]]:
        """The messages to send: the whole history, as it was appended."""
        return list(self.messages)

    def create_kwargs(self) -> dict[str, Any]:
        params = self.request_params()
        headers = self.headers(params)
        # Fields this SDK version has no argument for still go on the wire, in the body.
        extra_body = {key: params.pop(key) for key in list(params) if key not in _CREATE_PARAMS}
        kwargs: dict[str, Any] = {**params, "messages": self.history()}
        if headers:
            kwargs["extra_headers"] = headers
        if extra_body:
            kwargs["extra_body"] = extra_body
        return kwargs

    def bind(self, client: Any) -> Any:
        """The client this thread calls with: it names the thread when the run has several."""
        if self.thread_key is None:
            return client
        return client.with_options(default_headers={"x-harness-thread": self.thread_key})

    def call_model(self, client: anthropic.Anthropic) -> Message:
        # 429/529/5xx are retried by the SDK (max_retries, honouring retry-after); a 4xx is not retried.
        kwargs = self.create_kwargs()
        if kwargs.pop("stream", False):
            # A streamed answer is reassembled by the SDK into the same Message the loop reads.
            with client.messages.stream(**kwargs) as stream:
                return stream.get_final_message()
        message: Message = client.messages.create(**kwargs)
        return message

    async def acall_model(self, client: anthropic.AsyncAnthropic) -> Message:
        kwargs = self.create_kwargs()
        if kwargs.pop("stream", False):
            async with client.messages.stream(**kwargs) as stream:
                return await stream.get_final_message()
        message: Message = await client.messages.create(**kwargs)
        return message

    # -- limits ------------------------------------------------------------------------------------

    def stopped(self, limit: str, reason: str) -> Outcome:
        """A limit tripped: hand back what there is and say the task was left half done."""
        return Outcome(status="limit", limit=limit, reason=reason, final_text=self.last_text)

    def before_call(self) -> Outcome | None:
        """Check the limits before starting another call; None means the call may go."""
        budget = self.token_budget()
        if budget is not None and self.budget.tokens >= budget:
            return self.stopped("tokens", f"{self.budget.tokens} tokens used, budget {budget}")
        wall = self.task.limits.wall_time_s
        if wall is not None and self.task.elapsed() >= wall:
            return self.stopped("wall_time", f"{self.task.elapsed():.1f}s elapsed, limit {wall}s")
        steps = self.step_limit()
        if not self.budget.take_step(steps):
            return self.stopped("steps", f"{self.budget.steps} model calls made, limit {steps}")
        return None

    # -- the response: the table of stop_reason -----------------------------------------------------

    def assistant_message(self, response: Message) -> dict[str, Any]:
        """The response's content verbatim (thinking with signature, server tool blocks, compaction)."""
        return {"role": "assistant", "content": [b.to_dict(mode="json", exclude_none=True) for b in response.content]}

    def after_response(self, response: Message) -> Action:
        self.budget.add_tokens(usage_tokens(response))
        self.messages.append(self.assistant_message(response))
        text = text_of(response)
        if text:
            self.last_text = text
        handler = {
            "end_turn": self.on_end_turn,
            "stop_sequence": self.on_end_turn,
            "tool_use": self.on_tool_use,
            "pause_turn": self.on_pause_turn,
            "max_tokens": self.on_max_tokens,
            "refusal": self.on_refusal,
        }.get(str(response.stop_reason), self.on_other)
        return handler(response)

    def on_end_turn(self, response: Message) -> Action:
        if self.pending_turns:
            self.add_turn(self.pending_turns.popleft())
            return None
        # The user's own conversation (not a subagent's brief) goes on while the user has more to say.
        reply = self.task.next_turn(text_of(response)) if self.thread_key is None else None
        if reply is not None:
            self.add_turn(reply)
            return None
        return Outcome(status="completed", reason=f"stop_reason {response.stop_reason}", final_text=text_of(response))

    def on_tool_use(self, response: Message) -> Action:
        tool_uses = [b for b in response.content if isinstance(b, ToolUseBlock)]
        if not tool_uses:
            return Outcome(status="error", reason="stop_reason tool_use without any tool_use block",
                           final_text=self.last_text)
        return tool_uses

    def on_pause_turn(self, response: Message) -> Action:
        # The paused content is already in the history as is; calling again lets the server go on.
        return None

    def on_max_tokens(self, response: Message) -> Action:
        # A cut tool_use may have a truncated input: it is never run.
        return Outcome(
            status="error",
            reason=f"response cut at max_tokens ({self.task.max_tokens}): raise max_tokens or split the task",
            final_text=self.last_text,
        )

    def on_refusal(self, response: Message) -> Action:
        return Outcome(status="refused", reason="the model refused; not retried", final_text=text_of(response) or None)

    def on_other(self, response: Message) -> Action:
        return Outcome(
            status="error",
            reason=f"stop_reason {response.stop_reason!r} cannot be continued (e.g. the context window is full)",
            final_text=self.last_text,
        )

    # -- tool results -------------------------------------------------------------------------------

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        """One tool_result per tool_use id, in order; failures carry is_error."""
        return [result.block(use.id) for use, result in zip(tool_uses, results, strict=True)]

    def add_tool_results(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> Outcome | None:
        """All results in one user message, before anything else; stop after too many errors in a row."""
        self.messages.append({"role": "user", "content": self.result_blocks(tool_uses, results)})
        for result in results:
            self.consecutive_tool_errors = self.consecutive_tool_errors + 1 if result.is_error else 0
        limit = self.tool_error_limit()
        if limit is not None and self.consecutive_tool_errors >= limit:
            return self.stopped("tool_errors", f"{self.consecutive_tool_errors} tool errors in a row, limit {limit}")
        return None

    def add_turn(self, text: str) -> None:
        """A new human turn."""
        self.messages.append({"role": "user", "content": text})

    def api_failure(self, exc: anthropic.APIError) -> Outcome:
        status = getattr(exc, "status_code", None)
        where = f"HTTP {status}" if status is not None else type(exc).__name__
        return Outcome(status="error", reason=f"{where}: {exc.message}", final_text=self.last_text)

    # -- drivers ------------------------------------------------------------------------------------

    def run(self, client: anthropic.Anthropic) -> Outcome:
        client = self.bind(client)
        while True:
            if (stop := self.before_call()) is not None:
                return stop
            try:
                response = self.call_model(client)
            except anthropic.APIError as exc:
                return self.api_failure(exc)
            action = self.after_response(response)
            if isinstance(action, Outcome):
                return action
            if action is not None:
                results = self.dispatcher.run(action)
                if (stop := self.add_tool_results(action, results)) is not None:
                    return stop

    async def arun(self, client: anthropic.AsyncAnthropic) -> Outcome:
        client = self.bind(client)
        while True:
            if (stop := self.before_call()) is not None:
                return stop
            try:
                response = await self.acall_model(client)
            except anthropic.APIError as exc:
                return self.api_failure(exc)
            action = self.after_response(response)
            if isinstance(action, Outcome):
                return action
            if action is not None:
                results = await self.dispatcher.arun(action)
                if (stop := self.add_tool_results(action, results)) is not None:
                    return stop


def reference_agent(client: anthropic.Anthropic, task: Task) -> Outcome:
    """The reference loop, done right."""
    return AgentLoop(task).run(client)


async def async_reference_agent(client: anthropic.AsyncAnthropic, task: Task) -> Outcome:
    """The reference loop on the async client; parallel tools run with asyncio.gather."""
    return await AgentLoop(task).arun(client)


# -- coordinator and subagents (rule M001) -------------------------------------------------------

COORDINATOR_SYSTEM = (
    "You are a coordinator. Split the user's request into independent subtasks for subagents. Answer with "
    'JSON only: {"subtasks": [{"name": str, "objective": str, "output_format": str, "tools": str, '
    '"out_of_scope": [str]}]}. Use 2-4 subtasks for a bounded comparison, 1 for a simple fact.'
)
_DECOMPOSITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subtasks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "objective": {"type": "string"},
                    "output_format": {"type": "string"},
                    "tools": {"type": "string"},
                    "out_of_scope": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name", "objective", "output_format", "tools", "out_of_scope"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["subtasks"],
    "additionalProperties": False,
}
MAX_PARALLEL_SUBAGENTS = 5
"""The lead launches 3-5 subagents in parallel."""


@dataclass
class Subtask:
    """One subagent's share of the work, as the coordinator decomposed it."""

    name: str
    objective: str
    output_format: str = "A condensed summary, not the transcript."
    tools: str = ""
    out_of_scope: list[str] = field(default_factory=list)


def parse_decomposition(text: str) -> list[Subtask]:
    """Read the coordinator's JSON (tolerating a code fence around it) into subtasks with unique names."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match is None:
        raise ValueError(f"the decomposition is not JSON: {text[:200]!r}")
    data = json.loads(match.group(0))
    raw = data.get("subtasks") if isinstance(data, dict) else None
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"the decomposition has no subtasks: {text[:200]!r}")
    subtasks: list[Subtask] = []
    seen: set[str] = set()
    for i, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not item.get("objective"):
            raise ValueError(f"subtask {i} has no objective: {item!r}")
        # A thread key "main/<name>" must stay one level deep and unique.
        name = re.sub(r"[^\w.-]+", "-", str(item.get("name") or f"subtask-{i}")).strip("-") or f"subtask-{i}"
        while name in seen:
            name += f"-{i}"
        seen.add(name)
        subtasks.append(
            Subtask(
                name=name,
                objective=str(item["objective"]),
                output_format=str(item.get("output_format") or Subtask.output_format),
                tools=str(item.get("tools") or ""),
                out_of_scope=[str(x) for x in item.get("out_of_scope") or []],
            )
        )
    return subtasks


def render_brief(subtask: Subtask, request: str) -> str:
    """A subagent's brief: objective, output format, tools and sources, what is out of scope, plus context."""
    parts = [f"## Objective\n{subtask.objective}", f"## Output format\n{subtask.output_format}"]
    if subtask.tools:
        parts.append(f"## Tools and sources\n{subtask.tools}")
    if subtask.out_of_scope:
        parts.append("## Out of scope\n" + "\n".join(f"- {x}" for x in subtask.out_of_scope))
    parts.append(f"## Context\nThe user's original request: {request}")
    parts.append("Return a condensed summary, not the transcript.")
    return "\n\n".join(parts)


class Coordinator:
    """Asks the model for a decomposition, runs one subagent per subtask in parallel, then consolidates.

    Subagents get their brief injected and nothing else: they never see the coordinator's history.
    """

    def __init__(self, task: Task, *, budget: RunBudget | None = None) -> None:
        self.task = task
        self.budget = budget or RunBudget()
        self.request = "\n\n".join(task.turns)
        self.main = AgentLoop(
            replace(task, prompt=self.request, system=COORDINATOR_SYSTEM, tools=[], handlers={}),
            thread_key="main",
            budget=self.budget,
        )

    def subagent_history(self) -> list[dict[str, Any]]:
        """What a subagent starts from before its brief: nothing."""
        return []

    def subagent(self, subtask: Subtask) -> AgentLoop:
        brief = render_brief(subtask, self.request)
        return AgentLoop(
            replace(self.task, prompt=brief),
            thread_key=f"main/{subtask.name}",
            budget=self.budget,
            history=self.subagent_history(),
        )

    def run(self, client: anthropic.Anthropic) -> Outcome:
        self.main.request_overrides = {"output_config": {"format": {"type": "json_schema",
                                                                    "schema": _DECOMPOSITION_SCHEMA}}}
        plan = self.main.run(client)
        if plan.status != "completed":
            return plan
        try:
            subtasks = parse_decomposition(plan.final_text or "")
        except ValueError as exc:
            return Outcome(status="error", reason=f"coordinator: {exc}", final_text=plan.final_text)
        loops = [self.subagent(s) for s in subtasks]
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_SUBAGENTS, len(loops))) as pool:
            reports = list(pool.map(lambda loop: _report(loop, client), loops))
        self.main.request_overrides = {}
        self.main.add_turn(
            "Consolidate the subagents' results into one coherent answer to the original request.\n\n"
            + "\n\n".join(f"### {s.name}\n{r}" for s, r in zip(subtasks, reports, strict=True))
        )
        return self.main.run(client)


def _report(loop: AgentLoop, client: anthropic.Anthropic) -> str:
    """A subagent's result for the coordinator; a failure is propagated as what it is, not hidden."""
    try:
        outcome = loop.run(client)
    except Exception as exc:  # a subagent's failure goes to the coordinator, which decides
        return f"(subagent failed: {type(exc).__name__}: {exc})"
    if outcome.status == "completed":
        return outcome.final_text or ""
    detail = f"{outcome.status}" + (f" ({outcome.limit})" if outcome.limit else "")
    return f"(subagent stopped: {detail}: {outcome.reason}) partial result: {outcome.final_text or 'none'}"


def coordinator_agent(client: anthropic.Anthropic, task: Task) -> Outcome:
    """Decomposition, parallel subagents with injected briefs, consolidation."""
    return Coordinator(task).run(client)


__all__ = [
    "AgentLoop",
    "Coordinator",
    "RunBudget",
    "Subtask",
    "async_reference_agent",
    "coordinator_agent",
    "parse_decomposition",
    "reference_agent",
    "render_brief",
    "required_betas",
]
