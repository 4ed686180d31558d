"""Strict loading of scenario files: every mistake names the file, the line, the key and the choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ScenarioError
from harness.scenario import find_scenarios, load_scenario, parse_scenario


def fails(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "scenarios/refund.yaml")
    return info.value


def test_a_typo_in_a_nested_key_names_file_line_key_and_choices() -> None:
    error = fails(
        """name: refund
prompt: Refund order 42
tools:
  - name: get_customer
    fixture: {output: {id: C1}}
  - name: process_refund
    fixture:
      ouptut: done
"""
    )
    assert str(error) == (
        "scenarios/refund.yaml:8: tools[1].fixture.ouptut: unknown key; valid keys: "
        "output, error, delay_s, sequence, match, python (did you mean 'output'?)"
    )
    assert (error.path, error.line, error.key) == ("scenarios/refund.yaml", 8, "tools[1].fixture.ouptut")


def test_a_top_level_typo_lists_the_scenario_keys() -> None:
    error = fails("prompt: hi\nexpcet: {outcome: completed}\n")
    assert error.line == 2 and error.key == "expcet"
    assert "valid keys: name, description, agent, system, prompt, turns, tools, model" in error.problem
    assert "did you mean 'expect'?" in error.problem


@pytest.mark.parametrize(("typo", "meant"), [("modle", "model"), ("mdoel", "model"), ("promt", "prompt")])
def test_swapped_letters_suggest_the_key_with_those_letters(typo: str, meant: str) -> None:
    # difflib alone ranks `mode` above `model` for `modle`: the user would be sent to the wrong key.
    error = fails(f"prompt: hi\n{typo}: claude-sonnet-5\n" if typo != "promt" else "promt: hi\n")
    assert f"did you mean {meant!r}?" in error.problem


def test_a_list_given_as_prompt_points_at_turns() -> None:
    error = fails("prompt: [Refund order 42, Thanks]\n")
    assert (error.line, error.key) == (1, "prompt")
    assert error.problem == ("prompt is one user message (a string); for several user turns, one after another, "
                             "use `turns`")


def test_a_wrong_choice_lists_the_allowed_values() -> None:
    error = fails("prompt: hi\n\neffort: huge\n")
    assert error.line == 3 and error.key == "effort"
    assert "'low', 'medium', 'high', 'xhigh' or 'max'" in error.problem


def test_every_problem_is_reported_first_one_first() -> None:
    error = fails("prompt: hi\nmode: replya\nexpect:\n  outcome: done\n")
    assert error.line == 2 and error.key == "mode"
    assert "scenarios/refund.yaml:4: expect.outcome:" in error.problem


def test_prompt_and_turns_are_exclusive_and_one_is_required() -> None:
    assert "exactly one of prompt" in fails("name: x\n").problem
    assert "exactly one of prompt" in fails("prompt: a\nturns: [b, c]\n").problem


def test_duplicate_keys_are_refused_instead_of_silently_overwritten() -> None:
    error = fails("prompt: a\nmodel: claude-sonnet-5\nmodel: claude-opus-4-8\n")
    assert (error.line, error.key) == (3, "model")
    assert "duplicate key" in error.problem


def test_not_yaml_and_not_a_mapping() -> None:
    assert fails("prompt: [unclosed\n").problem.startswith("not valid YAML")
    assert "mapping of keys, not a list" in fails("- prompt: a\n").problem
    # Said as YAML holds it, not as Python's type ("not a int")
    assert fails("42\n").problem == "a scenario is a mapping of keys, not a number (42)"
    assert fails("just words\n").problem == "a scenario is a mapping of keys, not a string ('just words')"
    # and what YAML reads besides JSON's kinds: Python named them ("not date"), or bytes "a list"
    assert fails("2024-01-01\n").problem == "a scenario is a mapping of keys, not a date (2024-01-01)"
    assert fails("2024-01-01 10:00:00\n").problem == "a scenario is a mapping of keys, not a date (2024-01-01T10:00:00)"
    assert fails("!!binary aGk=\n").problem == "a scenario is a mapping of keys, not binary data (!!binary)"
    assert "empty" in fails("").problem


def test_a_fixture_gives_exactly_one_kind_of_answer() -> None:
    error = fails("prompt: a\ntools:\n  - name: t\n    fixture: {output: 1, error: boom}\n")
    assert error.key == "tools[0].fixture" and "only one of output, error, sequence, python" in error.problem
    error = fails("prompt: a\ntools:\n  - name: t\n    fixture: {delay_s: 1}\n")
    assert "give one of output, error, sequence, match, python" in error.problem
    error = fails(
        "prompt: a\ntools:\n  - name: t\n    fixture:\n      sequence:\n        - {output: 1}\n        - {}\n")
    assert (error.line, error.key) == (7, "tools[0].fixture.sequence[1]")


def test_request_may_not_repeat_what_the_scenario_sets() -> None:
    error = fails("prompt: a\nrequest:\n  model: claude-opus-4-8\n")
    assert error.key == "request" and "set by the scenario's `model`" in error.problem
    assert "scenario's `effort` key" in fails("prompt: a\nrequest: {effort: high}\n").problem


def test_codes_and_specs_are_checked() -> None:
    assert "not a rule code" in fails("prompt: a\nexpect: {findings: [l2]}\n").problem
    assert "'module:function'" in fails("prompt: a\nagent: 'mod:'\n").problem
    assert "not a valid regular expression" in fails("prompt: a\nexpect: {final_text: {matches: '('}}\n").problem
    limit_without_outcome = fails("prompt: a\nexpect: {outcome: completed, limit: steps}\n")
    assert "only meaningful with outcome: limit" in limit_without_outcome.problem
    # An empty final_text checked nothing and passed every run.
    empty = fails("prompt: a\nexpect: {final_text: {}}\n")
    assert (empty.key, empty.problem) == ("expect.final_text", "give contains, equals or matches (or drop final_text)")
    assert fails("prompt: a\nexpect: {final_text: {contains: []}}\n").key == "expect.final_text"


def test_an_inline_script_is_validated_with_lines_in_the_scenario() -> None:
    error = fails("prompt: a\nmode: scripted\nscript:\n  - text: hi\n  - text: again\n    stop_reson: end_turn\n")
    assert (error.line, error.key) == (6, "script[1].stop_reson")
    assert "valid keys:" in error.problem


def test_a_script_path_must_exist(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("prompt: a\nscript: scripts/missing.yaml\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.line == 2 and "no script file" in info.value.problem


def test_a_valid_scenario_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "refund-basic.yaml"
    path.write_text("# yaml-language-server: $schema=x\nprompt: Refund order 42\ntools:\n  - name: get_customer\n")
    source = load_scenario(path)
    assert source.name == "refund-basic"
    assert source.scenario.agent == "reference" and source.scenario.mode == "replay"
    assert source.scenario.tools[0].definition() == {
        "name": "get_customer",
        "description": "",
        "input_schema": {"type": "object", "properties": {}},
    }
    assert source.line_of(("tools", 0, "name")) == 4
    assert source.line_of(("tools", 0, "fixture")) == 4  # not written: its parent's line


def test_find_scenarios_walks_directories_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("b/z.yaml", "a.yml", "notes.txt"):
        (tmp_path / name).write_text("prompt: a\n")
    assert [p.relative_to(tmp_path).as_posix() for p in find_scenarios([tmp_path])] == ["a.yml", "b/z.yaml"]
    with pytest.raises(ScenarioError, match="no such file"):
        find_scenarios([tmp_path / "missing"])


def test_output_tools_reach_the_checks() -> None:
    from harness.run._execute import check_options

    source = parse_scenario("name: structured\nprompt: Weather in Paris?\noutput_tools: [final_result]\n",
                            "scenarios/structured.yaml")
    assert source.scenario.output_tools == ["final_result"]
    assert check_options(source).output_tools == ("final_result",)
