"""An output path that names a file the harness did not write (a scenario, a script, a cassette) is
refused before anything is written: a mistyped `-o`, `--results` or `--junit` in a CI script must not
replace the scenario it runs, and the command must not exit 0 having done so."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

SCENARIO = "name: hello\nagent: reference\nprompt: Say hi.\nmode: scripted\nscript:\n  - text: Hi.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "hello.yaml").write_text(SCENARIO, encoding="utf-8")
    results = tmp_path / "results.jsonl"
    assert main(["run", str(tmp_path / "hello.yaml"), "--results", str(results), "--no-report"]) == 0
    return tmp_path


def _refused(capsys: pytest.CaptureFixture[str], scenario: Path) -> None:
    assert scenario.read_text(encoding="utf-8") == SCENARIO
    err = capsys.readouterr().err
    assert f"harness: {scenario} exists and is not " in err and "never writes over a file it did not create" in err


def test_run_fresh_does_not_empty_a_scenario_named_as_its_results(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = project / "hello.yaml"
    assert main(["run", str(scenario), "--results", str(scenario), "--fresh", "--no-report"]) == 2
    _refused(capsys, scenario)


def test_merge_does_not_write_over_a_scenario(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = project / "hello.yaml"
    assert main(["merge", str(project / "results.jsonl"), "-o", str(scenario)]) == 2
    _refused(capsys, scenario)
    merged = project / "merged.jsonl"
    assert main(["merge", str(project / "results.jsonl"), "-o", str(merged)]) == 0
    assert main(["merge", str(project / "results.jsonl"), "-o", str(merged)]) == 0  # its own output, again


@pytest.mark.parametrize("flag", ["--junit", "--json"])
def test_report_does_not_write_its_ci_files_over_a_scenario(
        project: Path, capsys: pytest.CaptureFixture[str], flag: str) -> None:
    scenario = project / "hello.yaml"
    report = project / "report"
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, str(scenario)]) == 2
    _refused(capsys, scenario)
    assert not (report / "index.html").exists()  # refused before anything was written
    again = project / "ci-file"
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, str(again)]) == 0
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, str(again)]) == 0
