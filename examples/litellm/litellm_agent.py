"""A tool loop on litellm, whose `anthropic/` models speak the Messages API to `api_base`.

The three lines that connect it: `api_base=task.base_url, api_key=task.api_key` on each call, the
task's model as `anthropic/<model>`, and `task.run_tool(name, input, id)` for each tool call.
"""

from __future__ import annotations

import json
import os
from typing import Any

# litellm fetches its model price table from the internet on import; its own copy does here.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

from harness import Task

LOOKUP_ORDER = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Looks an order up by id.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    },
}


def agent(client: Any, task: Task) -> str:
    messages: list[dict[str, Any]] = [{"role": "system", "content": task.system or ""},
                                      {"role": "user", "content": task.turns[0]}]
    for _ in range(task.limits.steps or 10):
        response = litellm.completion(
            model=f"anthropic/{task.model}", api_base=task.base_url, api_key=task.api_key,
            max_tokens=task.max_tokens, messages=messages, tools=[LOOKUP_ORDER],
        )
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return str(message.content)
        for call in message.tool_calls:
            result = task.run_tool(call.function.name, json.loads(call.function.arguments or "{}"), call.id)
            content = result.content if isinstance(result.content, str) else json.dumps(result.content)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    raise RuntimeError("out of steps")
