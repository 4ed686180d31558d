"""CONTRIBUTING.md's examples run as written: a rule, a recording format, a report section, a scorer."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness.trace.formats as formats
from harness.checks import Rule, check_trace, rules
from harness.checks._docs import rules_markdown
from harness.checks._registry import _RULES
from harness.cost import load_prices
from harness.errors import CassetteError
from harness.report._data import prepare
from harness.report._render import environment
from harness.results import RunResult
from harness.trace import Outcome, build_trace, load_trace
from harness.trace.formats import Recording

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def example(section: str, language: str) -> str:
    """The first code block of a `## section` of the guide."""
    body = GUIDE.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"```{language}\n(.*?)```", body, re.S)
    assert found, f"no {language} example under '## {section}'"
    return found.group(1)


def run(code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(code, "CONTRIBUTING.md", "exec"), namespace)
    return namespace


@pytest.fixture
def x100() -> Iterator[None]:
    yield
    _RULES.pop("X100", None)


def test_the_rule_example_registers_documents_itself_and_its_example_breaks_it(x100: None) -> None:
    run(example("A rule", "python"))
    entry: Rule = rules()["X100"]
    assert entry.example is not None
    findings = check_trace(entry.example.trace())
    assert [(f.code, f.message_index, f.block_index) for f in findings] == [("X100", 2, 0)]
    page = rules_markdown({"X100": entry})
    assert "### X100: A tool_result is never empty" in page and "**How to fix it.**" in page


def test_the_format_example_claims_its_files_and_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = run(example("A recording format", "python"))
    good = tmp_path / "run.jsonl"
    good.write_text(json.dumps({
        "request": {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "Hi"}]},
        "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"},
    }) + "\n")
    monkeypatch.setattr(formats, "FORMATS", (module["FORMAT"], *formats.FORMATS))  # the one line in FORMATS
    trace = load_trace(good)
    assert len(trace.calls) == 1 and trace.calls[0].stop_reason == "end_turn"
    assert check_trace(trace) == []
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"request": {}, "response": {}}\nnot json\n')
    with pytest.raises(CassetteError, match=r"broken.jsonl:2: not JSON"):
        load_trace(broken)
    assert module["sniff"](Recording(str(tmp_path / "other.jsonl"), b"[]")) is False


def results() -> list[RunResult]:
    def one(run_id: str, steps: int) -> RunResult:
        exchanges = [formats.Recording("run", b"").exchange(
            0, "POST", "https://api.anthropic.com/v1/messages", {}, {"model": "claude-sonnet-4-5", "messages": []},
            200, {}, {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"})]
        return RunResult(run_id=run_id, scenario="s", scenario_path="s.yaml", model="claude-sonnet-4-5", effort=None,
                         repeat=1, mode="scripted", status="passed", outcome=Outcome(status="completed"),
                         steps=steps, trace=build_trace(exchanges, run_id))
    return [one("short", 1), one("long", 7)]


def test_the_report_section_example_renders_from_the_report_data() -> None:
    section = example("A report section", "html")
    html = environment().from_string(section).render(data=prepare(results(), load_prices()))
    assert '<section id="slowest"><h2>Most steps</h2>' in html
    assert html.index("long</a>: 7 steps") < html.index("short</a>: 1 steps")


def test_the_scorer_example_judges_a_run() -> None:
    max_tool_errors = run(example("A scorer (an expectation)", "python"))["max_tool_errors"]
    result = max_tool_errors(results()[0].trace, 0)
    assert result.passed and result.name == "max_tool_errors"
    assert result.message == "at most 0 tool errors; the run had 0"
    failed = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "down", "is_error": True}
    messages = [{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]},
                {"role": "user", "content": [failed]}]
    trace = build_trace([formats.Recording("run", b"").exchange(
        0, "POST", "https://api.anthropic.com/v1/messages", {}, {"model": "claude-sonnet-4-5", "messages": messages},
        200, {}, {"content": [{"type": "text", "text": "It failed."}], "stop_reason": "end_turn"})], "run")
    result = max_tool_errors(trace, 0)
    assert not result.passed and result.message == "at most 0 tool errors; the run had 1"
