"""`harness run` end to end through the CLI: scripted and replay modes, results, exit statuses, interrupts."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from run_support import LOOKUP, SCRIPT, Project, crashing_agent

from harness.cli import main
from harness.results import read_results

ROOT = Path(__file__).resolve().parents[2]

PASSING = f"""name: lookup
prompt: Where is order O1?
{LOOKUP}expect:
  outcome: completed
  final_text: {{contains: delivered}}
  tools_called: {{calls: [{{name: lookup_order, input: {{order_id: O1}}}}]}}
mode: scripted
{SCRIPT}"""


class Terminal(io.StringIO):
    """An output stream that says it is a terminal, as rich and the progress bar ask."""

    def isatty(self) -> bool:
        return True


def run(project: Project, *args: str) -> int:
    return main(["run", *args, "--fresh", "--results", str(project.results), "--report", str(project.root / "report")])


def test_scripted_run_end_to_end_then_replay_of_its_recording(project: Project,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--record") == 0
    cassette = project.root / "cassettes" / "lookup.yaml"
    assert "recorded_against: scripted model" in cassette.read_text()
    [result] = read_results(project.results)
    assert (result.status, result.mode, result.steps, result.answers) == ("passed", "scripted", 2, "scripted")
    assert result.outcome is not None and result.outcome.final_text == "Order O1 was delivered."
    assert result.usage.total > 0 and result.cost_usd is not None and result.cost_usd > 0
    executions = result.trace.tool_executions  # type: ignore[union-attr]
    assert [e.tool_use_id.startswith("toolu_") for e in executions] == [True]

    assert run(project, str(path), "--mode", "replay") == 0
    [replayed] = read_results(project.results)  # the results file starts over with each command
    assert replayed.mode == "replay" and replayed.status == "passed"
    # Its cassette was recorded from the script: its answers say nothing of a model's quality.
    assert replayed.answers == "scripted"
    out, err = capsys.readouterr()
    assert "[1/1] lookup [claude-sonnet-5-default] passed" in err
    assert "scenario  cell" in out and "1 planned, 1 finished (1 passed)" in out


def test_a_replay_that_no_longer_matches_is_a_harness_error(project: Project,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--record") == 0
    path.write_text(path.read_text().replace("Where is order O1?", "Where is my order?"))
    assert run(project, str(path), "--mode", "replay") == 2
    [result] = read_results(project.results)
    assert result.status == "error" and result.error is not None
    assert "no recorded interaction matches" in result.error
    # The way out is the command to type, not the Python API (open_session) a CLI user never calls.
    assert f"record the cassette again: harness run {path} --record (plays the scenario's script" in result.error
    assert "open_session" not in result.error
    out = capsys.readouterr().out
    assert "ERROR lookup" in out
    # The call the replay refused is the harness's doing: no finding (E001 on it) is blamed on the agent.
    [row] = [line for line in out.splitlines() if line.startswith("lookup ") and " error " in line]
    assert row.split()[-1] == "-", row


def test_a_missing_cassette_says_which_command_records_it(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path), "--mode", "replay") == 2
    [result] = read_results(project.results)
    assert result.error is not None and "no cassette here to replay. Record it first: " in result.error
    assert f"harness run {path} --record (plays the scenario's script, offline)" in result.error
    assert "open_session" not in result.error
    scriptless = project.scenario("bare", "prompt: hi\n")
    assert run(project, str(scriptless)) == 2
    [result] = read_results(project.results)
    assert result.error is not None and f"harness run {scriptless} --mode record (live API" in result.error
    assert "give the scenario a `script` and use --record" in result.error


USER_AGENT = """import anthropic
from harness import Task


def loop(client: anthropic.Anthropic, task: Task) -> str:
    messages = [{"role": "user", "content": task.turns[0]}]
    while True:
        resp = client.messages.create(**task.request_params(), messages=messages)
        messages.append({"role": "assistant", "content": resp.content})
        if resp.stop_reason != "tool_use":
            return "".join(b.text for b in resp.content if b.type == "text")
        messages.append({"role": "user", "content": [
            task.run_tool(b.name, b.input, b.id).block(b.id) for b in resp.content if b.type == "tool_use"]})


def crash(client: anthropic.Anthropic, task: Task) -> str:
    client.messages.create(**task.request_params(), messages=[{"role": "user", "content": task.turns[0]}])
    raise ValueError("blew up after the first call")
"""


@pytest.mark.parametrize("where", ["cwd", "scenario folder"])
def test_a_users_agent_package_imports_without_being_installed(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    # `harness` is a console script: sys.path[0] is its bin folder, not the user's project. The
    # docs promise the current directory and the scenario's folder are importable, as for fixtures.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", os.getcwd())])
    package = f"useragents_{where.replace(' ', '_')}"
    home = project.root if where == "cwd" else project.root / "scenarios"
    (home / package).mkdir()
    (home / package / "__init__.py").write_text("")
    (home / package / "loops.py").write_text(USER_AGENT)
    monkeypatch.chdir(project.root if where == "cwd" else project.root.parent)
    path = project.scenario("mine", PASSING.replace("name: lookup\n", f"name: mine\nagent: '{package}.loops:loop'\n"))
    assert run(project, str(path)) == 0, capsys.readouterr()
    [result] = read_results(project.results)
    assert result.status == "passed" and result.steps == 2


def _in_project_with(project: Project, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    """Work in the project's root holding `files` (paths under it: an agent's package), as a user runs
    `harness run` beside their code; the import path the harness extends is restored after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name, text in files.items():
        path = project.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.chdir(project.root)


def test_a_missing_agent_module_says_where_it_was_looked_for(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _in_project_with(project, monkeypatch, {})
    project.scenario("lost", "prompt: hi\nagent: 'nowhere_to_be_found.loops:loop'\n")
    assert run(project, "scenarios") == 2
    err = capsys.readouterr().err
    assert ("lost.yaml:3: agent: agent 'nowhere_to_be_found.loops:loop': "
            "cannot import 'nowhere_to_be_found.loops'") in err
    assert f"looked in {project.root}, {project.root / 'scenarios'} and the installed packages" in err


def test_an_agent_module_whose_own_import_fails_names_that_import_not_where_to_run_from(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The package was found; a dependency of it is missing. "Run from the folder holding your package,
    # or pip install -e it" sends the user after the wrong fix: the line that imports it is the one to see.
    _in_project_with(project, monkeypatch, {"needy/__init__.py": "import a_dependency_not_installed_xyz\n"})
    project.scenario("needy", "prompt: hi\nagent: 'needy:loop'\n")
    assert run(project, "scenarios") == 2
    err = capsys.readouterr().err
    assert ("needy.yaml:3: agent: agent 'needy:loop': cannot import 'needy': ModuleNotFoundError: No module "
            "named 'a_dependency_not_installed_xyz' (at ") in err
    assert "needy/__init__.py:1)" in err and "folder holding your package" not in err


def test_an_agent_that_raises_is_shown_with_the_line_that_raised(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _in_project_with(project, monkeypatch, {"crashers/__init__.py": "", "crashers/loops.py": USER_AGENT})
    # No `expect`: only L002 would say the run failed, and not why.
    body = PASSING.replace("name: lookup\n", "name: boom\nagent: 'crashers.loops:crash'\n")
    path = project.scenario("boom", body[: body.index("expect:")] + body[body.index("mode:") :])
    assert run(project, "scenarios/boom.yaml", "--mode", "scripted") == 1
    [result] = read_results(project.results)
    assert result.outcome is not None
    where = f"{os.path.join('crashers', 'loops.py')}:18 in crash"
    assert result.outcome.reason == f"ValueError: blew up after the first call (at {where})"
    captured = capsys.readouterr()
    # The exception is the cause and comes first; the L002 it leads to is listed after it.
    why = f"the agent raised: ValueError: blew up after the first call (at {where})"
    assert f"[1/1] boom [claude-sonnet-5-default] failed: {why}" in captured.err
    out = captured.out
    assert f"FAILED boom [claude-sonnet-5-default] ({path.relative_to(project.root)})\n    {why}\n    L002 " in out


def test_failed_expectations_exit_1_and_say_why(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = PASSING.replace("contains: delivered", "contains: lost").replace("name: lookup\n", "name: wrong\n")
    project.scenario("wrong", wrong)
    assert run(project, str(project.root / "scenarios"), "--mode", "scripted") == 1
    [result] = read_results(project.results)
    assert result.status == "failed"
    assert [e.name for e in result.expectations if not e.passed] == ["final_text.contains"]
    out = capsys.readouterr().out
    assert "FAILED wrong" in out and "expect final_text.contains: 'lost' not in 'Order O1 was delivered.'" in out


def test_a_malformed_scenario_is_reported_and_the_others_still_run(project: Project,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    project.scenario("good", PASSING)
    project.scenario("typo", "prompt: hi\nexpect:\n  outcom: completed\n")
    assert run(project, str(project.root / "scenarios")) == 2
    assert [r.scenario for r in read_results(project.results)] == ["lookup"]
    err = capsys.readouterr().err
    assert "typo.yaml:4: expect.outcom: unknown key; valid keys: outcome," in err


def test_unknown_agent_and_bad_options_are_harness_errors(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.scenario("agent", "prompt: hi\nagent: nobody\n")
    assert run(project, str(project.root / "scenarios")) == 2
    assert "agent.yaml:3: agent: unknown agent 'nobody'" in capsys.readouterr().err
    assert run(project, str(project.root / "scenarios"), "--mode", "replay", "--record") == 2
    assert "cannot go with --mode replay" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value", "says"), [
    ("-j", "abc", "argument -j/--jobs: a whole number of 1 or more was expected, got 'abc'"),
    ("-j", "0", "argument -j/--jobs: must be 1 or more, got 0"),
    ("--repeat", "2.5", "argument --repeat: a whole number of 1 or more was expected, got '2.5'"),
])
def test_a_count_that_is_no_whole_number_says_so(option: str, value: str, says: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # argparse names the type function of a value it cannot convert: "invalid _positive value: 'abc'".
    with pytest.raises(SystemExit) as refused:
        main(["run", option, value, "--results", str(tmp_path / "r.jsonl"), "--no-report"])
    assert refused.value.code == 2
    assert f"harness run: error: {says}\n" in capsys.readouterr().err


def test_matrix_runs_concurrently_and_every_result_is_a_line(project: Project,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    project.scenario("lookup", PASSING + "matrix: {models: [claude-sonnet-5, claude-opus-4-8], efforts: [low, max]}\n")
    assert run(project, str(project.root / "scenarios"), "-j", "3", "--repeat", "2") == 0
    results = read_results(project.results)
    assert len(results) == 8 and {r.status for r in results} == {"passed"}
    assert {(r.model, r.effort, r.repeat) for r in results} == {
        (m, e, n) for m in ("claude-sonnet-5", "claude-opus-4-8") for e in ("low", "max") for n in (0, 1)
    }
    for result in results:
        assert result.trace is not None
        request = result.trace.calls[0].request
        assert (request["model"], request["output_config"]) == (result.model, {"effort": result.effort})
    assert "[8/8]" in capsys.readouterr().err


def test_an_agent_that_raises_ends_as_an_error_outcome(project: Project) -> None:
    project.scenario(
        "crash",
        "prompt: hi\nagent: 'tests.run.run_support:crashing_agent'\nmode: scripted\nscript: [{text: hi}]\n"
        "expect: {outcome: error}\n",
    )
    assert run(project, str(project.root / "scenarios")) == 0
    [result] = read_results(project.results)
    assert result.outcome is not None and result.outcome.status == "error"
    assert result.outcome.reason is not None
    assert result.outcome.reason.startswith("RuntimeError: the agent fell over (at ")
    line = crashing_agent.__code__.co_firstlineno + 2  # the `raise`, after the def and its docstring
    assert result.outcome.reason.endswith(f"{os.path.join('run', 'run_support.py')}:{line} in crashing_agent)")


def test_the_shipped_scenarios_pass_offline_without_an_api_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.chdir(ROOT)
    status = main(["run", "scenarios/", "-j", "2", "--results", str(tmp_path / "results.jsonl"),
                   "--report", str(tmp_path / "report")])
    out = capsys.readouterr().out
    assert status == 0, out
    results = read_results(tmp_path / "results.jsonl")
    assert len(results) >= 40 and all(r.mode == "replay" for r in results)
    page = (tmp_path / "report" / "index.html").read_text()
    assert all(result.run_id in page for result in results)


@pytest.mark.parametrize("both", [False, True], ids=["stdout", "stdout-and-stderr"])
def test_a_reader_that_leaves_is_no_failure_and_loses_no_run(project: Project, both: bool) -> None:
    """`harness run | head -1`: the reader is gone before the first line (its end of the pipe is
    closed at once, so every write meets it gone). The runs are still made, the results file and the
    report written, nothing is said about the pipe, and the status is the runs' own."""
    for n in range(3):
        project.scenario(f"lookup{n}", PASSING.replace("name: lookup", f"name: lookup{n}"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["PYTHONPATH"] = str(ROOT)
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness", "run", "scenarios", "--results", str(project.results),
             "--report", str(project.root / "report")],
            cwd=project.root, env=env, stdout=write, stderr=write if both else subprocess.PIPE, timeout=300,
        )
    finally:
        os.close(write)
    assert done.returncode == 0
    if not both:
        said = done.stderr.decode()
        assert "[3/3]" in said and "Traceback" not in said and "Broken pipe" not in said, said
    assert [r.status for r in read_results(project.results)] == ["passed"] * 3
    assert (project.root / "report" / "index.html").is_file()


def test_an_interrupted_run_keeps_its_finished_lines(
    project: Project, interrupted_after: Callable[..., tuple[str, str]]
) -> None:
    slow = PASSING.replace("fixture:\n", "fixture:\n      delay_s: 0.3\n")
    for n in range(6):
        project.scenario(f"slow{n}", slow.replace("name: lookup", f"name: slow{n}"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(project.root / "scenarios"), "--results", str(project.results),
         "--report", str(project.root / "report")],
        cwd=project.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    out, err = interrupted_after(process, project.results, 1)
    assert process.returncode == 130, err
    lines = project.results.read_text().splitlines()
    assert 1 <= len(lines) < 6 and all(json.loads(line)["status"] == "passed" for line in lines)
    assert f"interrupted: {len(lines)} of 6 runs finished" in err and "cut: slow" in err
    assert "cut" in out


def test_an_unknown_rule_code_points_at_its_line(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.scenario("codes", "prompt: hi\nexpect:\n  findings: [L002, Z999]\n")
    assert run(project, str(project.root / "scenarios")) == 2
    assert "codes.yaml:4: expect.findings[1]: unknown rule code Z999; known codes: B001" in capsys.readouterr().err


def test_the_run_writes_its_report_and_gates_on_a_baseline(project: Project,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("lookup", PASSING)
    assert run(project, str(path)) == 0
    assert "lookup" in (project.root / "report" / "index.html").read_text()
    baseline = project.root / "baseline.jsonl"
    baseline.write_text(project.results.read_text())
    assert run(project, str(path), "--baseline", str(baseline)) == 0

    # A baseline in which the same run cost a tenth as much makes this run a cost regression.
    line = json.loads(baseline.read_text())
    line["cost_usd"] /= 10
    baseline.write_text(json.dumps(line) + "\n")
    capsys.readouterr()
    assert run(project, str(path), "--baseline", str(baseline)) == 1
    assert "cost" in capsys.readouterr().out


def test_a_report_worker_that_cannot_start_leaves_the_run_its_page_and_baseline(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import harness.report._files as files
    import harness.report._processes as spawn

    path = project.scenario("lookup", PASSING)
    assert run(project, str(path)) == 0
    baseline = project.root / "baseline.jsonl"
    baseline.write_text(project.results.read_text())
    monkeypatch.delenv(spawn.PROCESSES_VARIABLE, raising=False)
    monkeypatch.setattr(files, "_default_processes", lambda paths: 2)
    monkeypatch.setattr(sys, "executable", str(project.root / "no-python"))
    capsys.readouterr()
    assert run(project, str(path), "--baseline", str(baseline)) == 0
    out, err = capsys.readouterr()
    assert "cannot start the process building the runs' details" in err
    assert "building the report in one process" in err
    assert "lookup" in (project.root / "report" / "index.html").read_text()
    assert "report:" in out and "compared (cost threshold" in out  # the --baseline diff was made


def test_a_bad_report_processes_value_is_refused_before_any_run(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING)
    monkeypatch.setenv("HARNESS_REPORT_PROCESSES", "3")
    assert run(project, str(path)) == 2
    assert "HARNESS_REPORT_PROCESSES is '3': give 1 or 2" in capsys.readouterr().err
    assert not project.results.exists()


def test_record_without_a_key_stops_before_anything_runs_and_keeps_the_results(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    project.scenario("lookup", PASSING)
    project.scenario("other", PASSING.replace("name: lookup", "name: other"))
    assert run(project, str(project.root / "scenarios"), "--mode", "scripted") == 0
    before = project.results.read_text()
    assert run(project, str(project.root / "scenarios"), "--mode", "record") == 2
    err = capsys.readouterr().err
    # One message, not one failed run per scenario, and the last results are still there.
    assert err.count("ANTHROPIC_API_KEY is not set") == 1
    assert "(needed by 2 run(s) of lookup, other; nothing was run)" in err
    assert project.results.read_text() == before


def test_a_script_too_short_is_the_harness_error_even_when_the_agent_dies_of_it(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The script's end answers a 500 (no retry); a correct loop raises on it. That used to
    # make the run "failed" with E001 blamed on the agent, and the short script went unmentioned.
    _in_project_with(project, monkeypatch, {"shortscript/__init__.py": "", "shortscript/loops.py": USER_AGENT})
    body = PASSING.replace("name: lookup\n", "name: short\nagent: 'shortscript.loops:loop'\n")
    project.scenario("short", body.replace("  - text: Order O1 was delivered.\n", ""))
    assert run(project, "scenarios") == 2
    [result] = read_results(project.results)
    assert result.status == "error"
    assert result.error == (
        "1 request(s) came after the script ran out (1 steps): request 2; add steps for them or "
        "make the agent stop sooner"
    )
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("short ")]
    # Findings are shown on error runs too; the harness's own 500 carries x-should-retry: false,
    # which E001 reads, so none of them blames the agent for retrying it.
    assert row.split()[3] == "error", row



def test_on_a_terminal_progress_is_a_bar_with_a_line_per_run_that_did_not_pass(project: Project) -> None:
    from harness._commands import run as run_command
    from harness.cli import build_parser

    project.scenario("lookup", PASSING)
    project.scenario("wrong",
                     PASSING.replace("name: lookup", "name: wrong").replace("contains: delivered", "contains: lost"))
    args = build_parser(only="run").parse_args(
        ["run", str(project.root / "scenarios"), "--results", str(project.results), "--no-report"])
    err = Terminal()
    assert run_command.run(args, out=io.StringIO(), err=err) == 1
    drawn = err.getvalue()
    assert "\x1b[" in drawn  # drawn by rich, in place
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", drawn)
    assert "2/2 1 failed, 1 passed" in shown and shown.endswith("\n")
    assert "wrong [claude-sonnet-5-default] failed: expect final_text.contains: 'lost' not in" in shown
    assert "lookup [claude-sonnet-5-default] passed" not in shown  # passing runs only move the bar


def test_on_an_80_column_terminal_the_summary_table_fits_with_nothing_cut(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness._commands import run as run_command
    from harness.cli import build_parser

    monkeypatch.setenv("COLUMNS", "80")
    project.scenario("support-refund-for-a-long-scenario-name", PASSING.replace(
        "name: lookup", "name: support-refund-for-a-long-scenario-name"))
    args = build_parser(only="run").parse_args(
        ["run", str(project.root / "scenarios"), "--results", str(project.results), "--no-report"])
    out = Terminal()
    assert run_command.run(args, out=out, err=io.StringIO()) == 0
    shown = [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in out.getvalue().splitlines()]
    assert "\x1b[" in out.getvalue()  # styled: drawn by rich for a terminal
    table = shown[:shown.index("")]
    assert max(len(line) for line in table) <= 80, "\n".join(table)
    assert table[0].split() == ["scenario", "cell", "mode", "status", "steps", "tokens", "cost", "findings"]
    # The long name folds onto the lines below; the row's status and numbers are whole.
    assert re.search(r" scripted passed +\d+ +\d+ +\$\d+\.\d{4} -$", table[1]), table[1]
    assert "".join(line.split()[0] for line in table[1:]) == "support-refund-for-a-long-scenario-name"
