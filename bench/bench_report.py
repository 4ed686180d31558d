"""Benchmark of `harness report`: a matrix of 1,000 runs, and one run of 500 steps.

Prints render time, page size, and page size divided by the traces' unique content (each step's
new messages and response counted once): near-constant means the page grows with content, not
with steps x history. Figures only; nothing here asserts a timing.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.cost import cost_of_trace
from harness.report import build_report
from harness.report._view import unique_content_size
from harness.results import RunResult, Usage
from harness.trace import Exchange, build_trace

MODELS = ["claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5", "claude-fable-5"]
EFFORTS = ["low", "medium", "high", "xhigh", "max"]


def _exchange(index: int, messages: list[dict[str, Any]], content: list[dict[str, Any]], model: str, stop: str,
              usage: dict[str, Any]) -> Exchange:
    return Exchange(index=index, method="POST", url="https://api.anthropic.com/v1/messages", request_headers={},
                    request_body={"model": model, "max_tokens": 4096, "system": "You are a careful agent.",
                                  "tools": [{"name": "read_page", "input_schema": {"type": "object"}}],
                                  "messages": list(messages)},
                    status=200, response_headers={},
                    response_body={"type": "message", "role": "assistant", "model": model, "content": content,
                                   "stop_reason": stop, "usage": usage},
                    started_at=1_760_000_000.0 + index, duration_s=0.8, thread_key="main")


def make_run(n: int, steps: int, model: str, effort: str, scenario: str, repeat: int) -> RunResult:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Task {n}: walk the catalogue and summarise it."}]
    exchanges = []
    for i in range(steps):
        last = i == steps - 1
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": f"Step {i}: next page.", "signature": "sig" * 10},
                                         {"type": "text", "text": f"Reading page {i}."}]
        if not last:
            content.append({"type": "tool_use", "id": f"toolu_{n}_{i}", "name": "read_page", "input": {"page": i}})
        usage = {"input_tokens": 200, "output_tokens": 60, "cache_creation_input_tokens": 300,
                 "cache_read_input_tokens": 1_000 + 400 * i}
        exchanges.append(_exchange(i, messages, content, model, "end_turn" if last else "tool_use", usage))
        messages += [{"role": "assistant", "content": content},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}_{i}",
                                                   "content": f"page {i}: " + "catalogue entry text " * 40}]}]
    trace = build_trace(exchanges, f"bench-{n}", whole_run=True)
    total = Usage()
    for call in trace.calls:
        total.input_tokens += call.usage["input_tokens"]
        total.output_tokens += call.usage["output_tokens"]
        total.cache_creation_input_tokens += call.usage["cache_creation_input_tokens"]
        total.cache_read_input_tokens += call.usage["cache_read_input_tokens"]
    status = "passed" if (n * 7) % 10 else "failed"
    return RunResult(run_id=f"{scenario}[{model}-{effort}-r{repeat}]", scenario=scenario, scenario_path=f"{scenario}.yaml",
                     model=model, effort=effort, repeat=repeat, mode="replay", status=status,  # type: ignore[arg-type]
                     outcome=None, started_at="2026-11-30T09:00:00Z", duration_s=steps * 0.8, steps=len(trace.calls),
                     usage=total, cost_usd=cost_of_trace(trace), trace=trace)


def measure(label: str, results: list[RunResult], out: Path) -> None:
    started = time.perf_counter()
    page = build_report(results, out)
    elapsed = time.perf_counter() - started
    size = page.stat().st_size
    unique = sum(unique_content_size(r.trace) for r in results if r.trace is not None)
    print(f"{label}: {elapsed:.2f}s, page {size / 1e6:.2f} MB, unique content {unique / 1e6:.2f} MB, "
          f"page/unique {size / unique:.2f}x")


def main() -> int:
    matrix = [make_run(n, 5, MODELS[n % 4], EFFORTS[(n // 4) % 5], f"scenario-{n % 10}", n // 200) for n in range(1000)]
    long_run = [make_run(0, 500, "claude-opus-4-8", "high", "long", 0)]
    with tempfile.TemporaryDirectory() as tmp:
        measure("1,000 runs x 5 steps", matrix, Path(tmp) / "matrix")
        measure("1 run x 500 steps", long_run, Path(tmp) / "long")
    return 0


if __name__ == "__main__":
    sys.exit(main())
