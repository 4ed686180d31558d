"""A results line holds each wire body once: the raw text, with the parsed body derived on read."""

from __future__ import annotations

import json
from pathlib import Path

from harness.results import ResultsWriter, RunResult, read_results
from harness.trace import build_trace, exchange_from_http
from harness.trace._model import TRACE_SCHEMA

MARKER = "the policy allows refunds within 30 days"
REQUEST = {"model": "claude-sonnet-5", "max_tokens": 512, "stream": True,
           "messages": [{"role": "user", "content": f"Quote it: {MARKER}?"}]}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
           "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}


def _sse(events: list[tuple[str, dict[str, object]]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


STREAM = _sse([
    ("message_start", {"type": "message_start", "message": MESSAGE}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta",
     {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": MARKER}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 9}}),
    ("message_stop", {"type": "message_stop"}),
])
ANSWER = {**MESSAGE, "id": "msg_2", "content": [{"type": "text", "text": MARKER}], "stop_reason": "end_turn"}


def run_with_bodies() -> RunResult:
    streamed = exchange_from_http(0, "POST", "https://api.anthropic.com/v1/messages",
                                  {"content-type": "application/json"},
                                  json.dumps(REQUEST).encode(), 200,
                                  {"content-type": "text/event-stream"}, STREAM.encode())
    second = {**REQUEST, "stream": False}
    plain = exchange_from_http(1, "POST", "https://api.anthropic.com/v1/messages", {"content-type": "application/json"},
                               json.dumps(second).encode(), 200, {"content-type": "application/json"},
                               json.dumps(ANSWER).encode())
    trace = build_trace([streamed, plain], "bodies", whole_run=True)
    return RunResult(run_id="r", scenario="s", scenario_path="s.yaml", model="claude-sonnet-5", effort=None, repeat=0,
                     mode="live", status="passed", outcome=None, steps=2, trace=trace)


def test_each_body_is_written_once_and_read_back_whole(tmp_path: Path) -> None:
    result = run_with_bodies()
    assert result.trace is not None and result.trace.exchanges[0].streamed
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result)
    line = path.read_text(encoding="utf-8")
    # Two requests quote it, the stream and the JSON answer say it: four bodies, each written once.
    assert line.count(MARKER) == 4
    stored = json.loads(line)["trace"]
    assert stored["schema"] == TRACE_SCHEMA
    assert all("request_body" not in e and "response_body" not in e for e in stored["exchanges"])
    again = read_results(path)[0].trace
    assert again is not None
    assert [(e.request_body, e.response_body, e.raw_request, e.raw_response) for e in again.exchanges] == [
        (e.request_body, e.response_body, e.raw_request, e.raw_response) for e in result.trace.exchanges]
    assert again.exchanges[0].response_body["content"] == [{"type": "text", "text": MARKER}]


def test_a_parsed_body_the_raw_text_does_not_give_back_is_kept(tmp_path: Path) -> None:
    result = run_with_bodies()
    assert result.trace is not None
    edited = result.trace.exchanges[1]
    edited.request_body = {**edited.request_body, "max_tokens": 1}  # not what the raw text says
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result)
    again = read_results(path)[0].trace
    assert again is not None and again.exchanges[1].request_body["max_tokens"] == 1


def test_a_schema_2_line_with_both_bodies_still_reads(tmp_path: Path) -> None:
    result = run_with_bodies()
    assert result.trace is not None
    line = result.to_dict()
    line["trace"]["schema"] = 2
    for stored, exchange in zip(line["trace"]["exchanges"], result.trace.exchanges, strict=True):
        stored["request_body"], stored["response_body"] = exchange.request_body, exchange.response_body
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    again = read_results(path)[0].trace
    assert again is not None
    assert [e.response_body for e in again.exchanges] == [e.response_body for e in result.trace.exchanges]
