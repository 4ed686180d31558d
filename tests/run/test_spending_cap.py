"""`harness run --max-cost`: live runs against the scripted model served as the API, stopped by their spend.

The scripted model plays the API over real HTTP (ANTHROPIC_BASE_URL), so each run is billed from the
usage its answers carry, exactly as a live run is.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from run_support import Project

from harness.cli import main
from harness.cost import cost_of_usage
from harness.results import read_results, to_frame
from harness.transport.scripted import ScriptedModel

USAGE = {"input_tokens": 1000, "output_tokens": 1000}
ONE_RUN_USD = cost_of_usage("claude-sonnet-5", USAGE).total_usd  # type: ignore[union-attr]

FOUR_RUNS = """name: ask
prompt: Say hi.
model: claude-sonnet-5
matrix: {repeats: 4}
mode: live
"""


def serve_api(monkeypatch: pytest.MonkeyPatch, answered_as: str | None = None,
              judged: bool = False) -> Iterator[ScriptedModel]:
    """The scripted model served over HTTP as the live API, with four priced answers (and, `judged`,
    four verdicts of the runs' judge after them)."""
    step: dict[str, Any] = {"text": "Hi.", "usage": USAGE}
    if answered_as is not None:
        step["model"] = answered_as
    verdict = {"thread": "judge", "tool_use": {"name": "verdict", "input": {"reasoning": "Greets.", "score": 1}},
               "usage": USAGE}
    model = ScriptedModel([step] * 4 + [verdict] * 4 * judged)
    with model.serve() as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
        yield model


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    yield from serve_api(monkeypatch)


@pytest.fixture
def unlisted_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    """The API answering as a model the price table does not list."""
    yield from serve_api(monkeypatch, answered_as="claude-unlisted-9")


@pytest.fixture
def judged_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    """The API answering four runs, each judged once."""
    yield from serve_api(monkeypatch, judged=True)


def run(project: Project, *args: str) -> int:
    return main(["run", *args, "--fresh", "--results", str(project.results), "--no-report"])


def messages_calls(model: ScriptedModel) -> list[Any]:
    return [r for r in model.requests if r.path.startswith("/v1/messages")]


def test_no_run_starts_once_the_spend_reaches_the_cap(
    project: Project, api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("ask", FOUR_RUNS)
    assert run(project, str(path), "--max-cost", f"{ONE_RUN_USD * 1.5}") == 2
    results = read_results(project.results)
    assert [r.status for r in results] == ["passed", "passed"]
    assert sum(r.cost_usd or 0 for r in results) == pytest.approx(2 * ONE_RUN_USD)
    assert len(messages_calls(api)) == 2  # the other two never reached the API
    out = capsys.readouterr().out
    assert "4 planned, 2 finished (2 passed), 2 not made" in out
    not_made = [line for line in out.splitlines() if line.startswith("NOT MADE")]
    assert [line.split(" (")[0] for line in not_made] == ["NOT MADE ask [claude-sonnet-5-default-r2]",
                                                          "NOT MADE ask [claude-sonnet-5-default-r3]"]
    assert all(f"at or over --max-cost ${ONE_RUN_USD * 1.5:g}" in line for line in not_made)
    assert f"spend: ${2 * ONE_RUN_USD:.4f} of --max-cost" in out


def test_under_the_cap_every_run_is_made(project: Project, api: ScriptedModel,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("ask", FOUR_RUNS)
    assert run(project, str(path), "--max-cost", f"{ONE_RUN_USD * 10}", "-j", "2") == 0
    assert len(read_results(project.results)) == 4
    assert "4 planned, 4 finished (4 passed); results in" in capsys.readouterr().out


def test_a_run_of_unknown_cost_is_never_counted_as_free(
    project: Project, unlisted_api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("ask", FOUR_RUNS)
    assert run(project, str(path), "--max-cost", "100") == 2
    [result] = read_results(project.results)
    assert result.cost_usd is None
    out = capsys.readouterr().out
    assert "4 planned, 1 finished (1 passed), 3 not made" in out
    assert "the cost of ask[claude-sonnet-5-default-r0] is unknown (a model it used has no price)" in out
    [row] = [line.split() for line in out.splitlines() if line.startswith("ask ") and "passed" in line]
    assert row[6] == "unpriced", row  # the table's cost column, as every other output says it


def test_a_model_without_a_price_is_refused_before_anything_runs(
    project: Project, api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("ask", FOUR_RUNS.replace("claude-sonnet-5", "claude-unlisted-9"))
    assert run(project, str(path), "--max-cost", "1") == 2
    assert messages_calls(api) == []
    err = capsys.readouterr().err
    assert f"{path}:4: model: --max-cost: no price for model claude-unlisted-9" in err and "nothing was run" in err


def test_offline_runs_spend_nothing(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("ask", FOUR_RUNS.replace("mode: live", "mode: scripted\nscript: [{text: Hi., usage: "
                                                     "{input_tokens: 1000, output_tokens: 1000}}]"))
    assert run(project, str(path), "--max-cost", f"{ONE_RUN_USD / 2}") == 0
    assert len(read_results(project.results)) == 4
    assert "spend: $0.0000 of --max-cost" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-1", "abc", "inf"])
def test_the_cap_must_be_a_positive_amount(project: Project, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("ask", FOUR_RUNS)
    with pytest.raises(SystemExit) as exited:
        run(project, str(path), f"--max-cost={value}")
    assert exited.value.code == 2
    assert "--max-cost" in capsys.readouterr().err


JUDGED = FOUR_RUNS + """score:
  - judge: {rubric: The answer greets., model: claude-sonnet-5}
"""


def test_the_judges_calls_count_in_the_spend(project: Project, judged_api: ScriptedModel,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # Each run costs two calls: the agent's and its judge's. Counting the agent alone would make a third run.
    assert run(project, str(project.scenario("ask", JUDGED)), "--max-cost", f"{ONE_RUN_USD * 3}") == 2
    results = read_results(project.results)
    assert [r.status for r in results] == ["passed", "passed"]
    assert [r.harness_cost_usd for r in results] == [pytest.approx(ONE_RUN_USD)] * 2
    assert f"spend: ${4 * ONE_RUN_USD:.4f} of --max-cost" in capsys.readouterr().out


def test_a_judge_without_a_price_is_refused_before_anything_runs(
    project: Project, api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("ask", JUDGED.replace("model: claude-sonnet-5}", "model: claude-unlisted-9}"))
    assert run(project, str(path), "--max-cost", "1") == 2
    assert messages_calls(api) == []
    err = capsys.readouterr().err
    assert f"{path}:8: score[0].judge.model: --max-cost: no price for model claude-unlisted-9" in err
    assert "nothing was run" in err


def test_without_a_cap_an_unpriced_judge_is_said_once_before_anything_runs(
    project: Project, judged_api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("ask", JUDGED.replace("model: claude-sonnet-5}", "model: claude-unlisted-9}"))
    assert run(project, str(path)) == 0
    said = capsys.readouterr()
    [warning] = [line for line in said.err.splitlines() if "claude-unlisted-9" in line]  # once for the four runs
    assert warning == (
        f"harness: no price for model(s) claude-unlisted-9 ({path}:8): what their calls cost will show as "
        '"unpriced", never $0. Price them with --prices FILE (a YAML with the shape of harness/cost/prices.yaml), '
        "or afterwards with harness report RESULTS --prices FILE"
    )
    assert said.err.index(warning) < said.err.index("[1/4]")
    assert "(+ unpriced for the harness's own calls (judge))" in said.out


def test_without_a_cap_an_unpriced_agent_model_is_said_once_before_anything_runs(
    project: Project, api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("ask", FOUR_RUNS.replace("claude-sonnet-5", "claude-unlisted-9"))
    assert run(project, str(path)) == 0
    said = capsys.readouterr()
    [warning] = [line for line in said.err.splitlines() if line.startswith("harness: no price")]  # once for four runs
    assert warning == (
        f"harness: no price for model(s) claude-unlisted-9 ({path}:4): what their calls cost will show as "
        '"unpriced", never $0. Price them with --prices FILE (a YAML with the shape of harness/cost/prices.yaml), '
        "or afterwards with harness report RESULTS --prices FILE"
    )
    assert said.err.index(warning) < said.err.index("[1/4]")


def test_an_agent_model_given_on_the_command_line_is_named_as_such(
    project: Project, api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project.scenario("ask", FOUR_RUNS)
    assert run(project, str(path), "--model", "claude-unlisted-9", "--repeat", "1") == 0
    [warning] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("harness: no price")]
    assert warning.startswith("harness: no price for model(s) claude-unlisted-9 (--model): ")


UNLISTED_PRICES = """models:
  claude-unlisted-9: {input: 4, output: 20, cache_write_5m: 5, cache_write_1h: 8, cache_read: 0.4}
"""


def test_a_prices_file_prices_the_agent_and_judge_models_the_table_lacks(
    project: Project, judged_api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = project.root / "prices.yaml"
    prices.write_text(UNLISTED_PRICES, encoding="utf-8")
    one_call = 1000 * 4 / 1e6 + 1000 * 20 / 1e6
    path = project.scenario("ask", JUDGED.replace("claude-sonnet-5", "claude-unlisted-9"))
    # Priced, the cap counts both calls of each run: a third run would pass it.
    assert run(project, str(path), "--prices", str(prices), "--max-cost", f"{one_call * 3}") == 2
    results = read_results(project.results)
    assert [r.cost_usd for r in results] == [pytest.approx(one_call)] * 2
    said = capsys.readouterr()
    assert "no price" not in said.err
    assert f"spend: ${4 * one_call:.4f} of --max-cost" in said.out
    assert f"(+ ${2 * one_call:.4f} for the harness's own calls (judge))" in said.out


def test_a_runs_costs_read_back_are_all_at_the_prices_it_was_run_with(
    project: Project, judged_api: ScriptedModel, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The results file says which prices made its costs: read back (the record, to_frame, the report
    # without --prices), the agent's and the judge's calls are both at the prices file's, as the run said.
    prices = project.root / "prices.yaml"
    prices.write_text(UNLISTED_PRICES, encoding="utf-8")
    one_call = 1000 * 4 / 1e6 + 1000 * 20 / 1e6
    path = project.scenario("ask", JUDGED.replace("claude-sonnet-5", "claude-unlisted-9"))
    assert run(project, str(path), "--prices", str(prices)) == 0
    results = read_results(project.results)
    assert [(r.cost_usd, r.harness_cost_usd) for r in results] == [(pytest.approx(one_call),) * 2] * 4
    assert all(r.prices is not None and r.prices.file == str(prices) for r in results)
    frame = to_frame(project.results)
    assert list(frame["cost_usd"]) == list(frame["harness_cost_usd"]) == [pytest.approx(one_call)] * 4
    capsys.readouterr()
    summary = tmp_path / "summary.json"
    assert main(["report", str(project.results), "-o", str(tmp_path / "page"), "--json", str(summary)]) == 0
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert (data["total_cost_usd"], data["harness_cost_usd"]) == (pytest.approx(4 * one_call),) * 2
    assert data["priced_with"] == {str(prices): 4}
    assert capsys.readouterr().err == ""
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert f"Priced with {prices} over the shipped table, as the runs recorded it" in page


def test_a_report_of_runs_priced_with_different_tables_says_so(
    project: Project, judged_api: ScriptedModel, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    prices = project.root / "prices.yaml"
    prices.write_text(UNLISTED_PRICES, encoding="utf-8")
    assert main(["run", str(project.scenario("ask", JUDGED)), "--fresh", "--results", str(project.results),
                 "--no-report", "--prices", str(prices), "--repeat", "2"]) == 0
    shipped = tmp_path / "shipped.jsonl"
    assert main(["run", str(project.scenario("ask", JUDGED)), "--fresh", "--results", str(shipped),
                 "--no-report", "--repeat", "2"]) == 0
    assert [r.prices for r in read_results(shipped)] == [None, None]
    capsys.readouterr()
    summary = tmp_path / "summary.json"
    assert main(["report", str(project.results), str(shipped), "-o", str(tmp_path / "page"),
                 "--json", str(summary)]) == 0
    assert json.loads(summary.read_text(encoding="utf-8"))["priced_with"] == {str(prices): 2, "shipped": 2}
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert (f"Priced as each run was, with different tables (runs: 2 with {prices}, 2 with the shipped table): "
            "their costs compare prices as well as runs.") in page
    [warning] = capsys.readouterr().err.splitlines()
    assert warning == (
        f"harness: the runs were priced with different tables (2 with {prices}, 2 with the shipped table), each "
        "as it was run: their costs compare prices as well as runs; give --prices FILE to price them all with one"
    )
    # With --prices, one table prices every run, and the report says which.
    assert main(["report", str(project.results), str(shipped), "-o", str(tmp_path / "page"),
                 "--json", str(summary), "--prices", str(prices)]) == 0
    assert json.loads(summary.read_text(encoding="utf-8"))["priced_with"] == {str(prices): 4}
    assert "different tables" not in capsys.readouterr().err
    # The shipped table is kept by no result: its runs are priced with this version's, and said so plainly.
    assert main(["report", str(shipped), "-o", str(tmp_path / "page")]) == 0
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert "Priced with the shipped table." in page and "as the runs recorded it" not in page


def _priced_before_and_after_an_edit(
    project: Project, tmp_path: Path, names: tuple[str, str]
) -> tuple[Path, list[str]]:
    """Two results files of two runs each, priced with one prices file edited in between (the output
    price doubled): one name, two tables. Returns the prices file and the two results files."""
    prices = project.root / "prices.yaml"
    scenario = str(project.scenario("ask", JUDGED.replace("claude-sonnet-5", "claude-unlisted-9")))
    files = []
    for name, output in zip(names, ("20", "40"), strict=True):
        prices.write_text(UNLISTED_PRICES.replace("output: 20", f"output: {output}"), encoding="utf-8")
        files.append(str(tmp_path / f"{name}.jsonl"))
        assert main(["run", scenario, "--fresh", "--results", files[-1], "--no-report", "--prices", str(prices),
                     "--repeat", "2"]) == 0
    return prices, files


def test_a_diff_of_runs_priced_with_an_edited_prices_file_says_the_prices_differ(
    project: Project, judged_api: ScriptedModel, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The cost doubles with the price, not the run, and the diff must say so as it does for two
    # differently named tables.
    prices, sides = _priced_before_and_after_an_edit(project, tmp_path, ("base", "new"))
    capsys.readouterr()
    note = (f"note: the costs compare prices as well as runs: the baseline's were priced 2 with {prices}, "
            f"the new ones' 2 with {prices}, and their prices for claude-unlisted-9 differ")
    assert main(["diff", *sides]) == 1
    assert note in capsys.readouterr().out.splitlines()
    assert main(["diff", *sides, "--format", "markdown"]) == 1
    assert f"_{note}_" in capsys.readouterr().out.splitlines()
    # The side-by-side page says it too, under its heading, as the report page does.
    assert main(["diff", *sides, "-o", str(tmp_path / "page")]) == 1
    capsys.readouterr()
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert f'<p class="muted">{note}</p>' in html.unescape(page)
    assert main(["diff", *sides, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["priced_with"] == {"base": {str(prices): 2}, "new": {str(prices): 2}}
    assert data["prices_differ"] == ["claude-unlisted-9"]
    # The same file unedited: the same prices, nothing to say.
    assert main(["diff", sides[1], sides[1], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["prices_differ"] == []


def test_a_report_of_runs_priced_with_an_edited_prices_file_says_the_prices_differ(
    project: Project, judged_api: ScriptedModel, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The report must say so as it does for two differently named tables (and as harness diff does).
    prices, files = _priced_before_and_after_an_edit(project, tmp_path, ("before", "after"))
    capsys.readouterr()
    summary = tmp_path / "summary.json"
    assert main(["report", *files, "-o", str(tmp_path / "page"), "--json", str(summary)]) == 0
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert data["priced_with"] == {str(prices): 4} and data["prices_differ"] == ["claude-unlisted-9"]
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert (f"Priced as each run was, with different tables (runs: 4 with {prices}; their prices for "
            "claude-unlisted-9 differ): their costs compare prices as well as runs.") in page
    [warning] = capsys.readouterr().err.splitlines()
    assert warning == (
        f"harness: the runs were priced with different tables (4 with {prices}; their prices for claude-unlisted-9 "
        "differ), each as it was run: their costs compare prices as well as runs; give --prices FILE to price "
        "them all with one"
    )
    # One file's runs, or all priced with one table (--prices): one table, nothing to say.
    assert main(["report", files[1], files[1], "-o", str(tmp_path / "page"), "--json", str(summary)]) == 0
    assert json.loads(summary.read_text(encoding="utf-8"))["prices_differ"] == []
    assert main(["report", *files, "-o", str(tmp_path / "page"), "--json", str(summary), "--prices",
                 str(prices)]) == 0
    assert json.loads(summary.read_text(encoding="utf-8"))["prices_differ"] == []
    assert "different tables" not in capsys.readouterr().err


def test_a_hand_edited_negative_price_in_a_results_file_is_refused(
    project: Project, judged_api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = project.root / "prices.yaml"
    prices.write_text(UNLISTED_PRICES, encoding="utf-8")
    path = project.scenario("ask", JUDGED.replace("claude-sonnet-5", "claude-unlisted-9"))
    assert run(project, str(path), "--prices", str(prices), "--repeat", "1") == 0
    lines = project.results.read_text(encoding="utf-8").splitlines()
    assert '"output":20.0' in lines[0]
    project.results.write_text("\n".join([lines[0].replace('"output":20.0', '"output":-20.0', 1), *lines[1:]]) + "\n",
                               encoding="utf-8")
    capsys.readouterr()
    assert main(["diff", str(project.results), str(project.results)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"harness: {project.results}:1: not a harness result record (prices.models.claude-unlisted-9.output: "
        "expected a number of 0 or more, got a number (-20.0))"]


def test_a_broken_prices_file_is_refused_before_anything_runs(
    project: Project, api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = project.root / "prices.yaml"
    prices.write_text(UNLISTED_PRICES.replace("input: 4", "input: -4"), encoding="utf-8")
    assert run(project, str(project.scenario("ask", FOUR_RUNS)), "--prices", str(prices)) == 2
    assert messages_calls(api) == []
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"harness: {prices}:2: models.claude-unlisted-9.input: "), line


def test_the_cap_holds_with_offline_runs_in_worker_processes_beside_the_live_ones(
    project: Project, api: ScriptedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    """-j 2: the scripted runs are made in worker processes, the live ones on threads; only the live ones
    spend, and once they reach the cap nothing more starts."""
    project.scenario("a-local", "name: a-local\nprompt: hi\nmode: scripted\nmatrix: {repeats: 4}\n"
                                "script: [{text: hi}]\n")
    project.scenario("ask", FOUR_RUNS)
    assert run(project, str(project.root / "scenarios"), "--max-cost", f"{ONE_RUN_USD * 1.5}", "-j", "2") == 2
    results = read_results(project.results)
    assert [r.status for r in results if r.mode == "scripted"] == ["passed"] * 4
    live = [r for r in results if r.mode == "live"]
    assert len(live) in (2, 3) and len(messages_calls(api)) == len(live)  # a third may be under way at the cap
    out = capsys.readouterr().out
    not_made = [line for line in out.splitlines() if line.startswith("NOT MADE")]
    assert len(not_made) == 4 - len(live) and all(line.startswith("NOT MADE ask [") for line in not_made)
