"""With -j 2 or more, scripted and replayed runs are made in worker processes (live and recorded ones
stay on threads): whatever happens to a worker, every run ends in the results file or in the
command's list of runs not made, and the features of a run (deadline, interrupt, resume, spending cap)
hold as they do on threads."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from run_support import LOOKUP, SCRIPT, Project

from harness.cli import main
from harness.results import RunResult, read_results
from harness.run import Overrides, PlannedRun, load_all, plan
from harness.run._execute import unfinished_result
from harness.run._runner import AHEAD_S, MAX_AHEAD, runs_ahead
from harness.run._workers import WorkerPool
from harness.transport._endpoint import shared_endpoint

ROOT = Path(__file__).resolve().parents[2]
PASSING = f"name: lookup\nprompt: Where is order O1?\n{LOOKUP}expect: {{outcome: completed}}\nmode: scripted\n{SCRIPT}"

AGENTS = """
import os
import time
from pathlib import Path

from harness.agents import AGENTS


def _note_pid(task):
    with open(Path(__file__).with_name("pids"), "a") as out:
        out.write(f"{os.getpid()}\\n")


def exits_hard(client, task):
    os._exit(3)


def waits_to_be_killed(client, task):
    _note_pid(task)
    time.sleep(120)
    return "never"


def over_http(client, task):
    return AGENTS["reference"](task.client(), task)


def slow(client, task):
    _note_pid(task)
    time.sleep(0.3)
    return AGENTS["reference"](client, task)
"""


def project_with(project: Project, agent: str, repeats: int = 1) -> Path:
    (project.root / "scenarios" / "workers.py").write_text(AGENTS)
    project.scenario("good", PASSING.replace("name: lookup\n", "name: good\nmatrix: {repeats: 3}\n"))
    return project.scenario("odd", PASSING.replace("name: lookup\n", f"name: odd\nagent: 'workers:{agent}'\n"
                                                                       f"matrix: {{repeats: {repeats}}}\n"))


def command(project: Project, *args: str) -> list[str]:
    return [sys.executable, "-m", "harness", "run", str(project.root / "scenarios"), "--results", str(project.results),
            "--no-report", *args]


def pids(project: Project) -> list[int]:
    path = project.root / "scenarios" / "pids"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def gone(pid: int) -> bool:
    """The process ended (a zombie left to a container's init counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_an_agent_that_ends_its_process_is_that_runs_error_and_the_other_runs_are_made(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project_with(project, "exits_hard", repeats=2)
    assert main(["run", str(project.root / "scenarios"), "-j", "2", "--fresh", "--results", str(project.results),
                 "--no-report"]) == 2
    results = {r.run_id: r for r in read_results(project.results)}
    assert len(results) == 5
    odd = [r for r in results.values() if r.scenario == "odd"]
    assert [r.status for r in odd] == ["error", "error"]
    assert all("worker process making this run exited with status 3" in (r.error or "") for r in odd)
    assert all(r.outcome is not None and r.outcome.status == "error" for r in odd)
    assert [r.status for r in results.values() if r.scenario == "good"] == ["passed"] * 3
    out = capsys.readouterr().out
    assert "5 planned, 5 finished (3 passed, 2 error)" in out


def test_a_worker_killed_with_kill_9_is_its_runs_error_never_a_lost_run(project: Project) -> None:
    project_with(project, "waits_to_be_killed")
    process = subprocess.Popen(command(project, "-j", "2", "--fresh"), cwd=project.root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120  # guards against a hang only; nothing is timed
        while not pids(project):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.05)
        [worker] = pids(project)
        assert worker != process.pid
        os.kill(worker, signal.SIGKILL)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 2, err
    results = {r.scenario: r for r in read_results(project.results)}
    assert results["odd"].status == "error"
    assert "was killed by signal 9 (SIGKILL) before it gave the run's result" in (results["odd"].error or "")
    assert len(read_results(project.results)) == 4 and "4 planned, 4 finished (3 passed, 1 error)" in out


def test_a_worker_serves_its_runs_on_its_own_endpoint_though_the_harness_served_before(project: Project) -> None:
    """Threads do not survive a fork: the endpoint the harness process started earlier answers nothing
    in a worker, which starts its own for agents that reach their run over HTTP."""
    shared_endpoint()
    project_with(project, "over_http", repeats=3)
    assert main(["run", str(project.root / "scenarios"), "-j", "2", "--fresh", "--results", str(project.results),
                 "--no-report"]) == 0
    assert [r.status for r in read_results(project.results)] == ["passed"] * 6


def test_the_deadline_ends_an_overrunning_run_in_a_worker_as_limit(project: Project) -> None:
    path = project.scenario("overrun", "name: overrun\nagent: 'overrunning_agents:sleeper'\nprompt: hi\n"
                                       "mode: scripted\nlimits: {wall_time_s: 1}\nmatrix: {repeats: 3}\n"
                                       "script: [{text: one}]\n")
    status = main(["run", str(path), "-j", "2", "--fresh", "--results", str(project.results), "--no-report"])
    assert status == 1
    results = read_results(project.results)
    assert len(results) == 3
    for result in results:
        assert result.outcome is not None and (result.outcome.status, result.outcome.limit) == ("limit", "wall_time")
        assert "the harness stopped the agent, still running" in result.outcome.reason
        assert result.duration_s < 30  # stopped, not waited for through its minute of sleep


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_keeps_every_finished_line_lists_the_cut_runs_and_ends_the_workers(
    project: Project, sent: signal.Signals, interrupted_after: Callable[..., tuple[str, str]]
) -> None:
    project_with(project, "slow", repeats=12)
    process = subprocess.Popen(command(project, "-j", "2", "--fresh"), cwd=project.root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, err = interrupted_after(process, project.results, 4, sent)
    assert process.returncode == 130, err
    lines = project.results.read_text().splitlines()
    assert all(json.loads(line)["status"] == "passed" for line in lines)
    kept = len(lines)
    assert 4 <= kept < 15
    # A line written as the interrupt came counts as cut, though kept.
    finished = re.search(r"interrupted: (\d+) of 15 runs finished", err)
    assert finished is not None and int(finished.group(1)) in (kept, kept - 1) and "cut: odd" in err
    deadline = time.monotonic() + 30
    while not all(gone(pid) for pid in set(pids(project))):
        assert time.monotonic() < deadline, "a worker process outlived the interrupted command"
        time.sleep(0.05)

    resumed = subprocess.run(command(project, "-j", "2", "--resume"), cwd=project.root, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{kept} already in the results file" in resumed.stdout
    assert sorted(r.run_id for r in read_results(project.results)) == sorted(
        [f"good[claude-sonnet-5-default-r{n}]" for n in range(3)]
        + [f"odd[claude-sonnet-5-default-r{n}]" for n in range(12)])


def test_j2_gives_the_results_j1_gives(project: Project) -> None:
    project_with(project, "slow", repeats=4)
    made = {}
    for jobs in ("1", "2"):
        done = subprocess.run(command(project, "-j", jobs, "--fresh"), cwd=project.root, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        made[jobs] = sorted((r.run_id, r.status, r.steps, r.usage.total, r.trace is not None and len(r.trace.exchanges))
                            for r in read_results(project.results))
    assert made["1"] == made["2"] and len(made["1"]) == 7
    assert len(set(pids(project))) >= 2  # -j 1 made its runs in the command's process, -j 2 in workers


def test_runs_sent_ahead_are_made_before_they_are_asked_for_and_a_death_costs_only_the_run_under_way(
    project: Project,
) -> None:
    """Quick runs go to a worker a few at a time: it makes each the moment the one before ends. Its
    answers already sent are read though it then dies; only the run it was making has that error,
    and the runs sent after it are made by the next worker."""
    sources, errors = load_all([project.scenario("quick", PASSING)])
    runs, problems = plan(sources, Overrides(repeats=6))
    assert not errors and not problems and len(runs) == 6
    made = project.root / "made"

    def make(run: PlannedRun) -> tuple[bytes, RunResult]:
        with made.open("a") as out:
            out.write(f"{run.cell.repeat} {os.getpid()} {time.monotonic()}\n")
        if run.cell.repeat == 3:
            os._exit(3)
        return f"{run.cell.repeat} {os.getpid()}".encode(), unfinished_result(run)

    def started() -> dict[int, tuple[int, float]]:
        lines = [line.split() for line in made.read_text().splitlines()] if made.exists() else []
        return {int(repeat): (int(pid), float(at)) for repeat, pid, at in lines}

    pool = WorkerPool(runs, make)
    try:
        first, _ = pool.make(0, 0, None, then=[1, 2, 3, 4])
        deadline = time.monotonic() + 60  # guards against a hang only; nothing is timed
        while 3 not in started():
            assert time.monotonic() < deadline, "the worker did not go on with the runs sent ahead"
            time.sleep(0.01)
        asked = time.monotonic()
        # As the runner does, each call sends one more ahead: to a worker that has died, by then.
        answers = [pool.make(0, index, None, then=range(index + 1, min(index + 5, 6))) for index in range(1, 6)]
    finally:
        pool.close()
    worker = int(first.split()[1])
    assert [line for line, _ in answers[:2]] == [f"1 {worker}".encode(), f"2 {worker}".encode()]
    assert all(started()[repeat][1] < asked for repeat in (1, 2, 3))  # made before the harness asked
    died = answers[2][1]
    assert died.run_id == runs[3].run_id and died.status == "error"
    assert "worker process making this run exited with status 3" in (died.error or "")
    later = {int(line.split()[1]) for line, _ in answers[3:]}
    assert len(later) == 1 and worker not in later
    assert [line.split()[0] for line, _ in answers[3:]] == [b"4", b"5"]


def test_answers_gathered_under_a_deadline_are_read_without_waiting_for_more(project: Project) -> None:
    """A run's deadline puts a timeout on its worker's channel: reading the answers already there
    must not wait that long (and the backstop after it) for one more."""
    sources, _ = load_all([project.scenario("quick", PASSING)])
    runs, _ = plan(sources, Overrides(repeats=4))
    pool = WorkerPool(runs, lambda run: (str(run.cell.repeat).encode(), unfinished_result(run)))
    answers: list[bytes] = []

    def make_all() -> None:
        answers.append(pool.make(0, 0, 1.0)[0])  # the channel has the run's timeout from now on
        for index in range(1, 4):
            answers.append(pool.make(0, index, 1.0, then=range(index + 1, 4))[0])

    try:
        making = threading.Thread(target=make_all, daemon=True)
        making.start()
        making.join(20)  # a hang guard: a read that waited would take the backstop's 30 s and more
        assert not making.is_alive(), "reading the gathered answers waited for one more"
    finally:
        pool.close()
    assert answers == [b"0", b"1", b"2", b"3"]


def test_an_answer_the_harness_cannot_read_costs_its_run_alone(project: Project) -> None:
    """The worker's answer holds an object of a class the harness cannot import: that run's result
    is lost (the runner makes it the run's error), the runs after it are answered as made."""
    sources, _ = load_all([project.scenario("quick", PASSING)])
    runs, _ = plan(sources, Overrides(repeats=4))

    def make(run: PlannedRun) -> tuple[bytes, RunResult]:
        result = unfinished_result(run)
        if run.cell.repeat == 1:  # a class that exists in the worker only
            module = types.ModuleType("only_in_the_worker")
            module.Odd = type("Odd", (), {"__module__": "only_in_the_worker"})  # type: ignore[attr-defined]
            sys.modules["only_in_the_worker"] = module
            result.error = module.Odd()  # type: ignore[attr-defined, assignment]
        return str(run.cell.repeat).encode(), result

    pool = WorkerPool(runs, make)
    try:
        assert pool.make(0, 0, None, then=[1, 2, 3])[0] == b"0"
        with pytest.raises(ModuleNotFoundError, match="only_in_the_worker"):
            pool.make(0, 1, None, then=[2, 3])
        assert [pool.make(0, index, None, then=range(index + 1, 4))[0] for index in (2, 3)] == [b"2", b"3"]
    finally:
        pool.close()


def test_a_worker_asked_for_a_run_out_of_the_order_it_was_sent_refuses(project: Project) -> None:
    """Its answer would be another run's."""
    sources, _ = load_all([project.scenario("quick", PASSING)])
    runs, _ = plan(sources, Overrides(repeats=3))
    pool = WorkerPool(runs, lambda run: (b"line", unfinished_result(run)))
    try:
        pool.make(0, 0, None, then=[1])
        with pytest.raises(RuntimeError, match="run 2 asked of a worker that makes run 1 first"):
            pool.make(0, 2, None)
    finally:
        pool.close()


def test_how_many_runs_go_ahead_falls_with_their_length_to_none() -> None:
    lengths = [0.0001, 0.0005, 0.004, 0.02, 0.1, AHEAD_S - 0.001, AHEAD_S, 30.0]
    ahead = [runs_ahead(length) for length in lengths]
    assert ahead == sorted(ahead, reverse=True)
    assert ahead[0] == MAX_AHEAD and ahead[3] >= 2 and ahead[5] == 1 and ahead[6:] == [0, 0]
    assert runs_ahead(0.0) == 0  # a run with no length of its own (its worker died): nothing to go by


def test_quick_runs_interrupted_with_runs_sent_ahead_are_cut_and_resumed_each_once(
    project: Project, interrupted_after: Callable[..., tuple[str, str]]
) -> None:
    project.scenario("quick", PASSING.replace("name: lookup\n", "name: quick\nmatrix: {repeats: 600}\n"))
    process = subprocess.Popen(command(project, "-j", "2", "--fresh"), cwd=project.root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, err = interrupted_after(process, project.results, 40)
    if process.returncode == 0:
        pytest.fail("the 600 runs all ended before the interrupt reached the command: " + out[-300:])
    assert process.returncode == 130, err
    lines = project.results.read_text().splitlines()
    kept = len(lines)
    assert all(json.loads(line)["status"] == "passed" for line in lines)
    finished = re.search(r"interrupted: (\d+) of 600 runs finished", err)
    assert finished is not None and int(finished.group(1)) in (kept, kept - 1)
    cut = re.search(r"cut: (.*)\. Run again with --resume", err)
    assert cut is not None
    cut_ids = set(cut.group(1).split(", "))
    kept_ids = {json.loads(line)["run_id"] for line in lines}
    every = {f"quick[claude-sonnet-5-default-r{n}]" for n in range(600)}
    # Each run finished or cut (a line written as the interrupt came is both), none lost with the runs sent ahead.
    assert kept_ids | cut_ids == every and len(kept_ids & cut_ids) <= 1

    resumed = subprocess.run(command(project, "-j", "2", "--resume"), cwd=project.root, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    run_ids = [r.run_id for r in read_results(project.results)]
    assert sorted(run_ids) == sorted(every)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_harness_own_calls_are_counted_whichever_process_made_the_run(
    tmp_path: Path, jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scenarios = [str(ROOT / "scenarios" / f"{name}.yaml") for name in ("support-simulated-user", "stop-end-turn")]
    assert main(["run", *scenarios, "-j", jobs, "--results", str(tmp_path / "r.jsonl"), "--no-report"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("total cost")]
    assert "for the harness's own calls (simulated user)" in line, line


LINGERING_COMMAND = """
import subprocess, sys, time
from pathlib import Path

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(Path(__file__).with_name("pids"), "a") as out:
    out.write(f"{child.pid}\\n")
time.sleep(120)
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_ends_the_agent_commands_under_way_and_what_they_started(
        project: Project, jobs: str, sent: signal.Signals) -> None:
    # A command agent runs in a session of its own (so that it is killed with all it started): a Ctrl-C
    # at the terminal does not reach it, and the run that would kill it at its end was cut. The commands
    # under way, on a thread (-j 1) or in a worker (-j 2), went on running after the harness exited 130.
    (project.root / "scenarios" / "lingers.py").write_text(LINGERING_COMMAND)
    project.scenario("lingers", "name: lingers\nprompt: hi\nagent: {command: [" + json.dumps(sys.executable)
                     + ", lingers.py]}\nmode: scripted\nscript:\n  - text: hi\nmatrix: {repeats: 2}\n")
    process = subprocess.Popen(command(project, "-j", jobs), cwd=project.root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    started: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(started := pids(project)) < int(jobs):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        with open(f"/proc/{started[0]}/stat") as stat:  # the command is the child's parent
            commands = [int(stat.read().rsplit(")", 1)[1].split()[1])]
        process.send_signal(sent)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in [*started, *commands]):
        assert time.monotonic() < deadline, "an agent command outlived the interrupted harness"
        time.sleep(0.05)


def test_every_run_is_killed_from_a_handler_that_interrupts_the_thread_holding_the_lock(tmp_path: Path) -> None:
    # A worker's SIGTERM handler runs in its main thread between two bytecodes, also inside `with _live_lock`
    # (that thread starting or ending a command's run): kill_every_run must not wait there for itself.
    from harness.agents import _processes

    command = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        _processes.RunProcesses(command, _processes.new_tag())

        def interrupted_inside_the_lock() -> None:
            with _processes._live_lock:
                _processes.kill_every_run()

        thread = threading.Thread(target=interrupted_inside_the_lock, daemon=True)
        thread.start()
        thread.join(10)
        assert not thread.is_alive(), "kill_every_run waited for the lock its own thread holds"
        assert command.wait(timeout=10) == -signal.SIGKILL
    finally:
        command.kill()
        command.wait()


def test_a_command_started_after_an_interrupt_killed_every_run_is_killed_as_it_starts() -> None:
    # A run under way but short of starting its command (its endpoint served, its environment made) when
    # an interrupt killed every run's command started it after, as the harness exited: it ran on, orphaned.
    from harness.agents import _processes

    sleeping = [sys.executable, "-c", "import time; time.sleep(120)"]
    started: list[subprocess.Popen[bytes]] = []
    try:
        _processes.kill_every_run()
        started.append(subprocess.Popen(sleeping, start_new_session=True))
        _processes.RunProcesses(started[-1], _processes.new_tag())
        assert started[-1].wait(timeout=10) == -signal.SIGKILL
        _processes.allow_runs()  # a batch starts: its commands run
        started.append(subprocess.Popen(sleeping, start_new_session=True))
        later = _processes.RunProcesses(started[-1], _processes.new_tag())
        assert started[-1].poll() is None
        later.kill()
    finally:
        _processes.allow_runs()
        for process in started:
            process.kill()
            process.wait()
