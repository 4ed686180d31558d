"""A client no one here wrote: the official TypeScript SDK runs a tutorial's agent loop against `harness serve`.

Polly.JS records the SDK's traffic on the client side as a HAR (tests/node/record.mjs), and
`harness check --whole-run` must read that recording and judge the loop: clean where the loop is
right, T006 where its `ejecutar` ignores the tool's name. Skips only without node/npm or their install.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from node_agents import check, errors, requires_node, run_agent

TOOL_THEN_END_TURN = """\
- text: Searching the documentation.
  tool_use: {name: search_docs, input: {query: loop limits}}
- text: I found nothing about loop limits in the internal documentation.
"""

pytestmark = requires_node


def run_tutorial_agent(script_text: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str, int, Path]:
    """agent.mjs's `agent` on the script: node's process, the server's stderr and status, the HAR."""
    run = run_agent(script_text, tmp_path)
    return run.agent, run.server_err, run.server_status, run.har


def test_the_ts_sdk_runs_the_tutorial_loop_through_serve_and_its_har_checks_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    agent, server_err, server_status, har = run_tutorial_agent(TOOL_THEN_END_TURN, tmp_path)

    assert agent.returncode == 0, agent.stderr
    assert agent.stdout.strip() == "I found nothing about loop limits in the internal documentation."
    assert server_status == 0, server_err
    assert "POST /v1/messages -> step 1 (tool_use search_docs)" in server_err
    assert "POST /v1/messages -> step 2 (end_turn)" in server_err
    assert "all 2 steps were played" in server_err

    entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    headers = {h["name"].lower(): h["value"] for h in entries[0]["request"]["headers"]}
    assert headers["user-agent"].startswith("Anthropic/JS "), headers  # the official SDK made the calls
    assert "sk-ant-test-node" not in har.read_text(encoding="utf-8")
    second = json.loads(entries[1]["request"]["postData"]["text"])
    first_answer = json.loads(entries[0]["response"]["content"]["text"])
    tool_use = first_answer["content"][1]
    assert second["messages"][1] == {"role": "assistant", "content": first_answer["content"]}
    assert second["messages"][2] == {"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": tool_use["id"], "content": 'No results for "loop limits"',
    }]}

    status, report = check(har, capsys, "--whole-run")
    assert (report["threads"], report["calls"]) == (1, 2)
    assert errors(report) == [] and status == 0, report["findings"]


@pytest.mark.parametrize(
    ("script_text", "answer"),
    [
        pytest.param(
            "- content: [{type: server_tool_use, name: web_search, input: {query: agent loop limits}}]\n"
            "  stop_reason: pause_turn\n"
            "- text: Steps, tokens, time and errors in a row.\n",
            "Steps, tokens, time and errors in a row.",
            id="pause_turn-resumed",
        ),
        pytest.param(
            "- stop_reason: refusal\n  stop_details: {type: refusal, category: cyber, explanation: null}\n",
            "I cannot help with this request.",
            id="refusal-not-retried",
        ),
    ],
)
def test_the_tutorial_loop_handles_pause_turn_and_refusal_cleanly(
    script_text: str, answer: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    agent, server_err, server_status, har = run_tutorial_agent(script_text, tmp_path)

    assert agent.returncode == 0 and agent.stdout.strip() == answer, agent.stderr
    assert server_status == 0, server_err
    status, report = check(har, capsys, "--whole-run")
    assert errors(report) == [] and status == 0, report["findings"]


def test_the_checker_catches_the_tutorial_loop_running_a_tool_the_request_never_declared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # The tutorial's TypeScript `run` calls searchDocs whatever `b.name` says (the reference loop
    # looks the name up and answers is_error), so a hallucinated tool silently "succeeds".
    script_text = "- tool_use: {name: delete_docs, input: {query: everything}}\n- text: Done.\n"
    agent, server_err, server_status, har = run_tutorial_agent(script_text, tmp_path)

    assert agent.returncode == 0 and agent.stdout.strip() == "Done.", agent.stderr
    assert server_status == 0, server_err
    status, report = check(har, capsys, "--whole-run")
    assert status == 1
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["T006"], report["findings"]
    assert "'delete_docs'" in report["findings"][0]["message"]


def test_the_tutorial_loop_stops_on_max_tokens_without_running_the_cut_tool_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    script_text = (
        "- text: Searching the documentation.\n"
        "  tool_use: {name: search_docs, input: {query: limits}}\n"
        "  stop_reason: max_tokens\n"
    )
    agent, server_err, server_status, har = run_tutorial_agent(script_text, tmp_path)

    assert agent.returncode == 1
    assert "agent: Response cut: raise max_tokens or split the task" in agent.stderr
    assert server_status == 0, server_err
    # Without an outcome the wire cannot tell a raise from a cut answer returned as final, so as a
    # fragment the end of the thread is a warning and no error: the cut tool_use was never run.
    status, report = check(har, capsys)
    assert report["calls"] == 1
    assert errors(report) == [] and status == 0, report["findings"]
    assert [(f["code"], f["severity"]) for f in report["findings"]] == [("L005", "warning")]
