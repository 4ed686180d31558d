"""Benchmark: loading and planning a scenario with a 1,000-row dataset, beside the floor of planning
the same scenario with 1,000 repeats and no templates (the same number of planned runs).

The dataset run renders every templated key of every case with Jinja and validates each rendered
case as a scenario; the floor validates once and plans 1,000 cells. Prints min / median / max over
the repetitions and the ratio of medians.

    .venv/bin/python bench/bench_cases.py [--cases 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _measure import Sample, measure, row

from harness.run import plan_one
from harness.scenario import load_scenario

SCENARIO = """name: refunds
prompt: "Customer {{ customer }} wants a refund of {{ amount }} dollars for order {{ order }}."
system: "You are a support agent for {{ customer }}."
tools:
  - name: get_customer
    input_schema: {type: object, properties: {customer_id: {type: string}}}
    fixture: {output: {customer_id: "{{ customer }}"}}
  - name: process_refund
    input_schema: {type: object, properties: {order_id: {type: string}, amount: {type: number}}}
    fixture: {output: {refund_id: "R-{{ order }}"}}
script:
  - tool_use: {name: get_customer, input: {customer_id: "{{ customer }}"}}
  - tool_use: {name: process_refund, input: {order_id: "{{ order }}", amount: "{{ amount }}"}}
  - text: "Refund R-{{ order }} of {{ amount }} dollars processed."
score:
  - tool_calls: {calls: [{name: process_refund, input: {order_id: "{{ order }}"},
                          match: {amount: {number: "{{ amount }}"}}}]}
  - final_text: {numeric: "{{ amount }}"}
expect: {min_score: 1, final_text: {contains: "R-{{ order }}"}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        rows = (json.dumps({"id": f"c{i}", "customer": f"C{i}", "order": f"O{i}", "amount": i + 0.5})
                for i in range(args.cases))
        (root / "cases.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
        (root / "cases.yaml").write_text(SCENARIO + "dataset: cases.jsonl\n", encoding="utf-8")
        plain = SCENARIO.replace("{{ customer }}", "C1").replace("{{ order }}", "O1").replace('"{{ amount }}"', "1.5")
        plain = plain.replace("{{ amount }}", "1.5")
        (root / "plain.yaml").write_text(plain + f"matrix: {{repeats: {args.cases}}}\n", encoding="utf-8")
        cases, floor = Sample(), Sample()
        for _ in range(args.repeat):
            runs = measure(lambda: plan_one(load_scenario(root / "cases.yaml")), cases)
            assert len(runs) == args.cases
            runs = measure(lambda: plan_one(load_scenario(root / "plain.yaml")), floor)
            assert len(runs) == args.cases
    print(row(f"{args.cases} runs, no templates (floor)", floor))
    print(row(f"{args.cases} cases from a dataset", cases, floor))


if __name__ == "__main__":
    main()
