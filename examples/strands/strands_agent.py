"""A strands-agents agent on its AnthropicModel. strands pins anthropic<1: the harness installs beside it.

The three lines that connect it: `client_args={"base_url": task.base_url, "api_key": task.api_key}`,
the task's model and system prompt, and `task.run_tool(name, input)` inside each tool.
"""

from __future__ import annotations

from typing import Any

from strands import Agent, tool
from strands.models.anthropic import AnthropicModel

from harness import Task


def agent(client: Any, task: Task) -> str:
    model = AnthropicModel(
        client_args={"base_url": task.base_url, "api_key": task.api_key},
        model_id=task.model,
        max_tokens=task.max_tokens,
    )

    @tool
    def lookup_order(order_id: str) -> str:
        """Looks an order up by id.

        Args:
            order_id: The order's id.
        """
        return str(task.run_tool("lookup_order", {"order_id": order_id}).content)

    support = Agent(model=model, tools=[lookup_order], system_prompt=task.system, callback_handler=None)
    return str(support(task.turns[0])).strip()
