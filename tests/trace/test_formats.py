"""Each recording format on recordings in its real shape: public ones where their licence allows it
(tests/trace/recordings/MANIFEST.tsv says where each comes from), hand-made ones in the same shape
otherwise. Every file is read whole, and the checker's verdict on it is a real flaw or nothing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness._commands.check import check_file
from harness.checks import check_trace
from harness.cli import main
from harness.errors import InputError, NotARecording
from harness.trace import exchange_from_http, load_trace, read_exchanges
from harness.trace.formats import FORMATS, Recording, detect

RECORDINGS = Path(__file__).resolve().parent / "recordings"
FANTASY = RECORDINGS / "charmbracelet__fantasy"
HANDMADE = RECORDINGS / "handmade"


def format_of(path: Path) -> str:
    found = detect(Recording(str(path), path.read_bytes()))
    assert found is not None, path
    return found.name


def test_every_recording_here_is_in_the_manifest() -> None:
    listed = {line.split("\t", 1)[0] for line in (RECORDINGS / "MANIFEST.tsv").read_text().splitlines()[1:]}
    present = {str(p.relative_to(RECORDINGS)) for p in RECORDINGS.rglob("*")
               if p.is_file() and p.name not in ("MANIFEST.tsv", "LICENSE")}
    assert listed == present


# --- go-vcr ------------------------------------------------------------------------------------------


def test_go_vcr_v2_a_tool_loop_of_the_go_sdk() -> None:
    path = FANTASY / "TestAnthropicCommon_tool.yaml"
    assert format_of(path) == "go-vcr"
    trace = load_trace(path)
    assert [(c.thread, c.step, c.stop_reason) for c in trace.calls] == [(1, 1, "tool_use"), (1, 2, "end_turn")]
    assert [e.status for e in trace.exchanges] == [200, 200]
    assert trace.exchanges[0].duration_s == pytest.approx(1.597310625)  # `duration: 1.597310625s`
    assert check_trace(trace, whole_run=True) == []


def test_go_vcr_v2_streamed_answers_are_reassembled() -> None:
    trace = load_trace(FANTASY / "TestAnthropicCommon_tool_streaming.yaml")
    assert all(e.streamed and e.stream_complete for e in trace.exchanges)
    assert [b["type"] for b in trace.calls[0].content] == ["text", "tool_use"]
    assert trace.calls[0].content[1]["input"] == {"location": "Florence,Italy"}
    assert check_trace(trace, whole_run=True) == []


def test_go_vcr_v2_structured_output_ends_on_its_forced_tool_by_design() -> None:
    trace = load_trace(FANTASY / "TestAnthropicObjectGeneration_simple_object.yaml", whole_run=True)
    assert check_trace(trace) == []
    assert any("L002" in note and "Person (forced by tool_choice)" in note for note in trace.notes)


def test_go_vcr_v2_the_go_sdk_drops_the_citations_of_a_streamed_web_search_answer() -> None:
    # A real flaw of the recorded client: the assistant turn re-sent without the text blocks' citations.
    trace = load_trace(FANTASY / "TestAnthropicWebSearch_stream.yaml")
    findings = check_trace(trace)
    assert [(f.code, f.severity, f.step, f.message_index) for f in findings] == [("H001", "error", 2, 1)]
    assert "citations dropped" in findings[0].message


def test_go_vcr_v1_status_beside_code_and_a_go_duration() -> None:
    path = HANDMADE / "go_vcr_v1_tool_use.yaml"
    assert format_of(path) == "go-vcr"
    trace = load_trace(path)
    assert [e.status for e in trace.exchanges] == [200, 529, 200]
    assert [e.duration_s for e in trace.exchanges] == [None, pytest.approx(0.35), 1.5]
    assert [len(c.attempts) for c in trace.calls] == [1, 2]  # the 529 and its retry are one call
    assert check_trace(trace, whole_run=True) == []


def test_go_vcr_a_missing_status_names_the_key_and_line(tmp_path: Path) -> None:
    text = (
        HANDMADE / "go_vcr_v1_tool_use.yaml").read_text().replace("    status: 200 OK\n    code: "
                                                                  "200\n    duration: \"\"\n",
                                                                     "    duration: \"\"\n", 1)
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(Exception) as caught:
        read_exchanges(path)
    assert ("interactions[0].response.code: expected an HTTP status: `code: 200` or `status: 200 OK`"
            in str(caught.value))


# --- vcrpy through aiohttp ------------------------------------------------------------------------


def test_aiohttp_istr_header_names_are_read_as_names_and_nothing_is_constructed() -> None:
    path = HANDMADE / "aiohttp_vcrpy.yaml"
    assert format_of(path) == "vcrpy"
    (exchange,) = read_exchanges(path)[0]
    assert exchange.request_headers["user-agent"] == "Python/3.12 aiohttp/3.11.16"
    assert exchange.request_headers["accept"] == "application/json"
    assert exchange.response_headers["content-type"] == "application/json"
    assert exchange.response_body["content"] == [{"type": "text", "text": "Hello!"}]


def test_other_python_tags_never_build_objects(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text((HANDMADE / "aiohttp_vcrpy.yaml").read_text().replace(
        "request-id: req_01", "request-id: !!python/object/apply:os.system ['touch " + str(tmp_path / "pwned") + "']"))
    (exchange,) = read_exchanges(path)[0]
    assert not (tmp_path / "pwned").exists()
    assert "touch" in exchange.response_headers["request-id"]


# --- response-only inputs -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "kind"), [
    ("tool_use_stream.sse", "sse-dump"),
    ("tool_use_events.jsonl", "stream-events"),
    ("tool_use_events.json", "stream-events"),
])
def test_a_stream_kept_as_events_is_reassembled_and_checked(name: str, kind: str) -> None:
    path = HANDMADE / name
    assert format_of(path) == kind
    trace = load_trace(path)
    (call,) = trace.calls
    assert call.final.streamed and call.final.stream_complete and call.final.status == 200
    assert call.content == [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]
    assert [(f.code, f.severity) for f in check_trace(trace)] == [("L002", "warning")]
    assert any("the request and the status were not kept" in note for note in trace.notes)


def test_a_bare_messages_response() -> None:
    path = HANDMADE / "bare_message.json"
    assert format_of(path) == "messages-response"
    trace = load_trace(path)
    (call,) = trace.calls
    assert call.stop_reason == "end_turn" and call.final.status == 200
    assert check_trace(trace) == []


def test_a_broken_json_line_of_events_names_its_line(tmp_path: Path) -> None:
    lines = (HANDMADE / "tool_use_events.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-5]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(Exception) as caught:
        read_exchanges(path)
    assert f"{path}:3: is not a JSON event" in str(caught.value)


# --- nothing matches --------------------------------------------------------------------------------


def test_a_file_no_format_claims_says_what_was_tried_and_what_it_is(tmp_path: Path) -> None:
    path = tmp_path / "fixture.json"
    path.write_text('{"choices": [{"message": {"content": "hi"}}], "object": "chat.completion"}')
    with pytest.raises(NotARecording) as caught:
        read_exchanges(path)
    problem = caught.value.problem
    assert "it is a JSON mapping with keys (choices, object)" in problem
    assert "tried " + ", ".join(f.name for f in FORMATS) in problem


# --- OpenTelemetry exports are known by their top-level key ---------------------------------------


def test_a_cassette_that_recorded_an_otlp_export_reads_as_the_cassette(tmp_path: Path) -> None:
    """An export's key inside a recorded body (pydantic-ai's parsed_body of a POST to a collector) does
    not make the file an export: a JSON file that parses is an export only by its top-level keys."""
    path = tmp_path / "collector.json"
    path.write_text(json.dumps({"version": 1, "interactions": [{
        "request": {"method": "POST", "uri": "http://localhost:4318/v1/traces", "headers": {},
                    "parsed_body": {"resourceSpans": []}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": "{}"}}}]}))
    assert format_of(path) == "vcrpy"
    exchanges, _ = read_exchanges(path)
    assert [e.url for e in exchanges] == ["http://localhost:4318/v1/traces"]


def test_an_export_whose_key_comes_after_the_head_is_an_export(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"comment": "x" * 70_000, "resourceSpans": []}))
    assert format_of(path) == "otlp"
    assert load_trace(path).calls == []


def test_an_export_wrapped_in_another_object_says_what_an_export_is(tmp_path: Path) -> None:
    """No format claims it, and it names resourceSpans near its start: the export's reader says where
    the key belongs, and a folder scan reports it (not skipped as some other file)."""
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"data": {"resourceSpans": []}}))
    report = check_file(str(path), disabled=[], whole_run=False)
    assert report.error == f"{path}:1: expected an OTLP/JSON export: an object with resourceSpans (or resourceLogs)"
    assert not report.not_a_recording


# --- nock (Node and TypeScript) -----------------------------------------------------------------------


def test_nock_a_tool_loop_with_a_streamed_last_answer() -> None:
    path = HANDMADE / "nock_back_tool_loop.json"
    assert format_of(path) == "nock"
    trace = load_trace(path)
    assert [e.url for e in trace.exchanges] == ["https://api.anthropic.com:443/v1/messages"] * 2
    assert [(c.thread, c.step, c.stop_reason) for c in trace.calls] == [(1, 1, "tool_use"), (1, 2, "end_turn")]
    assert trace.exchanges[1].streamed and trace.exchanges[1].stream_complete
    assert check_trace(trace, whole_run=True) == []


def test_nock_a_gzipped_answer_kept_as_hex_chunks(tmp_path: Path) -> None:
    import gzip
    import json

    fixture = json.loads((HANDMADE / "nock_back_tool_loop.json").read_text())[:1]
    packed = gzip.compress(json.dumps(fixture[0]["response"]).encode()).hex()
    fixture[0]["response"] = [packed[:40], packed[40:]]
    fixture[0]["rawHeaders"] += ["Content-Encoding", "gzip"]
    path = tmp_path / "gzipped.json"
    path.write_text(json.dumps(fixture))
    (exchange,) = read_exchanges(path)[0]
    assert exchange.response_body["content"][0]["name"] == "get_weather"


# --- the examples' own form -----------------------------------------------------------------------


@pytest.mark.parametrize(("item", "said"), [
    ('{"request": {"model": "m", "messages": []}, "status": "x"}',
     "[0].status: expected an HTTP status number, got 'x'"),
    ('{"request": {"model": "m", "messages": []}, "respons": {}}', "[0]: unknown key(s) respons; an exchange has at,"),
    ('{"request": {"model": "m", "messages": []}, "at": "soon"}', "[0].at: expected a number of seconds, got 'soon'"),
])
def test_a_broken_exchange_list_names_the_item_and_key(tmp_path: Path, item: str, said: str) -> None:
    path = tmp_path / "example.json"
    path.write_text(f"[{item}]")
    assert format_of(path) == "exchange-list"
    with pytest.raises(InputError) as raised:
        load_trace(path)
    assert str(raised.value).startswith(f"{path}: {said}")


# --- one VCR interaction alone (a file per call) ----------------------------------------------------

DD_TRACE = RECORDINGS / "DataDog__dd-trace-py"


def test_one_interaction_alone_a_file_per_call_of_dd_trace_py() -> None:
    path = DD_TRACE / "anthropic_v1_messages_post_28bbec95.json"
    assert format_of(path) == "vcr-interaction"
    trace = load_trace(path)
    [call] = trace.calls
    assert call.stop_reason == "tool_use" and call.content[0]["input"] == {"a": 1, "b": 2}
    assert trace.exchanges[0].status == 200 and trace.exchanges[0].url == "https://api.anthropic.com/v1/messages"
    # A unit test of one call that asks for a tool: the trace ends there, which is said, not an error.
    assert [(f.code, f.severity) for f in check_trace(trace)] == [("L002", "warning")]


def test_one_interaction_alone_in_yaml_with_uri(tmp_path: Path) -> None:
    answer = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi"}],
              "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 1}}
    request = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "call.yaml"
    path.write_text("request:\n  method: POST\n  uri: https://api.anthropic.com/v1/messages\n"
                    f"  body: '{json.dumps(request)}'\n"
                    f"response:\n  status: {{code: 200, message: OK}}\n  body: {{string: '{json.dumps(answer)}'}}\n")
    assert format_of(path) == "vcr-interaction"
    trace = load_trace(path, whole_run=True)
    assert [c.stop_reason for c in trace.calls] == ["end_turn"]
    assert check_trace(trace) == []


@pytest.mark.parametrize(("request_", "said"), [
    ({"method": "POST", "body": "{}"}, "request.uri: expected the request URL as a string"),
    ({"uri": "https://api.anthropic.com/v1/messages", "method": 1}, "request.method: expected the HTTP method"),
])
def test_a_broken_interaction_alone_names_its_key(tmp_path: Path, request_: dict[str, object], said: str) -> None:
    path = tmp_path / "call.json"
    path.write_text(json.dumps({"request": request_, "response": {"status": {"code": 200}, "body": "{}"}}))
    assert format_of(path) == "vcr-interaction"
    with pytest.raises(InputError) as raised:
        load_trace(path)
    assert str(raised.value).startswith(f"{path}: {said}")


def test_dd_trace_py_sends_a_tool_result_for_an_id_its_history_never_had() -> None:
    # Real: the test builds the assistant turn by hand with tool_use toolu_01Uiyh... and answers it with a
    # tool_result for toolu_01DYJo..., an id from another recording: the tool's answer is tied to no call
    # the model made. The API answers such a history with a 400 (each tool_result must answer a tool_use of
    # the turn before); it was recorded against Claude 3 Opus in 2024, when this one got a 200.
    trace = load_trace(DD_TRACE / "anthropic_completion_tools_call_with_tool_result_stream.yaml")
    assert [(f.code, f.severity, f.message_index) for f in check_trace(trace)] == [
        ("T001", "error", 2), ("T001", "error", 2)]
    messages = [f.message for f in check_trace(trace)]
    assert "no tool_result for tool_use toolu_01UiyhG7tywQKaqdgxyqa8z9" in messages[0]
    assert "tool_result for unknown tool_use id toolu_01DYJo37oETVsCdLTTcCWcdq" in messages[1]


# --- a recording file gzip-compressed whole (LangChain's `.yaml.gz` cassettes) ------------------------


def test_a_gzip_compressed_recording_reads_as_the_file_it_holds(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    plain = DD_TRACE / "anthropic_completion_tools_call_with_tool_result_stream.yaml"
    packed = tmp_path / "cassettes" / (plain.name + ".gz")
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert format_of(plain) == "vcrpy"
    trace, expected = load_trace(packed), load_trace(plain)
    assert [c.content for c in trace.calls] == [c.content for c in expected.calls]
    assert [f.line() for f in check_trace(trace)] == [f.line() for f in check_trace(expected)]
    # A folder's .yaml.gz is looked at as a .yaml is (a .tar.gz is not).
    (tmp_path / "cassettes" / "logs.tar.gz").write_bytes(gzip.compress(b"not a recording"))
    assert main(["check", "--format", "json", str(packed.parent)]) == 1  # T001: an error finding
    report = json.loads(capsys.readouterr().out)
    assert [Path(f["path"]).name for f in report["files"]] == [packed.name]
    assert [Path(name).name for name in report["skipped"]] == ["logs.tar.gz"]


def test_a_gzip_file_that_does_not_inflate_says_so(tmp_path: Path) -> None:
    path = tmp_path / "cut.yaml.gz"
    path.write_bytes(gzip.compress(b"interactions: []\n")[:-6])
    with pytest.raises(InputError) as raised:
        load_trace(path)
    assert str(raised.value).startswith(f"{path}: is gzip-compressed but does not inflate")


def test_an_interaction_that_kept_neither_body_says_nothing_was_checked(tmp_path: Path) -> None:
    # A stub's mapping (WireMock's shape): a request pattern and a jsonBody, neither what was sent nor a body.
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps({
        "request": {"method": "POST", "url": "/v1/messages", "bodyPatterns": [{"equalToJson": {"model": "m"}}]},
        "response": {"status": 200, "jsonBody": {"type": "message", "content": []}},
    }))
    trace = load_trace(path)
    assert "exchange 0: a 200 answer whose body was not kept; the answer is not checked" in trace.notes
    assert "exchange 0: the request's body was not kept; what was sent is not checked" in trace.notes
    assert check_trace(trace) == []


@pytest.mark.parametrize(("url", "request_body", "said"), [
    ("https://api.anthropic.com/v1/messages", "", ["the request's body was not kept", "answer whose body was not"]),
    ("https://api.anthropic.com/v1/messages?beta=true", None, ["the request's body was not kept", "answer whose"]),
    ("https://api.anthropic.com/v1/messages/count_tokens", "", []),  # no Messages call: nothing said of it
])
def test_a_body_not_kept_is_said_of_a_messages_call_alone(url: str, request_body: str | None, said: list[str]) -> None:
    notes: list[str] = []
    exchange_from_http(0, "POST", url, {}, request_body, 200, {}, "", notes=notes)
    assert len(notes) == len(said) and all(words in note for words, note in zip(said, notes, strict=True)), notes


def test_a_body_too_deep_is_said_once_not_also_as_not_kept() -> None:
    notes: list[str] = []
    exchange_from_http(0, "POST", "https://api.anthropic.com/v1/messages", {},
                       {"messages": json.loads("[" * 200 + "]" * 200)}, 200, {}, '{"type": "message"}', notes=notes)
    assert len(notes) == 1 and "nested deeper than" in notes[0], notes
