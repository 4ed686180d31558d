"""Script files are validated strictly: every mistake names the file, line, step, key and the choices."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import InputError
from harness.transport.scripted import ScriptedModel, ScriptError, load_script, parse_script


def write(tmp_path: Path, text: str, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_yaml_script_expands_its_shorthands(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        # yaml comments are fine
        - thinking: "Look the customer up first."
          text: Checking.
          tool_use:
            - {name: get_customer, input: {id: C1}}
            - {name: get_orders, input: {customer: C1}, id: toolu_fixed}
        - error: {status: 529, retry_after: 0.5}
          thread: billing
          delay_s: 0.1
        - text: Done.
          stop_sequence: "###"
        """)
    script = load_script(path)
    first, second, third = script
    assert [b["type"] for b in first.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert first.stop_reason == "tool_use" and first.tool_names == ["get_customer", "get_orders"]
    assert first.content[3]["id"] == "toolu_fixed" and first.line == 2
    assert second.error is not None and (second.error.status, second.error.type) == (529, "overloaded_error")
    assert second.error.retry_after == 0.5 and second.thread == "billing" and second.delay_s == 0.1
    assert (third.stop_reason, third.stop_sequence) == ("stop_sequence", "###")
    assert script.source == str(path) and script.threads == frozenset({"billing"})


def test_a_json_script_and_a_steps_mapping_are_read_too(tmp_path: Path) -> None:
    path = write(tmp_path, '{"steps": [{"text": "Hi."}, {"error": {"type": "rate_limit_error"}}]}', "script.json")
    script = load_script(path)
    assert [s.describe() for s in script] == ["end_turn", "error 429 rate_limit_error"]
    assert ScriptedModel(path).steps == script.steps


def expect_error(tmp_path: Path, text: str) -> ScriptError:
    path = write(tmp_path, text)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    assert isinstance(caught.value, InputError) and caught.value.path == str(path)
    return caught.value


def test_an_unknown_key_names_its_line_and_the_valid_keys(tmp_path: Path) -> None:
    error = expect_error(tmp_path, """\
        - text: Hi.
        - text: There.
          stop_reson: end_turn
        """)
    assert error.line == 3 and error.key == "step 2: stop_reson"
    assert str(
        error).startswith(f"{tmp_path / 'script.yaml'}:3: step 2: stop_reson: unknown key; valid keys: content, text,")
    assert "stop_reason" in error.problem


def test_an_error_key_outside_error_says_where_it_belongs(tmp_path: Path) -> None:
    error = expect_error(tmp_path, "- text: Hi.\n  retry_after: 2\n")
    assert "`retry_after` belongs inside `error:`" in str(error) and error.line == 2


def test_nested_mistakes_point_at_their_own_line(tmp_path: Path) -> None:
    error = expect_error(tmp_path, """\
        - content:
            - type: text
              text: Hi.
            - type: tool_use
              name: get_customer
              input: [C1]
        """)
    assert error.key == "step 1: content[1].input" and error.line == 6
    assert "must be a mapping (a JSON object of the tool's arguments), got a list" in error.problem


@pytest.mark.parametrize(("step", "key", "problem"), [
    ({"text": "a", "content": []}, "text", "cannot be combined with `content`"),
    ({}, None, "empty step"),
    ({"stop_reason": "end_turn", "content": [{"text": "no type"}]}, "content[0].type",
     "every content block needs a `type`"),
    ({"content": [{"type": "text", "text": "a", "cite": []}]}, "content[0].cite", "valid keys: type, text, citations"),
    ({"tool_use": {"input": {}}}, "tool_use.name", "needs the tool's `name`"),
    ({"tool_use": "get_customer"}, "tool_use", "must be `{name: ..., input: {...}}`"),
    ({"text": "a", "stop_reason": "end_turn", "stop_sequence": "###"}, "stop_sequence",
     "only goes with `stop_reason: stop_sequence`"),
    ({"text": 42}, "text", "must be a string, got a number (42)"),
    ({"error": {"status": 200}}, "error.status", "must be an HTTP error status 400-599"),
    ({"error": {"type": "teapot_error"}}, "error.status", "required for the unknown error type 'teapot_error'"),
    ({"error": {}}, "error", "give `status` or `type`"),
    ({"error": {"status": 429, "retry_after": -1}}, "error.retry_after", "a number of seconds >= 0"),
    ({"error": {"status": 429}, "text": "a"}, "text", "unknown key; valid keys: error, thread, delay_s, headers"),
    ({"error": {"status": 429, "retryafter": 1}}, "error.retryafter",
     "valid keys: status, type, message, retry_after, should_retry"),
    ({"text": "a", "cut_after": -2}, "cut_after", "a whole number >= 0"),
    ({"text": "a", "cut_after": 2, "stream_error": {}}, "cut_after", "cannot be combined with `stream_error`"),
    ({"text": "a", "stream_error": {"after": 0}}, "stream_error.after", "must be at least 1"),
    ({"text": "a", "thread": ""}, "thread", "must be a non-empty string"),
    ({"text": "a", "usage": {"output_tokens": "many"}}, "usage.output_tokens", "a whole number >= 0"),
    ({"content": [{"type": "web_search_tool_result"}]}, "content[0].content", "required"),
    ({"text": "a", "headers": ["retry-after"]}, "headers", "must be a mapping of header names to values"),
    ({"text": "a", "headers": {"bad name": "1"}}, "headers", "'bad name' is not an HTTP header name"),
    ({"text": "a", "headers": {"Content-Length": "1"}}, "headers", "Content-Length is set by the answer itself"),
    ({"error": {"status": 429}, "headers": {"x-a": {"b": 1}}}, "headers",
     "x-a must be a string or a number on one line"),
    ({"text": "a", "headers": {"x-a": "one\ntwo"}}, "headers", "x-a must be a string or a number on one line"),
])
def test_python_scripts_get_the_same_strict_errors(step: dict[str, Any], key: str | None, problem: str) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script([{"text": "first step is fine"}, step])
    error = caught.value
    assert error.path == "<script>"
    assert error.key == ("step 2" + (f": {key}" if key else ""))
    assert problem in error.problem


@pytest.mark.parametrize(("data", "problem"), [
    ([], "the script has no steps"),
    ("text: hi", "a script is a list of steps, got a string"),
    ({"step": []}, "unknown keys: step"),
    (["hi"], "a step is a mapping"),
])
def test_the_script_itself_must_be_a_list_of_steps(data: Any, problem: str) -> None:
    with pytest.raises(ScriptError, match=problem):
        parse_script(data)


def test_unreadable_files_say_why(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read the script"):
        load_script(tmp_path / "missing.yaml")
    error = expect_error(tmp_path, "- text: [unclosed\n- text: b\n")
    assert "not valid YAML" in error.problem and error.line is not None
    error = expect_error(tmp_path, "- text: a\n  usage: {output_tokens: 3, when: 2026-01-01}\n")
    assert error.key == "step 1: usage" and "JSON cannot carry" in error.problem


def test_every_yaml_example_in_the_docs_is_a_valid_script() -> None:
    docs = Path(__file__).parents[2] / "docs" / "scripted-model.md"
    examples = re.findall(r"```yaml\n(.*?)```", docs.read_text(encoding="utf-8"), flags=re.S)
    assert len(examples) >= 3
    for example in examples:
        assert len(parse_script(yaml.safe_load(example), source=str(docs))) >= 1
