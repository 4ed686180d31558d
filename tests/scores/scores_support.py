"""What the scorer and judge tests share: a scenario written under tmp_path and run with `harness run`."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main
from harness.results import RunResult, read_results

HEADER = "# yaml-language-server: $schema=../harness/scenario/scenario.schema.json\n"


def run_scenario(tmp_path: Path, body: str, *extra: str, file: str = "s.yaml") -> tuple[int, RunResult]:
    """Write `body` as `tmp_path/scenarios/<file>` and run it; the command's status and the one result."""
    folder = tmp_path / "scenarios"
    folder.mkdir(exist_ok=True)
    path = folder / file
    path.write_text(HEADER + body, encoding="utf-8")
    results = tmp_path / "results.jsonl"
    status = main(["run", str(path), *extra, "--fresh", "--results", str(results), "--no-report"])
    [result] = read_results(results)
    return status, result
