"""`harness check` on OpenTelemetry GenAI spans (OTLP/JSON), written by real instrumentations.

Each agent run goes through a real instrumentation in a subprocess, against the scripted model,
writing its spans with the SDK's OTLP JSON file exporter and its HTTP traffic as a cassette; the
findings on the spans must be the cassette's, except for rules the spans cannot judge.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checks import check_trace, rules
from harness.errors import CassetteError
from harness.trace import load_trace

AGENT = Path(__file__).with_name("instrumented_agent.py")
INSTRUMENTATIONS = ("openllmetry", "openinference", "contrib")


def run_instrumented(tmp_path: Path, instrumentation: str, *extra: str) -> tuple[Path, Path]:
    pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
    spans, cassette = tmp_path / f"{instrumentation}.jsonl", tmp_path / f"{instrumentation}.yaml"
    done = subprocess.run([sys.executable, str(AGENT), instrumentation, str(spans), str(cassette), *extra],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and "No module named" in done.stderr:
        pytest.skip(f"{instrumentation} instrumentation is not installed: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    return spans, cassette


def judged(findings: list, missing: dict[str, str]) -> list[tuple[str, int | None, int | None, int | None, int | None]]:
    catalogue = rules()
    return [(f.code, f.thread, f.step, f.message_index, f.block_index) for f in findings
            if not catalogue[f.code].reads & missing.keys()]


@pytest.mark.parametrize(("instrumentation", "stream"), [(name, False) for name in INSTRUMENTATIONS] + [
    ("openllmetry", True), ("openinference", True)])
def test_spans_find_what_the_cassette_finds(tmp_path: Path, instrumentation: str, stream: bool) -> None:
    spans, cassette = run_instrumented(tmp_path, instrumentation, "--bug", "text-before-results",
                                       *(["--stream"] if stream else []))
    from_spans, from_wire = load_trace(spans), load_trace(cassette)
    assert len(from_spans.calls) == len(from_wire.calls) == 2
    assert [len(t.calls) for t in from_spans.threads] == [2]
    span_findings = check_trace(from_spans)
    wire_findings = check_trace(from_wire)
    assert [f.code for f in wire_findings] == ["T003"]
    assert judged(span_findings, from_spans.missing) == judged(wire_findings, {}) == [("T003", 1, 2, 2, 1)]
    # What no span carries is said, and the rules needing it are skipped, not guessed.
    assert "headers" in from_spans.missing and "attempts" in from_spans.missing
    assert from_spans.calls[0].stop_reason == "tool_use"
    assert from_spans.calls[0].usage["input_tokens"] == from_wire.calls[0].usage["input_tokens"]


def test_spans_without_content_skip_the_rules_that_need_it(tmp_path: Path) -> None:
    spans, _ = run_instrumented(tmp_path, "contrib-no-content", "--bug", "text-before-results")
    done = subprocess.run([sys.executable, "-m", "harness", "check", str(spans)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 thread(s), 2 call(s)" in done.stdout
    assert ("note: E002, H001, H002, H003, L001, L002, L003, L004, L005, L006, M001, T001, T002, T003, T004, T005, "
            "T006, T007 not checked: the spans carry no message content") in done.stdout
    trace = load_trace(spans)
    assert trace.calls[0].stop_reason == "tool_use"  # the finish reason is recorded without content
    assert check_trace(trace) == []


def otlp(*spans: dict, logs: list[dict] | None = None) -> str:
    document: dict = {"resourceSpans": [{"resource": {},
                                         "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}]}]}
    if logs:
        document["resourceLogs"] = [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": logs}]}]
    return json.dumps(document)


def span(span_id: str, attributes: dict, *, name: str = "anthropic.chat", start: int = 1, parent: str = "") -> dict:
    def value(v: object) -> dict:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"stringValue": v if isinstance(v, str) else json.dumps(v)}
    return {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": span_id, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": str(start * 10**9), "endTimeUnixNano": str(start * 10**9 + 5 * 10**8),
            "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()], "status": {}}


def test_openllmetry_prompt_attributes_are_read(tmp_path: Path) -> None:
    """The older openllmetry form: gen_ai.prompt.N / gen_ai.completion.N, content as JSON of the blocks."""
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "get_customer", "input": {"customer_id": "C1"}}
    first = span("b7ad6b7169203331", {
        "gen_ai.system": "Anthropic", "llm.request.type": "chat", "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Customer C1?",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.finish_reason": "tool_use",
        "gen_ai.completion.0.tool_calls.0.id": "toolu_1", "gen_ai.completion.0.tool_calls.0.name": "get_customer",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"customer_id": "C1"}',
        "gen_ai.usage.prompt_tokens": 10, "gen_ai.usage.completion_tokens": 5,
    })
    # The second call forgets the tool_result: L002 on the spans, as on the wire.
    second = span("b7ad6b7169203332", {
        "gen_ai.system": "Anthropic", "llm.request.type": "chat", "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Customer C1?",
        "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.content": json.dumps([tool_use]),
        "gen_ai.prompt.2.role": "user", "gen_ai.prompt.2.content": json.dumps([{"type": "text", "text": "go on"}]),
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Done.",
        "gen_ai.completion.0.finish_reason": "end_turn",
    }, start=2)
    path = tmp_path / "openllmetry-legacy.json"
    path.write_text(otlp(first, second))
    trace = load_trace(path)
    assert [c.stop_reason for c in trace.calls] == ["tool_use", "end_turn"]
    assert trace.calls[0].usage == {"input_tokens": 10, "output_tokens": 5}
    assert [f.code for f in check_trace(trace)] == ["L002"]
    assert "answer" in trace.missing and "content" not in trace.missing


def test_event_form_log_records_are_read(tmp_path: Path) -> None:
    """The event form: gen_ai.*.message and gen_ai.choice log records tied to their span."""
    call = span("c7ad6b7169203331", {"gen_ai.system": "anthropic", "gen_ai.operation.name": "chat",
                                     "gen_ai.request.model": "claude-sonnet-4-5"})
    def value(v: str | dict) -> dict:
        if isinstance(v, str):
            return {"stringValue": v}
        return {"kvlistValue": {"values": [{"key": kk, "value": {"stringValue": vv}} for kk, vv in v.items()]}}

    def record(name: str, body: dict) -> dict:
        return {"eventName": name, "spanId": "c7ad6b7169203331", "traceId": "0af7651916cd43dd8448eb211c80319c",
                "body": {"kvlistValue": {"values": [{"key": k, "value": value(v)} for k, v in body.items()]}}}
    logs = [record("gen_ai.user.message", {"content": "Hello"}),
            record("gen_ai.choice", {"index": "0", "finish_reason": "end_turn", "message": {"content": "Hi there."}})]
    path = tmp_path / "events.json"
    path.write_text(otlp(call, logs=logs))
    trace = load_trace(path)
    assert trace.calls[0].messages == [{"role": "user", "content": "Hello"}]
    assert trace.calls[0].content == [{"type": "text", "text": "Hi there."}]
    assert trace.calls[0].stop_reason == "end_turn"


def test_other_providers_are_skipped_with_a_note(tmp_path: Path) -> None:
    openai = span("d7ad6b7169203331", {"gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat",
                                       "gen_ai.request.model": "gpt-5"})
    path = tmp_path / "openai.json"
    path.write_text(otlp(openai))
    trace = load_trace(path)
    assert trace.calls == []
    assert any("1 model-call span(s) from other providers skipped (openai: 1)" in note for note in trace.notes)


def test_truncated_export_names_the_file_and_line(tmp_path: Path) -> None:
    whole = otlp(span("e7ad6b7169203331", {"gen_ai.provider.name": "anthropic", "gen_ai.operation.name": "chat"}))
    path = tmp_path / "cut.jsonl"
    path.write_text(whole + "\n" + whole[: len(whole) // 2])
    with pytest.raises(CassetteError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(f"{path}:2: is not valid OTLP/JSON")
    assert "looks truncated" in str(caught.value)


def test_malformed_span_names_the_span(tmp_path: Path) -> None:
    bad = span("not-an-id", {"gen_ai.provider.name": "anthropic"}, name="chat claude")
    path = tmp_path / "bad.json"
    path.write_text(otlp(bad))
    done = subprocess.run([sys.executable, "-m", "harness", "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert (f"{path}:1: resourceSpans[0].scopeSpans[0].spans[0] (span 'chat claude').spanId: "
            "expected a 16-digit hex id") in done.stdout


def test_protobuf_json_mapping_ids_and_a_folder_scan_are_read(tmp_path: Path) -> None:
    """protobuf's own JSON mapping writes ids in base64; a folder scan finds `.jsonl` exports."""
    import base64

    call = span("f7ad6b7169203331", {"gen_ai.provider.name": "anthropic", "gen_ai.operation.name": "chat",
                                     "gen_ai.request.model": "claude-sonnet-4-5",
                                     "gen_ai.input.messages": [{"role": "user",
                                                                "parts": [{"type": "text", "content": "Hi"}]}],
                                     "gen_ai.output.messages": [{"role": "assistant", "finish_reason": "stop",
                                                                 "parts": [{"type": "text", "content": "Hello."}]}]})
    call["traceId"] = base64.b64encode(bytes.fromhex(call["traceId"])).decode()
    call["spanId"] = base64.b64encode(bytes.fromhex(call["spanId"])).decode()
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "spans.jsonl").write_text(otlp(call) + "\n")
    done = subprocess.run([sys.executable, "-m", "harness", "check", str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{folder / 'spans.jsonl'}: 1 thread(s), 1 call(s)" in done.stdout
    assert "finish reason 'stop' read as stop_reason end_turn" in done.stdout


def test_openinference_flattened_messages_are_read_without_input_value(tmp_path: Path) -> None:
    """OpenInference's `llm.input_messages.N.*` when `input.value` is not JSON: content, with tool
    results grouped as the instrumentation lists them, so the rules needing exact grouping are skipped."""
    call = span("a7ad6b7169203331", {
        "openinference.span.kind": "LLM", "llm.provider": "anthropic", "llm.model_name": "claude-sonnet-4-5",
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Customer C1?",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.contents.0.message_content.type": "tool_use",
        "llm.input_messages.1.message.contents.0.tool_call.id": "toolu_1",
        "llm.input_messages.1.message.contents.0.tool_call.function.name": "get_customer",
        "llm.input_messages.1.message.contents.0.tool_call.function.arguments": '{"customer_id": "C1"}',
        "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.tool_call_id": "toolu_1",
        "llm.input_messages.2.message.content": "Ana",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": "C1 is Ana.",
        "llm.finish_reason": "end_turn", "llm.token_count.prompt": 20, "llm.token_count.completion": 4,
    })
    path = tmp_path / "openinference-flat.json"
    path.write_text(otlp(call))
    trace = load_trace(path)
    [only] = trace.calls
    assert only.messages[1] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_customer", "input": {"customer_id": "C1"}}]}
    assert only.messages[2] == {"role": "user",
                                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Ana"}]}
    assert only.stop_reason == "end_turn" and only.usage == {"input_tokens": 20, "output_tokens": 4}
    assert {"turns", "is_error"} <= trace.missing.keys() and "content" not in trace.missing


def test_a_value_of_the_wrong_kind_is_named_as_json_names_it(tmp_path: Path) -> None:
    # Python's type names ("got int", "got NoneType") meant nothing to someone reading their own export.
    path = tmp_path / "odd.json"
    for value, said in (("5", "a number"), ("null", "null"), ('"x"', "a string"), ("true", "true")):
        path.write_text('{"resourceSpans": [' + value + "]}")
        with pytest.raises(CassetteError) as caught:
            load_trace(path)
        assert str(caught.value) == f"{path}:1: resourceSpans[0]: expected an object, got {said}"
