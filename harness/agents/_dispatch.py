"""The tool dispatcher of the reference loop: runs one turn's tool_use blocks and enforces policies.

Prerequisites, approval gates and circuit breakers live in the dispatcher (rules W001-W003),
never in the prompt: a blocked tool is not run and its tool_result says why, with `is_error: true`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from anthropic.types import ToolUseBlock

from ._task import Task, ToolResult


@dataclass
class _Breaker:
    failures: int = 0
    """Consecutive failures of the tool."""
    opened_at: float = 0.0
    """Run time (seconds) of the last failure."""


@dataclass
class Dispatcher:
    """Runs tools for one thread, gating each one on the workflow policies it was given."""

    task: Task
    thread_key: str | None = None
    policies: dict[str, Any] = field(default_factory=dict)
    """`prerequisites`, `approvals`, `circuit_breakers`, in the shape of the W check options."""
    sequential_tools: frozenset[str] = frozenset()
    _succeeded: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _approvals: dict[str, int] = field(default_factory=dict)
    _breakers: dict[str, _Breaker] = field(default_factory=dict)

    def run(self, tool_uses: Sequence[ToolUseBlock]) -> list[ToolResult]:
        """Run one assistant turn's tools; results keep the tool_use order."""
        blocked = self._gate(tool_uses)
        results: list[ToolResult | None] = [None] * len(tool_uses)

        def one(i: int) -> None:
            use = tool_uses[i]
            results[i] = blocked[i] or self.task.run_tool(use.name, use.input, use.id, thread_key=self.thread_key)

        for segment in self._segments(tool_uses):
            if len(segment) == 1:
                one(segment[0])
            else:
                with ThreadPoolExecutor(max_workers=len(segment)) as pool:
                    list(pool.map(one, segment))
        return self._commit(tool_uses, blocked, results)

    async def arun(self, tool_uses: Sequence[ToolUseBlock]) -> list[ToolResult]:
        """The same as `run`, concurrently on the event loop."""
        blocked = self._gate(tool_uses)
        results: list[ToolResult | None] = [None] * len(tool_uses)

        async def one(i: int) -> None:
            use = tool_uses[i]
            results[i] = blocked[i] or await self.task.arun_tool(use.name, use.input, use.id,
                                                                 thread_key=self.thread_key)

        for segment in self._segments(tool_uses):
            await asyncio.gather(*(one(i) for i in segment))
        return self._commit(tool_uses, blocked, results)

    def _segments(self, tool_uses: Sequence[ToolUseBlock]) -> list[list[int]]:
        """Runs of independent tools go together; a sequential tool runs alone, in its place in the order.

        Run at once only what is independent; side effects run one at a time (rule T008).
        """
        segments: list[list[int]] = []
        previous_alone = True
        for i, use in enumerate(tool_uses):
            alone = use.name in self.sequential_tools
            if alone or previous_alone:
                segments.append([i])
            else:
                segments[-1].append(i)
            previous_alone = alone
        return segments

    def _gate(self, tool_uses: Sequence[ToolUseBlock]) -> list[ToolResult | None]:
        """Decide every gate before anything of the turn runs, from what earlier turns did.

        Judging a turn against earlier turns only keeps the decision independent of how fast
        concurrent tools finish: a `get_customer` of the same turn does not unlock a refund.
        """
        declared = {str(t.get("name")) for t in self.task.tools if isinstance(t, dict)}
        approvals = dict(self._approvals)
        blocked: list[ToolResult | None] = []
        for use in tool_uses:
            reason = None
            if declared and use.name not in declared:
                reason = (f"UNKNOWN_TOOL: {use.name!r} is not one of the tools of this request "
                          f"({', '.join(sorted(declared))})")
            reason = reason or self._prerequisite(use) or self._circuit(use)
            if reason is None and self._needs_approval(use.name):
                if approvals.get(use.name, 0) > 0:
                    approvals[use.name] -= 1
                else:
                    reason = self._approval_missing(use.name)
            blocked.append(ToolResult(reason, is_error=True) if reason else None)
        return blocked

    def _prerequisite(self, use: ToolUseBlock) -> str | None:
        tool_input = use.input if isinstance(use.input, dict) else {}
        for policy in self.policies.get("prerequisites", []):
            if policy.get("tool") != use.name:
                continue
            required = str(policy.get("requires"))
            match: dict[str, str] = policy.get("match") or {}
            if not any(
                name == required and all(tool_input.get(arg) == done.get(req_arg) for arg, req_arg in match.items())
                for name, done in self._succeeded
            ):
                wanted = ", ".join(f"{req_arg}={tool_input.get(arg)!r}" for arg, req_arg in match.items())
                return f"PREREQUISITE_FAILED: {use.name} runs only after {required} succeeded" + (
                    f" with {wanted}" if wanted else ""
                )
        return None

    def _circuit(self, use: ToolUseBlock) -> str | None:
        for policy in self.policies.get("circuit_breakers", []):
            if policy.get("tool") != use.name:
                continue
            breaker = self._breakers.get(use.name)
            threshold = int(policy.get("failures", 3))
            cooldown = float(policy.get("cooldown_s", 30.0))
            if breaker is None or breaker.failures < threshold:
                continue
            # After the cool-down one trial call goes through (half-open); its failure re-opens it.
            remaining = breaker.opened_at + cooldown - self.task.elapsed()
            if remaining > 0:
                return (
                    f"CIRCUIT_OPEN: {use.name} failed {breaker.failures} times in a row; available again in "
                    f"~{remaining:.0f}s. Use another tool or escalate to a human."
                )
        return None

    def _needs_approval(self, name: str) -> bool:
        return any(p.get("tool") == name for p in self.policies.get("approvals", []))

    def _approval_missing(self, name: str) -> str:
        tools = sorted({str(p.get("approval_tool"))
                        for p in self.policies.get("approvals", []) if p.get("tool") == name})
        return f"APPROVAL_REQUIRED: {name} is irreversible and runs only after {' or '.join(tools)} approves it"

    def _commit(
        self, tool_uses: Sequence[ToolUseBlock], blocked: list[ToolResult | None], results: list[ToolResult | None]
    ) -> list[ToolResult]:
        """Update the policies' state with what actually ran, in tool_use order."""
        done: list[ToolResult] = []
        for use, gate, result in zip(tool_uses, blocked, results, strict=True):
            assert result is not None
            done.append(result)
            if gate is not None:
                continue
            if self._needs_approval(use.name):
                self._approvals[use.name] -= 1  # one approval covers one run, whatever its result
            breaker = self._breakers.setdefault(use.name, _Breaker())
            if result.is_error:
                breaker.failures += 1
                breaker.opened_at = self.task.elapsed()
                continue
            breaker.failures = 0
            self._succeeded.append((use.name, use.input if isinstance(use.input, dict) else {}))
            for policy in self.policies.get("approvals", []):
                if policy.get("approval_tool") == use.name and _approved(result.content):
                    gated = str(policy.get("tool"))
                    self._approvals[gated] = self._approvals.get(gated, 0) + 1
        return done


def _approved(content: Any) -> bool:
    """An approval tool's answer grants approval when it says so: `{"approved": true}`, `true`, "approved"."""
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            return content.strip().lower() in {"approved", "yes"}
    if isinstance(content, dict):
        return content.get("approved") is True
    return content is True
