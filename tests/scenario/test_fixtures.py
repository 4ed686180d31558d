"""Tool fixtures answer as declared: fixed, error, sequence, match by input, python, delay, none."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from harness.agents import Task
from harness.errors import ScenarioError
from harness.scenario import ScenarioFile, build_handlers, contains, parse_scenario

TOOLS = """prompt: a
tools:
  - name: fixed
    fixture: {output: {id: C1, tier: gold}}
  - name: broken
    fixture: {error: "TIMEOUT: upstream did not answer"}
  - name: flaky
    fixture:
      sequence:
        - {error: "503 from orders service"}
        - {output: ok}
  - name: by_input
    fixture:
      match:
        - {input: {order_id: "42"}, output: shipped}
        - {input: {order_id: "7", options: {deep: true}}, error: "order 7 is locked"}
  - name: by_input_or_else
    fixture:
      match:
        - {input: {order_id: "42"}, output: shipped}
      output: unknown order
  - name: computed
    fixture: {python: "tests.scenario.helpers:double"}
  - name: slow
    fixture: {output: done, delay_s: 0.05}
  - name: raw
    fixture: {python: "tests.scenario.helpers:image_bytes"}
  - name: raw_result
    fixture: {python: "tests.scenario.helpers:result_of_a_set"}
  - name: raw_blocks
    fixture: {python: "tests.scenario.helpers:blocks_of_bytes"}
  - name: undeclared
"""


@pytest.fixture()
def task(tmp_path: Path) -> Task:
    source = parse_scenario(TOOLS, tmp_path / "tools.yaml")
    return Task(prompt="a", handlers=build_handlers(source))


def run(task: Task, name: str, tool_input: dict[str, Any] | None = None) -> tuple[Any, bool]:
    result = task.run_tool(name, tool_input or {}, f"toolu_{len(task.executions)}")
    return result.content, result.is_error


def test_fixed_output_and_error(task: Task) -> None:
    assert run(task, "fixed") == ('{"id": "C1", "tier": "gold"}', False)
    assert run(task, "broken") == ("Error: TIMEOUT: upstream did not answer", True)


def test_a_sequence_answers_successive_calls_and_repeats_its_last(task: Task) -> None:
    assert [run(task, "flaky") for _ in range(3)] == [
        ("Error: 503 from orders service", True),
        ("ok", False),
        ("ok", False),
    ]


def test_match_by_partial_input_and_fallback(task: Task) -> None:
    assert run(task, "by_input", {"order_id": "42", "verbose": True}) == ("shipped", False)
    locked = run(task, "by_input", {"order_id": "7", "options": {"deep": True, "x": 1}})
    assert locked == ("Error: order 7 is locked", True)
    content, is_error = run(task, "by_input", {"order_id": "8"})
    assert is_error and "no match entry of tool 'by_input' fits input {'order_id': '8'}" in str(content)
    assert run(task, "by_input_or_else", {"order_id": "8"}) == ("unknown order", False)


def test_python_fixture_is_called_with_the_input(task: Task) -> None:
    assert run(task, "computed", {"n": 21}) == ("42", False)
    content, is_error = run(task, "computed", {"n": -1})
    assert is_error and content == "Error: negative numbers are not allowed"


def test_a_tool_returning_what_is_no_json_is_that_tools_error_not_the_agents(task: Task) -> None:
    # json.dumps raised inside run_tool: the run ended "the agent raised: TypeError: Object of type
    # bytes is not JSON serializable", pointing at the agent for its fixture's return value.
    assert run(task, "raw") == ("Error: tool 'raw' returned bytes, which is no tool_result content; return a "
                                "str, a list of content blocks or JSON values", True)
    assert task.executions[-1].is_error and task.executions[-1].error is not None
    # A ToolResult, or content blocks, holding what is no JSON went through unchecked: the agent got it
    # back, and the run's results line could not be written (the run lost its trace).
    assert run(task, "raw_result") == ("Error: tool 'raw_result' returned a ToolResult holding set, which is no "
                                       "tool_result content; return a str, a list of content blocks or JSON values",
                                       True)
    assert run(task, "raw_blocks") == ("Error: tool 'raw_blocks' returned list, which is no tool_result content; "
                                       "return a str, a list of content blocks or JSON values", True)
    assert all(e.is_error for e in task.executions[-2:])


def test_delay_makes_the_tool_take_time(task: Task) -> None:
    started = time.monotonic()
    assert run(task, "slow") == ("done", False)
    assert time.monotonic() - started >= 0.05


def test_a_tool_without_fixture_says_how_to_fix_it(task: Task) -> None:
    content, is_error = run(task, "undeclared")
    assert is_error and "has no fixture" in str(content) and "tools[].fixture" in str(content)


def test_handlers_are_fresh_for_each_run(tmp_path: Path) -> None:
    source = parse_scenario(TOOLS, tmp_path / "tools.yaml")
    first, second = Task(prompt="a", handlers=build_handlers(source)), Task(prompt="a", handlers=build_handlers(source))
    assert run(first, "flaky")[1] and run(second, "flaky")[1]


def test_a_python_fixture_that_cannot_be_imported_points_at_its_line(tmp_path: Path) -> None:
    source: ScenarioFile = parse_scenario(
        "prompt: a\ntools:\n  - name: t\n    fixture:\n      python: tests.scenario.helpers:nope\n", tmp_path / "s.yaml"
    )
    with pytest.raises(ScenarioError) as info:
        build_handlers(source)
    assert info.value.line == 5 and info.value.key == "tools[0].fixture.python"
    assert "cannot import tests.scenario.helpers:nope" in info.value.problem


@pytest.mark.parametrize(("body", "said"), [
    ("raise RuntimeError('no orders database')\n", "RuntimeError: no orders database (at {module}:1)"),
    ("def lookup(:\n", "SyntaxError: invalid syntax ({name}, line 1)"),
    ("import sys\nsys.exit(3)\n", "importing it called sys.exit(3)"),
])
def test_a_python_fixture_whose_module_fails_at_import_points_at_its_own_line(
    tmp_path: Path, body: str, said: str
) -> None:
    module = tmp_path / f"fixture_fails_{abs(hash(body))}.py"
    module.write_text(body, encoding="utf-8")
    source = parse_scenario(f"prompt: a\ntools:\n  - name: ok\n    fixture: {{output: 1}}\n  - name: t\n    fixture:\n"
                            f"      python: {module.stem}:lookup\n", tmp_path / "s.yaml")
    with pytest.raises(ScenarioError) as info:
        build_handlers(source)
    where = (info.value.path, info.value.line, info.value.key)
    assert where == (str(tmp_path / "s.yaml"), 7, "tools[1].fixture.python")
    assert info.value.problem == f"cannot import {module.stem}:lookup: " + said.format(module=module, name=module.name)


def test_contains_is_a_recursive_partial_match() -> None:
    assert contains({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": 2}})
    assert not contains({"a": 1}, {"a": 2})
    assert not contains({"a": 1}, {"b": None})
    assert contains([1, 2], [1, 2]) and not contains("42", 42)
