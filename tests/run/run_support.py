"""Scenario files written to a throwaway project (scenarios/ + cassettes/) for the run tests."""

from __future__ import annotations

from pathlib import Path

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


def crashing_agent(client: object, task: object) -> str:
    """An agent under test that fails outright, to show a crash is a result and not a harness error."""
    raise RuntimeError("the agent fell over")
