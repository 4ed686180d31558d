"""Benchmark: how fast `harness` answers before doing any work, beside the floor of starting Python
with the two modules any harness command needs (`python -c "import yaml, json"`).

`--help` and `--version` must import no command; `<command> --help` shows what each command pays
on its way in (the SDK for run, pandas and jinja2 for report and diff). Repetitions interleave the
commands so a busy machine slows them alike.

    .venv/bin/python bench/bench_cli.py [--repeat 7] [--commands]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from _measure import Sample, measure_process, row

FLOOR = [sys.executable, "-c", "import yaml, json"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="repetitions (at least 5)")
    parser.add_argument("--commands", action="store_true", help="also time `harness <command> --help` for each command")
    args = parser.parse_args()
    # The console script as a user runs it; `python -m harness` where it is not installed.
    script = shutil.which("harness", path=str(Path(sys.executable).parent))
    harness = [script] if script else [sys.executable, "-m", "harness"]
    cases = {"python -c 'import yaml, json' (floor)": FLOOR,
             "harness --help": [*harness, "--help"], "harness --version": [*harness, "--version"]}
    if args.commands:
        for command in ("run", "check", "report", "diff", "merge", "serve", "rules"):
            cases[f"harness {command} --help"] = [*harness, command, "--help"]
    samples = {label: Sample() for label in cases}
    for _ in range(max(args.repeat, 5)):
        for label, argv in cases.items():
            if measure_process(argv, samples[label]) != 0:
                raise SystemExit(f"{' '.join(argv)} failed; run it by hand to see why")
    floor = samples[next(iter(cases))]
    print(f"min / median / max over {max(args.repeat, 5)} runs")
    for label, sample in samples.items():
        print(row(label, sample, None if sample is floor else floor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
