"""Scenario files written to a throwaway project (scenarios/ + cassettes/) for the run tests."""

from __future__ import annotations

from pathlib import Path

import httpx2

from harness import Task

HEADER = "# yaml-language-server: $schema=../harness/scenario/scenario.schema.json\n"


class Project:
    """A throwaway project folder with its own scenarios/ and cassettes/."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "scenarios").mkdir()

    def scenario(self, stem: str, body: str) -> Path:
        path = self.root / "scenarios" / f"{stem}.yaml"
        path.write_text(HEADER + body, encoding="utf-8")
        return path

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"


LOOKUP = """tools:
  - name: lookup_order
    input_schema: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
    fixture:
      match:
        - {input: {order_id: O1}, output: {status: delivered}}
      error: order not found
"""

SCRIPT = """script:
  - tool_use: {name: lookup_order, input: {order_id: O1}}
  - text: Order O1 was delivered.
"""

PASSING = f"""name: lookup
prompt: Where is order O1?
{LOOKUP}expect:
  outcome: completed
mode: scripted
{SCRIPT}"""
"""A scripted scenario that passes: the agent looks order O1 up and says it was delivered."""


def crashing_agent(client: object, task: object) -> str:
    """An agent under test that fails outright, to show a crash is a result and not a harness error."""
    raise RuntimeError("the agent fell over")


def http_conversing_agent(client: object, task: Task) -> str:
    """An agent that talks to its run over HTTP only, as one in another language would: the model
    through `task.client()`, the simulated user through `POST {base_url}/harness/user`."""
    model = task.client()
    messages: list[dict[str, object]] = [{"role": "user", "content": task.turns[0]}]
    while True:
        response = model.messages.create(**task.request_params(), messages=messages)
        answer = "".join(block.text for block in response.content if block.type == "text")
        asked = httpx2.post(f"{task.base_url}/harness/user", json={"answer": answer})
        asked.raise_for_status()
        turn = asked.json()["turn"]
        if turn is None:
            return answer
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": turn}]
