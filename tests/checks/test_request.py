"""R rules: effort, betas, task budgets, strict tools, model ids and structured output are where the API reads them."""

from __future__ import annotations

from typing import Any

import pytest
from recordings import Recording, check, codes, text

from harness.checks._request import parse_model_id

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"],
          "additionalProperties": False}


def one_call(recording: Recording, *, turns: int = 1, **kwargs: Any) -> None:
    conv = recording.conversation(**kwargs)
    for n in range(turns):
        conv.user(f"Question {n}")
        conv.call(text("Answer."))


def test_r001_effort_at_the_top_level_once_per_thread(recording: Recording) -> None:
    one_call(recording, turns=2, extra={"effort": "xhigh"})
    findings = check(recording)
    assert codes(findings) == {"R001"} and len(findings) == 1
    other = Recording()
    one_call(other, extra={"output_config": {"effort": "xhigh"}})
    assert check(other) == []


@pytest.mark.parametrize(("extra", "beta", "flagged"), [
    ({"context_management": {"edits": [{"type": "compact_20260112"}]}}, None, "compact-2026-01-12"),
    ({"context_management": {"edits": [{"type": "compact_20260112"}]}}, "context-management-2025-06-27",
     "compact-2026-01-12"),
    ({"context_management": {"edits": [{"type": "clear_thinking_20251015"}]}}, "compact-2026-01-12",
     "context-management-2025-06-27"),
    ({"output_config": {"task_budget": {"type": "tokens", "total": 200_000}}}, None, "task-budgets-2026-03-13"),
])
def test_r002_an_edit_or_budget_without_its_beta(recording: Recording, extra: dict[str, Any], beta: str | None,
                                                 flagged: str) -> None:
    one_call(recording, extra=extra, headers={"anthropic-beta": beta} if beta else None)
    findings = check(recording)
    assert codes(findings) == {"R002"}
    assert flagged in findings[0].message


def test_r002_betas_from_the_header_list_or_the_body(recording: Recording) -> None:
    one_call(recording, extra={"context_management": {"edits": [{"type": "compact_20260112"},
                                                                {"type": "clear_tool_uses_20250919"}]}},
             headers={"anthropic-beta": "context-management-2025-06-27, compact-2026-01-12"})
    one_call(recording, extra={"output_config": {"task_budget": {"type": "tokens", "total": 50_000}},
                               "betas": ["task-budgets-2026-03-13"]})
    assert check(recording) == []


def test_r002_a_recording_that_filtered_its_api_headers_is_not_judged(recording: Recording) -> None:
    conv = recording.conversation(extra={"context_management": {"edits": [{"type": "compact_20260112"}]}})
    conv.headers = {"content-type": "application/json"}
    conv.user("Hi")
    conv.call(text("Hello."))
    assert check(recording) == []


def test_r003_a_task_budget_under_twenty_thousand(recording: Recording) -> None:
    one_call(recording, extra={"output_config": {"task_budget": {"type": "tokens", "total": 5_000}}},
             headers={"anthropic-beta": "task-budgets-2026-03-13"})
    findings = check(recording)
    assert codes(findings) == {"R003"} and "5000" in findings[0].message


@pytest.mark.parametrize(("tool", "said"), [
    ({"name": "refund", "input_schema": SCHEMA | {"strict": True}}, "inside input_schema"),
    ({"name": "refund", "strict": True, "input_schema": {k: v for k, v in SCHEMA.items()
                                                         if k != "additionalProperties"}}, "additionalProperties"),
    ({"name": "refund", "strict": True, "input_schema": {k: v for k, v in SCHEMA.items() if k != "required"}},
     "lacks required"),
])
def test_r004_a_malformed_strict_tool(recording: Recording, tool: dict[str, Any], said: str) -> None:
    one_call(recording, tools=[tool])
    findings = check(recording)
    assert codes(findings) == {"R004"}
    assert said in findings[0].message


def test_r004_well_formed_strict_tools(recording: Recording) -> None:
    one_call(recording, tools=[
        {"name": "refund", "strict": True, "input_schema": SCHEMA},
        {"name": "ping", "strict": True, "input_schema": {"type": "object", "properties": {},
                                                          "additionalProperties": False}},
    ])
    assert check(recording) == []


@pytest.mark.parametrize("model", ["claude-opus-4-8-20260501", "claude-sonnet-4-6-20260101",
                                   "claude-fable-5-20260301", "claude-sonnet-5-20260601"])
def test_r005_a_dated_id_of_generation_4_6_or_later(recording: Recording, model: str) -> None:
    one_call(recording, model=model)
    findings = check(recording)
    assert codes(findings) == {"R005"}
    assert model in findings[0].message


@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-sonnet-5", "claude-fable-5-1",
                                   "claude-3-5-sonnet-20241022", "claude-haiku-4-5-20251001",
                                   "claude-sonnet-4-20250514", "claude-3-5-haiku-latest", "gpt-4o"])
def test_r005_undated_ids_and_older_generations_are_fine(recording: Recording, model: str) -> None:
    one_call(recording, model=model)
    assert check(recording) == []


def test_parse_model_id_reads_family_version_and_date() -> None:
    assert parse_model_id("claude-opus-4-8") == ("opus", (4, 8), None)
    assert parse_model_id("claude-sonnet-4-6-20260101") == ("sonnet", (4, 6), "20260101")
    assert parse_model_id("claude-fable-5-20260301") == ("fable", (5, 0), "20260301")
    assert parse_model_id("claude-3-5-sonnet-20241022") == ("sonnet", (3, 5), "20241022")
    assert parse_model_id("claude-haiku-4-5-20251001") == ("haiku", (4, 5), "20251001")
    assert parse_model_id("us.anthropic.claude-opus-4-6-20260101-v1:0") == ("opus", (4, 6), "20260101")
    assert parse_model_id("gpt-4o") is None


def test_r006_the_legacy_output_format(recording: Recording) -> None:
    schema = {"type": "json_schema", "schema": {"type": "object"}}
    one_call(recording, extra={"output_format": schema})
    assert codes(check(recording)) == {"R006"}
    other = Recording()
    one_call(other, extra={"output_config": {"format": schema}})
    assert check(other) == []


# R007: the request shapes of the frameworks that send thinking with a forced tool (a structured-output
# call of pydantic-ai or langgraph on a thinking model).

@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_customer"}])
def test_r007_extended_thinking_with_a_forced_tool(recording: Recording, choice: dict[str, Any]) -> None:
    conv = recording.conversation(model="claude-sonnet-4-5", extra={
        "thinking": {"type": "enabled", "budget_tokens": 2048}, "tool_choice": choice})
    conv.user("Look up c1")
    conv.call(text("..."))
    conv.user("And c2")
    conv.call(text("..."))
    findings = check(recording)
    assert [(f.code, f.step) for f in findings if f.code == "R007"] == [("R007", 1)]  # once per thread
    assert f"tool_choice {choice['type']}" in findings[0].message


@pytest.mark.parametrize("extra", [
    {"thinking": {"type": "enabled", "budget_tokens": 2048}, "tool_choice": {"type": "auto"}},
    {"thinking": {"type": "enabled", "budget_tokens": 2048}, "tool_choice": {"type": "none"}},
    {"thinking": {"type": "disabled"}, "tool_choice": {"type": "any"}},
    # Recorded from the API by pydantic-ai's tests: adaptive thinking with tool_choice any was answered 200.
    {"thinking": {"type": "adaptive"}, "tool_choice": {"type": "any"}},
])
def test_r007_what_the_api_accepts(recording: Recording, extra: dict[str, Any]) -> None:
    conv = recording.conversation(model="claude-sonnet-4-5", extra=extra)
    conv.user("Look up c1")
    conv.call(text("..."))
    assert "R007" not in codes(check(recording))


# R008

@pytest.mark.parametrize(("model", "refused"), [
    ("claude-opus-4-6", True), ("claude-sonnet-4-6", True), ("claude-opus-4-8", True), ("claude-sonnet-5", True),
    ("claude-sonnet-4-5", False), ("claude-sonnet-4-5-20250929", False), ("claude-3-5-haiku-20241022", False),
])
def test_r008_prefill_by_the_model_list(recording: Recording, model: str, refused: bool) -> None:
    conv = recording.conversation(model=model)
    conv.user("Give me JSON for Paris")
    conv.messages.append({"role": "assistant", "content": "{"})
    conv.call(text('"city": "Paris"}'))
    assert ("R008" in codes(check(recording))) is refused


def test_r008_resuming_a_paused_turn_is_no_prefill(recording: Recording) -> None:
    conv = recording.conversation(model="claude-opus-4-8")
    conv.user("Search the news")
    conv.call({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "news"}},
              stop_reason="pause_turn")
    conv.call(text("Here is the news."))
    assert "R008" not in codes(check(recording))
