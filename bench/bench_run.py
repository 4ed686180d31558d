"""Benchmark: `harness run` of a cheap scripted scenario (one tool call, then the answer), as a user
runs it, each measurement a fresh process.

- memory: peak RSS of 1,000 runs beside 10,000 (the aim: within 1.3x, a finished run costs nothing
  more to keep);
- -j: N runs (default 1,000) with -j 1 and with -j 2, wall and CPU, and the ratio of the medians, of
  the whole command and of its runs alone (less the start-up floor, 1 run; the aim: at least 1.7x on
  2 cores);
- per-run overhead: (the median of N runs at -j 1 - that of 1 run) / (N - 1), wall and CPU, beside
  inspect_ai's mockllm per sample (23.2 ms measured before on this machine; `--inspect PYTHON`
  measures it again with a Python that has inspect_ai).

Prints min / median / max over the repetitions; the measurements of a section alternate, so a busy
machine weighs on both sides alike.

    .venv/bin/python bench/bench_run.py [--repeat 5] [--runs 1000] [--memory 1000,10000] [--skip memory]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _measure import Sample, measure, measure_process, row

SCENARIO = """name: lookup
prompt: Where is order O1?
tools:
  - name: lookup_order
    input_schema: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
    fixture:
      match:
        - {input: {order_id: O1}, output: {status: delivered}}
      error: order not found
expect: {outcome: completed, final_text: {contains: delivered}}
mode: scripted
script:
  - tool_use: {name: lookup_order, input: {order_id: O1}}
  - text: Order O1 was delivered.
"""
INSPECT_OLD_MS = 23.2
"""inspect_ai's mockllm, per sample, as measured when issue 13 was filed (the peer figure)."""

INSPECT_TASK = """
from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
import sys, time

@task
def lookup(n: int):
    dataset = [Sample(id=i, input="Where is order O1?", target="delivered") for i in range(n)]
    return Task(dataset=dataset, solver=generate(), scorer=includes())

n = int(sys.argv[1])
start = time.perf_counter()
eval(lookup(n), model="mockllm/model", display="none", log_dir=sys.argv[2], max_samples=1)
print(time.perf_counter() - start)
"""


def harness_run(root: Path, repeats: int, jobs: int) -> list[str]:
    return [sys.executable, "-m", "harness", "run", str(root / "lookup.yaml"), "--repeat", str(repeats),
            "-j", str(jobs), "--fresh", "--no-report", "--results", str(root / "results.jsonl")]


def timed(root: Path, repeats: int, jobs: int, sample: Sample) -> None:
    status = measure_process(harness_run(root, repeats, jobs), sample, cwd=root)
    assert status == 0, f"harness run --repeat {repeats} -j {jobs} exited {status}"
    lines = (root / "results.jsonl").read_bytes().count(b"\n")
    assert lines == repeats, f"{lines} results for {repeats} runs"


def memory(root: Path, sizes: list[int], repeat: int) -> None:
    samples = {size: Sample() for size in sizes}
    for _ in range(repeat):
        for size in sizes:
            timed(root, size, 1, samples[size])
    for size in sizes:
        print(row(f"{size} runs, -j 1", samples[size]))
    small, large = (statistics.median(samples[size].peak_kib) for size in (sizes[0], sizes[-1]))
    print(f"peak RSS, {sizes[-1]} runs vs {sizes[0]}: {large / small:.2f}x (aim: at most 1.3x)")


def jobs(root: Path, runs: int, repeat: int, inspect: str | None) -> None:
    one, two, single = Sample(), Sample(), Sample()
    for _ in range(repeat):
        timed(root, 1, 1, single)
        timed(root, runs, 1, one)
        timed(root, runs, 2, two)
    print(row("1 run, -j 1 (start-up floor)", single))
    print(row(f"{runs} runs, -j 1", one, single))
    print(row(f"{runs} runs, -j 2", two, single))
    # The command's start-up (imports, loading, planning) is the same at -j 1 and -j 2 and is not made in
    # parallel: the runs are what -j spreads, so their part is compared too (each side less the floor).
    print(f"-j 2 vs -j 1, {runs} runs: whole command {one.median_wall / two.median_wall:.2f}x faster by wall; "
          f"the runs alone (less the start-up floor) {runs_part(one, single) / runs_part(two, single):.2f}x "
          f"(aim: at least 1.7x); cpu {two.median_cpu / one.median_cpu:.2f}x")
    overhead = runs_part(one, single) / (runs - 1)
    cpu = (one.median_cpu - single.median_cpu) / (runs - 1)
    print(f"per-run overhead at -j 1: {overhead * 1000:.2f} ms wall, {cpu * 1000:.2f} ms cpu (medians, less the floor)")
    peer = inspect_per_sample(inspect, runs, repeat) if inspect else None
    if peer is None:
        print(f"  vs inspect_ai mockllm per sample {INSPECT_OLD_MS} ms (measured before, not here): "
              f"{overhead * 1000 / INSPECT_OLD_MS:.2f}x by wall, {cpu * 1000 / INSPECT_OLD_MS:.2f}x by cpu "
              "(aim: at most 0.2x)")
    else:
        print(f"  vs inspect_ai mockllm per sample {peer * 1000:.2f} ms (measured here): {overhead / peer:.2f}x "
              "(aim: at most 0.2x)")


def runs_part(sample: Sample, floor: Sample) -> float:
    """The median wall of `sample` less that of the start-up floor: what its runs took."""
    return max(sample.median_wall - floor.median_wall, 1e-9)


def inspect_per_sample(python: str, runs: int, repeat: int) -> float | None:
    """inspect_ai's per-sample time with its mock model: (eval of `runs` samples - eval of 1) / (runs - 1)."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "lookup_task.py"
        script.write_text(textwrap.dedent(INSPECT_TASK), encoding="utf-8")
        many, single = Sample(), Sample()

        def eval_of(n: int, sample: Sample) -> None:
            argv = [python, str(script), str(n), folder]
            done = measure(lambda: subprocess.run(argv, capture_output=True, text=True), sample)
            if done.returncode != 0:
                raise SystemExit(f"inspect_ai eval failed: {done.stderr[-400:]}")

        for _ in range(repeat):
            eval_of(1, single)
            eval_of(runs, many)
        print(row("inspect_ai mockllm, 1 sample (its floor)", single))
        print(row(f"inspect_ai mockllm, {runs} samples", many, single))
        print(f"  inspect_ai per sample: {(many.median_wall - single.median_wall) / (runs - 1) * 1000:.2f} ms wall, "
              f"{(many.median_cpu - single.median_cpu) / (runs - 1) * 1000:.2f} ms cpu (medians, less its floor)")
        return (many.median_wall - single.median_wall) / (runs - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1000, help="runs of the -j comparison")
    parser.add_argument("--memory", default="1000,10000", help="run counts whose peak RSS is compared")
    parser.add_argument("--skip", action="append", default=[], choices=("memory", "jobs"))
    parser.add_argument("--inspect", metavar="PYTHON", help="a Python with inspect_ai installed, to measure the peer")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "lookup.yaml").write_text(SCENARIO, encoding="utf-8")
        if "jobs" not in args.skip:
            jobs(root, args.runs, args.repeat, args.inspect)
        if "memory" not in args.skip:
            memory(root, [int(n) for n in args.memory.split(",")], args.repeat)
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
