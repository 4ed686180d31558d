"""The judge: a model grades the run against a rubric through the run's own transport. Its calls
are recorded, replayed and scripted (`thread: judge`) but never part of the agent's trace; repeats
are averaged (or voted) with disagreement flagged; a malformed verdict is an error, never a pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scores_support import run_scenario as run_in

from harness.cli import main
from harness.cost import load_prices
from harness.errors import ScenarioError
from harness.results import RunResult, read_results
from harness.scenario import load_scenario
from harness.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]

JUDGED = """name: judged
mode: scripted
prompt: Where is order O1?
tools:
  - name: lookup_order
    fixture: {output: {status: delivered}}
score:
  - judge:
      rubric: The answer says where order O1 is.
      model: claude-opus-4-8
      repeats: 3
expect:
  min_score: 0.7
script:
  - tool_use: {name: lookup_order, input: {order_id: O1}}
  - text: Order O1 was delivered.
  - {thread: judge, tool_use: {name: verdict, input: {reasoning: Says it was delivered., score: 1}}}
  - {thread: judge, tool_use: {name: verdict, input: {reasoning: Clear., score: 0.8}}}
  - {thread: judge, tool_use: {name: verdict, input: {reasoning: Fine., score: 0.9}}}
"""


def run_scenario(tmp_path: Path, body: str, *extra: str) -> tuple[int, RunResult]:
    """The scenario as scenarios/judged.yaml: its cassette is named after the file."""
    return run_in(tmp_path, body, *extra, file="judged.yaml")


def verdicts(*given: str) -> str:
    """The three scripted verdict steps replaced by `given` (each a verdict's input, as YAML)."""
    head = JUDGED[: JUDGED.index("  - {thread: judge")]
    return head + "".join(f"  - {{thread: judge, tool_use: {{name: verdict, input: {v}}}}}\n" for v in given)


def test_a_judge_scores_the_run_through_its_transport_and_replays_offline(tmp_path: Path) -> None:
    status, result = run_scenario(tmp_path, JUDGED, "--record")
    assert status == 0 and result.status == "passed", result.reasons()
    [score] = result.scores
    assert (score.name, score.kind, score.label) == ("judge", "judge", None)
    assert score.value == pytest.approx(0.9)
    assert score.reason == "mean 0.90 of 3 verdicts (1.00, 0.80, 0.90). First verdict: Says it was delivered."
    assert score.details is not None and score.details["disagreement"] is False
    assert [v["reasoning"] for v in score.details["verdicts"]] == ["Says it was delivered.", "Clear.", "Fine."]
    # The judge's calls are the harness's own: out of the agent's steps and trace, in their own.
    assert result.steps == 2 and result.harness_trace is not None
    asked = result.harness_trace.exchanges
    assert [e.harness_role for e in asked] == ["judge"] * 3
    request = asked[0].request_body
    assert request["model"] == "claude-opus-4-8" and request["tool_choice"] == {"type": "tool", "name": "verdict"}
    prompt = request["messages"][0]["content"]
    assert "USER: Where is order O1?" in prompt and "<final_answer>\nOrder O1 was delivered.\n</final_answer>" in prompt
    assert "The answer says where order O1 is." in prompt and "<trajectory>" not in prompt

    cassette = tmp_path / "cassettes" / "judged.yaml"
    assert cassette.read_text().count("x-harness-role:") == 3
    status, replayed = run_scenario(tmp_path, JUDGED, "--mode", "replay")
    assert status == 0 and replayed.mode == "replay" and replayed.scores == result.scores
    trace = load_trace(cassette)
    assert len(trace.calls) == 2
    assert "3 judge call(s) are the harness's own (header x-harness-role) and were not checked" in trace.notes


def test_a_changed_rubric_no_longer_replays(tmp_path: Path) -> None:
    run_scenario(tmp_path, JUDGED, "--record")
    status, result = run_scenario(tmp_path, JUDGED.replace("says where", "says when"), "--mode", "replay")
    assert status == 2 and result.error is not None
    assert "no recorded interaction matches" in result.error and "says when" in result.error


def test_verdicts_that_disagree_are_flagged_and_the_mean_decides(tmp_path: Path) -> None:
    body = verdicts("{reasoning: Right., score: 0.9}", "{reasoning: Wrong order., score: 0.2}",
                    "{reasoning: Mostly., score: 0.8}")
    status, result = run_scenario(tmp_path, body)
    [score] = result.scores
    assert score.value == pytest.approx(1.9 / 3)
    assert score.reason.startswith("the judge's verdicts DISAGREE: mean 0.63 of 3 verdicts (0.90, 0.20, 0.80)")
    assert score.details is not None and score.details["disagreement"] is True and score.details["majority"] == "pass"
    # 0.63 is under min_score 0.7: a failure of the agent's run, not a harness error.
    assert status == 1 and result.status == "failed"
    assert any("min_score" in reason for reason in result.reasons())


def test_with_labels_the_majority_label_decides_and_a_tie_goes_to_the_lowest(tmp_path: Path) -> None:
    labelled = JUDGED.replace("      repeats: 3\n",
                              "      repeats: 3\n      labels: {correct: 1, partial: 0.5, wrong: 0}\n")
    head = labelled[: labelled.index("  - {thread: judge")]
    def steps(*labels: str) -> str:
        return head + "".join(
            f"  - {{thread: judge, tool_use: {{name: verdict, input: {{reasoning: r{n}, label: {label}}}}}}}\n"
            for n, label in enumerate(labels))

    status, result = run_scenario(tmp_path, steps("correct", "partial", "correct"))
    [score] = result.scores
    assert (score.label, score.value) == ("correct", 1.0) and status == 0
    assert score.reason.startswith(
        "the judge's verdicts DISAGREE: majority correct (2 of 3: correct, partial, correct)")
    tool = result.harness_trace.exchanges[0].request_body["tools"][0]  # type: ignore[union-attr]
    assert tool["input_schema"]["properties"]["label"]["enum"] == ["correct", "partial", "wrong"]

    body = steps("correct", "wrong", "partial").replace("repeats: 3", "repeats: 3")
    status, result = run_scenario(tmp_path, body)
    [score] = result.scores
    assert (score.label, score.value) == ("wrong", 0.0) and status == 1


@pytest.mark.parametrize(
    ("step", "says"),
    [
        ("{thread: judge, text: 'I would give it a 9/10.'}", "did not call the verdict tool it was asked to"),
        ("{thread: judge, tool_use: {name: verdict, input: {reasoning: Great., score: 9}}}",
         "score 9 is not a number from 0 to 1"),
        ("{thread: judge, tool_use: {name: verdict, input: {score: 1}}}", "(no reasoning)"),
        ("{thread: judge, tool_use: {name: verdict, input: {reasoning: ok, score: '1'}}}", "score '1' is not a number"),
    ],
)
def test_a_malformed_verdict_is_an_error_that_shows_the_raw_reply(tmp_path: Path, step: str, says: str) -> None:
    body = JUDGED.replace("repeats: 3", "repeats: 1")
    body = body[: body.index("  - {thread: judge")] + f"  - {step}\n"
    status, result = run_scenario(tmp_path, body)
    assert status == 2 and result.status == "error" and result.error is not None
    assert "scorer 'judge' (judge) failed: MalformedReply: the judge (claude-opus-4-8)" in result.error
    assert says in result.error and "raw reply: [{" in result.error
    [score] = result.scores
    assert score.value is None and score.kind == "judge"


def test_a_judge_with_a_label_not_in_its_labels_is_malformed(tmp_path: Path) -> None:
    body = JUDGED.replace("      repeats: 3\n", "      repeats: 1\n      labels: {correct: 1, wrong: 0}\n")
    body = body[: body.index("  - {thread: judge")] + (
        "  - {thread: judge, tool_use: {name: verdict, input: {reasoning: meh, label: maybe}}}\n")
    status, result = run_scenario(tmp_path, body)
    assert status == 2 and result.error is not None
    assert "label 'maybe' is not one of correct, wrong" in result.error and '"label": "maybe"' in result.error


def test_the_trajectory_shows_the_judge_each_tool_call_and_its_result(tmp_path: Path) -> None:
    status, result = run_scenario(tmp_path, JUDGED.replace("repeats: 3", "repeats: 3\n      trajectory: true"))
    assert status == 0
    prompt = result.harness_trace.exchanges[0].request_body["messages"][0]["content"]  # type: ignore[union-attr]
    assert 'step 1: called lookup_order({"order_id": "O1"}) -> {"status": "delivered"}' in prompt


def test_the_judges_cost_is_its_own_ledger_line(tmp_path: Path) -> None:
    run_scenario(tmp_path, JUDGED)
    assert main(["report", str(tmp_path / "results.jsonl"), "-o", str(tmp_path / "page"),
                 "--json", str(tmp_path / "summary.json")]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert list(summary["cost_by_harness_calls"]) == ["judge (claude-opus-4-8)"]
    assert summary["harness_cost_usd"] > 0 and list(summary["cost_by_model"]) == ["claude-sonnet-5"]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("{judge: {rubric: r}}", "score[0].judge.model: required option is missing"),
        ("{judge: {rubric: r, model: m, repeat: 3}}",
         "score[0].judge.repeat: unknown option; judge takes: rubric, model"),
        ("{judge: {rubric: r, model: m, repeats: 0}}",
         "score[0].judge.repeats: Input should be greater than or equal to 1"),
    ],
)
def test_a_bad_judge_entry_names_its_line(tmp_path: Path, entry: str, says: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"prompt: hi\nscore:\n  - {entry}\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert says in str(caught.value) and ":3:" in str(caught.value)


def test_the_shipped_judged_scenario_replays_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    results = tmp_path / "results.jsonl"
    assert main(["run", str(ROOT / "scenarios" / "support-judged.yaml"), "--results", str(results), "--no-report"]) == 0
    [result] = read_results(results)
    [score] = result.scores
    assert (result.mode, score.name, score.kind) == ("replay", "refund_judge", "judge")
    assert score.value is not None and score.value >= 0.7


def test_with_a_simulated_user_the_judge_reads_the_whole_conversation(tmp_path: Path) -> None:
    body = JUDGED.replace("prompt: Where is order O1?\n",
                          "prompt: Where is order O1?\nuser: {script: [When did it arrive?]}\n")
    body = body.replace("  - text: Order O1 was delivered.\n",
                        "  - text: Order O1 was delivered.\n  - text: On Monday.\n")
    status, result = run_scenario(tmp_path, body)
    assert status == 0, result.reasons()
    prompt = result.harness_trace.exchanges[0].request_body["messages"][0]["content"]  # type: ignore[union-attr]
    assert ("<task>\nUSER: Where is order O1?\n\nASSISTANT: Order O1 was delivered.\n\nUSER: "
            "When did it arrive?\n</task>"
            "\n\n<final_answer>\nOn Monday.\n</final_answer>") in prompt


def test_the_frame_has_the_judges_cost_beside_the_agents(tmp_path: Path) -> None:
    from harness.results import to_frame

    run_scenario(tmp_path, JUDGED)
    [row] = to_frame(tmp_path / "results.jsonl").to_dict("records")
    assert row["harness_cost_usd"] > 0 and row["cost_usd"] > 0 and row["score.judge"] == pytest.approx(0.9)
    # Priced again with a table (as harness report --prices does), the judge's calls are too.
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  claude-opus-4-8: {input: 0, output: 0, cache_write_5m: 0, cache_write_1h: 0, "
                      "cache_read: 0}\n", encoding="utf-8")
    [repriced] = to_frame(tmp_path / "results.jsonl", prices=load_prices(prices)).to_dict("records")
    assert repriced["harness_cost_usd"] == 0 and repriced["cost_usd"] == row["cost_usd"]


def test_a_malformed_first_verdict_is_said_once_not_again_as_the_judges_answers_left_unused(tmp_path: Path) -> None:
    # Repeats 3: the first verdict is malformed, so the judge stops and its two other scripted answers
    # are left; that is the malformed verdict's doing, not a second problem of the run.
    head = JUDGED[: JUDGED.index("  - {thread: judge")]
    body = head + "".join(f"  - {{thread: judge, tool_use: {{name: verdict, input: {{reasoning: r, score: {s}}}}}}}\n"
                          for s in (9, 1, 1))
    status, result = run_scenario(tmp_path, body)
    assert status == 2 and result.error is not None
    assert result.error.splitlines() == [line for line in result.error.splitlines() if "scorer 'judge'" in line]
    assert "not used" not in result.error and "score 9 is not a number from 0 to 1" in result.error
    # An answer of the agent's left unused is still said, whatever the judge did.
    extra = body.replace("  - text: Order O1 was delivered.\n",
                         "  - text: Order O1 was delivered.\n  - text: An answer nobody asks for.\n")
    status, result = run_scenario(tmp_path, extra)
    assert status == 2 and result.error is not None
    assert "scorer 'judge' (judge) failed" in result.error and "were not used: step 3 (end_turn)" in result.error
