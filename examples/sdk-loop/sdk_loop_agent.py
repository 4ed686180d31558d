"""The hand-written loop on the `anthropic` SDK: the client it is given already points at the run.

The three lines that connect it: take `client` (or `task.client()`), send `task.request_params()`,
run tools with `task.run_tool`.
"""

from __future__ import annotations

from typing import Any

import anthropic

from harness import Task


def agent(client: anthropic.Anthropic, task: Task) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task.turns[0]}]
    for _ in range(task.limits.steps or 10):
        response = client.messages.create(**task.request_params(), messages=messages)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return "".join(block.text for block in response.content if block.type == "text")
        messages.append({"role": "user", "content": [
            task.run_tool(block.name, block.input, block.id).block(block.id)
            for block in response.content if block.type == "tool_use"
        ]})
    raise RuntimeError("out of steps")
