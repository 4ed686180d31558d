"""`--harness-prices FILE`: scenario items in live or record mode are priced as `harness run --prices`
prices them, and a model without a price is said once, after collection, before anything runs.

The scripted model plays the API over real HTTP (ANTHROPIC_BASE_URL), so each run is billed from the
usage its answers carry, exactly as a live run is.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.results import read_results
from harness.transport.scripted import ScriptedModel

USAGE = {"input_tokens": 1000, "output_tokens": 1000}
ONE_CALL_USD = 1000 * 4 / 1e6 + 1000 * 20 / 1e6  # at UNLISTED_PRICES

ASK = """\
name: ask
prompt: Say hi.
model: claude-unlisted-9
mode: live
expect: {max_cost_usd: 0.05}
score:
  - judge: {rubric: The answer greets., model: claude-unlisted-9}
"""

UNLISTED_PRICES = """models:
  claude-unlisted-9: {input: 4, output: 20, cache_write_5m: 5, cache_write_1h: 8, cache_read: 0.4}
"""


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    """The API answering one run and its judge's verdict."""
    verdict = {"thread": "judge", "tool_use": {"name": "verdict", "input": {"reasoning": "Greets.", "score": 1}},
               "usage": USAGE}
    model = ScriptedModel([{"text": "Hi.", "usage": USAGE}, verdict])
    with model.serve() as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
        yield model


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.mkdir("scenarios") / "ask.yaml").write_text(ASK)
    (pytester.path / "prices.yaml").write_text(UNLISTED_PRICES)
    return pytester


def test_a_prices_file_prices_the_runs_and_their_judges(project: pytest.Pytester, api: ScriptedModel) -> None:
    results = project.path / "results.jsonl"
    outcome = project.runpytest("--harness-scenarios", "--harness-prices", "prices.yaml",
                                "--harness-results", str(results))
    # max_cost_usd is met: without a price the run could not pass it.
    outcome.assert_outcomes(passed=1)
    assert "no price" not in outcome.stdout.str()
    [result] = read_results(results)
    assert result.cost_usd == pytest.approx(ONE_CALL_USD)
    assert result.harness_cost_usd == pytest.approx(ONE_CALL_USD)
    assert result.prices is not None and result.prices.file == "prices.yaml"


def test_an_unpriced_model_is_said_once_before_anything_runs(project: pytest.Pytester, api: ScriptedModel) -> None:
    outcome = project.runpytest("--harness-scenarios")
    outcome.assert_outcomes(failed=1)  # expect max_cost_usd: unpriced, never counted as free
    text = outcome.stdout.str()
    [warning] = [line for line in text.splitlines() if line.startswith("harness: no price")]
    assert warning == (
        "harness: no price for model(s) claude-unlisted-9 (scenarios/ask.yaml:3, scenarios/ask.yaml:7): what their "
        'calls cost will show as "unpriced", never $0. Price them with --harness-prices FILE (a YAML with the shape '
        "of harness/cost/prices.yaml), or afterwards with harness report RESULTS --prices FILE"
    )
    assert text.index(warning) < text.index("scenarios/ask.yaml F")


def test_an_unpriced_model_is_said_once_under_xdist_too(project: pytest.Pytester, api: ScriptedModel) -> None:
    # The xdist controller collects nothing itself, and shows nothing its workers say at collection.
    outcome = project.runpytest_subprocess("-n", "2", "--harness-scenarios")
    outcome.assert_outcomes(failed=1)
    text = outcome.stdout.str()
    [warning] = [line for line in text.splitlines() if line.startswith("harness: no price")]
    assert warning.startswith("harness: no price for model(s) claude-unlisted-9 (scenarios/ask.yaml:3, "
                              "scenarios/ask.yaml:7): ")
    assert text.index(warning) < text.index("FAILURES")
    # Priced: no warning. The warning comes before any run; the run itself fails here (the scripted
    # API's answers were spent by the run above), which this part does not look at.
    outcome = project.runpytest_subprocess("-n", "2", "--harness-scenarios", "--harness-prices", "prices.yaml")
    assert "harness: no price" not in outcome.stdout.str() and "2 workers [1 item]" in outcome.stdout.str()


def test_offline_scenarios_are_not_warned_about(project: pytest.Pytester) -> None:
    (project.path / "scenarios" / "ask.yaml").write_text(ASK.replace("mode: live", "mode: scripted\nscript:\n"
                                                                      "  - text: Hi.\n  - thread: judge\n"
                                                                      "    tool_use: {name: verdict, input: "
                                                                      "{reasoning: Greets., score: 1}}"))
    outcome = project.runpytest("--harness-scenarios")
    assert "harness: no price" not in outcome.stdout.str()


def test_a_broken_prices_file_is_one_usage_error(project: pytest.Pytester) -> None:
    (project.path / "prices.yaml").write_text(UNLISTED_PRICES.replace("input: 4", "input: -4"))
    outcome = project.runpytest("--harness-scenarios", "--harness-prices", "prices.yaml")
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    outcome.stderr.fnmatch_lines(["ERROR: prices.yaml:2: models.claude-unlisted-9.input: *"])
