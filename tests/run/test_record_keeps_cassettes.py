"""`harness run --mode record` keeps a good cassette when the run produced nothing worth keeping,
and reports a run that never reached the API as the harness's error, not the agent's failure."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from run_support import PASSING, Project

from harness.agents import Task
from harness.cli import main
from harness.results import read_results


def run(project: Project, *args: str) -> int:
    return main(["run", *args, "--fresh", "--results", str(project.results), "--report", str(project.root / "report")])


def closed_port() -> int:
    """A local port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def unreachable_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-an-unreachable-api")


@pytest.mark.usefixtures("unreachable_api")
def test_recording_with_the_api_unreachable_keeps_the_cassette_and_is_a_harness_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--record") == 0
    cassette = project.root / "cassettes" / "lookup.yaml"
    before = cassette.read_bytes()
    capsys.readouterr()

    # Exit 2, not 1: nothing about the agent was tested.
    assert run(project, str(path), "--mode", "record") == 2
    assert cassette.read_bytes() == before
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["lookup.yaml"]
    [result] = read_results(project.results)
    assert result.status == "error" and result.error is not None
    assert result.error.startswith("the API could not be reached (connection error: ")
    assert result.cassette_not_written is not None
    assert result.cassette_not_written.startswith(
        f"cassette {cassette} not written (the previous cassette is kept unchanged): ")
    assert "APIConnectionError" in result.cassette_not_written
    out = capsys.readouterr().out
    assert "the API could not be reached" in out and "the previous cassette is kept unchanged" in out


@pytest.mark.usefixtures("unreachable_api")
def test_recording_with_the_api_unreachable_creates_no_empty_cassette(project: Project) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--mode", "record", "--record-mode", "all") == 2
    assert not (project.root / "cassettes" / "lookup.yaml").exists()
    [result] = read_results(project.results)
    assert result.cassette_not_written is not None and "no cassette was created" in result.cassette_not_written


def test_a_recording_whose_agent_crashed_midway_keeps_the_previous_cassette(project: Project) -> None:
    # Partial answers (the first call recorded, then the agent died) are not a recording to keep.
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--record") == 0
    cassette = project.root / "cassettes" / "lookup.yaml"
    before = cassette.read_bytes()
    crashing = path.read_text().replace("name: lookup\n",
                                        "name: lookup\nagent: "
                                        "'tests.run.test_record_keeps_cassettes:one_call_then_crash'\n")
    path.write_text(crashing)

    assert run(project, str(path), "--record") == 1  # the agent's own failure stays a failure
    assert cassette.read_bytes() == before
    [result] = read_results(project.results)
    assert result.status == "failed" and result.error is None
    assert result.cassette_not_written == (
        f"cassette {cassette} not written (the previous cassette is kept unchanged): "
        "the agent raised RuntimeError: the agent fell over after one call"
    )


def one_call_then_crash(client: object, task: object) -> str:
    """An agent that gets one answer from the model, then dies."""
    assert isinstance(task, Task)
    api: Any = client
    api.messages.create(model=task.model, max_tokens=task.max_tokens, messages=[{"role": "user", "content": "hi"}])
    raise RuntimeError("the agent fell over after one call")


def test_a_first_recording_that_fails_its_checks_is_kept_so_its_replay_fails_the_same_way(project: Project) -> None:
    # An evaluation's weaker model fails some cases: those runs are what it did, and replaying the
    # comparison needs them. With no cassette yet, nothing good is replaced.
    failing = PASSING.replace("  outcome: completed\n", "  outcome: completed\n  final_text: {contains: shipped}\n")
    path = project.scenario("lookup", failing)
    cassette = project.root / "cassettes" / "lookup.yaml"
    assert run(project, str(path), "--record") == 1
    [recorded] = read_results(project.results)
    assert recorded.status == "failed" and recorded.cassette_not_written is None and cassette.exists()
    assert run(project, str(path), "--mode", "replay") == 1
    [replayed] = read_results(project.results)
    assert replayed.status == "failed" and replayed.error is None
    assert [e.message for e in replayed.failed_expectations] == [e.message for e in recorded.failed_expectations]
    # Once there is a cassette, a failing recording never replaces it.
    before = cassette.read_bytes()
    path.write_text(path.read_text().replace("- text: Order O1 was delivered.", "- text: Order O1 is on its way."))
    assert run(project, str(path), "--record") == 1
    assert cassette.read_bytes() == before
    [again] = read_results(project.results)
    assert "the previous cassette is kept unchanged" in (again.cassette_not_written or "")
