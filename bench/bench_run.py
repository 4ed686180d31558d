"""Benchmark: `harness run` of a cheap scripted scenario (one tool call, then the answer), as a user
runs it, each measurement a fresh process.

- memory: peak RSS of 1,000 runs beside 10,000 (the aim: within 1.3x, a finished run costs nothing
  more to keep);
- -j: N runs (default 1,000) with -j 1 and with -j 2, wall and CPU, and the ratio of the medians, of
  the whole command and of its runs alone (less the start-up floor, 1 run; the aim: at least 1.7x on
  2 cores), and that ratio round by round; beside them, two -j 1 commands at once of half the runs
  each, processes that share nothing: what this machine's two cores give at most (on a shared virtual
  machine, well under 2x), so that a -j 2 short of the aim tells the harness's loss from the host's;
- per-run overhead: (the median of N runs at -j 1 - that of 1 run) / (N - 1), wall and CPU, beside
  inspect_ai's mockllm per sample (23.2 ms when issue 13 was filed; `--inspect PYTHON` measures it
  again with a Python that has inspect_ai, in a virtualenv of its own since it is no dependency here:
  `python3 -m venv .venv-inspect && .venv-inspect/bin/pip install inspect-ai`).

The peer's samples do what a run of the scenario does: its mock model asks for the tool, the tool
answers, the model answers, a scorer checks the answer, the log is written; one at a time, no cache.
Its mock model is given its answers with their usage: left to count the tokens itself, mockllm loads
tiktoken's encoding, which tiktoken downloads at run time, so offline every sample errors at once
(the eval still exits 0): that is how 0.06 ms a sample was once measured. The script exits non-zero
unless every sample completed, so a failing eval can never pass for a fast one.

Prints min / median / max over the repetitions; the measurements of a section alternate, so a busy
machine weighs on both sides alike.

    .venv/bin/python bench/bench_run.py [--repeat 5] [--runs 1000] [--memory 1000,10000] [--skip memory]
        [--inspect .venv-inspect/bin/python]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _measure import Sample, measure_process, measure_processes, row, spread

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
import json, sys
from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolError, tool

ORDERS = {"O1": {"status": "delivered"}}

@tool
def lookup_order():
    async def execute(order_id: str) -> str:
        \"\"\"Look up an order.

        Args:
            order_id: The order's id.
        \"\"\"
        if order_id not in ORDERS:
            raise ToolError("order not found")
        return json.dumps(ORDERS[order_id])
    return execute

def answer(messages, tools, tool_choice, config):
    # The scenario's script: the tool first, then the answer once the tool has answered.
    if messages[-1].role == "tool":
        output = ModelOutput.from_content("mockllm/model", "Order O1 was delivered.")
    else:
        output = ModelOutput.for_tool_call("mockllm/model", "lookup_order", {"order_id": "O1"})
    output.usage = ModelUsage(input_tokens=12, output_tokens=8, total_tokens=20)
    return output

@task
def lookup(n: int):
    dataset = [Sample(id=i, input="Where is order O1?", target="delivered") for i in range(n)]
    return Task(dataset=dataset, solver=[use_tools(lookup_order()), generate()], scorer=includes())

n = int(sys.argv[1])
model = get_model("mockllm/model", custom_outputs=answer)
[log] = eval(lookup(n), model=model, display="none", log_dir=sys.argv[2], max_samples=1)
results = log.results
done = results.completed_samples if results is not None else 0
accuracy = results.scores[0].metrics["accuracy"].value if results is not None and results.scores else None
if log.status != "success" or done != n or accuracy != 1.0:
    why = log.error.message if log.error is not None else f"{done} of {n} samples completed, accuracy {accuracy}"
    sys.exit(f"inspect_ai eval {log.status}: {why}")
"""


def harness_run(root: Path, repeats: int, jobs: int, results: str = "results.jsonl") -> list[str]:
    return [sys.executable, "-m", "harness", "run", str(root / "lookup.yaml"), "--repeat", str(repeats),
            "-j", str(jobs), "--fresh", "--no-report", "--results", str(root / results)]


def timed(root: Path, repeats: int, jobs: int, sample: Sample) -> None:
    status = measure_process(harness_run(root, repeats, jobs), sample, cwd=root)
    assert status == 0, f"harness run --repeat {repeats} -j {jobs} exited {status}"
    lines = (root / "results.jsonl").read_bytes().count(b"\n")
    assert lines == repeats, f"{lines} results for {repeats} runs"


def timed_pair(root: Path, repeats: int, sample: Sample) -> None:
    """Two `-j 1` commands at once, of half the runs each (results files of their own): what this
    machine's two cores give two processes that share nothing, the most -j 2 could reach here."""
    halves = {"results-a.jsonl": repeats // 2, "results-b.jsonl": repeats - repeats // 2}
    statuses = measure_processes([harness_run(root, n, 1, name) for name, n in halves.items()], sample, cwd=root)
    assert statuses == [0, 0], f"two harness runs at once exited {statuses}"
    for name, n in halves.items():
        lines = (root / name).read_bytes().count(b"\n")
        assert lines == n, f"{lines} results for {n} runs in {name}"


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
    one, two, single, pair = Sample(), Sample(), Sample(), Sample()
    peer, peer_floor = Sample(), Sample()
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeat):
            timed(root, 1, 1, single)
            timed(root, runs, 1, one)
            timed(root, runs, 2, two)
            timed_pair(root, runs, pair)
            # In the same rounds as the harness's: a load that comes and goes weighs on both sides alike.
            if inspect is not None:
                inspect_eval(inspect, Path(folder), 1, peer_floor)
                inspect_eval(inspect, Path(folder), runs, peer)
    print(row("1 run, -j 1 (start-up floor)", single))
    print(row(f"{runs} runs, -j 1", one, single))
    print(row(f"{runs} runs, -j 2", two, single))
    print(row(f"{runs} runs, two -j 1 at once, half each", pair, single))
    # The command's start-up (imports, loading, planning) is the same at -j 1 and -j 2 and is not made in
    # parallel: the runs are what -j spreads, so their part is compared too (each side less the floor).
    print(f"-j 2 vs -j 1, {runs} runs: whole command {one.median_wall / two.median_wall:.2f}x faster by wall; "
          f"the runs alone (less the start-up floor) {runs_part(one, single) / runs_part(two, single):.2f}x "
          f"(aim: at least 1.7x); cpu {two.median_cpu / one.median_cpu:.2f}x")
    # A load that comes and goes moves whole rounds: the ratio within each round too.
    rounds = round_ratios(single, one, two)
    ceiling = round_ratios(single, one, pair)
    if rounds and ceiling:
        reached = runs_part(pair, single) / runs_part(two, single)
        print(f"  the runs alone, round by round: -j 2 {spread(rounds, 'x')}; two -j 1 at once (this machine's "
              f"ceiling for -j 2) {spread(ceiling, 'x')}; -j 2 reaches {reached:.2f} of the ceiling (medians)")
    overhead = runs_part(one, single) / (runs - 1)
    cpu = (one.median_cpu - single.median_cpu) / (runs - 1)
    print(f"per-run overhead at -j 1: {overhead * 1000:.2f} ms wall, {cpu * 1000:.2f} ms cpu (medians, less the floor)")
    if inspect is None:
        print(f"  vs inspect_ai mockllm per sample {INSPECT_OLD_MS} ms (measured before, not here): "
              f"{overhead * 1000 / INSPECT_OLD_MS:.2f}x by wall, {cpu * 1000 / INSPECT_OLD_MS:.2f}x by cpu "
              "(aim: at most 0.2x)")
        return
    print(row("inspect_ai mockllm, 1 sample (its floor)", peer_floor))
    print(row(f"inspect_ai mockllm, {runs} samples", peer, peer_floor))
    peer_wall = runs_part(peer, peer_floor) / (runs - 1)
    peer_cpu = (peer.median_cpu - peer_floor.median_cpu) / (runs - 1)
    print(f"  inspect_ai per sample: {peer_wall * 1000:.2f} ms wall, {peer_cpu * 1000:.2f} ms cpu "
          "(medians, less its floor)")
    print(f"  vs inspect_ai mockllm per sample, measured in the same rounds: {overhead / peer_wall:.2f}x by wall, "
          f"{cpu / peer_cpu:.2f}x by cpu (aim: at most 0.2x)")


def round_ratios(floor: Sample, slow: Sample, fast: Sample) -> list[float]:
    """Round by round, how much faster `fast`'s runs were than `slow`'s, each less that round's floor;
    a round whose runs took no longer than its floor measured nothing and is left out."""
    return [(s - f) / (q - f) for f, s, q in zip(floor.wall, slow.wall, fast.wall, strict=True)
            if s > f and q > f]


def runs_part(sample: Sample, floor: Sample) -> float:
    """The median wall of `sample` less that of the start-up floor: what its runs took."""
    return max(sample.median_wall - floor.median_wall, 1e-9)


def inspect_eval(python: str, folder: Path, samples: int, sample: Sample) -> None:
    """One eval of the peer task with `samples` samples, a process measured as `harness run` is."""
    script = folder / "lookup_task.py"
    if not script.exists():
        script.write_text(textwrap.dedent(INSPECT_TASK), encoding="utf-8")
    errors = folder / "stderr.txt"
    with errors.open("w") as stderr:
        status = measure_process([python, str(script), str(samples), str(folder)], sample, stderr=stderr)
    if status != 0:
        raise SystemExit(f"inspect_ai eval of {samples} samples failed: {errors.read_text()[-400:]}")


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
