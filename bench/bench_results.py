"""Benchmark of the results file: bytes per line for the shipped scenarios, and reading it back.

Runs `harness run scenarios --mode replay` once (offline) into a temporary results file, prints its
size per line and how much of it is wire bodies, then times `read_results` of that file beside the
floor of `json.loads` of each line, min / median / max, wall and CPU.

    .venv/bin/python bench/bench_results.py [SCENARIOS] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _measure import Sample, measure, row

from harness.results import read_results

ROOT = Path(__file__).resolve().parent.parent
BODY_KEYS = ("raw_request", "raw_response", "request_body", "response_body")


def body_share(path: Path) -> float:
    """The part of the file's bytes that is request and response bodies (raw and parsed)."""
    total = bodies = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        total += len(line.encode("utf-8"))
        trace = json.loads(line).get("trace") or {}
        for exchange in trace.get("exchanges", []):
            bodies += sum(len(json.dumps(exchange[k], ensure_ascii=False).encode("utf-8"))
                          for k in BODY_KEYS if exchange.get(k) is not None)
    return bodies / total if total else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="?", default=str(ROOT / "scenarios"))
    parser.add_argument("--repeat", type=int, default=7, help="repetitions (at least 5)")
    args = parser.parse_args()
    script = shutil.which("harness", path=str(Path(sys.executable).parent))
    harness = [script] if script else [sys.executable, "-m", "harness"]
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        subprocess.run([*harness, "run", args.scenarios, "--mode", "replay", "--results", str(results), "--no-report"],
                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        lines = results.read_text(encoding="utf-8").splitlines()
        if not lines:
            raise SystemExit(f"harness run {args.scenarios} wrote no result; run it by hand to see why")
        size = results.stat().st_size
        print(f"{len(lines)} runs, {size / len(lines) / 1000:.1f} KB per line, bodies {body_share(results):.0%} of it")
        floor, read = Sample(), Sample()
        for _ in range(max(args.repeat, 5)):
            measure(lambda: [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()], floor)
            measure(lambda: read_results(results), read)
        print(f"min / median / max over {max(args.repeat, 5)} runs")
        print(row("floor: json.loads every line", floor))
        print(row("read_results", read, floor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
