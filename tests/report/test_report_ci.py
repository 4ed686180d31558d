"""`harness report` through the CLI: the page and the CI outputs (JUnit, Markdown, JSON) from a results file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from markupsafe import Markup
from report_data import finding_at, matrix, result_for, rich_trace, runs_data

from harness._console import _BIDI_CONTROLS, reveal_bidi
from harness.cli import main
from harness.cost import PriceTable, load_prices
from harness.report import junit_xml, markdown_summary, prepare, render_report
from harness.report._svg import escape as svg_escape
from harness.results import ExpectationResult, RunResult, write_results


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
    assert ("T001 thread 1, step 3, messages[2].content[1]: tool_use toolu_03 has no tool_result"
            in failure.text.splitlines())
    error = suite.find("testcase[@name='claude-sonnet-5-low-r2']/error")
    assert error is not None and "cassette mismatch" in (error.get("message") or "")

    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## ❌ Agent harness: 20/26 runs passed")
    assert ("| refund[claude-haiku-4-5-low-r0] | replay | failed | T001 thread 1, step 3, messages[2].content[1]: "
            "tool_use toolu_03 has no tool_result") in summary
    assert "**Cheapest setting that passes everything: claude-sonnet-5 / high**" in summary
    assert "<svg" not in summary and "&lt;svg onload" not in summary  # warnings stay out; nothing raw either way

    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert data["totals"] == {"passed": 20, "failed": 5, "error": 1, "runs": 26, "findings": 29, "expected_findings": 0}
    assert data["comparison"]["cheapest_passing"] == {"model": "claude-sonnet-5", "effort": "high"}
    assert data["cost_by_model"]["claude-mystery-1"] is None
    assert data["total_cost_usd"] is None


def test_a_report_freezes_every_object_at_exit_and_none_while_its_process_goes_on(tmp_path: Path) -> None:
    # The interpreter's last collections are spared by freezing what is alive at exit; frozen sooner, the
    # cycles among those objects would never be freed by a process that goes on (a test calling main).
    results = tmp_path / "results.jsonl"
    write_results(results, matrix())
    script = ("import atexit, gc, sys\n"
              "atexit.register(lambda: print('frozen at exit', gc.get_freeze_count() > 0))\n"  # runs after the report's
              "from harness.cli import main\n"
              "main(sys.argv[1:])\n"
              "print('frozen after the report', gc.get_freeze_count())\n")
    done = subprocess.run([sys.executable, "-c", script, "report", str(results), "-o", str(tmp_path / "html")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-2:] == ["frozen after the report 0", "frozen at exit True"]
    assert (tmp_path / "html" / "index.html").stat().st_size > 50_000


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


def expected_t001_runs() -> list[RunResult]:
    """A buggy-agent scenario that expects T001: once passing, once failing on another expectation."""
    runs = []
    for repeat, met in ((0, True), (1, False)):
        trace = rich_trace(source=f"buggy-{repeat}")
        run = result_for(trace, scenario="buggy-drops-results", repeat=repeat, status="passed" if met else "failed",
                         findings=[finding_at(trace, "T001", 1, 3, "tool_use toolu_03 has no tool_result")])
        run.expectations = [ExpectationResult("findings.T001", True, "T001 found as expected"),
                            ExpectationResult("max_steps", met, "5 model calls, at most 4 expected")]
        runs.append(run)
    return runs


def test_a_finding_the_scenario_expects_is_labelled_and_never_named_as_the_failure(
    with_bodies: Callable[[str], str],
) -> None:
    data = prepare(expected_t001_runs(), load_prices())
    assert data.totals["expected_findings"] == 2
    suite = ET.fromstring(junit_xml(data))
    failure = suite.find("testcase[@name='claude-opus-4-8-high-r1']/failure")
    assert failure is not None and failure.text is not None
    # The run failed on max_steps; the T001 it exists to show is not the reason.
    assert failure.get("message") == "expect max_steps: 5 model calls, at most 4 expected"
    assert "T001" not in failure.text
    out = suite.find("testcase[@name='claude-opus-4-8-high-r0']/system-out")
    assert out is not None
    assert ("T001 thread 1, step 3, messages[2].content[1]: tool_use toolu_03 has no tool_result "
            "(expected by the scenario)") in (out.text or "")
    summary = markdown_summary(data)
    assert "2 findings (2 expected by their scenarios)" in summary
    assert "| failed | expect max_steps: 5 model calls, at most 4 expected |" in summary
    page = with_bodies(render_report(expected_t001_runs()))
    assert "(2 expected by their scenarios)" in page
    row = runs_data(page)[0]
    assert [(f["code"], f["expected"]) for f in row["findings"]] == [("T001", True)]
    assert page.count("expected by the scenario</span>") == 4  # run findings list + the step, for each run


def test_junit_testcases_put_properties_first_and_parse() -> None:
    suite = ET.fromstring(junit_xml(prepare(matrix(), load_prices())))
    cases = suite.findall("testcase")
    assert len(cases) == 26
    for case in cases:
        assert case[0].tag == "properties", [c.tag for c in case]
        # then at most one failure or error, then system-out: the schema's order
        tags = [c.tag for c in case][1:]
        assert tags in ([], ["failure"], ["error"], ["system-out"], ["failure", "system-out"], ["error", "system-out"])


BIDI = "process_refund\u202e)lanigiro(\u2066x\u2069"


def test_direction_controls_are_shown_not_obeyed_in_the_page_and_the_summary() -> None:
    trace = rich_trace(source="bidi")
    run = result_for(trace, scenario=f"refund{BIDI}", status="failed",
                     findings=[finding_at(trace, "T001", 1, 3, f"tool {BIDI} has no result")])
    page = render_report([run])
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", page)
    assert "process_refund&lt;U+202E&gt;)lanigiro(&lt;U+2066&gt;x&lt;U+2069&gt;" in page
    summary = markdown_summary(prepare([run], load_prices()))
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", summary)
    assert "&lt;U+202E&gt;" in summary


def test_each_direction_control_is_shown_and_text_without_one_is_handed_back_as_it_is() -> None:
    # reveal_bidi spells its twelve searches out one by one: each control must still be among them.
    for control in _BIDI_CONTROLS:
        for text in (f"a{control}b", f"a—{control}b", f"a\U0001f600{control}b"):  # one, two, four bytes a character
            assert reveal_bidi(text) == text.replace(control, f"<U+{ord(control):04X}>")
    for text in ("", "plain", "a · b", "a — b\u202f", "\U0001f600\u2065\u206a"):
        assert reveal_bidi(text) is text


def test_text_that_says_it_is_markup_is_escaped_with_or_without_a_direction_control() -> None:
    # reveal_bidi hands back plain text, never the Markup it was given: escaped after it, a Markup label
    # (text claiming to be safe HTML) is escaped like any other string, whether or not it shows a control.
    for text in ("<b>x</b>", "<b>x\u202e</b>"):
        escaped = svg_escape(Markup(text))
        assert "<b>" not in escaped and "&lt;b&gt;" in escaped


def test_links_images_and_terminal_escapes_from_untrusted_text_are_inert_in_the_summary() -> None:
    trace = rich_trace(source="md")
    hostile = "[click](https://evil.example) ![](https://evil.example/pixel.png) \x1b[1A\x1b[2KALL GOOD"
    run = result_for(trace, scenario=f"refund {hostile}", status="failed",
                     findings=[finding_at(trace, "T001", 1, 3, f"tool {hostile} has no result")])
    summary = markdown_summary(prepare([run], load_prices()))
    assert "](" not in summary and "![" not in summary and "\x1b" not in summary
    assert "[click]\\(https://evil.example)" in summary and "!\\[]\\(https://evil.example/pixel.png)" in summary
    assert "\\\\x1b[1A" in summary


def test_every_table_a_run_was_priced_with_lists_its_prices_and_server_tools_in_the_order_met(tmp_path: Path) -> None:
    # Runs priced each with its own table, taking turns (A, B, A, shipped): a model two tables price
    # differently is listed twice, first the price met first; a model first met in a later run of a
    # table already met is listed too; the server tools of every table, each once.
    def table(name: str, haiku_input: float, search: float) -> PriceTable:
        path = tmp_path / name
        path.write_text(f"models:\n  claude-haiku-4-5: {{input: {haiku_input}}}\n"
                        f"server_tools:\n  web_search: {{per_1000: {search}}}\n", encoding="utf-8")
        return load_prices(path)

    a, b = table("a.yaml", 7.0, 11.0), table("b.yaml", 9.0, 13.0)
    runs = [result_for(rich_trace(model), model=model, repeat=i)
            for i, model in enumerate(["claude-haiku-4-5", "claude-haiku-4-5", "claude-opus-4-8", "claude-sonnet-5"])]
    for run, prices in zip(runs, [a, b, a, None], strict=True):
        run.prices = prices
    data = prepare(runs)
    shipped = load_prices()
    assert [(p.model, p.input) for p in data.prices_used] == [
        ("claude-haiku-4-5", 7.0), ("claude-haiku-4-5", 9.0), ("claude-opus-4-8", a.models["claude-opus-4-8"].input),
        ("claude-sonnet-5", shipped.models["claude-sonnet-5"].input)]
    assert [(t.name, t.per_1000) for t in data.server_tools if t.name == "web_search"] == [
        ("web_search", 11.0), ("web_search", 13.0), ("web_search", shipped.server_tools["web_search"].per_1000)]
    assert data.priced_with == {a.label: 2, b.label: 1, "shipped": 1}


def test_junit_redacts_a_secret_or_bearer_token_the_xml_escapes() -> None:
    # ElementTree escapes & < > in text and also " and tabs and line breaks in attributes (the failure's
    # message): a secret or a "Bearer<tab>token" spelt so in the run is spelt otherwise in the XML.
    secret = 'pa&ss<wo"rd>-1234567'
    error = f"auth failed: {secret} with Authorization: Bearer\tTOKENabcdefgh123 and bearer\nLINEtoken12345"
    data = prepare([result_for(None, status="error", error=error)])
    xml = junit_xml(data, [secret])
    case = ET.fromstring(xml).find("testcase/error")
    assert case is not None
    for said in (case.get("message", ""), case.text or ""):
        assert "[REDACTED]" in said
        assert not re.search(r"pa&ss|TOKENabc|LINEtoken", said), said


def test_markdown_redacts_a_given_secret_the_table_escapes() -> None:
    # A table cell escapes | < > and joins whitespace: a secret given (not the environment's, which each
    # cell redacts before escaping) is spelt otherwise in the Markdown than in the run.
    secret = "pa|ss<wo>rd  -1234567"
    data = prepare([result_for(None, status="error", error=f"auth failed: {secret}")])
    markdown = markdown_summary(data, [secret])
    assert "auth failed: [REDACTED]" in markdown
    assert "1234567" not in markdown


def test_the_page_redacts_a_secret_holding_a_less_than_sign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The page writes `<` in its JSON as \u003c (no string may end its <script> element): a secret with one
    # is spelt so in the runs' list, where its JSON spellings alone did not find it.
    secret = "pa<ss\"wo>rd-7654321"
    results = tmp_path / "results.jsonl"
    write_results(results, [result_for(None, status="error", error=f"auth failed: {secret} end")])
    # A secret the run was not told of, the report job is.
    monkeypatch.setenv("PAGE_SECRET", secret)
    monkeypatch.setenv("HARNESS_SECRETS", "PAGE_SECRET")
    assert main(["report", str(results), "-o", str(tmp_path / "html")]) == 0
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    assert "7654321" not in page
    assert "auth failed: [REDACTED] end" in page
