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


def _commands(run: str, program: str) -> list[list[str]]:
    """Each `program ...` command of a step's script, with the matrix expression filled in."""
    filled = run.replace("${{ matrix.shard }}", "1").replace("\\\n", " ")
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
    named = set(re.findall(r"--harness-[a-z-]+", (DOCS / "ci.md").read_text() + (DOCS / "pytest-plugin.md").read_text()))
    assert {"--harness-scenarios", "--harness-record-mode", "--harness-shard", "--harness-results"} <= named
    help_text = pytester.runpytest("--help").stdout.str()
    assert {name for name in named if f"{name}" not in help_text} == set()
