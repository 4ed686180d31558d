"""The README cannot drift: its rule table and its command lines match the CLI as it is."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from harness.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_rule_table_is_what_list_rules_prints() -> None:
    table = README.split("<!-- rules:start", 1)[1].split("<!-- rules:end -->", 1)[0]
    block = table.split("```\n", 1)[1].rsplit("```", 1)[0]
    printed = subprocess.run(
        [sys.executable, "-m", "harness", "check", "--list-rules"], capture_output=True, text=True, check=True
    ).stdout
    assert block == printed


def test_every_option_the_readme_gives_harness_run_exists() -> None:
    usage = README.split("    harness run [PATHS]", 1)[1].split("\n\n", 1)[0]
    options = set(re.findall(r"(--[a-z-]+|-j)\b", usage))
    run_parser = build_parser(only="run")._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    known = {flag for action in run_parser._actions for flag in action.option_strings}
    assert options and options <= known, options - known


def test_the_first_command_is_install_then_run_offline() -> None:
    first = next(line.strip() for line in README.splitlines() if line.strip().startswith("python3 -m venv"))
    assert first.endswith("harness run scenarios/")
    assert "./scripts/test" in README and "scripts/test" in (ROOT / ".ci" / "run").read_text()
