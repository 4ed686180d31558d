"""A builder of realistic recordings for the rule tests: requests that grow the history, responses with ids and usage.

`Recording` holds the exchanges and a clock; each `Conversation` is one agent's thread in it. By
default a conversation behaves like a correct loop (the response is appended as is, one
tool_result per tool_use); tests break one thing at a time by editing `conv.messages` or by passing
`append=False`.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable
from typing import Any

from harness.checks import Finding, check_trace
from harness.trace import Exchange, Outcome, ToolExecution, Trace, build_trace

API = "https://api.anthropic.com/v1/messages"

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_customer",
        "description": "Look a customer up by id.",
        "input_schema": {"type": "object", "properties": {"customer_id": {"type": "string"}},
                         "required": ["customer_id"]},
    },
    {
        "name": "process_refund",
        "description": "Refund an order.",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                          "customer_id": {"type": "string"}},
                         "required": ["order_id", "customer_id"]},
    },
]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str, signature: str = "EqQBCkYIBxgCKkB0c2lnbmF0dXJl") -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


_ids = itertools.count(1)


def tool_use(name: str, tool_input: dict[str, Any] | None = None, tool_use_id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id or f"toolu_{next(_ids):024d}", "name": name,
            "input": tool_input or {}}


def result(tool_use_id: str, content: Any = "ok", *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


class Recording:
    """Exchanges in recording order, with a clock that advances by each call's duration."""

    def __init__(self, *, start: float = 1_760_000_000.0) -> None:
        self.exchanges: list[Exchange] = []
        self.clock = start
        self.executions: list[ToolExecution] = []

    def conversation(self, **kwargs: Any) -> Conversation:
        return Conversation(self, **kwargs)

    def record(self, request: dict[str, Any], headers: dict[str, str], status: int, body: Any, *,
               response_headers: dict[str, str] | None = None, duration: float = 1.0, gap: float = 0.05,
               key: str | None = None) -> Exchange:
        self.clock += gap
        exchange = Exchange(
            index=len(self.exchanges), method="POST", url=API, request_headers=dict(headers),
            request_body=copy.deepcopy(request), status=status, response_headers=dict(response_headers or {}),
            response_body=copy.deepcopy(body), started_at=self.clock, duration_s=duration, thread_key=key,
        )
        self.clock += duration
        self.exchanges.append(exchange)
        return exchange

    def trace(self, *, whole_run: bool = False, outcome: Outcome | None = None) -> Trace:
        trace = build_trace(self.exchanges, "test", whole_run=whole_run or outcome is not None)
        trace.outcome = outcome
        trace.tool_executions = list(self.executions)
        return trace


class Conversation:
    """One thread: a growing `messages` list and the request fields every call repeats."""

    def __init__(self, recording: Recording, *, model: str = "claude-sonnet-5",
                 system: str | None = "You help customers.",
                 tools: list[dict[str, Any]] | None = None, key: str | None = None,
                 extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> None:
        self.recording = recording
        self.model = model
        self.system = system
        self.tools = TOOLS if tools is None else tools
        self.key = key
        self.extra = dict(extra or {})
        self.headers = {"anthropic-version": "2023-06-01", "content-type": "application/json", **(headers or {})}
        self.messages: list[dict[str, Any]] = []
        self.last: dict[str, Any] | None = None

    def user(self, *content: Any) -> Conversation:
        body: Any = content[0] if len(content) == 1 and isinstance(content[0], str) else list(content)
        self.messages.append({"role": "user", "content": body})
        return self

    def request(self) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "max_tokens": 1024, "messages": self.messages}
        if self.system is not None:
            request["system"] = self.system
        if self.tools:
            request["tools"] = self.tools
        request.update(self.extra)
        return request

    def call(self, *content: dict[str, Any], stop_reason: str | None = None, append: bool = True,
             usage: dict[str, int] | None = None, duration: float = 1.0, gap: float = 0.05) -> dict[str, Any]:
        """One successful call; the answer joins the history unless `append` is False."""
        blocks = list(content)
        if stop_reason is None:
            stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        response = {
            "id": f"msg_{next(_ids):024d}", "type": "message", "role": "assistant", "model": self.model,
            "content": blocks, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": usage or {"input_tokens": 100 + 40 * len(self.messages), "output_tokens": 30,
                               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }
        self.recording.record(self.request(), self.headers, 200, response, duration=duration, gap=gap, key=self.key)
        self.last = response
        if append:
            self.messages.append({"role": "assistant", "content": copy.deepcopy(blocks)})
        return response

    def fail(self, status: int, error_type: str = "overloaded_error", *, retry_after: str | None = None,
             should_retry: bool | None = None, duration: float = 0.2, gap: float = 0.05) -> Exchange:
        """A failed attempt of the call the current history would make."""
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        if should_retry is not None:
            headers["x-should-retry"] = "true" if should_retry else "false"
        body = {"type": "error", "error": {"type": error_type, "message": error_type}}
        return self.recording.record(self.request(), self.headers, status, body, response_headers=headers,
                                     duration=duration, gap=gap, key=self.key)

    def tool_uses(self) -> list[dict[str, Any]]:
        assert self.last is not None
        return [b for b in self.last["content"] if b["type"] == "tool_use"]

    def results(self, *contents: Any, errors: Iterable[int] = ()) -> Conversation:
        """One tool_result per tool_use of the last response, in a single user message (the correct loop)."""
        uses = self.tool_uses()
        values = list(contents) + ["ok"] * (len(uses) - len(contents))
        failed = set(errors)
        self.messages.append({"role": "user", "content": [
            result(b["id"], values[n], is_error=n in failed) for n, b in enumerate(uses)
        ]})
        return self

    def ran(self, block: dict[str, Any], started: float, ended: float, *, is_error: bool = False,
            output: Any = "ok") -> None:
        """A tool event for a tool_use block, as the harness's Task.run_tool records it."""
        self.recording.executions.append(ToolExecution(
            tool_use_id=block["id"], name=block["name"], input=block["input"], started_at=started, ended_at=ended,
            output=output, is_error=is_error, error="boom" if is_error else None, thread_key=self.key,
        ))


def codes(findings: list[Finding], severity: str | None = "error") -> set[str]:
    return {f.code for f in findings if severity is None or f.severity == severity}


def check(recording: Recording, **kwargs: Any) -> list[Finding]:
    outcome = kwargs.pop("outcome", None)
    whole_run = kwargs.pop("whole_run", False)
    return check_trace(recording.trace(whole_run=whole_run, outcome=outcome), **kwargs)
