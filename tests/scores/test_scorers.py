"""Scores of real scripted runs: the built-in scorers, custom `module:function` ones, expect.min_score,
and the errors a bad `score:` entry gets."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scores_support import HEADER, run_scenario

from harness.cli import main
from harness.errors import ScenarioError
from harness.results import RunResult
from harness.scenario import load_scenario
from harness.scores import Score, as_score

REFUND = """name: refund
mode: scripted
prompt: Refund order A1, 25 dollars, and tell me the total.
tools:
  - name: lookup
    fixture: {output: found}
  - name: refund
    fixture: {output: done}
script:
  - tool_use: [{name: lookup, input: {order: A1}},
               {name: refund, input: {order: A-17, amount: 25.004, note: {by: bot, why: late}}}]
  - text: "Refunded $25.00; the total refunded this month is 1,250.50 dollars."
"""


def scores_of(result: RunResult) -> dict[str, Score]:
    return {score.name: score for score in result.scores}


def test_tool_calls_precision_recall_f1_with_argument_comparators(tmp_path: Path) -> None:
    status, result = run_scenario(tmp_path, REFUND + """score:
  - tool_calls:
      calls:
        - {name: refund, input: {note: {by: bot}},
           match: {order: {regex: '^A-\\d+$'}, amount: {number: 25, tolerance: 0.01}}}
  - tool_calls:
      name: recall_only
      metric: recall
      calls: [{name: refund, match: {amount: {number: 25}}}, {name: escalate}]
  - tool_calls:
      name: refunds_only
      tools: [refund]
      calls: [{name: refund, match: {note: {exact: {by: bot, why: late}}}}]
""")
    scores = scores_of(result)
    # Two calls made, one expected and matched: precision 1/2, recall 1, F1 2/3.
    assert scores["tool_calls"].details == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3)}
    assert scores["tool_calls"].value == pytest.approx(2 / 3)
    assert "not expected: lookup {'order': 'A1'}" in scores["tool_calls"].reason
    # 25.004 is not 25 with no tolerance; escalate was never called.
    assert scores["recall_only"].value == 0.0
    assert "not made: refund {'amount': {'number': 25.0}}; escalate {}" in scores["recall_only"].reason
    assert scores["refunds_only"].value == 1.0
    assert status == 0 and result.status == "passed"


def test_final_text_scorers(tmp_path: Path) -> None:
    _, result = run_scenario(tmp_path, REFUND + """score:
  - final_text: {numeric: 1250.5, name: total}
  - final_text: {numeric: 99, name: wrong_total}
  - final_text: {contains: [Refunded, total, euros], name: words}
  - final_text: {regex: '\\$25\\.00', name: amount}
  - final_text: {normalized: 'refunded 25.00 the total refunded this month is 1,250.50 dollars', name: loose}
  - final_text: {equals: 'refunded', ignore_case: true, name: exact}
""")
    scores = scores_of(result)
    assert scores["total"].value == 1.0 and scores["total"].reason == "states 1250.5, expected 1250.5"
    assert scores["wrong_total"].value == 0.0 and "the final text states 25, 1250.5" in scores["wrong_total"].reason
    assert scores["words"].value == pytest.approx(2 / 3) and "missing: 'euros'" in scores["words"].reason
    assert (scores["amount"].value, scores["loose"].value, scores["exact"].value) == (1.0, 1.0, 0.0)


def test_efficiency_is_the_budget_left_and_unpriced_cost_has_no_value(tmp_path: Path) -> None:
    _, result = run_scenario(tmp_path, REFUND + "score:\n  - efficiency: {max_steps: 8, max_tokens: 100000}\n"
                             "  - efficiency: {max_cost_usd: 1, name: spend}\n")
    scores = scores_of(result)
    assert scores["efficiency"].details is not None and scores["efficiency"].details["steps"] == 0.75
    assert scores["efficiency"].value == pytest.approx((0.75 + 1 - result.usage.total / 100000) / 2)
    assert result.cost_usd is not None and scores["spend"].value == pytest.approx(1 - result.cost_usd)
    _, unpriced = run_scenario(tmp_path,
                               REFUND + "model: claude-unpriced-9\nscore:\n  - efficiency: {max_cost_usd: 1}\n"
                               "expect: {min_score: 0.5}\n")
    [score] = unpriced.scores
    assert unpriced.cost_usd is None and score.value is None and "cost unknown" in score.reason
    assert unpriced.status == "failed" and "mean score unknown: no value for efficiency" in unpriced.why()


def test_min_score_decides_pass_per_score_and_on_the_mean(tmp_path: Path) -> None:
    body = REFUND + "score:\n  - final_text: {contains: [Refunded, euros]}\n  - efficiency: {max_steps: 4}\n"
    status, result = run_scenario(tmp_path, body + "expect: {min_score: 0.5}\n")
    assert status == 0 and result.status == "passed"  # mean (0.5 + 0.5) / 2
    status, result = run_scenario(tmp_path, body + "expect: {min_score: {final_text: 0.75, mean: 0.25}}\n")
    assert status == 1 and result.status == "failed"
    assert result.why() == ("expect min_score.final_text: final_text 0.5, at least 0.75 expected: "
                            "1 of 2 found in 'Refunded $25.00; the total refunded this month is 1,250.50 "
                            "dollars.'; missing: 'euros'")


def test_custom_scorers_are_imported_like_agents_with_options_and_labels(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "my_scores.py").write_text(
        "from harness.scores import Score\n"
        "def tone(ctx, polite_word='please'):\n"
        "    return ('polite' if polite_word in (ctx.final_text or '') else 'curt', f'looked for {polite_word}')\n"
        "def steps(ctx):\n"
        "    return Score('ignored', 1.0 if ctx.steps <= 2 else 0.0, f'{ctx.steps} steps', details={'n': ctx.steps})\n"
        "def half(ctx):\n    return 0.5\n"
        "def yes(ctx):\n    return ctx.case is None and ctx.vars == {}\n",
        encoding="utf-8")
    _, result = run_scenario(tmp_path, REFUND + """score:
  - my_scores:tone: {labels: {polite: 1, curt: 0.2}}
  - my_scores:tone: {polite_word: total, name: mentions_total}
  - my_scores:steps
  - my_scores:half
  - my_scores:yes
""")
    scores = scores_of(result)
    assert (scores["tone"].label, scores["tone"].value, scores["tone"].reason) == ("curt", 0.2, "looked for please")
    assert (scores["mentions_total"].label, scores["mentions_total"].value) == ("polite", None)
    assert scores["steps"] == Score("steps", 1.0, "2 steps") and scores["steps"].details == {"n": 2}
    assert (scores["half"].value, scores["yes"].value) == (0.5, 1.0)


def test_a_scorer_that_raises_makes_the_run_an_error_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "bad_scores.py").write_text("def boom(ctx):\n    raise RuntimeError('no verdict')\n"
                                                          "def big(ctx):\n    return 2\n", encoding="utf-8")
    status, result = run_scenario(tmp_path, REFUND + "score: [bad_scores:boom, bad_scores:big]\n")
    assert status == 2 and result.status == "error"
    assert [s.value for s in result.scores] == [None, None]
    assert "scorer 'boom' (bad_scores:boom) failed: RuntimeError: no verdict" in (result.error or "")
    assert "a score's value is in [0, 1]; got 2.0" in (result.error or "")


def test_bad_score_entries_point_at_their_line(tmp_path: Path) -> None:
    def error(body: str) -> ScenarioError:
        path = tmp_path / "s.yaml"
        path.write_text(body, encoding="utf-8")
        with pytest.raises(ScenarioError) as info:
            load_scenario(path)
        return info.value

    unknown = error("prompt: hi\nscore:\n  - final_txt: {contains: x}\n")
    assert (unknown.line, unknown.key) == (3, "score[0].final_txt")
    assert "unknown scorer 'final_txt'" in unknown.problem and "did you mean 'final_text'?" in unknown.problem
    option = error("prompt: hi\nscore:\n  - final_text:\n      contain: x\n")
    assert (option.line, option.key) == (4, "score[0].final_text.contain")
    assert "unknown option; final_text takes: equals, normalized, contains" in option.problem
    none = error("prompt: hi\nscore:\n  - final_text: {}\n")
    assert "give exactly one of equals, normalized, contains, regex, numeric" in none.problem
    twice = error("prompt: hi\nscore: [final_text: {contains: a}, final_text: {contains: b}]\n")
    assert "two scores are named 'final_text'" in twice.problem
    min_score = error("prompt: hi\nscore: [final_text: {contains: a}]\nexpect: {min_score: {final: 1}}\n")
    assert min_score.key == "expect.min_score.final" and "the scores are: final_text" in min_score.problem
    assert "min_score needs scores" in error("prompt: hi\nexpect: {min_score: 0.5}\n").problem
    unreachable = error("prompt: hi\nscore: [efficiency: {max_steps: 1}]\nexpect: {min_score: 2}\n")
    assert "can never be met" in unreachable.problem


def test_a_custom_scorer_that_cannot_be_imported_is_that_scenarios_error(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "s.yaml").write_text(HEADER + REFUND + "score:\n  - nowhere_module:tone\n", encoding="utf-8")
    assert main(["run", str(folder / "s.yaml"), "--results", str(tmp_path / "r.jsonl"), "--no-report"]) == 2
    err = capsys.readouterr().err
    line = (HEADER + REFUND).count("\n") + 2  # the entry, under `score:`
    assert f"{folder / 's.yaml'}:{line}: score[0].nowhere_module:tone: cannot import scorer nowhere_module:tone" in err


def test_what_a_scorer_returns_becomes_a_score() -> None:
    assert as_score(True, name="x") == Score("x", 1.0, "yes")
    assert as_score((0.25, "a quarter"), name="x") == Score("x", 0.25, "a quarter")
    assert as_score("good", name="x", labels={"good": 0.9}) == Score("x", 0.9, "", label="good")
    assert as_score(Score("other", None, "r", label="bad"), name="x", labels={"bad": 0}).value == 0.0
    for wrong, words in [(1.5, r"in \[0, 1\]; got 1.5"), (math.nan, r"in \[0, 1\]; got nan"),
                         (None, "a scorer returns"), ((1, 2, 3), "tuple")]:
        with pytest.raises((TypeError, ValueError), match=words):
            as_score(wrong, name="x")
    assert Score.from_dict(Score("x", 1.0, "r", details={"a": 1}).to_dict()).details == {"a": 1}


def test_a_minimum_on_a_score_without_value_says_why_it_has_none() -> None:
    from harness.run._expect import min_score_results

    scores = [Score("tone", None, "said 'meh'", label="meh"), Score("judge", None, "the scorer failed: boom"),
              Score("manner", 0.2, "looked for 'please'", label="curt")]
    [tone, judge, manner] = min_score_results({"tone": 0.5, "judge": 0.5, "manner": 0.5}, scores)
    # A label is shown beside the value it was given.
    assert manner.message == "manner 0.2 (curt), at least 0.5 expected: looked for 'please'"
    assert tone.message == ("tone: no value: its label 'meh' is not valued by the entry's `labels` (said 'meh'), "
                            "at least 0.5 expected")
    assert judge.message == "judge: no value (the scorer failed: boom), at least 0.5 expected"
    assert not tone.passed and not judge.passed
