"""Every recording format reads into the same exchanges; malformed files fail with file, line and key."""

from __future__ import annotations

import base64
import gzip
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from vcr.serializers import jsonserializer, yamlserializer

from harness.errors import CassetteError, NotARecording
from harness.trace import load_trace, read_exchanges

URL = "https://api.anthropic.com/v1/messages"
REQUEST = {"model": "claude-sonnet-5", "max_tokens": 100,
           "messages": [{"role": "user", "content": "¿Qué tiempo hace?"}]}
ANSWER = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
    "content": [{"type": "text", "text": "Soleado ☀️"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 4},
}
STREAM = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant",'
    '"model":"claude-sonnet-5","content":[],"stop_reason":null,"stop_sequence":null,'
    '"usage":{"input_tokens":10,"output_tokens":1}}}\n\n'
    'event: content_block_start\ndata: '
    '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    'event: content_block_delta\ndata: '
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hola"}}\n\n'
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
    '"usage":{"output_tokens":2}}\n\n'
    'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


def vcrpy_interaction(request_body: Any, response_body: Any, *, status: int = 200,
                      response_headers: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {
        "request": {"body": request_body, "headers": {"Content-Type": ["application/json"], "X-Api-Key": ["sk-test"]},
                    "method": "POST", "uri": URL},
        "response": {"body": {"string": response_body},
                     "headers": response_headers or {"Content-Type": ["application/json"]},
                     "status": {"code": status, "message": "OK"}},
    }


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def test_vcrpy_yaml_with_a_gzip_binary_body_and_a_stream(tmp_path: Path) -> None:
    cassette = {"interactions": [
        vcrpy_interaction(json.dumps(REQUEST), gzip.compress(json.dumps(ANSWER).encode()),
                          response_headers={"Content-Type": ["application/json"], "Content-Encoding": ["gzip"]}),
        vcrpy_interaction(json.dumps({**REQUEST, "stream": True}), STREAM,
                          response_headers={"content-type": ["text/event-stream; charset=utf-8"]}),
    ], "version": 1}
    text = yamlserializer.serialize(cassette)
    assert "!!binary" in text
    path = write(tmp_path, "cassette.yaml", text)
    trace = load_trace(path)
    first, second = trace.exchanges
    assert first.request_body == REQUEST
    assert first.response_body == ANSWER
    assert first.raw_response == json.dumps(ANSWER)
    assert first.streamed is False
    assert second.streamed and second.stream_complete
    assert second.response_body["content"] == [{"type": "text", "text": "Hola"}]
    assert [e.source_line for e in trace.exchanges] == [
        i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("- request:")
    ]
    assert len(trace.calls) == 2 and trace.notes == []


def test_gzip_bytes_are_inflated_even_when_the_encoding_header_was_dropped(tmp_path: Path) -> None:
    cassette = {"interactions": [vcrpy_interaction(json.dumps(REQUEST).encode(),
                                                   gzip.compress(json.dumps(ANSWER).encode()))], "version": 1}
    exchanges, _ = read_exchanges(write(tmp_path, "c.yaml", yamlserializer.serialize(cassette)))
    assert exchanges[0].response_body == ANSWER
    assert exchanges[0].request_body == REQUEST


def test_vcrpy_json_cassette(tmp_path: Path) -> None:
    cassette = {"interactions": [vcrpy_interaction(json.dumps(REQUEST), json.dumps(ANSWER))], "version": 1}
    trace = load_trace(write(tmp_path, "cassette.json", jsonserializer.serialize(cassette)))
    assert trace.calls[0].stop_reason == "end_turn"
    assert trace.calls[0].content == ANSWER["content"]


def test_pydantic_ai_parsed_body_and_beta_url(tmp_path: Path) -> None:
    text = yaml.safe_dump({"interactions": [{
        "request": {"headers": {"content-type": ["application/json"]}, "method": "POST",
                    "parsed_body": REQUEST, "uri": URL + "?beta=true"},
        "response": {"headers": {"content-type": ["application/json"]}, "parsed_body": ANSWER,
                     "status": {"code": 200, "message": "OK"}},
    }], "version": 1}, allow_unicode=True)
    trace = load_trace(write(tmp_path, "pydantic.yaml", text))
    assert len(trace.calls) == 1
    call = trace.calls[0]
    assert call.request == REQUEST and call.response == ANSWER
    assert json.loads(call.final.raw_request or "") == REQUEST


RUBY_VCR = """---
http_interactions:
- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      string: '{"model":"claude-sonnet-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}'
    headers:
      X-Api-Key:
      - "<ANTHROPIC_API_KEY>"
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - application/json
      Content-Encoding:
      - gzip
    body:
      encoding: ASCII-8BIT
      string: !binary |-
        {gzip}
    http_version:
  recorded_at: Tue, 01 Apr 2025 12:00:00 GMT
- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      base64_string: {b64request}
    headers: {{}}
  response:
    status:
      code: 529
      message: Overloaded
    headers: {{}}
    body:
      encoding: UTF-8
      string: '{{"type":"error","error":{{"type":"overloaded_error","message":"Overloaded"}}}}'
  recorded_at: Tue, 01 Apr 2025 12:00:05 GMT
recorded_with: VCR 6.2.0
"""


def test_ruby_vcr_with_binary_tags_base64_strings_and_recorded_at(tmp_path: Path) -> None:
    packed = base64.b64encode(gzip.compress(json.dumps(ANSWER).encode())).decode()
    text = RUBY_VCR.replace("{gzip}", packed).replace("{b64request}",
                                                      base64.b64encode(json.dumps(REQUEST).encode()).decode())
    text = text.replace("{{", "{").replace("}}", "}")
    exchanges, notes = read_exchanges(write(tmp_path, "ruby.yml", text))
    assert notes == []
    ok, overloaded = exchanges
    assert ok.method == "POST" and ok.response_body == ANSWER
    assert ok.started_at == 1743508800.0
    assert ok.source_line == 3
    assert overloaded.request_body == REQUEST and overloaded.status == 529
    assert overloaded.started_at == ok.started_at + 5
    assert overloaded.retryable


def test_base64_wrapped_as_ruby_writes_it_is_read(tmp_path: Path) -> None:
    # Ruby's Base64.encode64 breaks its output every 60 characters.
    wrapped = "\n        ".join(textwrap.wrap(base64.b64encode(json.dumps(REQUEST).encode()).decode(), 60))
    packed = base64.b64encode(gzip.compress(json.dumps(ANSWER).encode())).decode()
    text = RUBY_VCR.replace("{gzip}", packed).replace("{b64request}", "|-\n        " + wrapped)
    text = text.replace("{{", "{").replace("}}", "}")
    exchanges, _ = read_exchanges(write(tmp_path, "ruby.yml", text))
    assert exchanges[1].request_body == REQUEST


@pytest.mark.parametrize("junk", ["@@@@", "not base64!", "eyJhIjogé"])
def test_a_base64_body_that_is_not_base64_is_an_error_not_an_empty_body(tmp_path: Path, junk: str) -> None:
    # base64.b64decode drops what is not of its alphabet: "@@@@" was read as an empty body, silently.
    cassette = yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": URL, "headers": {}, "body": {"base64_string": junk}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                     "body": {"string": json.dumps(ANSWER)}},
    }], "version": 1}, allow_unicode=True)
    with pytest.raises(CassetteError, match=r"interactions\[0\]\.request\.body\.base64_string.*is not base64"):
        read_exchanges(write(tmp_path, "junk.yaml", cassette))
    har = {"log": {"version": "1.2", "entries": [{
        "startedDateTime": "2026-01-31T00:12:18.592Z", "time": 5,
        "request": {"method": "POST", "url": URL, "headers": [],
                    "postData": {"mimeType": "application/json", "text": json.dumps(REQUEST)}},
        "response": {"status": 200, "statusText": "OK", "headers": [],
                     "content": {"mimeType": "application/json", "encoding": "base64", "text": junk}},
    }]}}
    with pytest.raises(CassetteError, match="is marked base64 but does not decode"):
        read_exchanges(write(tmp_path, "junk.har", json.dumps(har)))


def test_har_with_base64_content_and_timings(tmp_path: Path) -> None:
    har = {"log": {"version": "1.2", "creator": {"name": "Polly.JS"}, "entries": [{
        "startedDateTime": "2026-01-31T00:12:18.592Z", "time": 986,
        "request": {"method": "POST", "url": URL, "headers": [{"name": "x-api-key", "value": "sk-test"},
                                                               {"name": "x-stainless-retry-count", "value": "0"}],
                    "postData": {"mimeType": "application/json", "text": json.dumps(REQUEST)}},
        "response": {"status": 200, "statusText": "OK",
                     "headers": [{"name": "Content-Type", "value": "text/event-stream; charset=utf-8"}],
                     "content": {"mimeType": "text/event-stream", "encoding": "base64",
                                 "text": base64.b64encode(STREAM.encode()).decode()}},
    }]}}
    trace = load_trace(write(tmp_path, "rec.har", json.dumps(har)))
    exchange = trace.exchanges[0]
    assert exchange.streamed and exchange.response_body["content"][0]["text"] == "Hola"
    assert exchange.duration_s == pytest.approx(0.986)
    assert exchange.started_at == pytest.approx(1769818338.592)
    assert exchange.request_headers["x-api-key"] == "[REDACTED]"
    assert trace.calls[0].stop_reason == "end_turn"


def http_request(body: bytes, *, chunked: bool = False) -> bytes:
    head = b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Api-Key: sk-test\r\n"
    if chunked:
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:]))
        return head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_httprr_records_with_a_relative_target_and_a_chunked_body(tmp_path: Path) -> None:
    request = http_request(json.dumps(REQUEST).encode(), chunked=True)
    response = (b"HTTP/2.0 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n" + STREAM.encode())
    error = (b'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Type: application/json\r\n\r\n'
             b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}')
    second = http_request(json.dumps(REQUEST).encode())
    data = (b"httprr trace v1\n" + b"%d %d\n" % (len(request), len(response)) + request + response
            + b"%d %d\n" % (len(second), len(error)) + second + error)
    exchanges, _ = read_exchanges(write(tmp_path, "Test.httprr", data))
    streamed, limited = exchanges
    assert streamed.url == URL and streamed.request_body == REQUEST
    assert streamed.status == 200 and streamed.response_body["stop_reason"] == "end_turn"
    assert limited.status == 429 and limited.response_headers["retry-after"] == "3"
    assert limited.source_line is not None and limited.source_line > streamed.source_line  # type: ignore[operator]


def test_response_only_json_is_a_call_with_no_request(tmp_path: Path) -> None:
    path = write(tmp_path, "answer.json", json.dumps({"status": 200, "headers": {"content-type": "text/event-stream"},
                                                      "body": STREAM}))
    trace = load_trace(path)
    assert len(trace.calls) == 1
    call = trace.calls[0]
    assert call.final.request_body is None and call.messages == []
    assert call.stop_reason == "end_turn"
    assert any("response-only" in note for note in trace.notes)


def test_a_file_with_no_messages_traffic_reads_with_a_note(tmp_path: Path) -> None:
    cassette = {"interactions": [{
        "request": {"body": None, "headers": {}, "method": "GET", "uri": "https://api.anthropic.com/v1/models"},
        "response": {"body": {"string": '{"data": []}'}, "headers": {}, "status": {"code": 200, "message": "OK"}},
    }], "version": 1}
    trace = load_trace(write(tmp_path, "models.yaml", yamlserializer.serialize(cassette)))
    assert trace.calls == [] and len(trace.exchanges) == 1
    assert any("no Messages API traffic" in note for note in trace.notes)
    empty = load_trace(write(tmp_path, "empty.yaml", "interactions: []\nversion: 1\n"))
    assert any("no interactions recorded" in note for note in empty.notes)


def test_surrogate_pair_escapes_become_one_character(tmp_path: Path) -> None:
    body = '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"Share \\ud83d\\udc47 \\xF7"}]}'
    text = ("interactions:\n- request:\n    body: \"" + body.replace('"', '\\"') + "\"\n"
            "    headers: {}\n    method: POST\n    uri: " + URL + "\n"
            "  response:\n    body: {string: "
            "'{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}'}\n"
            "    headers: {}\n    status: {code: 500, message: Error}\nversion: 1\n")
    exchanges, _ = read_exchanges(write(tmp_path, "emoji.yaml", text))
    assert exchanges[0].request_body["messages"][0]["content"] == "Share 👇 ÷"
    json.dumps(exchanges[0].to_dict(), ensure_ascii=False).encode("utf-8")  # no lone surrogates left


def test_explicit_thread_header_sets_the_thread_key(tmp_path: Path) -> None:
    interactions = []
    for key in ("coordinator", "coordinator/research-1"):
        item = vcrpy_interaction(json.dumps(REQUEST), json.dumps(ANSWER))
        item["request"]["headers"]["X-Harness-Thread"] = [key]
        interactions.append(item)
    trace = load_trace(write(tmp_path, "threads.yaml", yamlserializer.serialize({"interactions": interactions})))
    assert [e.thread_key for e in trace.exchanges] == ["coordinator", "coordinator/research-1"]
    assert [t.key for t in trace.threads] == ["coordinator", "coordinator/research-1"]
    assert trace.threads[1].parent == 1


def cassette_error(tmp_path: Path, name: str, text: str | bytes) -> CassetteError:
    path = write(tmp_path, name, text)
    with pytest.raises(CassetteError) as info:
        read_exchanges(path)
    assert info.value.path == str(path)
    return info.value


def test_a_status_without_code_names_the_key_and_its_line(tmp_path: Path) -> None:
    cassette = {"interactions": [vcrpy_interaction(json.dumps(REQUEST), json.dumps(ANSWER)) for _ in range(3)]}
    cassette["interactions"][2]["response"]["status"] = {"message": "OK"}
    text = yamlserializer.serialize(cassette)
    error = cassette_error(tmp_path, "bad.yaml", text)
    assert error.key == "interactions[2].response.status"
    assert "expected a mapping with code" in error.problem
    status_lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.strip() == "status:"]
    assert error.line == status_lines[2]
    assert str(error).startswith(f"{tmp_path / 'bad.yaml'}:{error.line}: interactions[2].response.status")


def test_an_interaction_without_a_request_mapping(tmp_path: Path) -> None:
    error = cassette_error(tmp_path, "bad.yaml", "interactions:\n- request: just a string\n  response: {}\n")
    assert error.key == "interactions[0].request" and error.line == 2
    assert "expected a mapping with method, uri and body" in error.problem


def test_a_missing_uri_points_at_the_request(tmp_path: Path) -> None:
    error = cassette_error(tmp_path, "bad.yaml",
                           "interactions:\n- request:\n    method: POST\n  response:\n    status: {code: 200}\n")
    assert error.key == "interactions[0].request.uri" and error.line == 2


def test_yaml_syntax_errors_give_the_line(tmp_path: Path) -> None:
    error = cassette_error(tmp_path, "broken.yaml", "interactions:\n- request:\n    method: POST\n   uri: [unclosed\n")
    assert error.line is not None and error.line >= 3
    assert "not valid YAML" in error.problem


def test_json_syntax_errors_give_the_line(tmp_path: Path) -> None:
    error = cassette_error(tmp_path, "broken.json", '{\n  "interactions": [\n    {"request": }\n  ]\n}\n')
    assert error.line == 3 and "not valid JSON" in error.problem


def test_an_unknown_shape_says_which_formats_were_tried_and_what_the_file_looks_like(tmp_path: Path) -> None:
    error = cassette_error(tmp_path, "package.json", '{"name": "app", "version": "1.0.0"}')
    assert isinstance(error, NotARecording)
    assert "is not a recording: it is a JSON mapping with keys (name, version)" in error.problem
    assert "tried httprr, otlp, sse-dump, stream-events, go-vcr, vcrpy" in error.problem and "HAR 1.2" in error.problem
    error = cassette_error(tmp_path, "notes.yaml", "just some words\n")
    assert "is not a recording: it is text starting 'just some words'" in error.problem
    error = cassette_error(tmp_path, "list.yaml", "- {a: 1, b: 2}\n- 3\n")
    assert "it is a YAML list of 2 item(s), the first a mapping with keys (a, b)" in error.problem
    error = cassette_error(tmp_path, "blob.json", b"\xff\xfe\x00garbage")
    assert "binary data, not UTF-8 text" in error.problem


def test_a_truncated_httprr_record_names_the_record_and_line(tmp_path: Path) -> None:
    error = cassette_error(tmp_path, "cut.httprr", "httprr trace v1\n500 20\nPOST / HTTP/1.1\r\n")
    assert error.key == "record 0" and error.line == 2


def test_a_har_entry_without_a_request(tmp_path: Path) -> None:
    error = cassette_error(tmp_path, "bad.har", json.dumps({"log": {"entries": [{"response": {}}]}}))
    assert error.key == "log.entries[0]"


def test_a_resent_history_is_held_once_and_an_edited_one_still_differs(tmp_path: Path) -> None:
    tools = [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}]
    asked = {"role": "user", "content": "¿Qué tiempo hace en Madrid?"}
    answered = {"role": "assistant", "content": ANSWER["content"]}
    edited = {"role": "assistant", "content": [{"type": "text", "text": "Nublado"}]}
    follow_up = {"role": "user", "content": "¿Y mañana?"}
    bodies = [[asked], [asked, answered, follow_up], [asked, edited, follow_up, answered, follow_up]]
    cassette = {"interactions": [vcrpy_interaction(json.dumps({**REQUEST, "tools": tools, "messages": m}),
                                                   json.dumps(ANSWER)) for m in bodies], "version": 1}
    for name, text in (("c.yaml", yamlserializer.serialize(cassette)), ("c.json", jsonserializer.serialize(cassette))):
        exchanges, _ = read_exchanges(write(tmp_path, name, text))
        first, second, third = (e.request_body for e in exchanges)
        assert [first["messages"], second["messages"], third["messages"]] == bodies  # nothing changed
        assert second["messages"][0] is first["messages"][0] and third["messages"][0] is first["messages"][0]
        assert third["messages"][1] == edited and third["messages"][1] is not second["messages"][1]
        assert third["tools"] is first["tools"]
        assert second["messages"][1]["content"] is exchanges[0].response_body["content"]  # the answer, re-sent
