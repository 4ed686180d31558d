"""`harness run --plugin MODULE`: a project's registered scorers (and rules) are used by name in its scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.results import read_results

PLUGIN = '''
from pydantic import BaseModel, ConfigDict

from harness import ScoreContext, scorer


class BrevityOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    words: int = 50


@scorer("brevity", options=BrevityOptions)
def brevity(ctx: ScoreContext, options: BrevityOptions) -> tuple[float, str]:
    """The answer is at most `words` words long."""
    count = len((ctx.final_text or "").split())
    return (1.0 if count <= options.words else 0.0, f"{count} words, at most {options.words}")
'''

SCENARIO = """name: short
mode: scripted
prompt: Say hi.
script: [{text: "Hi there, how can I help you today?"}]
score:
  - brevity: {words: 5}
"""


def test_a_plugin_scorer_is_named_in_score_and_its_options_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "team_scorers.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    results = tmp_path / "r.jsonl"
    status = main(["run", str(tmp_path / "s.yaml"), "--plugin", "team_scorers", "--results",
                   str(results), "--no-report"])
    assert status == 0
    [result] = read_results(results)
    [score] = result.scores
    assert (score.name, score.value, score.reason) == ("brevity", 0.0, "8 words, at most 5")

    (tmp_path / "s.yaml").write_text(SCENARIO.replace("words: 5", "word: 5"), encoding="utf-8")
    assert main(["run", str(tmp_path / "s.yaml"), "--plugin", "team_scorers", "--fresh", "--results", str(results),
                 "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "s.yaml:6: score[0].brevity.word: unknown option; brevity takes: words, name, labels" in err


def test_an_unknown_or_broken_plugin_is_one_line_and_nothing_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('half written')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "r.jsonl"
    assert main(["run", str(tmp_path / "s.yaml"), "--plugin", "no_such_plugin", "--results", str(results),
                 "--no-report"]) == 2
    assert main(["run", str(tmp_path / "s.yaml"), "--plugin", "broken_plugin", "--results", str(results),
                 "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "harness: cannot import plugin 'no_such_plugin': No module named 'no_such_plugin'" in err
    assert "harness: plugin 'broken_plugin' failed while importing: RuntimeError: half written" in err
    assert not results.exists()
