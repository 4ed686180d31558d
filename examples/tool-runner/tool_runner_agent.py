"""The SDK's beta tool runner, sync, streaming and async: tool functions get only their input.

The three lines that connect it: the client the run gives (or `task.client()`), the task's request
fields, and `task.run_tool(name, input)` inside each tool function (the harness finds the tool_use id).
"""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic import beta_async_tool, beta_tool

from harness import Task


def _request(task: Task) -> dict[str, Any]:
    params = task.request_params()
    params.pop("tools", None)  # the runner describes the tool functions it is given itself
    return {**params, "messages": [{"role": "user", "content": task.turns[0]}]}


def _text(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def _lookup_order(task: Task) -> Any:
    @beta_tool
    def lookup_order(order_id: str) -> str:
        """Looks an order up by id.

        Args:
            order_id: The order's id.
        """
        return str(task.run_tool("lookup_order", {"order_id": order_id}).content)

    return lookup_order


def agent(client: anthropic.Anthropic, task: Task) -> str:
    runner = client.beta.messages.tool_runner(**_request(task), tools=[_lookup_order(task)])
    return _text(runner.until_done())


def streaming_agent(client: anthropic.Anthropic, task: Task) -> str:
    runner = client.beta.messages.tool_runner(**_request(task), tools=[_lookup_order(task)], stream=True)
    last = None
    for stream in runner:
        last = stream.get_final_message()
    return _text(last)


async def async_agent(client: anthropic.AsyncAnthropic, task: Task) -> str:
    @beta_async_tool
    async def lookup_order(order_id: str) -> str:
        """Looks an order up by id.

        Args:
            order_id: The order's id.
        """
        return str((await task.arun_tool("lookup_order", {"order_id": order_id})).content)

    runner = client.beta.messages.tool_runner(**_request(task), tools=[lookup_order])
    return _text(await runner.until_done())
