"""Cases and scores where people read runs: the CLI's table, the page's run view, JUnit and the JSON summary."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_data import run_details

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_evaluation_shows_its_cases_and_scores_everywhere(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scenarios").mkdir()
    for name in ("eval-refunds.yaml", "eval-refunds.csv"):
        shutil.copy(ROOT / "scenarios" / name, tmp_path / "scenarios" / name)
    shutil.copytree(ROOT / "cassettes" / "eval-refunds", tmp_path / "cassettes" / "eval-refunds")
    results, html = tmp_path / "results.jsonl", tmp_path / "html"
    assert main(["run", str(tmp_path / "scenarios"), "--results", str(results), "--report", str(html)]) == 0
    out = capsys.readouterr().out
    assert "eval-refunds[unicode-name]  claude-haiku-4-5-default  replay  passed" in out

    page = (html / "index.html").read_text(encoding="utf-8")
    details = run_details(page)[1]
    assert "case small-order" in details["head"]
    assert {"name": "amount_stated", "v": "1.00", "why": "states 19.9, expected 19.9 ± 0.01"} in details["scores"]

    assert main(["report", str(results), "-o", str(html), "--junit", str(tmp_path / "junit.xml"),
                 "--json", str(tmp_path / "summary.json")]) == 0
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    names = sorted(case.get("name") or "" for case in suite.iter("testcase"))
    assert len(set(names)) == 6 and "small-order[claude-sonnet-5-default-r0]" in names
    case = suite.find("testcase[@name='large-order[claude-haiku-4-5-default-r0]']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["case"] == "large-order" and props["score.tool_calls"] == "1" and props["score.efficiency"] == "0.5"
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    run = next(r for r in summary["runs"] if r["run_id"] == "eval-refunds[large-order][claude-haiku-4-5-default-r0]")
    assert run["case"] == "large-order" and [s["name"] for s in run["scores"]] == [
        "tool_calls", "amount_stated", "refund_id_given", "efficiency"]
