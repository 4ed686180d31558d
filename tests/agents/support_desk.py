"""The customer-support desk (verify, look up, refund behind prerequisites) as a task for the agents
under test, and wire helpers.

Tools are get_customer / lookup_order / process_refund / escalate_to_human, plus the §13 approval
tool; handlers are plain Python with a small in-memory database, so every tool really runs.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.agents import AgentFn, Limits, Task, ToolError
from harness.trace import Outcome
from harness.transport.scripted import ScriptedModel

CUSTOMERS = {"C1": {"customer_id": "C1", "name": "Ana Ruiz", "tier": "gold"}}
ORDERS = {"O1": {"order_id": "O1", "customer_id": "C1", "amount": 4990, "status": "delivered"}}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_customer",
        "description": "Looks a customer up by id. Call it before any other operation.",
        "input_schema": {
            "type": "object",
            "properties": {"customer_id": {"type": "string", "description": "Unique customer id"}},
            "required": ["customer_id"],
        },
    },
    {
        "name": "lookup_order",
        "description": "Looks an order up by id.",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
    {
        "name": "process_refund",
        "description": "Refunds an order. Needs a customer_id verified with get_customer first.",
        "strict": True,
        "input_schema": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "amount": {"type": "number", "description": "Amount in cents"},
                "customer_id": {"type": "string", "description": "The verified customer id"},
            },
            "required": ["order_id", "amount", "customer_id"],
            "additionalProperties": False,
        },
    },
    {
        "name": "escalate_to_human",
        "description": "Hands the case to a human agent.",
        "input_schema": {
            "type": "object",
            "properties": {"reason": {"type": "string"}, "context": {"type": "string"}},
            "required": ["reason", "context"],
        },
    },
    {
        "name": "request_human_approval",
        "description": "Asks a human to approve an irreversible action before it runs.",
        "input_schema": {
            "type": "object",
            "properties": {"action": {"type": "string"}, "context": {"type": "string"}},
            "required": ["action", "context"],
        },
    },
]

PREREQUISITES = [{"tool": "process_refund", "requires": "get_customer", "match": {"customer_id": "customer_id"}}]
APPROVALS = [{"tool": "process_refund", "approval_tool": "request_human_approval"}]


class Rendezvous:
    """Lets tools that run concurrently prove it: each waits (briefly) until `parties` have arrived.

    Concurrent runs meet at once, so their executions overlap for certain; run one at a time, the
    first waits out the timeout and goes on. No sleeping to hope for an overlap. The timeout is what
    a thread started at once may take to be scheduled on a loaded machine: at 0.2 s, a full suite
    at load 19 on 2 cores once saw two concurrent refunds miss each other, and T008 went unfound.
    """

    def __init__(self, parties: int = 2, timeout: float = 2.0) -> None:
        self.parties = parties
        self.timeout = timeout
        self.arrived = 0
        self._cond = threading.Condition()

    def meet(self) -> None:
        with self._cond:
            self.arrived += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.arrived >= self.parties, self.timeout)


@dataclass
class Desk:
    """The backend the tools act on; `refunds` is the side effect tests look at."""

    refunds: list[dict[str, Any]] = field(default_factory=list)
    escalations: list[dict[str, Any]] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)
    """Tools that fail every time (a backend that is down)."""
    approve: bool = True
    rendezvous: Rendezvous | None = None
    """When set, process_refund and lookup_order wait there, to show whether they overlap."""

    def get_customer(self, args: dict[str, Any]) -> dict[str, Any]:
        self._maybe_fail("get_customer")
        customer = CUSTOMERS.get(str(args.get("customer_id")))
        if customer is None:
            raise ToolError(f"customer {args.get('customer_id')!r} not found")
        return customer

    def lookup_order(self, args: dict[str, Any]) -> dict[str, Any]:
        self._maybe_fail("lookup_order")
        if self.rendezvous:
            self.rendezvous.meet()
        order = ORDERS.get(str(args.get("order_id")))
        if order is None:
            raise ToolError(f"order {args.get('order_id')!r} not found")
        return order

    def process_refund(self, args: dict[str, Any]) -> dict[str, Any]:
        self._maybe_fail("process_refund")
        if self.rendezvous:
            self.rendezvous.meet()
        self.refunds.append(dict(args))
        return {"refund_id": f"R{len(self.refunds)}", "status": "processed"}

    def escalate_to_human(self, args: dict[str, Any]) -> dict[str, Any]:
        self.escalations.append(dict(args))
        return {"escalated": True, "ticket_id": f"T{len(self.escalations)}"}

    def request_human_approval(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"approved": self.approve}

    def _maybe_fail(self, name: str) -> None:
        if name in self.failing:
            raise ToolError(f"TIMEOUT: {name} did not answer in 5000ms")

    def handlers(self) -> dict[str, Any]:
        return {
            "get_customer": self.get_customer,
            "lookup_order": self.lookup_order,
            "process_refund": self.process_refund,
            "escalate_to_human": self.escalate_to_human,
            "request_human_approval": self.request_human_approval,
        }


def support_task(desk: Desk | None = None, **overrides: Any) -> Task:
    """A support task on `desk` (a fresh one by default); keyword arguments override Task fields."""
    desk = desk or Desk()
    fields: dict[str, Any] = {
        "prompt": "Customer C1 wants a refund for order O1.",
        "system": "You are a customer-support agent. Verify the customer before any refund.",
        "tools": TOOLS,
        "handlers": desk.handlers(),
        "limits": Limits(steps=10),
    }
    fields.update(overrides)
    return Task(**fields)


def calls(model: ScriptedModel) -> list[dict[str, Any]]:
    """The bodies of the Messages calls the model received, in order."""
    return [r.body for r in model.requests if r.method == "POST" and r.path.split("?")[0].endswith("/v1/messages")]


def tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []


def tool_use_ids(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    return [b["id"] for b in content if b.get("type") == "tool_use"] if isinstance(content, list) else []


@dataclass
class Run:
    """One agent run against a scripted model: what it returned and what went over the wire."""

    outcome: Outcome
    task: Task
    model: ScriptedModel

    @property
    def calls(self) -> list[dict[str, Any]]:
        return calls(self.model)

    @property
    def executed(self) -> list[str]:
        """Names of the tools that really ran, in start order."""
        return [e.name for e in sorted(self.task.executions, key=lambda e: e.started_at)]


def run_agent(agent: AgentFn, task: Task, script: Sequence[Mapping[str, Any]] | ScriptedModel) -> Run:
    """Run a sync or async agent through the real SDK on a scripted model (SDK retries off)."""
    model = script if isinstance(script, ScriptedModel) else ScriptedModel(list(script))
    if inspect.iscoroutinefunction(agent):
        result = asyncio.run(agent(model.async_client(max_retries=0), task))
    else:
        result = agent(model.client(max_retries=0), task)
    outcome = result if isinstance(result, Outcome) else Outcome(status="completed", final_text=result)
    return Run(outcome=outcome, task=task, model=model)
