"""`harness run` says how each run was made, refuses scenarios it cannot read or trust with one line
each, and writes its outputs whole, inside their folders.

Each test runs the command as a user would: the README's first command twice, a `--mode` that
replaces a scenario's, a misspelt tool in a script, a scenario saved as Latin-1 or UTF-16, a
symlink planted where the report goes.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from run_support import PASSING, Project

from harness._output import write_text, write_with
from harness.cli import main
from harness.errors import InputError
from harness.results import read_results


def test_the_default_results_file_is_started_over_by_the_same_command_and_the_previous_one_kept(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.scenario("lookup", PASSING)
    monkeypatch.chdir(project.root)
    assert main(["run", "scenarios", "--no-report"]) == 0  # cwd is under tmp_path
    first = Path("results/results.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["run", "scenarios", "--no-report"]) == 0  # cwd is under tmp_path
    assert Path("results/previous.jsonl").read_bytes() == first
    [result] = read_results("results/results.jsonl")
    assert result.status == "passed"
    err = capsys.readouterr().err
    assert "results/results.jsonl held 1 result(s) of an earlier command; they are now in results/previous.jsonl" in err


def test_the_default_results_file_holding_paid_for_runs_is_not_started_over(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.scenario("lookup", PASSING)
    monkeypatch.chdir(project.root)
    assert main(["run", "scenarios", "--no-report"]) == 0  # cwd is under tmp_path
    results = Path("results/results.jsonl")
    results.write_text(results.read_text().replace('"mode":"scripted"', '"mode":"live"'))
    live = results.read_bytes()
    assert main(["run", "scenarios", "--no-report"]) == 2  # cwd is under tmp_path
    assert results.read_bytes() == live and not Path("results/previous.jsonl").exists()
    err = capsys.readouterr().err
    assert "already holds 1 result(s) from an earlier command, 1 of them live or recorded; add --resume" in err


def test_a_mode_on_the_command_line_wins_over_the_scenarios_and_says_so_once(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    own = project.scenario("lookup", PASSING)
    project.scenario("silent", PASSING.replace("name: lookup", "name: silent").replace("mode: scripted\n", ""))
    scenarios = str(project.root / "scenarios")
    assert main(["run", scenarios, "--record", "--fresh", "--results", str(project.results), "--no-report"]) == 0
    assert "wins over" not in capsys.readouterr().err  # --record is how a replay scenario's cassette is made
    report = project.root / "report"
    junit = project.root / "junit.xml"
    assert main(["run", scenarios, "--mode", "replay", "--fresh", "--results", str(project.results),
                 "--report", str(report)]) == 0
    out, err = capsys.readouterr()
    won = [line for line in err.splitlines() if "wins over" in line]
    # `silent` sets no mode: nothing of it was replaced.
    assert won == ["harness: --mode replay wins over the `mode:` of 1 scenario(s): lookup (scripted); "
                   "every run is made in mode replay"], err
    assert {r.mode for r in read_results(project.results)} == {"replay"}
    assert [line.split()[2] for line in out.splitlines()[1:3]] == ["replay", "replay"]  # the summary's mode column
    page = (report / "index.html").read_text()
    # The runs table's column, and each run's mode in the data the page's script draws the rows from.
    data = re.search(r'<script type="application/json" id="runs-data">(.*?)</script>', page, re.S)
    assert "<th>mode</th>" in page and data is not None
    assert [run["mode"] for run in json.loads(data.group(1))] == ["replay", "replay"]
    assert main(["report", str(project.results), "-o", str(report), "--junit", str(junit)]) == 0
    assert junit.read_text().count('<property name="mode" value="replay" />') == 2
    assert own.is_file()


def test_a_scripted_tool_use_of_a_tool_the_scenario_does_not_declare_is_that_scenarios_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = project.scenario("typo",
                            PASSING.replace("name: typo", "").replace("{name: lookup_order,", "{name: lookup_ordr,")
                            .replace("name: lookup\n", "name: typo\n"))
    project.scenario("fine", PASSING.replace("name: lookup\n", "name: fine\n"))
    line = next(n for n, text in enumerate(typo.read_text().splitlines(), start=1) if "lookup_ordr" in text)
    assert main(["run", str(project.root / "scenarios"), "--fresh", "--results", str(project.results),
                 "--no-report"]) == 2
    err = capsys.readouterr().err
    assert (f"harness: {typo}:{line}: script[0].tool_use.name: tool_use names 'lookup_ordr', a tool this scenario does "
            "not declare (did you mean 'lookup_order'?); declared tools: lookup_order.") in err
    assert [r.scenario for r in read_results(project.results)] == ["fine"]


def test_a_script_file_naming_an_undeclared_tool_points_at_its_step(project: Project,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    steps = project.root / "scenarios" / "steps" / "lookup.yaml"
    steps.parent.mkdir()
    steps.write_text("steps:\n- tool_use: {name: lookup_order, input: {order_id: O1}}\n"
                     "- tool_use:\n  - {name: lookup_order, input: {}}\n  - {name: lookupOrder, "
                     "input: {}}\n- text: done\n")
    path = project.scenario("lookup", PASSING.split("script:")[0] + "script: steps/lookup.yaml\n")
    assert main(["run", str(project.root / "scenarios"), "--fresh", "--results", str(project.results),
                 "--no-report"]) == 2
    err = capsys.readouterr().err
    assert f"harness: {steps}:3: step 2: tool_use names 'lookupOrder', a tool this scenario does not declare" in err
    assert "(did you mean 'lookup_order'?)" in err and f"({path})" in err


def test_a_scenario_that_tests_a_call_to_an_unknown_tool_may_script_one(project: Project) -> None:
    unknown = PASSING.replace("  outcome: completed\n",
                              "  findings: [T006]\nagent: buggy.ignores_unknown_tool\n").replace(
        "  - text: Order O1", "  - tool_use: {name: cancel_order, input: {order_id: O1}}\n  - text: Order O1")
    path = project.scenario("lookup", unknown)
    assert main(["run", str(path), "--fresh", "--results", str(project.results), "--no-report"]) == 0


@pytest.mark.parametrize(
    ("encoded", "line", "says"),
    [
        (lambda text: text.encode("latin-1"), 2, "is not UTF-8 text: byte 0xbf at column 9, which Latin-1 / "
                                                 "Windows-1252 reads as '¿'; save it as UTF-8"),
        (lambda text: text.encode("utf-16"), 1, "is UTF-16 text (it starts with a UTF-16 byte order mark), not UTF-8; "
                                                "save it as UTF-8"),
        (lambda text: text.encode("utf-16-le"), 1, "looks like UTF-16 text (NUL bytes between its characters)"),
        (lambda text: b"\xef\xbb\xbf" + (text + "colour: red\n").encode(), 7, "colour: unknown key"),
    ],
    ids=["latin-1", "utf-16", "utf-16-without-bom", "utf-8-bom"],
)
def test_a_scenario_in_another_encoding_is_one_line_naming_it_and_only_it_is_skipped(
    project: Project, capsys: pytest.CaptureFixture[str], encoded: object, line: int, says: str
) -> None:
    text = "name: odd\nprompt: ¿Dónde está mi señal?\nagent: reference\nmode: scripted\nscript:\n  - text: Aquí.\n"
    odd = project.root / "scenarios" / "odd.yaml"
    odd.write_bytes(encoded(text))  # type: ignore[operator]
    project.scenario("lookup", PASSING)
    assert main(["run", str(project.root / "scenarios"), "--fresh", "--results", str(project.results),
                 "--no-report"]) == 2
    err = capsys.readouterr().err
    assert f"harness: {odd}:{line}: {says}" in err, err
    assert "Traceback" not in err
    assert [r.scenario for r in read_results(project.results)] == ["lookup"]


def test_a_symlink_planted_where_the_report_goes_is_refused_before_any_run(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "precious.html"
    victim.write_text("keep me\n")
    report = project.root / "report"
    report.mkdir()
    (report / "index.html").symlink_to(victim)
    path = project.scenario("lookup", PASSING)
    assert main(["run", str(path), "--fresh", "--results", str(project.results), "--report", str(report)]) == 2
    assert victim.read_text() == "keep me\n"
    assert not project.results.exists() or read_results(project.results) == []
    assert f"{report / 'index.html'}: is a symlink to {victim}, outside its folder" in capsys.readouterr().err


def test_outputs_written_by_harness_report_follow_a_symlink_inside_their_folder_and_refuse_one_leaving_it(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("lookup", PASSING)
    assert main(["run", str(path), "--fresh", "--results", str(project.results), "--no-report"]) == 0
    out = project.root / "ci"
    out.mkdir()
    (out / "run-42.xml").write_text('<?xml version="1.0"?><testsuite name="harness"/>')  # our JUnit: ours to replace
    (out / "junit.xml").symlink_to("run-42.xml")
    victim = tmp_path / "precious.md"
    victim.write_text("keep me\n")
    (out / "summary.md").symlink_to(victim)
    assert main(["report", str(project.results), "-o", str(out / "html"), "--junit", str(out / "junit.xml")]) == 0
    assert (out / "junit.xml").is_symlink()
    assert '<testsuite name="harness" tests="1"' in (out / "run-42.xml").read_text()  # written over, through it
    assert main(["report", str(project.results), "-o", str(out / "html"), "--markdown", str(out / "summary.md")]) == 2
    assert victim.read_text() == "keep me\n"
    assert "summary.md: is a symlink to" in capsys.readouterr().err


def test_a_scenario_name_cannot_take_its_cassette_out_of_its_folder(project: Project,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("lookup",
                            PASSING.replace("name: lookup\n", "name: ../../escaped\n") + 'cassette: "c/{name}.yaml"\n')
    assert main(["run", str(path), "--record", "--fresh", "--results", str(project.results), "--no-report"]) == 2
    assert "name: name '../../escaped' cannot be part of a file name" in capsys.readouterr().err
    assert not list(project.root.parent.rglob("escaped.yaml"))


def test_an_output_is_replaced_whole_or_left_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "index.html"
    write_text(target, "old page")

    def fails_half_way(out: object) -> None:
        out.write("half a new pa")  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match="cannot be written \\(No space left on device\\); the file is as it was"):
        write_with(target, fails_half_way)
    assert target.read_text() == "old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]  # no temporary file left behind
    write_text(target, "new page")
    assert target.read_text() == "new page" and oct(target.stat().st_mode & 0o777) == oct(0o644)


_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE = 24, 1


def _as_a_user() -> None:
    """Permissions apply to the command: root (as in most containers and CI images) drops the
    capability that lets it write anywhere, from the bounding set its program starts with."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) refused")


def harness(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
           "PYTHONPATH": str(Path(__file__).parents[2])}
    try:
        return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=120, preexec_fn=_as_a_user)
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot run the command without root's write-anything capability here ({exc})")


def test_read_only_output_folders_are_one_line_and_exit_2(project: Project) -> None:
    path = project.scenario("lookup", PASSING)
    locked = project.root / "locked"
    locked.mkdir()
    recorded = project.scenario("recorded", PASSING.replace("name: lookup", "name: recorded")
                                + 'cassette: "../locked/{stem}.yaml"\n')
    locked.chmod(0o555)
    results = project.root / "results.jsonl"
    made = harness("run", path, "--results", results, "--no-report", cwd=project.root)
    assert made.returncode == 0, made.stderr
    kept = results.read_bytes()
    said: dict[str, tuple[int, str]] = {}
    try:
        for name, args in {
            "results": ["run", path, "--results", locked / "r.jsonl", "--no-report"],
            # Found before the first run, as the results file's folder is: not once the runs are paid for.
            "report before the runs": ["run", path, "--results", project.root / "never.jsonl",
                                       "--report", locked / "report"],
            "report": ["report", results, "-o", locked / "report"],
            "junit": ["report", results, "-o", project.root / "report", "--junit", locked / "junit.xml"],
            "merge": ["merge", results, "-o", locked / "merged.jsonl"],
            "diff": ["diff", results, results, "-o", locked / "diff"],
            "cassette": ["run", recorded, "--record", "--results", project.root / "recorded.jsonl", "--no-report"],
        }.items():
            done = harness(*args, cwd=project.root)
            lines = [line for line in done.stderr.splitlines() if not line.startswith("[")]
            said[name] = (done.returncode, " | ".join(lines))
    finally:
        locked.chmod(0o755)
    if said["results"][0] == 0:
        pytest.skip("the folder made read-only could be written: the command ran with root's permissions")
    assert said == {
        "results": (2, f"harness: {locked / 'r.jsonl'}: cannot open the results file (Permission denied)"),
        "report before the runs": (2, f"harness: {locked / 'report' / 'index.html'}: cannot be written "
                                      "(Permission denied); nothing was run. Name another --report DIR, or give "
                                      "--no-report"),
        "report": (2, f"harness: {locked / 'report' / 'index.html'}: cannot be written (Permission denied); "
                      "the file is as it was"),
        "junit": (2, f"harness: {locked / 'junit.xml'}: cannot be written (Permission denied); the file is as it was"),
        "merge": (2, f"harness: {locked / 'merged.jsonl'}: cannot be written (Permission denied); nothing was merged"),
        "diff": (2, f"harness: {locked / 'diff' / 'index.html'}: cannot be written (Permission denied); "
                    "the file is as it was"),
        "cassette": (2, ""),  # the run's error, in the summary
    }
    [unrecorded] = read_results(project.root / "recorded.jsonl")
    assert unrecorded.status == "error" and unrecorded.steps == 2
    assert unrecorded.error == (f"{locked / 'recorded.yaml'}: cannot be written (Permission denied); "
                                "a cassette already there is kept unchanged")
    assert results.read_bytes() == kept  # read by the others, never written
    assert not (project.root / "never.jsonl").exists()  # no run was made
    assert not list(locked.iterdir())


def test_an_output_under_a_file_says_which_file_is_in_the_way(project: Project,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("lookup", PASSING)
    blocker = project.root / "notes.txt"
    blocker.write_text("mine\n")
    assert main(["run", str(path), "--results", str(blocker / "r.jsonl"), "--no-report"]) == 2
    assert main(["run", str(path), "--results", str(project.results), "--no-report"]) == 0
    assert main(["merge", str(project.results), "-o", str(blocker / "m.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"{blocker / 'r.jsonl'}: cannot open the results file ({blocker} is a file, not a folder)" in err
    assert f"{blocker / 'm.jsonl'}: cannot be written ({blocker} is a file, not a folder); nothing was merged" in err
    # A --report DIR that is a file, or under one, is said before the first run, and no run is made.
    for report in (blocker, blocker / "report"):
        never = project.root / "never.jsonl"
        assert main(["run", str(path), "--results", str(never), "--report", str(report)]) == 2
        assert capsys.readouterr().err.endswith(
            f"harness: {report / 'index.html'}: cannot be written ({blocker} is a file, not a folder); nothing was "
            "run. Name another --report DIR, or give --no-report\n")
        assert not never.exists()
    assert blocker.read_text() == "mine\n"
    # A folder where the page goes was found once the runs were made (and paid for), as the page was written.
    page_folder = project.root / "report" / "index.html"
    page_folder.mkdir(parents=True)
    never = project.root / "never.jsonl"
    assert main(["run", str(path), "--results", str(never), "--report", str(project.root / "report")]) == 2
    assert capsys.readouterr().err.endswith(
        f"harness: {page_folder}: cannot be written ({page_folder} is a folder, not a file); nothing was "
        "run. Name another --report DIR, or give --no-report\n")
    assert not never.exists()
