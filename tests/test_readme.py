"""The README cannot drift: its rule table, command lines and code run as they are written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_the_readme_agent_and_its_use_run_as_written(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.split("## Your own agent", 1)[1], re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "README.md (agent)", "exec"), namespace)
    exec(compile(blocks[1], "README.md (use)", "exec"), namespace)
    assert capsys.readouterr().out.strip() == "[]"

    # The agent is a correct loop: tools, parallel results in one message, on a scripted model.
    from harness import ScriptedModel, Task, check_trace, open_session
    from harness.trace import build_trace

    script = [{"tool_use": [{"name": "lookup", "input": {"id": "1"}}, {"name": "lookup", "input": {"id": "2"}}]},
              {"text": "Both found."}]
    tools = [{"name": "lookup", "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}]
    task = Task(prompt="Find 1 and 2.", tools=tools, handlers={"lookup": lambda args: {"found": args["id"]}})
    with open_session("scripted", script=ScriptedModel(script)) as session:
        answer = namespace["my_agent"](session.client(), task)  # type: ignore[operator]
    assert answer == "Both found."
    assert check_trace(build_trace(session.exchanges, "readme", whole_run=True)) == []
