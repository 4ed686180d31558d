"""A pydantic-ai agent: its Anthropic provider points at the run's endpoint.

The three lines that connect it: `AnthropicProvider(base_url=task.base_url, api_key=task.api_key)`,
the task's model and system prompt, and `task.run_tool(name, input)` inside each tool function.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from harness import Task


def agent(client: Any, task: Task) -> str:
    provider = AnthropicProvider(base_url=task.base_url, api_key=task.api_key)

    def lookup_order(order_id: str) -> str:
        """Looks an order up by id.

        Args:
            order_id: The order's id.
        """
        return str(task.run_tool("lookup_order", {"order_id": order_id}).content)

    support = Agent(
        AnthropicModel(task.model, provider=provider),
        system_prompt=task.system or "",
        tools=[lookup_order],
        model_settings={"max_tokens": task.max_tokens},
    )
    return support.run_sync(task.turns[0]).output
