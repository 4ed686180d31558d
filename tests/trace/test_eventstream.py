"""Amazon Bedrock's streamed answers (a binary event stream) are read back into the API's own stream
events and checked like any streamed answer: on a real recording (dd-trace-py's, tests/trace/recordings),
and on streams built here frame by frame, as AWS documents the format, for what it did not record."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path
from typing import Any

from harness.checks import check_trace
from harness.trace import load_trace
from harness.trace._eventstream import looks_like_event_stream
from harness.trace._exchange import exchange_from_http
from harness.trace._threads import build_trace

DD_TRACE = Path(__file__).resolve().parent / "recordings" / "DataDog__dd-trace-py"
RECORDED = DD_TRACE / "anthropic_message_invoke_stream.yaml"
STREAMED = ("https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1:0"
            "/invoke-with-response-stream")
TOOL = {"name": "get_weather", "description": "The weather in a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One frame of string headers (value type 7, a uint16 length first)."""
    return raw_frame(b"".join(bytes([len(name)]) + name.encode() + b"\x07" + struct.pack("!H", len(value.encode()))
                              + value.encode() for name, value in headers.items()), payload)


def raw_frame(encoded: bytes, payload: bytes) -> bytes:
    """One frame: prelude (total and headers length, their CRC32), headers, payload, CRC32 of all before."""
    prelude = struct.pack("!II", 16 + len(encoded) + len(payload), len(encoded))
    whole = prelude + struct.pack("!I", zlib.crc32(prelude)) + encoded + payload
    return whole + struct.pack("!I", zlib.crc32(whole))


def chunk(event: dict[str, Any]) -> bytes:
    """A stream event as Bedrock sends it: base64 in a JSON payload, in an `event` frame of type `chunk`."""
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode(), "p": "abcd"})
    return frame({":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
                 payload.encode())


def tool_use_stream() -> list[bytes]:
    return [chunk(event) for event in (
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                              "model": "claude-sonnet-4-5", "stop_reason": None,
                                              "usage": {"input_tokens": 30, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": part}}
          for part in ('{"city"', ': "Oslo"}')),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}},
        {"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 30, "outputTokenCount": 12}},
    )]


def answer_stream() -> list[bytes]:
    return [chunk(event) for event in (
        {"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [],
                                              "model": "claude-sonnet-4-5", "stop_reason": None,
                                              "usage": {"input_tokens": 50, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sunny in Oslo."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 6}},
        {"type": "message_stop"},
    )]


def call(index: int, messages: list[dict[str, Any]], frames: list[bytes], notes: list[str],
         content_type: str | None = "application/vnd.amazon.eventstream") -> Any:
    request = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100, "tools": [TOOL], "messages": messages}
    headers = {"content-type": content_type} if content_type else {}
    return exchange_from_http(index, "POST", STREAMED, {}, json.dumps(request), 200, headers, b"".join(frames),
                              notes=notes)


def tool_loop(second_user_turn: dict[str, Any], notes: list[str], **how: Any) -> Any:
    user = {"role": "user", "content": "Weather in Oslo?"}
    first = call(0, [user], tool_use_stream(), notes, **how)
    assistant = {"role": "assistant", "content": first.response_body["content"]}
    return build_trace([first, call(1, [user, assistant, second_user_turn], answer_stream(), notes, **how)], "bedrock")


def test_a_recorded_bedrock_stream_is_reassembled_and_checked() -> None:
    trace = load_trace(RECORDED, whole_run=True)
    [exchange] = trace.exchanges
    assert exchange.streamed and exchange.stream_complete and exchange.stream_error is None
    assert exchange.response_body["content"] == [
        {"type": "text", "text": "Hobbits embark on epic quest to destroy powerful ring, battling dark forces."}]
    assert exchange.response_body["stop_reason"] == "end_turn"
    assert exchange.response_body["usage"]["output_tokens"] == 22
    assert trace.notes == ["1 exchange(s) are Messages calls through Amazon Bedrock or Google Vertex AI (model "
                           "named in the URL); checked like POST /v1/messages"]
    assert check_trace(trace) == []


def test_a_bedrock_tool_loop_streamed_is_checked_like_the_api_s_own(tmp_path: Path) -> None:
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}
    notes: list[str] = []
    trace = tool_loop(result, notes)
    assert [c.stop_reason for c in trace.calls] == ["tool_use", "end_turn"]
    assert trace.calls[0].content == [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                       "input": {"city": "Oslo"}}]
    assert check_trace(trace, whole_run=True) == []
    # What the decoded answer said is held to the rules: a result for another id breaks T001.
    wrong = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "sunny"}]}
    assert "T001" in {f.code for f in check_trace(tool_loop(wrong, []), whole_run=True)}


def test_a_recording_that_dropped_the_content_type_is_still_read() -> None:
    notes: list[str] = []
    trace = tool_loop({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                    "content": "sunny"}]}, notes, content_type=None)
    assert all(e.streamed and e.stream_complete for e in trace.exchanges)
    assert check_trace(trace, whole_run=True) == []


def test_an_exception_frame_is_the_stream_s_error() -> None:
    throttled = frame({":exception-type": "throttlingException", ":content-type": "application/json",
                       ":message-type": "exception"}, b'{"message":"Too many tokens, please wait."}')
    notes: list[str] = []
    exchange = call(0, [{"role": "user", "content": "hi"}], [*tool_use_stream()[:2], throttled], notes)
    assert exchange.stream_error == {"type": "throttlingException", "message": "Too many tokens, please wait."}
    assert not exchange.stream_complete


def test_a_damaged_or_cut_frame_ends_the_reading_there_and_says_so() -> None:
    frames = tool_use_stream()
    damaged = bytearray(frames[2])
    damaged[-6] ^= 0xFF  # a byte of the payload: the frame's checksum no longer holds
    # A damaged frame mid-stream; a stream cut inside its third frame.
    cut = f"says it is {len(frames[2])} bytes long, which the data does not hold"
    for after, said in (([bytes(damaged), *frames[3:]], "fails its checksum"), ([frames[2][:-9]], cut)):
        notes: list[str] = []
        exchange = call(0, [{"role": "user", "content": "hi"}], [*frames[:2], *after], notes)
        assert exchange.streamed and not exchange.stream_complete
        offset = len(frames[0]) + len(frames[1])
        assert any(f"the frame at byte {offset:,} {said}; read up to there" in note for note in notes), notes
        assert exchange.response_body["content"][0]["name"] == "get_weather"  # what came before is kept


def test_a_frame_that_carries_no_stream_event_is_skipped_and_named_and_the_next_are_read() -> None:
    skipped = {
        "(event 'metadata') carries no stream event": frame({":event-type": "metadata", ":message-type": "event"},
                                                            b"{}"),
        "has headers that do not parse": raw_frame(b"\x04name\x2a", b"{}"),  # value type 42: none such
        "carries no stream event (JSONDecodeError": frame(
            {":event-type": "chunk", ":message-type": "event"}, b'{"bytes": '),
        "carries no stream event (KeyError": frame({":event-type": "chunk", ":message-type": "event"}, b"{}"),
    }
    notes: list[str] = []
    exchange = call(0, [{"role": "user", "content": "hi"}], [*skipped.values(), *answer_stream()], notes)
    assert exchange.stream_complete and exchange.response_body["content"][0]["text"] == "Sunny in Oslo."
    # One note for them all: the first named, the others counted.
    [said] = [note for note in notes if "Amazon event stream" in note]
    assert said.endswith("frame 1 (event 'metadata') carries no stream event; skipped (and 3 frame(s) more)")
    for reason in list(skipped)[1:]:  # each is a reason of its own (checked one at a time)
        notes = []
        call(0, [{"role": "user", "content": "hi"}], [skipped[reason], *answer_stream()], notes)
        assert any(f"frame 1 {reason}" in note and note.endswith("; skipped") for note in notes), (reason, notes)


def test_a_converse_stream_is_no_messages_answer_and_is_left_as_it_is() -> None:
    # Bedrock's Converse API streams its own events (messageStart, contentBlockDelta...) in the same frames.
    converse = [frame({":event-type": kind, ":content-type": "application/json", ":message-type": "event"},
                      json.dumps(body).encode())
                for kind, body in (("messageStart", {"role": "assistant"}),
                                   ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
                                   ("messageStop", {"stopReason": "end_turn"}))]
    notes: list[str] = []
    exchange = exchange_from_http(0, "POST", STREAMED.replace("invoke-with-response-stream", "converse-stream"),
                                  {}, json.dumps({"messages": []}), 200,
                                  {"content-type": "application/vnd.amazon.eventstream"}, b"".join(converse),
                                  notes=notes)
    assert not exchange.streamed and exchange.response_body is None
    assert not any("Amazon event stream" in note for note in notes), notes


def test_json_and_text_bodies_are_never_taken_for_an_event_stream() -> None:
    for body in (b'{"type":"message","content":[]}', b"event: message_start\ndata: {}\n\n", b"\x1f\x8b\x08\x00" * 8,
                 b"\x00\x00\x00\x20\x00\x00\x00\x00" + b"\x00" * 24):  # a prelude whose checksum is wrong
        assert not looks_like_event_stream(body)
    assert looks_like_event_stream(answer_stream()[0])


def test_another_model_s_chunks_on_bedrock_are_no_messages_answer() -> None:
    # Amazon Nova streams `chunk` frames too, of events of its own, for a body that has `messages` as well.
    nova = [chunk(event) for event in ({"messageStart": {"role": "assistant"}},
                                       {"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex": 0}},
                                       {"messageStop": {"stopReason": "end_turn"}})]
    notes: list[str] = []
    url = STREAMED.replace("anthropic.claude-sonnet-4-5-20250929-v1:0", "us.amazon.nova-lite-v1:0")
    exchange = exchange_from_http(0, "POST", url, {}, json.dumps({"schemaVersion": "messages-v1", "messages": [
        {"role": "user", "content": [{"text": "hi"}]}]}), 200, {"content-type": "application/vnd.amazon.eventstream"},
        b"".join(nova), notes=notes)
    # Left as it was before event streams were read: bytes that are no text.
    assert not exchange.streamed and notes == ["exchange 0: response: body is not UTF-8; undecodable bytes replaced"]
    trace = build_trace([exchange], "nova")
    assert trace.calls == [] and check_trace(trace, whole_run=True) == []
    assert any("not Messages calls" in note and "nova-lite" in note for note in trace.notes)


def test_a_json_error_under_the_event_stream_s_content_type_is_read_as_json() -> None:
    notes: list[str] = []
    exchange = exchange_from_http(0, "POST", STREAMED, {}, json.dumps({"anthropic_version": "bedrock-2023-05-31",
                                                                       "max_tokens": 5, "messages": []}),
                                  400, {"content-type": "application/vnd.amazon.eventstream"},
                                  b'{"message":"Malformed input request"}', notes=notes)
    assert exchange.response_body == {"message": "Malformed input request"} and not exchange.streamed
    assert not any("Amazon event stream" in note for note in notes), notes


def test_every_header_value_type_is_read_and_an_error_frame_is_the_stream_s_error() -> None:
    # Types 0-9 (bool true and false, byte, short, int, long, bytes, string, timestamp, uuid) before the one
    # that says what the frame is: a frame's headers are read whole, whatever they hold.
    every = (b"\x01a\x00" + b"\x01b\x01" + b"\x01c\x02\x07" + b"\x01d\x03\x00\x07" + b"\x01e\x04" + bytes(4)
             + b"\x01f\x05" + bytes(8) + b"\x01g\x06\x00\x02ab" + b"\x01h\x08" + bytes(8) + b"\x01i\x09" + bytes(16))
    said = {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "try again"}
    encoded = every + b"".join(bytes([len(k)]) + k.encode() + b"\x07" + struct.pack("!H", len(v)) + v.encode()
                               for k, v in said.items())
    notes: list[str] = []
    exchange = call(0, [{"role": "user", "content": "hi"}], [*answer_stream()[:3], raw_frame(encoded, b"")], notes)
    assert exchange.stream_error == {"type": "InternalFailure", "message": "try again"}
    assert not any("do not parse" in note for note in notes), notes


def test_a_frame_shorter_than_its_own_headers_says_so() -> None:
    frames = answer_stream()
    prelude = struct.pack("!II", 20, 40)  # 20 bytes in all, of which 40 are headers
    short = prelude + struct.pack("!I", zlib.crc32(prelude)) + bytes(8)
    notes: list[str] = []
    call(0, [{"role": "user", "content": "hi"}], [frames[0], short], notes)
    assert any(f"the frame at byte {len(frames[0]):,} says it is 20 bytes long, too short for its own 40 bytes of "
               "headers and its checksums; read up to there" in note for note in notes), notes
