"""An agent that never reaches the run's endpoint gets an error that says so, not a bare `Connection error.`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.results import read_results

HERE = Path(__file__).resolve().parent
SAID = ("the agent made no request to the harness endpoint (it may be calling the internet directly): "
        "pass task.base_url to your client")


def _run(tmp_path: Path, agent: str) -> list[str]:
    """The run's reasons, as the summary, the report and JUnit show them."""
    path = tmp_path / "elsewhere.yaml"
    path.write_text(f"agent: {agent}\nprompt: hi\nmode: scripted\nscript: [{{text: hello}}]\n")
    main(["run", str(path), "--results", str(tmp_path / "r.jsonl"), "--no-report"])
    [result] = read_results(tmp_path / "r.jsonl")
    assert result.status == "error" and result.error is not None
    return result.reasons()


@pytest.mark.parametrize("agent",
                         ["tests.run.elsewhere_agents:own_client_agent", "tests.run.elsewhere_agents:silent_agent"])
def test_a_python_agent_that_ignores_the_endpoint(tmp_path: Path, agent: str) -> None:
    reasons = _run(tmp_path, agent)
    assert SAID in reasons, reasons
    if agent.endswith("own_client_agent"):
        # Why the agent failed is its own reason, above, and only there.
        assert reasons[0].startswith("the agent raised: APIConnectionError: Connection error."), reasons
        assert "\n".join(reasons).count("Connection error.") == 1, reasons


def test_a_command_that_ignores_the_endpoint(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, str(HERE / "elsewhere_agents.py")])
    reasons = _run(tmp_path, f"{{command: {command}}}")
    said = "\n".join(reasons)
    assert reasons[0].startswith("the agent's run ended in error: agent command `"), reasons
    assert SAID in reasons, reasons
    # The command's exit and its stderr are said once, not again after the endpoint's line.
    assert said.count("exited with status 1") == 1 and said.count("anthropic.APIConnectionError") == 1, said


def test_a_command_that_cannot_start_is_not_blamed_on_the_endpoint(tmp_path: Path) -> None:
    path = tmp_path / "lost.yaml"
    path.write_text("agent: {command: [no-such-agent-binary]}\nprompt: hi\nmode: scripted\nscript: [{text: hello}]\n")
    main(["run", str(path), "--results", str(tmp_path / "r.jsonl"), "--no-report"])
    [result] = read_results(tmp_path / "r.jsonl")
    assert result.outcome is not None and "command not found" in result.outcome.reason
    assert SAID not in (result.error or "")
