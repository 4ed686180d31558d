"""`task.run_tool` without a tool_use id: the id comes from the answers of the run, matched by name and input.

Driven by the SDK's own beta tool runner (sync, streaming, async), whose tool functions get only
their input, through `harness run` and the scripted model.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from harness import Task
from harness.cli import main
from harness.errors import ToolUseNotFound
from harness.results import read_results
from harness.transport import open_session

SCENARIO = """name: runner
agent: 'tests.agents.tool_runner_agents:{agent}'
prompt: Where are orders O1 and O2?
tools:
  - name: lookup_order
    input_schema: {{type: object, properties: {{order_id: {{type: string}}}}, required: [order_id]}}
    fixture:
      match:
        - {{input: {{order_id: O1}}, output: {{status: delivered}}}}
        - {{input: {{order_id: O2}}, output: {{status: lost}}}}
mode: scripted
script:
  - tool_use:
      - {{id: toolu_a, name: lookup_order, input: {{order_id: O2}}}}
      - {{id: toolu_b, name: lookup_order, input: {{order_id: O1}}}}
      - {{id: toolu_c, name: lookup_order, input: {{order_id: O1}}}}
  - tool_use: {{id: toolu_d, name: lookup_order, input: {{order_id: O1}}}}
  - text: O1 was delivered; O2 is lost.
expect:
  outcome: completed
  final_text: {{contains: O2 is lost}}
"""


@pytest.mark.parametrize("agent", ["runner_agent", "streaming_runner_agent", "async_runner_agent"])
def test_the_sdk_tool_runner_gets_correct_tool_events_without_ids(tmp_path: Path, agent: str) -> None:
    path = tmp_path / "runner.yaml"
    path.write_text(SCENARIO.format(agent=agent))
    status = main(["run", str(path), "--results", str(tmp_path / "r.jsonl"), "--no-report"])
    [result] = read_results(tmp_path / "r.jsonl")
    assert status == 0, (result.error, result.outcome, result.findings)
    assert result.trace is not None
    executions = result.trace.tool_executions
    # Two identical calls in one turn get one id each, in the order the turn asked for them.
    assert [(e.tool_use_id, e.input) for e in executions] == [
        ("toolu_a", {"order_id": "O2"}),
        ("toolu_b", {"order_id": "O1"}),
        ("toolu_c", {"order_id": "O1"}),
        ("toolu_d", {"order_id": "O1"}),
    ]
    assert [e.output for e in executions] == ['{"status": "lost"}'] + ['{"status": "delivered"}'] * 3
    # The tool_results the runner sent back carry the ids the events were recorded under.
    sent = result.trace.calls[1].request["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in sent] == ["toolu_a", "toolu_b", "toolu_c"]
    assert result.findings == []


def _task() -> Task:
    return Task(prompt="hi", handlers={"lookup_order": lambda i: {"order_id": i["order_id"], "status": "ok"}})


def test_the_only_open_call_of_a_name_is_taken_when_the_framework_changed_its_input() -> None:
    script = [{"tool_use": {"id": "toolu_x", "name": "lookup_order", "input": {"order_id": "O1"}}}, {"text": "ok"}]
    with open_session("scripted", script=script) as session:
        task = _task()
        task.watch_answers(lambda: session.exchanges)
        client: anthropic.Anthropic = session.client()
        client.messages.create(**task.request_params(), messages=[{"role": "user", "content": "hi"}])
        # e.g. a default filled in by the framework's validation
        task.run_tool("lookup_order", {"order_id": "O1", "verbose": False})
        with pytest.raises(ToolUseNotFound, match=r"no answer of this run asks for that call still unanswered"):
            task.run_tool("lookup_order", {"order_id": "O1"})
        client.messages.create(**task.request_params(), messages=[{"role": "user", "content": "hi"}])
    assert [e.tool_use_id for e in task.executions] == ["toolu_x"]


def test_a_call_no_answer_asked_for_is_an_error_that_says_what_is_open() -> None:
    script = [{"tool_use": {"id": "toolu_x", "name": "get_customer", "input": {"customer_id": "C1"}}}]
    with open_session("scripted", script=script) as session:
        task = _task()
        task.watch_answers(lambda: session.exchanges)
        session.client().messages.create(**task.request_params(), messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(ToolUseNotFound) as raised:
            task.run_tool("lookup_order", {"order_id": "O1"})
    assert "open tool_use blocks: get_customer" in str(raised.value)
    assert task.executions == []


def test_a_task_outside_a_run_asks_for_the_id() -> None:
    with pytest.raises(ToolUseNotFound, match="pass the tool_use block's id"):
        _task().run_tool("lookup_order", {"order_id": "O1"})
    assert _task().run_tool("lookup_order", {"order_id": "O1"}, "toolu_given").is_error is False
