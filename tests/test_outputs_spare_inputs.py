"""An output path that names a file the harness did not write (a scenario, a script, a cassette) is
refused before anything is written: a mistyped `-o`, `--results` or `--junit` in a CI script must not
replace the scenario it runs, and the command must not exit 0 having done so."""

from __future__ import annotations

import json
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


FOREIGN = {
    # Each begins as the loose check (any '{', any XML, anything at all) let through.
    "--json": ("package.json", '{\n  "name": "my-agent",\n  "version": "1.0.0"\n}\n'),
    "--junit": ("junit.xml",
                '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest"/></testsuites>\n'),
    "--markdown": ("NOTES.md", "# Release notes\n\nWritten by hand.\n"),
}


@pytest.mark.parametrize("flag", sorted(FOREIGN))
def test_report_does_not_write_its_ci_files_over_another_tools_file_of_the_same_kind(
        project: Path, capsys: pytest.CaptureFixture[str], flag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    name, text = FOREIGN[flag]
    foreign = project / name
    foreign.write_text(text, encoding="utf-8")
    report = project / "report"
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, str(foreign)]) == 2
    assert foreign.read_text(encoding="utf-8") == text
    err = capsys.readouterr().err
    assert f"harness: {foreign} exists and is not a " in err and "never writes over a file it did not create" in err
    assert not (report / "index.html").exists()  # refused before anything was written
    # Its own output of the last run is written over, as before.
    own = project / f"own-{name}"
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, str(own)]) == 0
    first = own.read_text(encoding="utf-8")
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, str(own)]) == 0
    assert own.read_text(encoding="utf-8") == first


def test_the_job_summary_is_appended_to_whatever_it_holds(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = project / "step_summary.md"
    summary.write_text("# Build\n\nAn earlier step's lines.\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["report", str(project / "results.jsonl"), "-o", str(project / "report"),
                 "--markdown", str(summary)]) == 0
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# Build\n\nAn earlier step's lines.\n## ✅ Agent harness: 1/1 runs passed")


@pytest.mark.parametrize("flag", sorted(FOREIGN))
@pytest.mark.parametrize("stdout", ["-", "/dev/stdout"])
def test_a_ci_output_named_dash_or_dev_stdout_goes_to_stdout_alone(
        project: Path, capsys: pytest.CaptureFixture[str], flag: str, stdout: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)  # "-" was once a file of that name in the working folder
    report = project / "report"
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, stdout]) == 0
    captured = capsys.readouterr()
    own = project / "own"
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), flag, str(own)]) == 0
    assert captured.out == own.read_text(encoding="utf-8")  # the output alone: nothing else on stdout
    assert f"report: {report / 'index.html'} (1 runs)" in captured.err
    assert not (project / "-").exists()


def test_two_ci_outputs_on_stdout_are_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = project / "report"
    assert main(["report", str(project / "results.jsonl"), "-o", str(report), "--junit", "-", "--json",
                 "/dev/stdout"]) == 2
    assert "--junit and --json both name stdout" in capsys.readouterr().err
    assert not (report / "index.html").exists()


PACKAGE_JSON = '{\n  "name": "my-agent",\n  "version": "1.0.0"\n}\n'


def test_run_and_merge_do_not_write_results_over_a_json_file(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A results file begins with '{' as any JSON does: its first key, run_id, is what tells it apart.
    package = project / "package.json"
    package.write_text(PACKAGE_JSON, encoding="utf-8")
    scenario = project / "hello.yaml"
    assert main(["run", str(scenario), "--results", str(package), "--fresh", "--no-report"]) == 2
    assert main(["merge", str(project / "results.jsonl"), "-o", str(package)]) == 2
    assert package.read_text(encoding="utf-8") == PACKAGE_JSON
    err = capsys.readouterr().err
    assert err.count(f"harness: {package} exists and is not a results file: the harness never writes over a file "
                     "it did not create") == 2
    # Results it wrote, even spelt as json.dumps spells them, are its to continue or start over.
    spelt = project / "spelt.jsonl"
    spelt.write_text("".join(json.dumps(json.loads(line)) + "\n"
                             for line in (project / "results.jsonl").read_text(encoding="utf-8").splitlines()),
                     encoding="utf-8")
    assert main(["run", str(scenario), "--results", str(spelt), "--fresh", "--no-report"]) == 0
    assert main(["merge", str(project / "results.jsonl"), "-o", str(spelt)]) == 0


def test_results_whose_keys_were_reordered_are_still_the_harness_s_to_write_over(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `jq -S` (or a script's json.dumps with sort_keys) puts run_id among the other keys: the file is
    # known by its first line, a JSON object with a run id, not by its first key.
    lines = (project / "results.jsonl").read_text(encoding="utf-8").splitlines()
    sorted_keys = project / "sorted.jsonl"
    sorted_keys.write_text("".join(json.dumps(json.loads(line), sort_keys=True) + "\n" for line in lines),
                           encoding="utf-8")
    assert not sorted_keys.read_text(encoding="utf-8").startswith('{"run_id"')
    assert main(["merge", str(project / "results.jsonl"), "-o", str(sorted_keys)]) == 0
    assert sorted_keys.read_text(encoding="utf-8").startswith('{"run_id"')  # written over: the harness's again
    sorted_keys.write_text("".join(json.dumps(json.loads(line), sort_keys=True) + "\n" for line in lines),
                           encoding="utf-8")
    assert main(["run", str(project / "hello.yaml"), "--results", str(sorted_keys), "--fresh", "--no-report"]) == 0
    # A run id that is not a record's own key, nor a string, or a first line that is no JSON object: no results.
    for name, text in [("nested.json", '{"config": {"run_id": "r1"}, "name": "x"}\n'),
                       ("cut.json", '{"name": "x",\n "run_id": "r1"}\n'),
                       ("number.json", '{"a": 1, "run_id": 7}\n')]:
        foreign = project / name
        foreign.write_text(text, encoding="utf-8")
        assert main(["merge", str(project / "results.jsonl"), "-o", str(foreign)]) == 2, name
        assert foreign.read_text(encoding="utf-8") == text
        assert f"harness: {foreign} exists and is not a results file" in capsys.readouterr().err


def test_no_command_writes_its_page_over_a_site_s_own_index_html(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `-o DIR` and `--report DIR` name a folder; its index.html was replaced whatever it was, so
    # `harness report results.jsonl -o docs` in a project whose docs folder is its site lost the site's page.
    site = project / "site"
    site.mkdir()
    page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Our docs</title>\n"
    (site / "index.html").write_text(page, encoding="utf-8")
    results = project / "results.jsonl"
    again = project / "again.jsonl"
    assert main(["report", str(results), "-o", str(site)]) == 2
    _page_kept(capsys, site, page)
    assert main(["run", str(project / "hello.yaml"), "--results", str(again), "--report", str(site)]) == 2
    _page_kept(capsys, site, page)
    assert main(["diff", str(results), str(results), "-o", str(site)]) == 2
    _page_kept(capsys, site, page)
    assert not again.exists()  # refused before the first run
    # Its own pages, the report's and the diff's, it writes over as before.
    ours = project / "ours"
    assert main(["report", str(results), "-o", str(ours)]) == 0
    assert main(["diff", str(results), str(results), "-o", str(ours)]) == 0
    assert main(["run", str(project / "hello.yaml"), "--results", str(again), "--report", str(ours)]) == 0
    assert main(["report", str(results), "-o", str(ours)]) == 0


def _page_kept(capsys: pytest.CaptureFixture[str], site: Path, page: str) -> None:
    assert (site / "index.html").read_text(encoding="utf-8") == page
    assert f"{site / 'index.html'} exists and is not a harness " in capsys.readouterr().err
