"""Benchmark: `harness check` of VCR.py cassettes, YAML and JSON, beside the floor of merely loading them.

Writes cassettes of 10, 100 and 1,000 calls (conversations of ten steps each, with parallel tool
calls and thinking), as VCR.py writes them: YAML through PyYAML's dumper, or JSON. Then, in this
process and interleaved so a busy machine slows them alike, times reading + checking each file
beside its floor measured in the same run: PyYAML's CSafeLoader load of the YAML file, `json.loads`
of the JSON file (and, for reference, of every body in it), and that floor again with the garbage
collector paused as `harness check` pauses it while it reads (a stock load with it running pays for
collections that grow faster than the file: the paused floor is the loader's own work). Each
repetition loads a small file many times in a row, the same number of times on every side
(`--sample-s`), and counts the mean of one: a 1 ms load timed alone measures the busy machine's
scheduling more than the load. Last, each in a fresh process, the peak RSS of `harness check FILE`
beside that of the floor, against the file's size.

    .venv/bin/python bench/bench_check.py [--sizes 10,100,1000] [--repeat 5] [--formats yaml,json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from _measure import Sample, measure, measure_process, row, spread, times_for

from harness._commands.check import check_file
from harness.trace._readers import gc_paused

STEPS_PER_THREAD = 10


def _conversation(thread: int) -> list[dict[str, Any]]:
    """One ten-step agent conversation as vcrpy interactions (JSON bodies)."""
    system = "You are a support agent. Use the tools."
    tools = [
        {"name": name, "description": f"{name} tool",
         "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}
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
                {"type": "tool_use", "id": f"toolu_{thread}_{step}_a", "name": "get_customer",
                 "input": {"id": f"c{thread}"}},
                {"type": "tool_use", "id": f"toolu_{thread}_{step}_b", "name": "lookup_order",
                 "input": {"id": f"o{step}"}},
            ]
            stop_reason = "tool_use"
        request = {"model": "claude-sonnet-5", "max_tokens": 4096, "system": system, "tools": tools,
                   "messages": list(messages)}
        response = {
            "id": f"msg_{thread}_{step}", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 100 + 50 * step, "output_tokens": 80, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0},
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
                {"type": "tool_result", "tool_use_id": f"toolu_{thread}_{step}_a",
                 "content": json.dumps({"customer": thread})},
                {"type": "tool_result", "tool_use_id": f"toolu_{thread}_{step}_b",
                 "content": json.dumps({"order": step, "total": 42})},
            ]})
    return interactions


def interactions_of(calls: int) -> list[dict[str, Any]]:
    interactions: list[dict[str, Any]] = []
    thread = 0
    while len(interactions) < calls:
        interactions.extend(_conversation(thread))
        thread += 1
    return interactions[:calls]


def write_cassette(path: Path, calls: int) -> None:
    """A cassette as VCR.py writes it: `yaml.dump` with libyaml's dumper, or `json.dumps`."""
    cassette = {"version": 1, "interactions": interactions_of(calls)}
    if path.suffix == ".json":
        path.write_text(json.dumps(cassette), encoding="utf-8")
    else:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        path.write_text(yaml.dump(cassette, Dumper=dumper), encoding="utf-8")


def load_floor(path: Path) -> None:
    """The floor: load the file with the fastest stock loader, nothing else. What it loaded is let go
    inside the measurement, as `check_file` lets go of its trace (freeing is part of either's cost)."""
    with path.open(encoding="utf-8") as handle:
        if path.suffix == ".json":
            json.load(handle)
        else:
            yaml.load(handle, Loader=yaml.CSafeLoader)


def load_floor_paused(path: Path) -> None:
    """The floor with Python's cyclic garbage collector paused, as `check_file` pauses it while it reads
    (`gc_paused`): the loader's own work, without the collections its many new objects set off, which
    grow faster than the file (what a caller who paused it too would see)."""
    with gc_paused():
        load_floor(path)


def bodies_floor(path: Path) -> None:
    """A JSON file and every body in it parsed, nothing else (what the JSON aim was first taken against)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for interaction in data["interactions"]:
        json.loads(interaction["request"]["body"])
        json.loads(interaction["response"]["body"]["string"])


def check(path: Path) -> int:
    """What `harness check FILE` does for one file: read, rebuild threads, run every rule."""
    return len(check_file(str(path), disabled=[], whole_run=False).findings)


FLOOR_SCRIPT = ("import json, sys, yaml; p = sys.argv[1]; h = open(p, encoding='utf-8'); "
                "json.load(h) if p.endswith('.json') else yaml.load(h, Loader=yaml.CSafeLoader)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="calls per cassette, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (at least 5)")
    parser.add_argument("--formats", default="yaml,json", help="yaml, json or both")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS processes")
    parser.add_argument("--sample-s", type=float, default=0.05,
                        help="seconds of floor loads each repetition runs in a row (a small file is loaded many "
                        "times per repetition, the same number of times on every side; default 0.05)")
    args = parser.parse_args()
    repeat = max(args.repeat, 5)
    sizes = [int(s) for s in args.sizes.split(",")]
    script = shutil.which("harness", path=str(Path(sys.executable).parent))
    harness = [script] if script else [sys.executable, "-m", "harness"]
    print(f"min / median / max over {repeat} runs; every ratio is to the floor measured beside it")
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in args.formats.split(","):
            # What each process holds before any interaction: the interpreter and its imports. The
            # peak above it is what reading the file cost, the figure that grows with the file.
            empty = Path(tmp) / f"empty.{suffix}"
            write_cassette(empty, 0)
            started = {"floor": Sample(), "check": Sample()}
            if not args.no_rss:
                for _ in range(repeat):
                    measure_process([sys.executable, "-c", FLOOR_SCRIPT, str(empty)], started["floor"])
                    measure_process([*harness, "check", str(empty)], started["check"])
            for calls in sizes:
                path = Path(tmp) / f"bench-{calls}.{suffix}"
                write_cassette(path, calls)
                mb = path.stat().st_size / 2**20
                floor, paused, checked, bodies = Sample(), Sample(), Sample(), Sample()
                findings = check(path)
                times = times_for(partial(load_floor, path), args.sample_s)
                for _ in range(repeat):
                    measure(partial(load_floor, path), floor, times=times)
                    measure(partial(load_floor_paused, path), paused, times=times)
                    measure(partial(check, path), checked, times=times)
                    if suffix == "json":
                        measure(partial(bodies_floor, path), bodies, times=times)
                label = (f"{suffix} {calls} calls ({mb:.2f} MiB, {findings} findings; each figure the mean of "
                         f"{times} run(s) in a row)")
                floor_name = "CSafeLoader load" if suffix != "json" else "json.load"
                print(f"{label}:")
                print(row(f"  floor: {floor_name}", floor))
                if bodies.wall:
                    print(row("  json.loads file + every body", bodies, floor))
                print(row("  floor, garbage collector paused", paused, floor))
                print(row("  harness check (in process)", checked, floor))
                wall, cpu = checked.median_wall / paused.median_wall, checked.median_cpu / paused.median_cpu
                print(f"  {'':<38} check vs the paused floor: wall {wall:.2f}x, cpu {cpu:.2f}x")
                if bodies.wall:
                    wall, cpu = checked.median_wall / bodies.median_wall, checked.median_cpu / bodies.median_cpu
                    print(f"  {'':<38} check vs file + bodies: wall {wall:.2f}x, cpu {cpu:.2f}x")
                if args.no_rss:
                    continue
                floor_rss, check_rss = Sample(), Sample()
                for _ in range(repeat):
                    measure_process([sys.executable, "-c", FLOOR_SCRIPT, str(path)], floor_rss)
                    measure_process([*harness, "check", str(path)], check_rss)
                for name, sample, base in ((f"floor process: {floor_name}", floor_rss, started["floor"]),
                                           ("harness check FILE", check_rss, started["check"])):
                    peak = [k / 1024 for k in sample.peak_kib]
                    above = min(peak) - min(base.peak_kib) / 1024
                    print(f"  {name:<38} peak RSS {spread(peak, 'MiB')}  = {min(peak) / mb:.1f}x the file (min); "
                          f"{above:.1f} MiB above an empty cassette's = {above / mb:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
