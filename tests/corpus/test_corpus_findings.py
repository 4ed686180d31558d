"""The rules on real traffic: every finding on the vendored recordings is pinned here with the reason it is real.

The corpus is recorded by good projects' test suites, so it is the false-positive test: a new finding
fails until it is shown to be a flaw of that recording (and pinned with why) or fixed in the checker.
Most files are fragments (one unit test, not a whole run), so what should come after their last call
is only a warning that says the trace ends there.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from harness.checks import check_trace
from harness.trace import load_trace

CORPUS = Path(__file__).resolve().parent / "recordings"

Pin = tuple[str, str, int, int, int | None, int | None, str]
"""(code, severity, thread, step, message_index, block_index, words the message must contain)."""

# A unit test that stops after a tool_use response: fine as a fragment, an L002 error in a whole run.
ENDS_ON_TOOL_USE: Pin = ("L002", "warning", 1, 1, None, None, "the trace ends here")
# A unit test of max_tokens handling that stops on the cut response: same, for L005.
ENDS_CUT: Pin = ("L005", "warning", 1, 1, None, None, "the trace ends here")

FINDINGS: dict[str, list[Pin]] = {
    "Arize-ai__openinference/reasoning-tool-use-streaming.json": [ENDS_ON_TOOL_USE],
    "Arize-ai__openinference/test_anthropic_instrumentation_multiple_tool_calling_streaming.yaml": [ENDS_ON_TOOL_USE],
    "simonw__llm-anthropic/test_stream_events_tool_calls.yaml": [ENDS_ON_TOOL_USE],
    "traceloop__openllmetry/test_anthropic_tools_history_legacy.yaml": [ENDS_ON_TOOL_USE],
    "traceloop__openllmetry/test_anthropic_tools_legacy.yaml": [ENDS_ON_TOOL_USE],
    "traceloop__openllmetry/test_anthropic_tools_streaming_legacy.yaml": [ENDS_ON_TOOL_USE],
    "traceloop__openllmetry/test_tool_calls_anthropic_text_block_and_history.yaml": [ENDS_ON_TOOL_USE],
    # Not pinned: open-telemetry's test_sync_messages_create_captures_tool_use_content forces get_weather with
    # tool_choice on its only call, the structured-output pattern: ending there is a note, not a finding.
    # pydantic-ai ends a run on its output tool (final_result) without sending that tool_use a result:
    # as a whole run this breaks L002 (a run may end on tool_use only by a declared limit).
    "pydantic__pydantic-ai/test_anthropic_count_tokens_with_adaptive_thinking_and_output_tools.yaml":
        [ENDS_ON_TOOL_USE],
    "pydantic__pydantic-ai/test_anthropic_tool_output.yaml": [("L002", "warning", 1, 2, None, None, "final_result")],
    "pydantic__pydantic-ai/test_tool_choice_matrix[tools_plus_output-anthropic].yaml":
        [("L002", "warning", 1, 2, None, None, "final_result")],
    "Mirascope__mirascope/caches-in-multi-turn-conversation.har": [("L005", "warning", 1, 3, None, None,
                                                                    "cut by max_tokens")],
    "Mirascope__mirascope/returns-max-tokens-finish-reason-for-stream.har": [ENDS_CUT],
    "Mirascope__mirascope/test_max_tokens__anthropic_claude_sonnet_4_0__stream.yaml": [ENDS_CUT],
    "Mirascope__mirascope/test_max_tokens__anthropic_claude_sonnet_4_0__sync.yaml": [ENDS_CUT],
    "tmc__langchaingo/TestClient_WithAnthropicBetaHeader.httprr": [ENDS_CUT],
    # Real: Mirascope rebuilds the assistant turn from its text parts, dropping the server_tool_use and
    # web_search_tool_result blocks of the response (resp.content is re-sent whole; H001 names server
    # tool blocks). The next turn's model no longer sees the searches it made.
    "Mirascope__mirascope/streams-with-web-search-tool.har": [
        ("H001", "error", 1, 2, 1, 0, "block(s) dropped: server_tool_use (response content[0]), "
                                      "web_search_tool_result (response content[1])"),
    ],
    "Mirascope__mirascope/test_web_search_tool_stream__anthropic_claude_sonnet_4_0.yaml": [
        ("H001", "error", 1, 2, 1, 0, "block(s) dropped: server_tool_use (response content[0])"),
    ],
    # Real: the same request sent twice after a 404 not_found_error (both attempts carry
    # x-stainless-retry-count 0 and the answer says x-should-retry: false, so the application re-sent it).
    "Mirascope__mirascope/test_model_not_found__anthropic_claude_sonnet_4_0.yaml": [
        ("E002", "error", 1, 1, None, None, "404 not_found_error"),
    ],
    # Real: pydantic-ai re-sends the web search answer's text blocks without their `citations` (9 cited
    # blocks, all stripped), an edit of the response the next turn is built on.
    "pydantic__pydantic-ai/test_anthropic_web_search_tool.yaml": [
        ("H001", "error", 1, 2, 1, 4, "citations dropped in the text block"),
    ],
    # Real, low impact: the paused turn is re-sent with a web_search_result title changed ("Maps – Yahoo"
    # received, "Maps - Yahoo" sent); its encrypted_content is intact, but the block is not the one received.
    "pydantic__pydantic-ai/test_pause_turn_web_search_streaming_vcr.yaml": [
        ("H001", "error", 1, 2, 1, 3, "content changed in the web_search_tool_result block"),
    ],
    # Real: llm-anthropic inserts a text block " " before the tool_use blocks of a response that had none:
    # the assistant turn is rebuilt by hand instead of re-sent as received.
    "simonw__llm-anthropic/test_tools.yaml": [("H001", "error", 1, 2, 1, 0, "block(s) added: text at content[0]")],
    # Real: the legacy top-level output_format (with the structured-outputs-2025-11-13 beta), which only works
    # during a transition; output_config.format is the GA form.
    "traceloop__openllmetry/test_anthropic_structured_outputs_legacy.yaml": [
        ("R006", "error", 1, 1, None, None, "output_format"),
    ],
}


def recordings() -> list[Any]:
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as handle:
        names = sorted(row["local_path"] for row in csv.DictReader(handle, delimiter="\t"))
    return [pytest.param(CORPUS / name, id=name) for name in names]


@pytest.mark.parametrize("path", recordings())
def test_findings_on_real_traffic_are_the_pinned_real_flaws(path: Path) -> None:
    findings = check_trace(load_trace(path))
    pinned = FINDINGS.get(str(path.relative_to(CORPUS)), [])
    got = [(f.code, f.severity, f.thread, f.step, f.message_index, f.block_index) for f in findings]
    assert got == [pin[:6] for pin in pinned], "\n".join(f"{f.code} {f.severity} {f.where()}: {f.message}"
                                                       for f in findings)
    for finding, pin in zip(findings, pinned, strict=True):
        assert pin[6] in finding.message, finding.message


def test_every_pinned_file_is_in_the_corpus() -> None:
    assert [name for name in FINDINGS if not (CORPUS / name).is_file()] == []


def test_in_a_whole_run_the_fragment_warnings_become_errors() -> None:
    trace = load_trace(CORPUS / "pydantic__pydantic-ai/test_anthropic_tool_output.yaml", whole_run=True)
    assert [(f.code, f.severity) for f in check_trace(trace)] == [("L002", "error")]


def test_declared_as_its_output_tool_final_result_ends_the_run_by_design() -> None:
    trace = load_trace(CORPUS / "pydantic__pydantic-ai/test_anthropic_tool_output.yaml", whole_run=True)
    assert check_trace(trace, options={"output_tools": ["final_result"]}) == []
    assert any("L002" in note and "final_result (declared as an output tool)" in note for note in trace.notes)
