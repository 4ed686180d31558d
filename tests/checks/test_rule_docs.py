"""docs/rules.md cannot drift from the rules: it is what `harness rules --markdown` prints, and every
example in it breaks its rule when run through the checker."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checks import Rule, check_trace, rules
from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = {code: r for code, r in rules().items() if r.fn.__module__.startswith("harness.checks.")}
ANTHROPIC_DOCS = ("https://platform.claude.com/docs/en/", "https://docs.anthropic.com/en/")


def test_docs_rules_md_is_what_harness_rules_prints() -> None:
    printed = subprocess.run([sys.executable, "-m", "harness", "rules", "--markdown"],
                             capture_output=True, text=True, check=True, cwd=ROOT).stdout
    written = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert written == printed, "docs/rules.md is stale: run `harness rules --markdown > docs/rules.md`"
    examples = re.findall(r"```json\n(.*?)```", written, re.S)
    assert len(examples) >= len(BUILTIN) and all(json.loads(block) for block in examples)


@pytest.mark.parametrize("entry", BUILTIN.values(), ids=lambda r: r.code)
def test_each_example_breaks_its_rule_and_only_it(entry: Rule) -> None:
    assert entry.example is not None, f"{entry.code}: give its @rule an example=Example(...) that breaks it"
    findings = check_trace(entry.example.trace(), options=dict(entry.example.options))
    assert {(f.code, f.severity) for f in findings} == {(entry.code, entry.severity)}, findings


@pytest.mark.parametrize("entry", BUILTIN.values(), ids=lambda r: r.code)
def test_each_rule_says_what_it_checks_why_and_how_to_fix_it(entry: Rule) -> None:
    assert entry.checks, f"{entry.code}: its function's docstring says what it checks"
    assert entry.why and entry.fix, f"{entry.code}: give its @rule why= and fix="
    assert all(url.startswith(ANTHROPIC_DOCS) for url in entry.docs), entry.docs


def _documented_examples() -> dict[str, tuple[str, str, str]]:
    """Each rule's example as docs/rules.md shows it: (the sentence before it, its JSON, its whole section)."""
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    found = {}
    for section in text.split("\n### ")[1:]:
        shown = re.search(r"\*\*Example that breaks it\.\*\*([^\n]*)\n\n```json\n(.*?)```", section, re.S)
        if shown:
            found[section.split(":", 1)[0]] = (shown.group(1), shown.group(2), section)
    return found


DOCUMENTED = _documented_examples()


@pytest.mark.parametrize("code", sorted(DOCUMENTED))
def test_each_example_in_the_docs_breaks_its_rule_under_harness_check(
        code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Pasted into a file as the docs say: a user gets the rule's finding, not "not a recording".
    said, example, section = DOCUMENTED[code]
    path = tmp_path / "example.json"
    path.write_text(example, encoding="utf-8")
    options = ["--whole-run"] if "(`--whole-run`)" in said else []
    reported = re.search(r"the run reported `(\{.*?\})`", said)
    if reported:
        options += ["--outcome", json.loads(reported.group(1))["status"]]
    needs_a_run = "check options" in said or "Tool events of the run" in section
    status = main(["check", "--format", "json", str(path), *options])
    [report] = json.loads(capsys.readouterr().out)["files"]
    assert report["error"] is None, report["error"]
    codes = {f["code"] for f in report["findings"]}
    if needs_a_run:
        # Judged only in a run, as the docs say: the file alone does not hold what the rule reads.
        assert code not in codes, report
    else:
        assert codes == {code} and status == (1 if BUILTIN[code].severity == "error" else 0), report


def test_every_rule_has_its_example_in_the_docs() -> None:
    assert DOCUMENTED.keys() == BUILTIN.keys()
