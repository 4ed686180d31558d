"""Scenarios x matrix cells: expansion, command-line overrides, cassette naming, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_support import Project

from harness.errors import HarnessError, ScenarioError
from harness.run import Overrides, load_all, plan, plan_one
from harness.run._plan import cells_of
from harness.scenario import load_scenario


def test_one_cell_uses_one_cassette_named_after_the_file(project: Project) -> None:
    source = load_scenario(project.scenario("refund", "name: refund-basic\nprompt: hi\n"))
    [run] = plan_one(source)
    assert (run.cell.model, run.cell.effort, run.cell.repeat) == ("claude-sonnet-5", None, 0)
    assert run.cassette == project.root / "cassettes" / "refund.yaml"
    assert run.run_id == "refund-basic[claude-sonnet-5-default-r0]"
    assert run.label == "refund-basic [claude-sonnet-5-default]" and run.mode == "replay"


def test_matrix_expands_models_x_efforts_x_repeats_with_a_cassette_per_cell(project: Project) -> None:
    source = load_scenario(
        project.scenario(
            "m",
            "prompt: hi\nmatrix:\n  models: [claude-opus-4-8, claude-sonnet-5]\n  efforts: [low, xhigh]\n  repeats: 2\n"
        )
    )
    runs = plan_one(source)
    assert len(runs) == 8
    assert [r.run_id for r in runs[:3]] == [
        "m[claude-opus-4-8-low-r0]",
        "m[claude-opus-4-8-low-r1]",
        "m[claude-opus-4-8-xhigh-r0]",
    ]
    assert runs[1].cassette == project.root / "cassettes" / "m" / "claude-opus-4-8-low-r1.yaml"
    assert runs[1].label == "m [claude-opus-4-8-low-r1]"
    assert len({r.cassette for r in runs}) == 8


def test_command_line_overrides_replace_the_matrix(project: Project) -> None:
    source = load_scenario(project.scenario("m",
                                            "prompt: hi\nmode: scripted\nscript: [{text: hi}]\nmatrix: "
                                            "{models: [a, b], repeats: 3}\n"))
    runs = plan_one(source, Overrides(models=("claude-fable-5",), efforts=("max",), repeats=1, mode="replay"))
    assert [(r.cell.model, r.cell.effort, r.cell.repeat, r.mode) for r in runs] == [
        ("claude-fable-5", "max", 0, "replay")]


def test_more_runs_than_a_scenario_may_plan_are_refused_before_any_is_planned(project: Project) -> None:
    # Every planned run is held in memory and its cassette path checked before the first starts: a
    # mistyped `--repeat 99999999999999999999` planned in silence until the process was killed (exit 137).
    source = load_scenario(project.scenario("m", "prompt: hi\nmatrix:\n  models: [a, b]\n  repeats: 50001\n"))
    with pytest.raises(ScenarioError) as info:
        plan_one(source)
    assert info.value.line == 5 and info.value.key == "matrix.repeats"
    assert "2 model(s) x 1 effort(s) x repeats: 50001 is 100,002 runs; at most 100,000" in info.value.problem
    with pytest.raises(ScenarioError, match="--repeat 99999999999999999999 is 99,999,999,999,999,999,999 runs"):
        plan_one(source, Overrides(models=("a",), repeats=99999999999999999999))
    cells, _ = cells_of(source, Overrides(repeats=50000))  # the most there may be: their cells, not the runs
    assert len(cells) == 100_000


def test_cells_that_would_share_a_cassette_are_refused(project: Project) -> None:
    source = load_scenario(project.scenario("m",
                                            "prompt: hi\ncassette: rec/{model}.yaml\nmatrix: {efforts: [low, high]}\n"))
    with pytest.raises(ScenarioError) as info:
        plan_one(source)
    assert info.value.line == 3 and info.value.key == "cassette"
    assert "would share the cassette" in info.value.problem and "{effort}" in info.value.problem
    [run] = plan_one(source, Overrides(efforts=("low",)))
    assert run.cassette == project.root / "scenarios" / "rec" / "claude-sonnet-5.yaml"


def test_a_bad_placeholder_and_a_script_less_scripted_mode_point_at_their_key(project: Project) -> None:
    bad = load_scenario(project.scenario("bad", "prompt: hi\ncassette: '{scenario}.yaml'\n"))
    with pytest.raises(ScenarioError, match="bad placeholder"):
        plan_one(bad)
    scripted = load_scenario(project.scenario("s", "prompt: hi\nmode: scripted\n"))
    with pytest.raises(ScenarioError, match="mode scripted needs a `script`"):
        plan_one(scripted)


def test_a_malformed_file_among_several_is_reported_and_the_others_planned(project: Project) -> None:
    project.scenario("a", "prompt: hi\n")
    project.scenario("b", "prompt: hi\nmodle: x\n")
    project.scenario("c", "name: a\nprompt: hi\n")
    sources, problems = load_all([project.root / "scenarios", project.root / "missing"])
    assert [s.stem for s in sources] == ["a", "c"]
    assert [type(p) for p in problems] == [ScenarioError, ScenarioError]
    messages = [str(p) for p in problems]
    assert any("b.yaml:3: modle: unknown key" in m for m in messages)
    assert any(m.endswith("missing: no such file or directory") for m in messages)
    runs, plan_problems = plan(sources)
    assert [r.run_id for r in runs] == ["a[claude-sonnet-5-default-r0]"]
    assert isinstance(plan_problems[0], HarnessError) and "also used by" in str(plan_problems[0])


def test_paths_resolve_against_the_scenario_file(tmp_path: Path) -> None:
    nested = tmp_path / "deep" / "scenarios"
    nested.mkdir(parents=True)
    (nested / "x.yaml").write_text("prompt: hi\ncassette: here.yaml\n")
    [run] = plan_one(load_scenario(nested / "x.yaml"))
    assert run.cassette == nested / "here.yaml"
