"""The CI example and the plugin docs must not drift from the code: every `harness` command in the
workflow parses with the real CLI, and every `--harness-*` option the docs name exists in pytest."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _yaml_blocks(text: str) -> list[Any]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)]


def _steps(block: Any) -> list[dict[str, Any]]:
    if isinstance(block, list):
        return block
    return [step for job in block["jobs"].values() for step in job["steps"]]


SHARDS = 4
"""The workflow's matrix size: what `strategy.job-total` is in its jobs."""


def _commands(run: str, program: str) -> list[list[str]]:
    """Each `program ...` command of a step's script, with the matrix expressions filled in."""
    filled = run.replace("${{ matrix.shard }}", "1").replace("${{ strategy.job-total }}", str(SHARDS))
    filled = filled.replace("\\\n", " ")
    commands = []
    for line in filled.splitlines():
        for part in line.split("|"):
            words = shlex.split(part.strip())
            if words[:1] == [program]:
                commands.append(words[1:])
    return commands


def test_every_harness_command_of_the_ci_workflow_parses() -> None:
    steps = [step for block in _yaml_blocks((DOCS / "ci.md").read_text()) for step in _steps(block)]
    commands = [c for step in steps if "run" in step for c in _commands(step["run"], "harness")]
    assert {c[0] for c in commands} == {"run", "merge", "report", "diff"}
    parser = build_parser()
    for argv in commands:
        args = parser.parse_args(argv)  # argparse exits (and the test fails) on an option that does not exist
        if argv[0] == "run":
            assert args.shard == "1/4"


def test_every_pytest_option_the_docs_name_exists(pytester: pytest.Pytester) -> None:
    named = set(re.findall(r"--harness-[a-z-]+",
                           (DOCS / "ci.md").read_text() + (DOCS / "pytest-plugin.md").read_text()))
    assert {"--harness-scenarios", "--harness-record-mode", "--harness-shard", "--harness-results"} <= named
    help_text = pytester.runpytest("--help").stdout.str()
    assert {name for name in named if f"{name}" not in help_text} == set()


def _workflow() -> tuple[dict[str, Any], list[Any]]:
    blocks = _yaml_blocks((DOCS / "ci.md").read_text())
    workflows = [b for b in blocks if isinstance(b, dict) and "jobs" in b]
    assert len(workflows) == 1
    return workflows[0], [b for b in blocks if isinstance(b, list)]


def test_the_pytest_variant_of_the_shard_step_parses_with_the_plugin(pytester: pytest.Pytester) -> None:
    _, snippets = _workflow()
    commands = [c for block in snippets for step in block if "run" in step for c in _commands(step["run"], "pytest")]
    assert len(commands) == 1
    config = pytester.parseconfig(*commands[0])  # an unknown option is a usage error here
    assert config.getoption("numprocesses") == 2
    assert config.getoption("harness_scenarios") is True
    assert config.getoption("harness_record_mode") == "none"
    assert config.getoption("harness_shard") == "1/4"
    # the file the scenarios job's upload step picks up, as with `harness run`
    upload = next(s for s in _workflow()[0]["jobs"]["scenarios"]["steps"]
                  if s.get("uses", "").startswith("actions/upload"))
    assert config.getoption("harness_results") == upload["with"]["path"].replace("${{ matrix.shard }}", "1")
    assert "scenarios" in config.args  # pytest only collects scenario files under the paths it is given


def test_the_workflow_steps_hand_each_other_the_right_files() -> None:
    """Paths and artifact names line up: what a step writes is what the next one reads."""
    workflow, _ = _workflow()
    scenarios, report = workflow["jobs"]["scenarios"], workflow["jobs"]["report"]
    assert scenarios["strategy"]["fail-fast"] is False  # every shard reports, even when one fails
    run = next(s for s in scenarios["steps"] if "harness run" in s.get("run", ""))
    run_args = build_parser().parse_args(_commands(run["run"], "harness")[0])
    shard_upload = next(s for s in scenarios["steps"] if s.get("uses", "").startswith("actions/upload"))
    assert shard_upload["if"] == "always()"  # a failing shard's results are uploaded too
    assert shard_upload["with"]["path"].replace("${{ matrix.shard }}", "1") == run_args.results
    assert len(scenarios["strategy"]["matrix"]) == 1 and len(scenarios["strategy"]["matrix"]["shard"]) == SHARDS
    assert run_args.shard == f"1/{SHARDS}"  # N is the number of jobs: the matrix's only dimension

    assert report["needs"] == "scenarios" and report["if"] == "always()"  # report even when a shard failed
    steps = report["steps"]
    download = next(s for s in steps if s.get("uses", "").startswith("actions/download"))
    pattern = download["with"]["pattern"].rstrip("*")
    assert shard_upload["with"]["name"].replace("${{ matrix.shard }}", "1").startswith(pattern)
    parser = build_parser()
    commands = {c[0]: parser.parse_args(c) for s in steps if "run" in s for c in _commands(s["run"], "harness")}
    assert commands["merge"].files == [download["with"]["path"]]
    assert commands["report"].results == [commands["merge"].output]
    uploads = {s["with"]["name"]: s["with"]["path"] for s in steps if s.get("uses", "").startswith("actions/upload")}
    assert uploads["harness-results"] == commands["merge"].output
    assert uploads["harness-report"].rstrip("/") == commands["report"].output.rstrip("/")
    fetch = next(s for s in steps if "gh run download" in s.get("run", ""))
    assert "--name harness-results --dir baseline" in fetch["run"]
    compare = next(s for s in steps if "harness diff" in s.get("run", ""))
    assert "hashFiles('baseline/results.jsonl')" in compare["if"]
    assert commands["diff"].base == "baseline/results.jsonl" and commands["diff"].new == commands["merge"].output
    # the diff's exit 1 must survive the pipe into the job summary, and comes after every upload
    assert "set -o pipefail" in compare["run"]
    assert steps.index(compare) > max(steps.index(s) for s in steps if s.get("uses", "").startswith("actions/upload"))
