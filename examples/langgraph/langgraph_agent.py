"""A langgraph ReAct agent on langchain-anthropic's ChatAnthropic, pointed at the run's endpoint.

The three lines that connect it: `ChatAnthropic(base_url=task.base_url, api_key=task.api_key, ...)`,
the task's model and system prompt, and `task.run_tool(name, input)` inside each tool.
"""

from __future__ import annotations

from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

from harness import Task


def agent(client: Any, task: Task) -> str:
    model = ChatAnthropic(model=task.model, base_url=task.base_url, api_key=task.api_key, max_tokens=task.max_tokens)

    @tool
    def lookup_order(order_id: str) -> str:
        """Looks an order up by id."""
        return str(task.run_tool("lookup_order", {"order_id": order_id}).content)

    graph = create_react_agent(model, [lookup_order], prompt=task.system)
    answer = graph.invoke({"messages": [("user", task.turns[0])]})["messages"][-1]
    return str(answer.text)
