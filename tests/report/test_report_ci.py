"""`harness report` through the CLI: the page and the CI outputs (JUnit, Markdown, JSON) from a results file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from report_data import matrix

from harness.cli import main
from harness.results import write_results


def test_report_writes_the_page_and_every_ci_output(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, matrix())
    out = tmp_path / "out"
    code = main(["report", str(results), "-o", str(out / "html"), "--junit", str(out / "junit.xml"),
                 "--markdown", str(out / "summary.md"), "--json", str(out / "summary.json")])
    assert code == 0
    assert (out / "html" / "index.html").stat().st_size > 50_000

    suite = ET.parse(out / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("26", "5", "1")
    case = suite.find("testcase[@name='claude-haiku-4-5-low-r0'][@classname='refund']")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None and failure.text is not None
    assert "T001 thread 1 step 3: tool_use toolu_03 has no tool_result" in failure.text.splitlines()
    error = suite.find("testcase[@name='claude-sonnet-5-low-r2']/error")
    assert error is not None and "cassette mismatch" in (error.get("message") or "")

    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## ❌ Agent harness: 20/26 runs passed")
    assert "| refund[claude-haiku-4-5-low-r0] | failed | T001 thread 1 step 3: tool_use toolu_03 has no tool_result" in summary
    assert "**Cheapest setting that passes everything: claude-sonnet-5 / high**" in summary
    assert "<svg" not in summary and "&lt;svg onload" not in summary  # warnings stay out; nothing raw either way

    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert data["totals"] == {"passed": 20, "failed": 5, "error": 1, "runs": 26, "findings": 29}
    assert data["comparison"]["cheapest_passing"] == {"model": "claude-sonnet-5", "effort": "high"}
    assert data["cost_by_model"]["claude-mystery-1"] is None
    assert data["total_cost_usd"] is None


def test_a_prices_file_reprices_the_report(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, matrix()[-1:])  # the claude-mystery-1 run, unpriced by the shipped table
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  claude-mystery-1: {input: 5, output: 25, cache_write_5m: 6.25, cache_write_1h: 10,"
                      " cache_read: 0.5}\n", encoding="utf-8")
    assert main(["report", str(results), "-o", str(tmp_path / "a"), "--json", str(tmp_path / "a.json")]) == 0
    assert json.loads((tmp_path / "a.json").read_text())["total_cost_usd"] is None
    assert main(["report", str(results), "-o", str(tmp_path / "b"), "--prices", str(prices),
                 "--json", str(tmp_path / "b.json")]) == 0
    # Same tokens as an opus run: $0.05235.
    assert round(json.loads((tmp_path / "b.json").read_text())["total_cost_usd"], 5) == 0.05235
