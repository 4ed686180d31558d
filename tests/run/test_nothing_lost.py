"""`harness run` never writes over what it did not create and accounts for every planned run.

Each test reproduces a way the command lost or overwrote work: a cassette path naming the scenario
itself, cassettes under scenarios/ collected as scenarios, a failed recording replacing a good one,
agents and modules that exit, a results file two commands write at once, a results file that fills up.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest
from run_support import LOOKUP, PASSING, Project

from harness.checks._registry import _RULES
from harness.cli import main
from harness.results import ResultsWriter, read_results


def run(project: Project, *args: str) -> int:
    return main(["run", *args, "--fresh", "--results", str(project.results), "--no-report"])


def test_a_cassette_path_naming_the_scenario_itself_is_refused_before_the_run(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING + 'cassette: "{stem}.yaml"\n')
    before = path.read_bytes()
    assert run(project, str(path), "--record") == 2
    assert path.read_bytes() == before
    err = capsys.readouterr().err
    assert f"{path}" in err and "is a scenario file: recording would replace it" in err
    assert not project.results.exists() or read_results(project.results) == []


def test_a_cassette_path_naming_another_file_is_refused(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    notes = project.root / "scenarios" / "notes.txt"
    notes.write_text("my notes\n")
    path = project.scenario("lookup", PASSING + "cassette: notes.txt\n")
    assert run(project, str(path), "--record") == 2
    assert notes.read_text() == "my notes\n"
    assert "exists and is not a cassette" in capsys.readouterr().err


def test_cassettes_under_the_scenarios_folder_are_not_collected_as_scenarios(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.scenario("lookup", PASSING + 'cassette: "cassettes/{stem}.yaml"\n')
    scenarios = str(project.root / "scenarios")
    assert run(project, scenarios, "--record") == 0
    assert (project.root / "scenarios" / "cassettes" / "lookup.yaml").is_file()
    assert run(project, scenarios, "--mode", "replay") == 0
    [result] = read_results(project.results)
    assert result.mode == "replay" and result.status == "passed"
    assert "interactions" not in capsys.readouterr().err


@pytest.mark.parametrize("model", ["../../outside", "a/b", ".."])
def test_a_model_name_cannot_take_a_cassette_out_of_its_folder(
    project: Project, model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--record", "--model", model, "--model", "claude-sonnet-5") == 2
    err = capsys.readouterr().err
    assert f"model {model!r} cannot be part of a file name" in err
    # The value came from the command line: said of --model, not of the scenario's first line.
    assert f"--model {model!r} cannot be part" in err and "lookup.yaml" not in err
    assert sorted(p.name for p in project.root.rglob("*.yaml")) == ["lookup.yaml"]


def test_results_are_not_written_through_a_symlink_leaving_their_folder(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "elsewhere" / "precious.txt"
    victim.parent.mkdir()
    victim.write_text("keep me\n")
    link = project.root / "out" / "results.jsonl"
    link.parent.mkdir()
    link.symlink_to(victim)
    path = project.scenario("lookup", PASSING)
    assert main(["run", str(path), "--fresh", "--results", str(link), "--no-report"]) == 2
    assert victim.read_text() == "keep me\n"
    assert "is a symlink to" in capsys.readouterr().err


FAILS_ITS_CHECK = PASSING.replace("  outcome: completed\n", "  outcome: completed\n  final_text: {contains: lost}\n")


def test_a_record_run_that_fails_keeps_the_previous_cassette_and_can_keep_its_recording_beside_it(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--record") == 0
    cassette = project.root / "cassettes" / "lookup.yaml"
    before = cassette.read_bytes()
    path.write_text(path.read_text().replace(PASSING, FAILS_ITS_CHECK))
    capsys.readouterr()

    assert run(project, str(path), "--record") == 1
    assert cassette.read_bytes() == before
    [result] = read_results(project.results)
    assert result.status == "failed"
    assert result.cassette_not_written is not None
    assert "the previous cassette is kept unchanged" in result.cassette_not_written
    assert "the previous cassette is kept unchanged" in capsys.readouterr().out

    assert run(project, str(path), "--record", "--keep-failed") == 1
    assert cassette.read_bytes() == before
    failed = cassette.with_name("lookup.failed.yaml")
    assert "interactions:" in failed.read_text()
    assert str(failed) in capsys.readouterr().out


def test_a_record_run_whose_cassette_is_not_written_is_not_passed(project: Project,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # The agent answers without asking the model: nothing to record, so recording did not happen.
    path = project.scenario("silent", PASSING.replace("name: lookup\n", "name: silent\nagent: 'nothing:answer'\n"))
    (project.root / "scenarios" / "nothing.py").write_text("def answer(client, task):\n    return 'done'\n")
    assert run(project, str(path), "--record") == 2
    [result] = read_results(project.results)
    assert result.status == "error"
    out = capsys.readouterr().out
    assert "not written" in out and "recorded no interaction" in out


EXITING_AGENTS = """
import sys

def exits(client, task):
    sys.exit(3)

def interrupts(client, task):
    raise KeyboardInterrupt

class Odd(BaseException):
    pass

def odd(client, task):
    raise Odd("not an Exception")

def returns(client, task):
    return "fine"
"""

NO_EXPECT = """name: {name}
prompt: hi
agent: 'exiters:{agent}'
mode: scripted
script:
  - text: hello
"""


@pytest.mark.parametrize("agent", ["exits", "interrupts", "odd"])
def test_an_agent_that_exits_or_interrupts_is_that_runs_failure_and_every_run_is_made(
    project: Project, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.root / "scenarios" / "exiters.py").write_text(EXITING_AGENTS)
    project.scenario("bad", NO_EXPECT.format(name="bad", agent=agent))
    project.scenario("good", PASSING.replace("name: lookup", "name: good"))
    assert run(project, str(project.root / "scenarios"), "-j", "2") == 1
    results = {r.scenario: r for r in read_results(project.results)}
    assert results["good"].status == "passed"
    bad = results["bad"]
    assert bad.status == "failed" and bad.outcome is not None and bad.outcome.status == "error"
    out = capsys.readouterr().out
    assert "2 planned, 2 finished (1 passed, 1 failed)" in out
    assert "the agent raised: " in out


ODD_OUTCOMES = """
from harness import Outcome


def answer(client, task):
    return client.messages.create(**task.request_params(),
                                  messages=[{"role": "user", "content": task.turns[0]}]).content[0].text


def text_in_bytes(client, task):
    return Outcome("completed", final_text=answer(client, task).encode())


def reason_not_text(client, task):
    answer(client, task)
    return Outcome("limit", reason=RuntimeError("over"), limit="steps")


def unknown_status(client, task):
    return Outcome("done", final_text=answer(client, task))


def unknown_limit(client, task):
    answer(client, task)
    return Outcome("limit", limit="patience")
"""


@pytest.mark.parametrize(("agent", "says"), [
    ("text_in_bytes", "final_text is bytes, not a str"),
    ("reason_not_text", "reason is RuntimeError, not a str"),
    ("unknown_status", "status is 'done', not one of completed, limit, refused, error"),
    ("unknown_limit", "limit is 'patience', not one of steps, tokens, wall_time, tool_errors"),
])
def test_an_outcome_the_agent_filled_wrongly_is_that_runs_error_and_every_run_is_made(
    project: Project, agent: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A final_text in bytes could not be written to the results file: the worker thread died with a
    # traceback, that run and every run after it were never accounted for, and the command exited 0.
    (project.root / "scenarios" / "odd_outcomes.py").write_text(ODD_OUTCOMES)
    project.scenario("odd", NO_EXPECT.format(name="odd", agent=agent).replace("exiters:", "odd_outcomes:"))
    project.scenario("plain", NO_EXPECT.format(name="plain", agent="answer").replace("exiters:", "odd_outcomes:"))
    assert run(project, str(project.root / "scenarios")) == 1
    results = {r.scenario: r for r in read_results(project.results)}
    assert results["plain"].status == "passed"
    odd = results["odd"]
    assert odd.status == "failed" and odd.outcome is not None and odd.outcome.status == "error"
    assert odd.outcome.reason == f"the agent returned an Outcome whose {says}"
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "2 planned, 2 finished (1 passed, 1 failed)" in captured.out


def test_an_agent_that_raised_fails_even_without_expect(project: Project) -> None:
    (project.root / "scenarios" / "raiser.py").write_text("def agent(client, task):\n    raise RuntimeError('boom')\n")
    path = project.scenario("plain", NO_EXPECT.format(name="plain", agent="x").replace("exiters:x", "raiser:agent"))
    assert run(project, str(path)) == 1
    [result] = read_results(project.results)
    assert result.status == "failed" and "boom" in result.why()


# The reference agent returns (does not raise) an error outcome when the SDK gives up: on a 400 at
# once, on a 429 after its own two retries.
GIVES_UP = {
    "bad-request": "  - error: {type: invalid_request_error}\n",
    "rate-limited": "  - error: {status: 429, retry_after: 0.01}\n" * 3,
}


@pytest.mark.parametrize("answer", sorted(GIVES_UP))
def test_a_run_ending_in_error_fails_without_expect_everywhere_it_is_shown(
    project: Project, answer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("gives-up", f"name: gives-up\nprompt: hi\nmode: scripted\nscript:\n{GIVES_UP[answer]}")
    assert run(project, str(path)) == 1
    [result] = read_results(project.results)
    assert result.status == "failed" and result.outcome is not None and result.outcome.status == "error"
    assert result.why().startswith("the agent's run ended in error: HTTP ")
    out = capsys.readouterr().out
    assert "1 planned, 1 finished (1 failed)" in out and "the agent's run ended in error: HTTP " in out
    junit, markdown = project.root / "junit.xml", project.root / "summary.md"
    assert main(["report", str(project.results), "-o", str(project.root / "report"),
                 "--junit", str(junit), "--markdown", str(markdown)]) == 0
    [failure] = ElementTree.parse(junit).iter("failure")
    assert failure.get("message", "").startswith("the agent's run ended in error: HTTP ")
    assert "0/1 runs passed" in markdown.read_text()


def test_a_run_ending_in_error_passes_when_the_scenario_expects_it(project: Project) -> None:
    body = f"name: expected\nprompt: hi\nmode: scripted\nexpect: {{outcome: error}}\nscript:\n{GIVES_UP['bad-request']}"
    assert run(project, str(project.scenario("expected", body))) == 0
    [result] = read_results(project.results)
    assert result.status == "passed"


def test_a_module_that_exits_at_import_is_that_scenarios_error(project: Project,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (project.root / "scenarios" / "quitter.py").write_text("import sys\nsys.exit(5)\n")
    (project.root / "scenarios" / "exiters.py").write_text(EXITING_AGENTS)
    project.scenario("quits", NO_EXPECT.format(name="quits", agent="x").replace("exiters:x", "quitter:agent"))
    project.scenario("good", PASSING.replace("name: lookup", "name: good"))
    assert run(project, str(project.root / "scenarios")) == 2
    [result] = read_results(project.results)
    assert result.scenario == "good" and result.status == "passed"
    err = capsys.readouterr().err
    assert "quits.yaml" in err and "importing it called sys.exit(5)" in err


SCORER_OF_SETS = """
from harness.scores import Score


def tools_seen(ctx):
    return Score("tools_seen", 1.0, "looked the order up", details={"tools": {"lookup_order"}})
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_score_the_results_file_cannot_hold_is_the_scorers_error_and_the_run_keeps_its_trace(
    project: Project, jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A custom scorer's details holding a set: the run's line could not be serialized, and the worker
    # thread died with a traceback, dropping the run and every run queued behind it, with exit 0
    # (in a worker process: an error blaming "os._exit in the agent?"); then the run's line was an
    # error with neither its trace nor its cost, blamed on no one.
    (project.root / "scenarios" / "set_scores.py").write_text(SCORER_OF_SETS)
    for name in ("a", "b"):
        project.scenario(name, PASSING.replace("name: lookup", f"name: {name}") + "score: [set_scores:tools_seen]\n")
    project.scenario("good", PASSING.replace("name: lookup", "name: good"))
    assert run(project, str(project.root / "scenarios"), "-j", jobs) == 2
    results = {r.scenario: r for r in read_results(project.results)}
    assert sorted(results) == ["a", "b", "good"]
    assert results["good"].status == "passed"
    why = "its score cannot be written to the results file (TypeError: Object of type set is not JSON serializable)"
    for name in ("a", "b"):
        result = results[name]
        assert result.status == "error" and result.error is not None
        assert f"scorer 'tools_seen' (set_scores:tools_seen) failed: {why}" in result.error, result.error
        [score] = result.scores
        assert (score.value, score.reason) == (None, f"the scorer failed: {why}")
        assert result.trace is not None and len(result.trace.calls) == 2 and result.cost_usd is not None
    out, err = capsys.readouterr()
    assert "3 planned, 3 finished" in out and "Traceback" not in err


UNWRITABLE_RULE = """
from harness.checks import Finding, rule


@rule("X911", "Every run gets a finding whose message is no text")
def unwritable(trace, ctx):
    yield Finding("X911", "error", None, None, {"a", "set"})
"""


@pytest.fixture
def unwritable_rule(project: Project, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A plugin module whose rule's finding no results line can hold (its message is a set)."""
    (project.root / "x911_rules.py").write_text(UNWRITABLE_RULE)
    monkeypatch.syspath_prepend(str(project.root))
    yield "x911_rules"
    _RULES.pop("X911", None)
    sys.modules.pop("x911_rules", None)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_result_that_cannot_be_written_as_json_is_that_runs_error_and_the_other_runs_are_made(
    project: Project, jobs: str, unwritable_rule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A result its line cannot hold (here a plugin's finding whose message is a set): the worker thread
    # died with a traceback, dropping the run and every run queued behind it, with exit 0 (in a worker
    # process: an error blaming "os._exit in the agent?").
    for name in ("a", "b", "c"):
        project.scenario(name, PASSING.replace("name: lookup", f"name: {name}"))
    assert run(project, str(project.root / "scenarios"), "-j", jobs, "--plugin", unwritable_rule) == 2
    results = {r.scenario: r for r in read_results(project.results)}
    assert sorted(results) == ["a", "b", "c"]
    why = "the run's result could not be recorded: TypeError: Object of type set is not JSON serializable"
    for result in results.values():
        assert result.status == "error" and result.error == why, result.error
        assert result.outcome is not None and result.outcome.status == "error"
    out, err = capsys.readouterr()
    assert "3 planned, 3 finished" in out and "Traceback" not in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_cassette_that_is_no_yaml_is_that_runs_error_and_the_other_runs_are_made(
    project: Project, jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A merge conflict left in a cassette: its replay is an error naming the file, never a worker
    # thread's traceback that drops the run (and every run queued behind it) with exit 0.
    cassette = project.root / "cassettes" / "conflicted.yaml"
    cassette.parent.mkdir()
    cassette.write_text("interactions: [\n<<<<<<< HEAD\n")
    replayed = PASSING.replace("name: lookup", "name: conflicted").replace("mode: scripted", "mode: replay")
    project.scenario("conflicted", replayed + f"cassette: {cassette}\n")
    project.scenario("good", PASSING.replace("name: lookup", "name: good"))
    assert run(project, str(project.root / "scenarios"), "-j", jobs) == 2
    results = {r.scenario: r for r in read_results(project.results)}
    assert results["good"].status == "passed"
    broken = results["conflicted"]
    assert broken.status == "error" and broken.error is not None
    assert f"{cassette}: not a readable vcrpy cassette" in broken.error
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "2 planned, 2 finished (1 passed, 1 error)" in captured.out


def test_a_fixture_module_that_raises_at_import_is_that_scenarios_error_at_its_fixture(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.root / "scenarios" / "orders_db.py").write_text("raise RuntimeError('no orders database')\n")
    fixture = LOOKUP.split("    fixture:\n", 1)[1]
    bad = project.scenario("db", PASSING.replace("name: lookup", "name: db", 1).replace(
        fixture, "      python: orders_db:lookup\n"))
    project.scenario("good", PASSING.replace("name: lookup", "name: good", 1))
    assert run(project, str(project.root / "scenarios")) == 2
    [result] = read_results(project.results)
    assert result.scenario == "good" and result.status == "passed"
    assert (f"harness: {bad}:8: tools[0].fixture.python: cannot import orders_db:lookup: RuntimeError: no orders "
            f"database (at {project.root / 'scenarios' / 'orders_db.py'}:1)") in capsys.readouterr().err


def test_a_second_writer_of_one_results_file_is_refused_and_nothing_is_lost(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING)
    with ResultsWriter(project.results):
        assert run(project, str(path)) == 2
    assert "another harness command is writing this results file" in capsys.readouterr().err
    assert run(project, str(path)) == 0


def test_a_results_file_that_already_holds_results_is_not_emptied_unless_asked(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path)) == 0
    before = project.results.read_bytes()
    assert main(["run", str(path), "--results", str(project.results), "--no-report"]) == 2
    assert project.results.read_bytes() == before
    assert "--resume" in capsys.readouterr().err


def _file_size_limit(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="needs a per-process file size limit (POSIX)")
@pytest.mark.parametrize(("jobs", "repeats", "lines"), [
    ("1", 1, 3),  # six scenarios, one run each: the limit cuts the second or third line
    # One scenario's quick runs go to the workers several at a time: those sent ahead when the file
    # failed are not made, as the runs still waiting are not.
    ("2", 200, 30),
])
def test_a_results_file_that_cannot_grow_stops_new_runs_keeps_whole_lines_and_exits_2(
    project: Project, jobs: str, repeats: int, lines: int
) -> None:
    for number in range(6 if repeats == 1 else 1):
        named = f"name: s{number}\nmatrix: {{repeats: {repeats}}}\n"
        project.scenario(f"s{number}", PASSING.replace("name: lookup\n", named))
    planned = 6 if repeats == 1 else repeats
    one_line = 2500  # a result line of this scenario is a few kilobytes
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", str(project.root / "scenarios"), "--fresh", "-j", jobs,
         "--results", str(project.results), "--no-report"],
        capture_output=True, text=True, cwd=project.root, preexec_fn=lambda: _file_size_limit(lines * one_line),
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"harness: {project.results}: cannot write a result" in done.stderr
    text = project.results.read_text()
    assert text.endswith("\n")
    kept = read_results(project.results)
    assert 0 < len(kept) < planned
    assert f"{planned} planned, {len(kept)} finished" in done.stdout
    assert f"{planned - len(kept)} not made" in done.stdout
    if repeats == 1:  # each run named (a few at most)
        assert textwrap.dedent(done.stdout).count("NOT MADE") == planned - len(kept)


SLOW_AGENT = """
import time

from harness.agents import AGENTS


def agent(client, task):
    time.sleep(0.3)  # long enough for the test to kill the command between two runs
    return AGENTS["reference"](client, task)
"""


def _run_ids(path: Path) -> set[tuple[str, str, int, tuple[str, ...]]]:
    return {(r.run_id, r.status, r.steps, tuple(f.code for f in r.findings)) for r in read_results(path)}


def test_kill_9_in_the_middle_of_a_matrix_then_resume_gives_the_uninterrupted_result_set(project: Project) -> None:
    (project.root / "scenarios" / "slow.py").write_text(SLOW_AGENT)
    project.scenario("slow",
                     PASSING.replace("name: lookup\n", "name: slow\nagent: 'slow:agent'\nmatrix: {repeats: 8}\n"))
    scenarios = str(project.root / "scenarios")
    command = [sys.executable, "-m", "harness", "run", scenarios, "--results", str(project.results), "--no-report"]
    killed = subprocess.Popen([*command, "--fresh"], cwd=project.root, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = 120.0
        import time

        start = time.monotonic()
        while not (project.results.exists() and project.results.read_bytes().count(b"\n") >= 2):
            assert killed.poll() is None, "the command ended before it could be killed"
            assert time.monotonic() - start < deadline
            time.sleep(0.05)
        killed.send_signal(signal.SIGKILL)
    finally:
        killed.wait()
    interrupted = read_results(project.results)
    assert 2 <= len(interrupted) < 8

    resumed = subprocess.run([*command, "--resume"], cwd=project.root, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{len(interrupted)} already in the results file" in resumed.stdout

    whole = project.root / "whole.jsonl"
    subprocess.run([sys.executable, "-m", "harness", "run", scenarios, "--fresh", "--results",
                    str(whole), "--no-report"],
                   cwd=project.root, capture_output=True, check=True, timeout=300)
    assert len(read_results(project.results)) == 8
    assert _run_ids(project.results) == _run_ids(whole)


def test_kill_9_while_16_runs_write_at_once_loses_no_finished_run_and_leaves_no_torn_line(project: Project) -> None:
    """The results file is synced to disk in batches by the writer's own thread, so no run waits for the
    disk; a run counts as finished (its progress line printed) only once its line is in the file, so a
    kill at any moment loses none of those, and what the kill cuts short is at most one torn last line,
    which the next writer drops."""
    project.scenario("lookup", PASSING.replace("name: lookup\n", "name: lookup\nmatrix: {repeats: 2000}\n"))
    command = [sys.executable, "-m", "harness", "run", str(project.root / "scenarios"), "--fresh", "-j", "16",
               "--results", str(project.results), "--no-report"]
    killed = subprocess.Popen(command, cwd=project.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    reported: set[str] = set()
    try:
        assert killed.stderr is not None
        for line in killed.stderr:
            if line.startswith("[") and line.rstrip().endswith(" passed"):
                reported.add(line.split("] ", 1)[1].rsplit(" ", 1)[0].replace(" [", "[", 1))
            if len(reported) >= 150:
                killed.send_signal(signal.SIGKILL)
                break
        else:
            raise AssertionError("the command ended before it could be killed")
        reported.update(  # progress lines already in the pipe were printed before the kill
            line.split("] ", 1)[1].rsplit(" ", 1)[0].replace(" [", "[", 1)
            for line in killed.stderr if line.startswith("[") and line.rstrip().endswith(" passed")
        )
    finally:
        killed.kill()
        killed.wait()
    lines = project.results.read_bytes().split(b"\n")
    for number, line in enumerate(lines[:-1], start=1):
        assert json.loads(line)["status"] == "passed", f"line {number} is not a whole result"
    ResultsWriter(project.results).close()  # what --resume does first: drop a torn last line, if the kill made one
    warnings: list[str] = []
    written = {result.run_id for result in read_results(project.results, warnings=warnings)}
    assert warnings == []
    assert project.results.read_bytes().endswith(b"\n")
    assert reported <= written, f"finished but lost: {sorted(reported - written)[:5]}"
    assert 150 <= len(written) < 2000


def test_retry_errors_makes_the_error_runs_again_and_the_new_line_wins(project: Project) -> None:
    path = project.scenario("lookup", PASSING.replace("mode: scripted\n", "mode: replay\n"))
    assert run(project, str(path)) == 2  # no cassette yet: an error
    assert main(["run", str(path), "--record", "--fresh", "--results", str(project.root / "rec.jsonl"),
                 "--no-report"]) == 0
    assert main(["run", str(path), "--resume", "--results", str(project.results), "--no-report"]) == 2  # kept as is
    assert main(["run", str(path), "--retry-errors", "--results", str(project.results), "--no-report"]) == 0
    [result] = read_results(project.results)
    assert result.status == "passed"
    assert project.results.read_text().count("\n") == 2
