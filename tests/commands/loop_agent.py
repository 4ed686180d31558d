"""A Messages API agent loop written as a program of its own, as an agent in another language would be.

It knows the harness only through its environment: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (read
by the SDK itself) and HARNESS_TASK. Tools run through the endpoint's /harness/tools/{name}.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

import anthropic


def run_tool(name: str, tool_input: object) -> dict:
    request = urllib.request.Request(
        f"{os.environ['ANTHROPIC_BASE_URL']}/harness/tools/{name}",
        data=json.dumps(tool_input).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def main() -> None:
    with open(os.environ["HARNESS_TASK"], encoding="utf-8") as file:
        task = json.load(file)
    print(f"task for {task['scenario']}: {sorted(task)}", file=sys.stderr)
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": task["turns"][0]}]
    for _ in range(task["limits"].get("steps", 10)):
        response = client.messages.create(**task["request"], messages=messages)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        if response.stop_reason != "tool_use":
            print("".join(b.text for b in response.content if b.type == "text"))
            return
        results = []
        for block in response.content:
            if block.type == "tool_use":
                result = run_tool(block.name, block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id, **result})
        messages.append({"role": "user", "content": results})
    print(json.dumps({"outcome": "limit", "limit": "steps", "text": "out of steps"}))


if __name__ == "__main__":
    main()
