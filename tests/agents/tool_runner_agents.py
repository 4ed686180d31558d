"""Agents built on the SDK's beta tool runner, whose tool functions get only their input (no tool_use id)."""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic import beta_async_tool, beta_tool

from harness import Task


def _lookup(task: Task) -> Any:
    @beta_tool
    def lookup_order(order_id: str) -> str:
        """Look an order up by its id.

        Args:
            order_id: the order's id, e.g. O1
        """
        return str(task.run_tool("lookup_order", {"order_id": order_id}).content)

    return lookup_order


def _final_text(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def runner_agent(client: anthropic.Anthropic, task: Task) -> str:
    """The tool runner, sync and not streaming: the last message it yields is the answer."""
    params = task.request_params()
    params.pop("tools", None)  # the runner sends the definitions of the functions it is given
    runner = client.beta.messages.tool_runner(
        **params, tools=[_lookup(task)], messages=[{"role": "user", "content": task.turns[0]}]
    )
    return _final_text(runner.until_done())


def streaming_runner_agent(client: anthropic.Anthropic, task: Task) -> str:
    """The tool runner streaming each answer; tools run once a streamed answer has ended."""
    params = task.request_params()
    params.pop("tools", None)
    runner = client.beta.messages.tool_runner(
        **params, tools=[_lookup(task)], messages=[{"role": "user", "content": task.turns[0]}], stream=True
    )
    last = None
    for stream in runner:
        last = stream.get_final_message()
    return _final_text(last)


async def async_runner_agent(client: anthropic.AsyncAnthropic, task: Task) -> str:
    """The async tool runner with an async tool function."""

    @beta_async_tool
    async def lookup_order(order_id: str) -> str:
        """Look an order up by its id.

        Args:
            order_id: the order's id, e.g. O1
        """
        return str((await task.arun_tool("lookup_order", {"order_id": order_id})).content)

    params = task.request_params()
    params.pop("tools", None)
    runner = client.beta.messages.tool_runner(
        **params, tools=[lookup_order], messages=[{"role": "user", "content": task.turns[0]}]
    )
    return _final_text(await runner.until_done())
