"""Benchmark of `harness report` on a results file of N runs (default 10,000), and of its page in Chromium.

The file is made of real results lines: the shipped scenarios run by `harness run` (scripted, in
four models and two efforts), their lines repeated with new repeat numbers up to N, so reading pays
for what a real file holds (each exchange's body stored as its raw text, parsed again on read).

Build: `harness report RESULTS` as a user runs it (reading the results file included), in one process
and in two (`HARNESS_REPORT_PROCESSES`), beside the floor of parsing that file line by line with
`json.loads`; wall, CPU (both processes') and peak RSS (the larger process's). Page: headless
Chromium opens the page; "usable" is DOMContentLoaded (the page's script runs last, lists the first
rows and wires the filters); then a status filter and a text filter, timed in the page through the
layout they cause, and opening the last run (its details inflated and drawn by the page's script);
each beside the same on the report of one run, its floor. Also the page's size and element count, and for one
run of 500 steps the page size against the trace's unique content (near-constant: the page grows
with content, not steps x history). Figures only; nothing here asserts a timing.

    .venv/bin/python bench/bench_report.py [--runs 10000] [--repeat 5] [--no-browser] [--baseline SRC]

With --baseline, the build of another version of the harness (its source tree, e.g. main's from
`git archive main | tar -x -C SRC`) is measured beside this one on the same file, the two taking
turns, so a change's before and after are figures of the same minutes on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _measure import Sample, measure, measure_process, row, spread

from harness.cost import cost_of_trace
from harness.report import build_report
from harness.report._view import unique_content_size
from harness.results import RunResult, Usage, read_results
from harness.trace import Exchange, build_trace

ROOT = Path(__file__).resolve().parent.parent
FLOOR = "import json, sys\nwith open(sys.argv[1], encoding='utf-8') as f:\n    for line in f: json.loads(line)"
# The page's own work after an event, through the layout it causes (what a person waits for).
TIMED = """(async () => {{ const t = performance.now(); {action};
  document.body.getBoundingClientRect(); await new Promise(r => requestAnimationFrame(() => r()));
  return performance.now() - t; }})()"""
# Opening a run draws it from the page's data (inflated and rendered by the page's script).
OPEN = """(async () => {{ const t = performance.now(); location.hash = '#run-{n}';
  while (!document.querySelector('#run-{n} .run-body[data-rendered]'))
    await new Promise(r => requestAnimationFrame(() => r()));
  document.body.getBoundingClientRect(); return performance.now() - t; }})()"""
STATUS_FILTER = ("const s = document.getElementById('filter-status'); s.value = {value!r}; "
                 "s.dispatchEvent(new Event('change'))")
TEXT_FILTER = ("const box = document.getElementById('filter-text'); box.value = {value!r}; "
               "box.dispatchEvent(new Event('input'))")


MODELS = ["claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5", "claude-fable-5"]
BENCH_EFFORTS = ["low", "high"]


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
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": f"Step {i}: next page.",
                                          "signature": "sig" * 10},
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
    return RunResult(run_id=f"{scenario}[{model}-{effort}-r{repeat}]", scenario=scenario,
                     scenario_path=f"{scenario}.yaml",
                     model=model, effort=effort, repeat=repeat, mode="replay", status=status,  # type: ignore[arg-type]
                     outcome=None, started_at="2026-11-30T09:00:00Z", duration_s=steps * 0.8, steps=len(trace.calls),
                     usage=total, cost_usd=cost_of_trace(trace), trace=trace)


def real_runs(made: Path) -> int:
    """The shipped scenarios run by `harness run` in every model and two efforts, scripted (offline, any
    model): the lines as the runner writes them, each exchange's body as its raw text, which reading parses
    again. Returns how many runs it made."""
    command = [*harness_command(), "run", str(ROOT / "scenarios"), "--mode", "scripted", "--results", str(made),
               "--fresh", "--no-report", "-j", "2"]
    for model in MODELS:
        command += ["--model", model]
    for effort in BENCH_EFFORTS:
        command += ["--effort", effort]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: a run failed its checks, still a run the report shows
        raise SystemExit(f"harness run of the shipped scenarios failed (exit {done.returncode}):\n{done.stderr}")
    return sum(1 for _ in made.open("rb"))


def multiply(made: Path, results: Path, runs: int) -> None:
    """`runs` lines from the made runs' lines, taken in turn: each copy renumbers its runs' repeat (and the
    run id that names it) past the last copy's, so every line is a run of its own; the rest of the line is
    the runner's, byte for byte (a line dumped again as `harness run` dumps it reads back the same, checked
    on the first copy)."""
    lines = made.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    width = 1 + max(record["repeat"] for record in records)
    ids: set[str] = set()
    with results.open("w", encoding="utf-8") as out:
        for n in range(runs):
            copy, index = divmod(n, len(records))
            record = records[index]
            if copy == 0:
                again = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
                assert again.encode() == lines[index], "a runner's line does not dump back the same"
            repeat = copy * width + record["repeat"]
            suffix = f"-r{record['repeat']}]"
            assert record["run_id"].endswith(suffix), record["run_id"]
            run_id = record["run_id"].removesuffix(suffix) + f"-r{repeat}]"
            ids.add(run_id)
            out.write(json.dumps({**record, "run_id": run_id, "repeat": repeat},
                                 ensure_ascii=False, separators=(",", ":")) + "\n")
    # A run id written twice counts once, its last line: the report would hold fewer runs than the file has lines.
    assert len(ids) == runs, "run ids repeat"


def harness_command() -> list[str]:
    script = shutil.which("harness", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "harness"]


def bench_build(results: Path, out: Path, repeat: int, baseline: Path | None = None) -> None:
    """The build in one process and in two (`HARNESS_REPORT_PROCESSES`, which `harness report` otherwise
    picks by the files' size and the machine's load), beside the baseline's and the floor."""
    floor, before = Sample(), Sample()
    builds = {processes: Sample() for processes in ("1", "2")}
    command = [*harness_command(), "report", str(results), "-o", str(out)]
    # Run from the results' folder, not from a checkout: a baseline's worker (a harness before 6871d03)
    # imported the harness of the directory it was started in, this one's, and died on its messages.
    where = results.parent
    for _ in range(repeat):
        measure_process([sys.executable, "-c", FLOOR, str(results)], floor)
        if baseline is not None:
            # Its package first on the path: the same interpreter and dependencies run the other source.
            env = {**os.environ, "PYTHONPATH": str(baseline)}
            if measure_process(command, before, env=env, cwd=where) != 0:
                raise SystemExit(f"harness report {results} of {baseline} failed; run it by hand to see why")
        for processes, build in builds.items():
            if measure_process(command, build, env={**os.environ, "HARNESS_REPORT_PROCESSES": processes},
                               cwd=where) != 0:
                raise SystemExit(f"harness report {results} failed; run it by hand to see why")
    print(row("floor: json.loads every line", floor))
    if baseline is not None:
        print(row(f"harness report of {baseline}", before, floor))
    for processes, build in builds.items():
        print(row(f"harness report, {processes} process{'es' if processes != '1' else ''}", build, floor))
    if baseline is not None:
        for processes, build in builds.items():
            print(f"{f'this ({processes}) vs the baseline':<40} wall {build.median_wall / before.median_wall:.2f}x, "
                  f"cpu {build.median_cpu / before.median_cpu:.2f}x (medians)")


def bench_page(page: Path, runs: int, floor_page: Path, repeat: int) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "report"))
    from report_browser import chromium, new_page, unavailable

    why_not = unavailable()
    if why_not is not None:
        print(f"page: skipped, {why_not}")
        return
    figures = ("usable (DOMContentLoaded)", "load event", "status filter", "text filter", "open a run")
    taken: dict[str, dict[str, list[float]]] = {"page": {f: [] for f in figures}, "floor": {f: [] for f in figures}}
    elements = 0
    with chromium() as browser_process, new_page(browser_process) as (browser, _):
        for _ in range(repeat):
            for label, target, last in (("floor", floor_page, 1), ("page", page, runs)):
                browser.goto("about:blank")
                browser.goto(target.as_uri())
                timing = browser.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0];"
                                          " return [n.domContentLoadedEventEnd, n.loadEventEnd]; })()")
                got = taken[label]
                got["usable (DOMContentLoaded)"].append(timing[0] / 1000)
                got["load event"].append(timing[1] / 1000)
                if label == "page":
                    elements = browser.evaluate("document.getElementsByTagName('*').length")
                for figure, action in (("status filter", STATUS_FILTER.format(value="failed")),
                                       ("reset", STATUS_FILTER.format(value="")),
                                       ("text filter", TEXT_FILTER.format(value="scenario-3"))):
                    ms = browser.evaluate(TIMED.format(action=action))
                    got.get(figure, []).append(ms / 1000)
                got["open a run"].append(browser.evaluate(OPEN.format(n=last)) / 1000)
    print(f"page of {runs:,} runs vs floor (the report of 1 run), each opened in Chromium {repeat} times:")
    for figure in figures:
        page_times, floor_times = taken["page"][figure], taken["floor"][figure]
        ratio = statistics.median(page_times) / statistics.median(floor_times)
        print(f"  {figure:<28} {spread(page_times)}   floor {spread(floor_times)}   {ratio:.2f}x")
    print(f"page: {page.stat().st_size / 1e6:.1f} MB, {elements:,} elements")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (at least 5)")
    parser.add_argument("--no-browser", action="store_true", help="skip the page's timings in Chromium")
    parser.add_argument("--baseline", type=Path, metavar="SRC",
                        help="source tree of another harness version whose build is measured beside this one's")
    args = parser.parse_args()
    repeat = max(args.repeat, 5)
    if args.baseline is not None:
        args.baseline = args.baseline.resolve()
        if not (args.baseline / "harness" / "__init__.py").is_file():
            raise SystemExit(f"--baseline {args.baseline}: no harness package there (give a source tree's root)")
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        made = real_runs(Path(tmp) / "real.jsonl")
        print(f"{made:,} runs of the shipped scenarios made by harness run ({len(MODELS)} models x "
              f"{len(BENCH_EFFORTS)} efforts, scripted)")
        multiply(Path(tmp) / "real.jsonl", results, args.runs)
        print(f"{args.runs:,} runs (each a made run's line, its repeat renumbered), results file "
              f"{results.stat().st_size / 1e6:.1f} MB; min / median / max over {repeat} runs")
        bench_build(results, Path(tmp) / "report", repeat, args.baseline)
        if not args.no_browser:
            one = build_report(read_results(Path(tmp) / "real.jsonl")[:1], Path(tmp) / "one")
            bench_page(Path(tmp) / "report" / "index.html", args.runs, one, repeat)
        long_run = make_run(0, 500, "claude-opus-4-8", "high", "long", 0)
        sample = Sample()
        for _ in range(repeat):
            page = measure(lambda: build_report([long_run], Path(tmp) / "long"), sample)
        assert long_run.trace is not None
        unique = unique_content_size(long_run.trace)
        print(f"1 run x 500 steps: build {spread(sample.wall)}, page {page.stat().st_size / 1e6:.2f} MB, "
              f"page/unique content {page.stat().st_size / unique:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
