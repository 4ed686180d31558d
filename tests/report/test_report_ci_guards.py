"""What `harness report` says or refuses so that CI is not misled: a summary showing a pass for nothing
tested, a CI output written over the results it reads."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest


def test_a_report_of_no_runs_warns_and_its_summary_shows_no_pass(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text("", encoding="utf-8")  # a shard that ran nothing, a run stopped before its first result
    summary = tmp_path / "summary.md"
    done = subprocess.run([sys.executable, "-m", "harness", "report", str(results), "-o", str(tmp_path / "page"),
                           "--markdown", str(summary)], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr  # the report is written whatever the runs did (docs/ci.md)
    assert f"harness: warning: no run in {results}: the report shows nothing tested" in done.stderr
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## ⚠️ Agent harness: no runs\n")
    assert "✅" not in text and "0/0" not in text


def test_a_ci_output_naming_the_results_file_read_is_refused_and_the_runs_kept(tmp_path: Path) -> None:
    # A results file begins as a JSON summary does ('{'): only its being the report's own input tells them apart.
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "coordinator.yaml"
    results = tmp_path / "results.jsonl"
    made = subprocess.run([sys.executable, "-m", "harness", "run", str(scenario), "--results", str(results),
                           "--no-report"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert made.returncode == 0, made.stderr
    kept = results.read_bytes()
    for option in ("--json", "--junit", "--markdown"):
        done = subprocess.run([sys.executable, "-m", "harness", "report", str(results), "-o", str(tmp_path / "page"),
                               option, str(results)], capture_output=True, text=True, cwd=tmp_path, check=False)
        assert done.returncode == 2
        assert f"{option} {results} is the results file {results} this report reads" in done.stderr
        assert results.read_bytes() == kept
    assert not (tmp_path / "page").exists()  # refused before anything was written


def test_junit_and_json_of_no_runs_show_no_pass(tmp_path: Path) -> None:
    # "0 tests, 0 failures" reads as green to CI's JUnit readers, and all-zero totals to a script.
    results = tmp_path / "results.jsonl"
    results.write_text("", encoding="utf-8")
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.json"
    done = subprocess.run([sys.executable, "-m", "harness", "report", str(results), "-o", str(tmp_path / "page"),
                           "--junit", str(junit), "--json", str(summary)],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("errors")) == ("1", "1")
    error = suite.find("testcase[@classname='harness'][@name='no runs']/error")
    assert error is not None and error.get("type") == "harness.no_runs"
    assert "nothing was tested" in (error.text or "")
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert data["status"] == "no runs" and data["totals"]["runs"] == 0
    assert next(iter(data)) == "totals"  # the key `harness report` knows its own summary by comes first


def test_json_status_says_whether_every_run_passed() -> None:
    from report_data import matrix

    from harness.report import json_summary, junit_xml, prepare

    runs = matrix()
    assert json_summary(prepare(runs))["status"] == "failed"
    passed = [r for r in runs if r.status == "passed"]
    assert json_summary(prepare(passed))["status"] == "passed"
    assert "no runs" not in junit_xml(prepare(passed))


def test_the_library_s_ci_outputs_are_redacted_as_the_command_s_are(monkeypatch: pytest.MonkeyPatch) -> None:
    # A library caller writing junit_xml / json_summary got a run's error as it was kept, secrets and all.
    from report_data import result_for

    from harness.report import json_summary, json_text, junit_xml, markdown_summary, prepare

    key, token, bearer = "sk-ant-api03-Leak_0123456789abcdef", "corp-Credential-4471-abcd", "gw0Auth2Token-Gw-77"
    monkeypatch.setenv("CORP_TOKEN", token)
    monkeypatch.setenv("HARNESS_SECRETS", "CORP_TOKEN")
    run = result_for(None, status="error", model=f"model-{token}",
                     error=f"refused {key} and {token}; Authorization: Bearer {bearer}")
    data = prepare([run])
    outputs = {"junit": junit_xml(data), "markdown": markdown_summary(data), "json_text": json_text(data),
               "json_summary": json.dumps(json_summary(data), ensure_ascii=False)}
    for name, text in outputs.items():
        assert "refused" in text, name
        assert key not in text and token not in text and bearer not in text, name
    said = json_summary(data)["runs"][0]["error"]
    assert said == "refused [REDACTED] and [REDACTED]; Authorization: Bearer [REDACTED]"
    # Secrets given are used in place of the environment's.
    assert token in junit_xml(data, secrets=[]) and key not in junit_xml(data, secrets=[])


def test_a_report_with_its_stdout_closed_writes_its_files_and_says_what_cannot_go_there(tmp_path: Path) -> None:
    # `>&-` (a job step's stdout closed): Python's sys.stdout is None. The page and files are written and
    # their lines dropped, as when stdout's reader has left; an output asked on stdout is said, not lost.
    results = tmp_path / "results.jsonl"
    results.write_text("", encoding="utf-8")
    command = '"$0" -m harness report "$1" -o "$2" --json "$3" >&-'
    page = str(tmp_path / "page")
    to_file = subprocess.run(["sh", "-c", command, sys.executable, str(results), page, str(tmp_path / "s.json")],
                             capture_output=True, text=True, cwd=tmp_path, check=False)
    assert (to_file.returncode, "Traceback" in to_file.stderr) == (0, False), to_file.stderr
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["status"] == "no runs"
    to_stdout = subprocess.run(["sh", "-c", command, sys.executable, str(results), page, "-"],
                               capture_output=True, text=True, cwd=tmp_path, check=False)
    assert to_stdout.returncode == 2
    assert to_stdout.stderr.endswith("harness: --json -: stdout is closed: nothing can be written there\n")
