"""Stream reassembly: every delta kind, whole blocks, errors and cuts, SSE framing, and the SDK's own result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sdk_stream import sdk_final_message, without_nulls

from harness.trace import StreamResult, exchange_from_http, read_exchanges, reassemble_stream

START = {
    "type": "message_start",
    "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 3,
                  "cache_read_input_tokens": 0, "output_tokens": 1},
    },
}


def sse(*events: dict[str, Any], stop: bool = True) -> str:
    """An SSE body as the API writes it: `event:` then `data:`, blank line between events."""
    chunks = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]
    if stop:
        chunks.append('event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return "".join(chunks)


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **body: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str, usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage, **extra}


TEXT_AND_TOOL = sse(
    START,
    {"type": "ping"},
    block_start(0, {"type": "text", "text": ""}),
    delta(0, type="text_delta", text="Let me "),
    delta(0, type="text_delta", text="check."),
    stop(0),
    block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
    delta(1, type="input_json_delta", partial_json=""),
    delta(1, type="input_json_delta", partial_json='{"city": "Par'),
    delta(1, type="input_json_delta", partial_json='is", "units": ["c"]}'),
    stop(1),
    block_start(2, {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}}),
    stop(2),
    message_delta("tool_use", {"output_tokens": 40, "input_tokens": None, "cache_read_input_tokens": 7}),
)


def test_text_and_tool_input_are_rebuilt_and_usage_overwrites_only_what_is_given() -> None:
    result = reassemble_stream(TEXT_AND_TOOL)
    assert result.complete and result.error is None and result.notes == []
    message = result.message
    assert message is not None
    assert message["content"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris", "units": ["c"]}},
        {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
    ]
    assert message["stop_reason"] == "tool_use"
    # input_tokens came as null: the message_start value stands; cache_read came: it overwrites.
    assert message["usage"] == {"input_tokens": 12, "cache_creation_input_tokens": 3,
                                "cache_read_input_tokens": 7, "output_tokens": 40}
    assert result.events == 15


def test_thinking_signature_and_citations() -> None:
    citation = {"type": "char_location", "cited_text": "Paris", "document_index": 0,
                "start_char_index": 0, "end_char_index": 5, "document_title": None}
    result = reassemble_stream(sse(
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="The user "),
        delta(0, type="thinking_delta", thinking="asks."),
        delta(0, type="signature_delta", signature="sig-part"),
        delta(0, type="signature_delta", signature="sig-final"),
        stop(0),
        block_start(1, {"type": "text", "text": "", "citations": None}),
        delta(1, type="citations_delta", citation=citation),
        delta(1, type="text_delta", text="Paris"),
        delta(1, type="citations_delta", citation={**citation, "cited_text": "France"}),
        stop(1),
        message_delta("end_turn", {"output_tokens": 9}),
    ))
    assert result.message is not None
    thinking, text = result.message["content"]
    assert thinking == {"type": "thinking", "thinking": "The user asks.", "signature": "sig-final"}
    assert text["text"] == "Paris"
    assert [c["cited_text"] for c in text["citations"]] == ["Paris", "France"]


def test_whole_blocks_arrive_in_content_block_start_and_stay_as_given() -> None:
    server_tool = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "weather"}}
    search_result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                     "content": [{"type": "web_search_result", "url": "https://example.org", "title": "W",
                                  "encrypted_content": "abc", "page_age": None}]}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy"}
    result = reassemble_stream(sse(
        START,
        block_start(0, redacted), stop(0),
        block_start(1, server_tool), stop(1),
        block_start(2, search_result), stop(2),
        message_delta("end_turn", {"output_tokens": 3}),
    ))
    assert result.message is not None
    assert result.message["content"] == [redacted, server_tool, search_result]


def test_compaction_delta_sets_content_and_container_and_context_management_are_kept() -> None:
    context_management = {"applied_edits": [{"type": "compact_20260112"}]}
    result = reassemble_stream(sse(
        START,
        block_start(0, {"type": "compaction", "content": None}),
        delta(0, type="compaction_delta", content="Summary so far.", encrypted_content=None),
        stop(0),
        {"type": "message_delta",
         "delta": {"stop_reason": "end_turn", "stop_sequence": None, "container": {"id": "cntr_1", "expires_at": "x"}},
         "usage": {"output_tokens": 5}, "context_management": context_management},
    ))
    assert result.message is not None
    assert result.message["content"] == [{"type": "compaction", "content": "Summary so far.",
                                          "encrypted_content": None}]
    assert result.message["container"] == {"id": "cntr_1", "expires_at": "x"}
    assert result.message["context_management"] == context_management


def test_unknown_deltas_and_events_are_noted_not_fatal() -> None:
    result = reassemble_stream(sse(
        START,
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="hologram_delta", beams=3),
        delta(0, type="text_delta", text="still here"),
        {"type": "galaxy_event"},
        delta(5, type="text_delta", text="nowhere"),
        stop(0),
        message_delta("end_turn", {"output_tokens": 2}),
    ))
    assert result.message is not None
    assert result.message["content"] == [{"type": "text", "text": "still here"}]
    assert len(result.notes) == 3
    assert "hologram_delta" in result.notes[0]
    assert "galaxy_event" in result.notes[1]
    assert "never started" in result.notes[2]


def test_an_error_event_inside_the_stream_is_reported() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result = reassemble_stream(sse(
        START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="Hel"), overloaded,
        stop=False,
    ))
    assert result.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert result.complete is False
    assert result.message is not None and result.message["content"] == [{"type": "text", "text": "Hel"}]


def test_a_cut_stream_is_incomplete_and_keeps_what_arrived() -> None:
    result = reassemble_stream(sse(
        START,
        block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}),
        delta(0, type="input_json_delta", partial_json='{"path": "a.txt", "body": "hal'),
        stop=False,
    ))
    assert result.complete is False and result.error is None
    assert result.message is not None
    # What the SDK would show for the same cut: the JSON read as far as it goes.
    assert result.message["content"][0]["input"] == {"path": "a.txt", "body": "hal"}
    assert result.message["stop_reason"] is None


def test_no_message_start_gives_no_message() -> None:
    result = reassemble_stream("event: ping\ndata: {}\n\n")
    assert result == StreamResult(message=None, error=None, complete=False, events=1, notes=[])


def test_sse_framing_padding_crlf_comments_multiline_and_missing_space() -> None:
    start = json.dumps(START)
    half = len(start) // 2
    body = (
        ": a comment the server may send\r\n"
        f"event: message_start\r\ndata: {start[:half]}\r\ndata:{start[half:]}      \r\n\r\n"
        'event: content_block_start\rdata: '
        '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}   \r\r'
        'event: content_block_delta\ndata: '
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\u2028b"}}\n\n'
        'event: message_delta\ndata: '
        '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}'  # no trailing blank line: YAML `|` clips it
    )
    result = reassemble_stream(body)
    assert result.notes == []
    assert result.complete
    assert result.message is not None
    # Multi-line data joins with \n, which JSON reads as whitespace between tokens.
    assert result.message["id"] == "msg_1"
    assert result.message["content"] == [{"type": "text", "text": "a\u2028b"}]


def test_sdk_reads_the_same_message_from_the_same_bytes() -> None:
    assert without_nulls(reassemble_stream(TEXT_AND_TOOL).message) == sdk_final_message(TEXT_AND_TOOL)
    assert without_nulls(reassemble_stream(TEXT_AND_TOOL).message) == sdk_final_message(TEXT_AND_TOOL, beta=False)


def test_sdk_agrees_on_thinking_citations_and_whole_blocks() -> None:
    body = sse(
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="hmm"),
        delta(0, type="signature_delta", signature="sig"),
        stop(0),
        block_start(1, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        delta(1, type="input_json_delta", partial_json='{"query": "x"}'),
        stop(1),
        block_start(2, {"type": "redacted_thinking", "data": "abc"}),
        stop(2),
        block_start(3, {"type": "text", "text": "", "citations": None}),
        delta(3, type="text_delta", text="ok"),
        delta(3, type="citations_delta", citation={"type": "web_search_result_location", "url": "https://e.org",
                                                   "title": "E", "encrypted_index": "i", "cited_text": "c"}),
        stop(3),
        message_delta("end_turn", {"output_tokens": 20, "server_tool_use": {"web_search_requests": 1}}),
    )
    assert without_nulls(reassemble_stream(body).message) == sdk_final_message(body)


def test_json_error_sent_with_an_event_stream_content_type_is_read_as_json() -> None:
    notes: list[str] = []
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}
    exchange = exchange_from_http(
        0, "POST", "https://api.anthropic.com/v1/messages", {"content-type": "application/json"},
        json.dumps({"model": "m", "stream": True, "messages": []}), 400,
        {"content-type": "text/event-stream; charset=utf-8"}, json.dumps(error).encode(), notes=notes,
    )
    assert exchange.streamed is False
    assert exchange.response_body == error
    assert exchange.request_body["stream"] is True
    assert any("body is JSON" in note for note in notes)


def test_exchange_from_a_stream_sets_streamed_error_and_completeness() -> None:
    overloaded = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    exchange = exchange_from_http(
        3, "post", "https://api.anthropic.com/v1/messages", {}, b'{"model":"m","messages":[]}', 200,
        [("Content-Type", "text/event-stream")], sse(START, stop=False) + overloaded,
    )
    assert exchange.method == "POST"
    assert exchange.streamed and exchange.stream_complete is False
    assert exchange.stream_error == {"type": "overloaded_error", "message": "Overloaded"}
    assert exchange.ok is False and exchange.retryable is True
    assert exchange.raw_response is not None and exchange.raw_response.startswith("event: message_start")


@pytest.mark.parametrize("cut_at", [1, 3, 6])
def test_any_prefix_of_a_stream_reads_without_crashing(cut_at: int) -> None:
    lines = TEXT_AND_TOOL.split("\n\n")
    result = reassemble_stream("\n\n".join(lines[:cut_at]))
    assert result.complete is False
    assert result.message is not None


CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "recordings"


def corpus_streams() -> list[Any]:
    found = []
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix not in {".yaml", ".json", ".har", ".httprr"}:
            continue
        exchanges, _ = read_exchanges(path)
        found += [pytest.param(e.raw_response, id=f"{path.name}#{e.index}") for e in exchanges if e.streamed]
    return found


@pytest.mark.parametrize("body", corpus_streams())
def test_every_recorded_stream_reassembles_as_the_sdk_does(body: str) -> None:
    result = reassemble_stream(body)
    assert result.complete and result.error is None and result.notes == []
    assert without_nulls(result.message) == sdk_final_message(body)
