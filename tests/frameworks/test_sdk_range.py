"""The harness installs beside the oldest and the newest `anthropic` it supports, and runs scenarios there.

Each end of the range is a virtualenv of its own: 0.40, where the harness is `pip install`ed beside
it as a project pinning anthropic<1 would (built on httpx: its clients reach runs through the
endpoint), and the newest 2.x the registry serves (built on httpx2: in-process too). So is the
newest 1.x between them, the first major version built on httpx2.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from venvs import ROOT, Venv

from harness.results import read_results

OWN_CLIENT = '''
import anthropic


def agent(client, task):
    """An agent that makes its own client from the task, as a framework does."""
    own = anthropic.Anthropic(base_url=task.base_url, api_key=task.api_key)
    answer = own.messages.create(**task.request_params(), messages=[{"role": "user", "content": task.turns[0]}])
    return answer.content[0].text
'''

OWN_CLIENT_SCENARIO = """name: own-client
agent: own_client:agent
prompt: hi
mode: scripted
script: [{text: hello from the endpoint}]
expect: {outcome: completed, final_text: {contains: hello from the endpoint}}
"""

SCENARIOS = ["scenarios/support-refund.yaml", "scenarios/coordinator.yaml", "scenarios/buggy-strips-thinking.yaml",
             "scenarios/stop-pause-turn.yaml", "examples/sdk-loop/scenario.yaml"]


def test_pyproject_states_the_range_the_tests_build() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "anthropic>=0.40,<3" in dependencies
    assert any(d.startswith("httpx2") for d in dependencies)  # imported by the harness itself
    assert "`anthropic` 0.40 to the newest 2.x" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize(
    ("end", "version", "in_process"),
    [("sdk-oldest", "0.40.0", False), ("sdk-1x", "1.", True), ("sdk-newest", "2.", True)]
)
def test_scenarios_run_beside_the_oldest_a_1x_and_the_newest_sdk(
    venvs: Callable[[str], Venv], tmp_path: Path, end: str, version: str, in_process: bool
) -> None:
    env = venvs(end)
    said = env.run("-c",
                   "import anthropic, harness.transport._session as s; "
                   "print(anthropic.__version__, s.sdk_runs_in_process())",
                   cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    installed, runs_in_process = said.stdout.split()
    assert installed.startswith(version) and runs_in_process == str(in_process)

    (tmp_path / "own_client.py").write_text(OWN_CLIENT)
    (tmp_path / "own-client.yaml").write_text(OWN_CLIENT_SCENARIO)
    results = tmp_path / "results.jsonl"
    run = env.run("-m", "harness", "run", *(ROOT / s for s in SCENARIOS), tmp_path / "own-client.yaml", "-j", "2",
                  "--results", results, "--no-report", cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(r.scenario for r in read_results(results) if r.status == "passed") == sorted(
        ["support-refund", "coordinator", "buggy-strips-thinking", "stop-pause-turn", "sdk-loop", "own-client"]
    )


def test_an_in_process_client_on_an_httpx_sdk_says_to_use_the_endpoint(venvs: Callable[[str], Venv],
                                                                       tmp_path: Path) -> None:
    said = venvs("sdk-oldest").run(
        "-c",
        "from harness import open_session\n"
        "try:\n    open_session('scripted', script=[{'text': 'hi'}]).client()\n"
        "except ValueError as exc:\n    print(exc)\n",
        cwd=tmp_path,
    )
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip() == (
        "anthropic 0.40.0 is built on httpx, not httpx2: its clients cannot take the harness's in-process transport "
        "(that needs anthropic 1.0 or later). Point the client at the run's endpoint instead: task.client(), or "
        "anthropic.Anthropic(base_url=task.base_url, api_key=task.api_key)"
    )
