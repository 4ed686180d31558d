"""Secrets never reach disk: a key the model echoes or a tool returns is redacted in every written output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.results import ResultsWriter, RunResult, read_results, write_results
from harness.trace import Outcome
from harness.trace._scrub import REDACTED, redact_json

# Fake keys of the real shape: one is "this environment's" key, the other only looks like a key.
ENV_KEY = "sk-ant-api03-EnvKey_0123456789abcdefABCDEF-xyz"
OTHER_KEY = "sk-ant-api03-NotMine_9876543210zyxwvu-QRST"

SCENARIO = f"""prompt: Show me the configuration.
mode: scripted
tools:
  - name: read_config
    input_schema: {{type: object, properties: {{}}}}
    fixture:
      output: "api_key={ENV_KEY} backup={OTHER_KEY}"
script:
  - tool_use: {{name: read_config, input: {{}}}}
  - text: "Your key is {ENV_KEY} and the other one is {OTHER_KEY}."
"""


def result(text: str) -> RunResult:
    return RunResult(run_id="a", scenario="s", scenario_path="s.yaml", model="claude-sonnet-5", effort=None,
                     repeat=0, mode="scripted", status="passed", outcome=Outcome("completed", final_text=text))


def assert_clean(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert ENV_KEY not in text and OTHER_KEY not in text and "sk-ant-" not in text, path


def test_a_key_in_the_model_text_and_a_tool_output_reaches_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    monkeypatch.chdir(tmp_path)
    scenario = tmp_path / "leak.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    results, report = tmp_path / "results.jsonl", tmp_path / "report"
    assert main(["run", str(scenario), "--results", str(results), "--report", str(report)]) == 0
    [run] = read_results(results)
    # The run did see both keys: they are redacted where they were, not lost with the record.
    assert run.outcome is not None
    assert run.outcome.final_text == f"Your key is {REDACTED} and the other one is {REDACTED}."
    assert f"api_key={REDACTED} backup={REDACTED}" in results.read_text(encoding="utf-8")
    assert_clean(results)
    assert_clean(report / "index.html")  # built by `harness run` from the results it holds

    junit, markdown, summary = tmp_path / "junit.xml", tmp_path / "summary.md", tmp_path / "summary.json"
    assert main(["report", str(results), "-o", str(tmp_path / "again"), "--junit", str(junit),
                 "--markdown", str(markdown), "--json", str(summary)]) == 0
    for path in (tmp_path / "again" / "index.html", junit, markdown, summary):
        assert_clean(path)
    out, err = capsys.readouterr()
    assert "sk-ant-" not in out + err


def test_every_way_a_results_file_is_written_redacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    leaky = result(f"{ENV_KEY} {OTHER_KEY} ¿\ud83d")  # a lone surrogate makes the line ASCII-escaped
    with ResultsWriter(tmp_path / "appended.jsonl") as writer:
        writer.write(leaky)
    write_results(tmp_path / "whole.jsonl", [leaky])
    for path in (tmp_path / "appended.jsonl", tmp_path / "whole.jsonl"):
        assert_clean(path)
        [back] = read_results(path)
        assert back.outcome is not None and back.outcome.final_text == f"{REDACTED} {REDACTED} ¿\ud83d"


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_a_secret_is_found_however_json_spells_it_and_the_json_stays_valid(ensure_ascii: bool) -> None:
    secret = 'pässwörd"\\tok'  # non-ASCII, a quote and a backslash: each spelt differently in JSON
    value = {"a": f"x{secret}y", "b": "\nxyz-not-it", "c": "\\" + secret, secret: 1}
    line = json.dumps(value, ensure_ascii=ensure_ascii)
    clean = json.loads(redact_json(line, [secret]))
    assert clean == {"a": f"x{REDACTED}y", "b": "\nxyz-not-it", "c": "\\" + REDACTED, REDACTED: 1}


def test_text_that_only_ends_like_a_secret_after_an_escape_is_left_alone() -> None:
    # "nightly-token" as a secret must not match the "n" of an escaped newline: replacing there
    # would leave a lone backslash, and invalid JSON.
    line = json.dumps({"a": "one\nightly-token"})
    assert json.loads(redact_json(line, ["nightly-token"])) == {"a": "one\nightly-token"}
    line = json.dumps({"a": "one\\nightly-token"})  # a backslash, then the secret
    assert json.loads(redact_json(line, ["nightly-token"])) == {"a": "one\\" + REDACTED}
