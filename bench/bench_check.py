"""Benchmark: `harness check` cost against trace size, beside the floor of merely parsing the JSON.

Writes vcrpy JSON cassettes of 10, 100, 1,000 and 5,000 calls (conversations of ten steps each,
with parallel tool calls and thinking), then times reading + checking each, and times
`json.loads` of the same file and of every body in it. Prints MB/s and the ratio to that floor.

    .venv/bin/python bench/bench_check.py [--sizes 10,100,1000,5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from harness._commands.check import check_file

STEPS_PER_THREAD = 10


def _conversation(thread: int) -> list[dict[str, Any]]:
    """One ten-step agent conversation as vcrpy interactions (JSON bodies)."""
    system = "You are a support agent. Use the tools."
    tools = [
        {"name": name, "description": f"{name} tool", "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}
        for name in ("get_customer", "lookup_order")
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Conversation {thread}: refund order {thread}."}]
    interactions = []
    for step in range(STEPS_PER_THREAD):
        last = step == STEPS_PER_THREAD - 1
        if last:
            content: list[dict[str, Any]] = [{"type": "text", "text": f"Done with {thread}. " * 20}]
            stop_reason = "end_turn"
        else:
            content = [
                {"type": "thinking", "thinking": "Let me look this up. " * 30, "signature": "EqQB" + "x" * 200},
                {"type": "text", "text": "Looking it up."},
                {"type": "tool_use", "id": f"toolu_{thread}_{step}_a", "name": "get_customer", "input": {"id": f"c{thread}"}},
                {"type": "tool_use", "id": f"toolu_{thread}_{step}_b", "name": "lookup_order", "input": {"id": f"o{step}"}},
            ]
            stop_reason = "tool_use"
        request = {"model": "claude-sonnet-5", "max_tokens": 4096, "system": system, "tools": tools, "messages": list(messages)}
        response = {
            "id": f"msg_{thread}_{step}", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 100 + 50 * step, "output_tokens": 80, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }
        interactions.append({
            "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": json.dumps(request),
                        "headers": {"content-type": ["application/json"], "x-api-key": ["[REDACTED]"]}},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {"content-type": ["application/json"]},
                         "body": {"string": json.dumps(response)}},
        })
        messages.append({"role": "assistant", "content": content})
        if not last:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{thread}_{step}_a", "content": json.dumps({"customer": thread})},
                {"type": "tool_result", "tool_use_id": f"toolu_{thread}_{step}_b", "content": json.dumps({"order": step, "total": 42})},
            ]})
    return interactions


def write_cassette(path: Path, calls: int) -> None:
    interactions: list[dict[str, Any]] = []
    thread = 0
    while len(interactions) < calls:
        interactions.extend(_conversation(thread))
        thread += 1
    path.write_text(json.dumps({"version": 1, "interactions": interactions[:calls]}))


def parse_floor(path: Path) -> None:
    """The floor: parse the file and every body in it, nothing else."""
    data = json.loads(path.read_text())
    for interaction in data["interactions"]:
        json.loads(interaction["request"]["body"])
        json.loads(interaction["response"]["body"]["string"])


def check(path: Path) -> int:
    """What `harness check FILE` does for one file: read, rebuild threads, run every rule."""
    return len(check_file(str(path), disabled=[], whole_run=False).findings)


def best_of(fn: Any, path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'calls':>6} {'MB':>8} {'parse s':>9} {'check s':>9} {'check MB/s':>11} {'ratio':>6} {'s/call x1e3':>11} findings")
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for calls in sizes:
            path = Path(tmp) / f"bench-{calls}.json"
            write_cassette(path, calls)
            mb = path.stat().st_size / 1e6
            floor = best_of(parse_floor, path, args.repeat)
            checked = best_of(check, path, args.repeat)
            findings = check(path)
            rows.append((calls, checked))
            print(f"{calls:>6} {mb:>8.2f} {floor:>9.4f} {checked:>9.4f} {mb / checked:>11.1f} {checked / floor:>6.2f} {1e3 * checked / calls:>11.3f} {findings}")
        if len(rows) > 1:
            (c0, t0), (c1, t1) = rows[1] if len(rows) > 2 else rows[0], rows[-1]
            print(f"growth: {c1 / c0:.0f}x the calls took {t1 / t0:.1f}x the time (linear would be {c1 / c0:.0f}x)")


if __name__ == "__main__":
    main()
