"""Cases: inline or from a dataset file, rendered with Jinja into one run per case, the case in every id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_support import Project

from harness.cli import main
from harness.errors import ScenarioError
from harness.results import read_results
from harness.run import load_all, plan, plan_one
from harness.scenario import load_scenario

TEMPLATED = """name: refunds
mode: scripted
prompt: "Refund order {{ order }} for {{ amount }} dollars"
tools:
  - name: refund
    input_schema: {type: object, properties: {order: {type: string}, amount: {type: number}}}
    fixture: {output: "refund of {{ amount }} issued"}
script:
  - tool_use: {name: refund, input: {order: "{{ order }}", amount: "{{ amount }}"}}
  - text: "Refunded {{ amount }} dollars for order {{ order }}."
expect:
  outcome: completed
  final_text: {contains: "{{ order }}"}
"""


def test_inline_cases_become_one_run_each_with_the_case_in_the_run_id(project: Project) -> None:
    path = project.scenario("refunds", TEMPLATED + "cases:\n  - {id: small, vars: {order: A1, amount: 5}}\n"
                                                   "  - vars: {order: B2, amount: 250}\n")
    runs = plan_one(load_scenario(path))
    assert [r.run_id for r in runs] == ["refunds[small][claude-sonnet-5-default-r0]",
                                        "refunds[2][claude-sonnet-5-default-r0]"]
    assert [r.label for r in runs] == ["refunds [small] [claude-sonnet-5-default]",
                                       "refunds [2] [claude-sonnet-5-default]"]
    assert [r.case for r in runs] == ["small", "2"]
    assert runs[0].cassette == project.root / "cassettes" / "refunds" / "small.yaml"
    scenario = runs[1].source.scenario
    assert scenario.prompt == "Refund order B2 for 250 dollars"
    # A template that is the whole value gives the variable itself: the amount stays a number.
    assert scenario.script == [{"tool_use": {"name": "refund", "input": {"order": "B2", "amount": 250}}},
                               {"text": "Refunded 250 dollars for order B2."}]
    assert scenario.tools[0].fixture is not None and scenario.tools[0].fixture.output == "refund of 250 issued"
    assert scenario.expect.final_text is not None and scenario.expect.final_text.contains == "B2"


def test_a_run_of_cases_records_the_case_in_results_and_the_cli(project: Project,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = project.scenario("refunds", TEMPLATED + "cases:\n  - {id: small, vars: {order: A1, amount: 5}}\n"
                                                   "  - vars: {order: B2, amount: 250}\n")
    assert main(["run", str(path), "--fresh", "--results", str(project.results), "--no-report"]) == 0
    results = read_results(project.results)
    assert sorted((r.run_id, r.case) for r in results) == [
        ("refunds[2][claude-sonnet-5-default-r0]", "2"), ("refunds[small][claude-sonnet-5-default-r0]", "small")]
    lines = [json.loads(line) for line in project.results.read_text().splitlines()]
    assert {line["case"] for line in lines} == {"small", "2"} and all(line["scores"] == [] for line in lines)
    by_case = {r.case: r for r in results}
    assert by_case["2"].outcome is not None and by_case["2"].outcome.final_text == "Refunded 250 dollars for order B2."
    out, err = capsys.readouterr()
    assert "refunds[small]" in out and "refunds [small] [claude-sonnet-5-default] passed" in err


@pytest.mark.parametrize(("name", "text"), [
    ("cases.jsonl", '{"id": "small", "order": "A1", "amount": 5}\n\n{"vars": {"order": "B2", "amount": 250}}\n'),
    ("cases.csv", "id,order,amount\nsmall,A1,5\n,B2,250\n"),
    ("cases.yaml", "- {id: small, order: A1, amount: 5}\n- vars: {order: B2, amount: 250}\n"),
])
def test_a_dataset_file_gives_the_same_cases_in_every_format(project: Project, name: str, text: str) -> None:
    (project.root / "scenarios" / name).write_text(text, encoding="utf-8")
    runs = plan_one(load_scenario(project.scenario("refunds", TEMPLATED + f"dataset: {name}\n")))
    assert [r.case for r in runs] == ["small", "2"]
    assert [r.source.scenario.prompt for r in runs] == ["Refund order A1 for 5 dollars",
                                                        "Refund order B2 for 250 dollars"]


def test_a_missing_variable_names_the_scenario_line_and_the_dataset_row(project: Project) -> None:
    (project.root / "scenarios" / "cases.csv").write_text("id,order\nsmall,A1\n", encoding="utf-8")
    source = load_scenario(project.scenario("refunds", TEMPLATED + "dataset: cases.csv\n"))
    with pytest.raises(ScenarioError) as info:
        plan_one(source)
    error = info.value
    assert error.line == 4 and error.key == "prompt"
    assert "'amount' is undefined" in error.problem and "this case's vars: order" in error.problem
    assert f"case 'small', {project.root / 'scenarios' / 'cases.csv'}:2 (row 1)" in error.problem


def test_bad_datasets_are_errors_with_file_and_line(project: Project) -> None:
    folder = project.root / "scenarios"
    (folder / "latin1.csv").write_bytes("id,order\nsmall,Mü\n".encode("latin-1"))
    (folder / "short.csv").write_text("id,order,amount\nsmall,A1\n", encoding="utf-8")
    (folder / "broken.jsonl").write_text('{"order": "A1", "amount": 1}\n{"order": \n', encoding="utf-8")
    (folder / "twice.jsonl").write_text('{"id": "a", "order": "A1", "amount": 1}\n'
                                        '{"id": "a", "order": "B", "amount": 2}\n',
                                        encoding="utf-8")
    latin1 = ("is not UTF-8 text: byte 0xfc at column 8, which Latin-1 / Windows-1252 reads as 'ü'; save it as UTF-8 "
              "(from a spreadsheet: CSV UTF-8)")
    for name, line, words in [("latin1.csv", 2, latin1), ("short.csv", 2, "fewer cells than the header"),
                              ("broken.jsonl", 2, "not a JSON object (Expecting value, column 11)"),
                              ("twice.jsonl", None, "case id 'a' is used twice")]:
        source = load_scenario(project.scenario("refunds", TEMPLATED + f"dataset: {name}\n"))
        with pytest.raises(ScenarioError) as info:
            plan_one(source)
        assert words in info.value.problem, (name, str(info.value))
        if line is not None:
            assert (info.value.path, info.value.line) == (str(folder / name), line), str(info.value)
    with pytest.raises(ScenarioError) as missing:
        load_scenario(project.scenario("refunds", TEMPLATED + "dataset: nowhere.csv\n"))
    assert "no dataset file at" in missing.value.problem and missing.value.key == "dataset"


def test_a_rendered_value_that_does_not_validate_names_its_key_and_case(project: Project) -> None:
    source = load_scenario(project.scenario("t",
                                            "prompt: '{{ question }}'\ncases: [{id: q1, vars: {question: [1, 2]}}]\n"))
    with pytest.raises(ScenarioError) as info:
        plan_one(source)
    assert info.value.key == "prompt" and info.value.line == 2 and "case 'q1', cases[0]" in info.value.problem


def test_cases_and_dataset_together_and_repeated_ids_are_refused(project: Project) -> None:
    with pytest.raises(ScenarioError, match="cases .inline. or dataset"):
        load_scenario(project.scenario("t", "prompt: hi\ncases: [{vars: {}}]\ndataset: x.csv\n"))
    with pytest.raises(ScenarioError, match="case ids must be unique; repeated: a"):
        load_scenario(project.scenario("t", "prompt: hi\ncases: [{id: a}, {id: a}]\n"))


def test_a_malformed_case_scenario_does_not_stop_the_others(project: Project) -> None:
    project.scenario("good", "prompt: hi\n")
    project.scenario("bad", "prompt: '{{ nope }}'\ncases: [{vars: {}}]\n")
    sources, problems = load_all([project.root / "scenarios"])
    runs, plan_problems = plan(sources)
    assert not problems and [r.scenario for r in runs] == ["good"]
    assert len(plan_problems) == 1 and "'nope' is undefined" in str(plan_problems[0])


def test_a_thousand_case_dataset_plans_one_run_per_case(project: Project) -> None:
    rows = "\n".join(json.dumps({"id": f"c{i}", "order": f"O{i}", "amount": i}) for i in range(1000))
    (project.root / "scenarios" / "many.jsonl").write_text(rows + "\n", encoding="utf-8")
    path = project.scenario("refunds", TEMPLATED + "dataset: many.jsonl\n")
    runs = plan_one(load_scenario(path))
    assert len(runs) == 1000 and len({r.run_id for r in runs}) == 1000 and len({r.cassette for r in runs}) == 1000
    assert runs[-1].source.scenario.prompt == "Refund order O999 for 999 dollars"


def test_what_a_case_imports_or_calls_is_checked_before_any_run_starts(project: Project,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    cases = "cases:\n  - {id: small, vars: {order: A1, amount: 5}}\n"
    # Live, with no API key: the errors must come before the key is asked for, and before any run.
    def scenario(stem: str, body: str) -> Path:
        return project.scenario(stem, body.replace("name: refunds", f"name: {stem}") + cases)

    scorer = scenario("scorer", TEMPLATED.replace("mode: scripted", "mode: live") + "score:\n  - nowhere_module:tone\n")
    comparator = scenario("comparator", TEMPLATED + "score:\n  - tool_calls:\n      calls:\n        - name: refund\n"
                          "          match: {order: {custom: 'nowhere_module:same'}}\n")
    tool = scenario("tool", TEMPLATED.replace("- tool_use: {name: refund,", "- tool_use: {name: refnud,"))
    good = scenario("good", TEMPLATED)
    assert main(["run", str(project.root / "scenarios"), "--results", str(project.results), "--no-report"]) == 2
    out, err = capsys.readouterr()
    assert (f"{scorer}:16: score[0].nowhere_module:tone: cannot import scorer nowhere_module:tone: "
            "ModuleNotFoundError: "
            "No module named 'nowhere_module' (looked in ") in err
    assert (f"{comparator}:19: score[0].tool_calls.calls[0].match.order.custom: cannot import custom comparator "
            "nowhere_module:same") in err
    assert "harness/_imports.py" not in err  # where the harness looked, not a line of its own
    assert (f"{tool}:10: script[0].tool_use.name: tool_use names 'refnud', a tool this scenario does not declare "
            "(did you mean 'refund'?)") in err
    assert "(case 'small', " in err and "API key" not in err
    assert [r.scenario for r in read_results(project.results)] == ["good"]
    assert str(good) not in err
