"""Realistic traffic the shipped cassettes do not show: correct loops that must pass, buggy ones
caught by the right code.

Each case is one shape found while checking recordings of other clients (moved cache breakpoints,
parallel runs of one prompt, compaction, pause_turn continuations, cloud endpoints...).
"""

from __future__ import annotations

import json
from typing import Any

from recordings import Recording, check, codes, text, tool_use

from harness.checks import check_trace
from harness.trace import build_trace, exchange_from_http, load_trace

CACHE = {"cache_control": {"type": "ephemeral"}}


def server_search(n: int) -> list[dict[str, Any]]:
    return [
        {"type": "server_tool_use", "id": f"srvtoolu_{n:020d}", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{n:020d}", "content": []},
    ]


# --- threads: the same conversation, however its history is re-sent -------------------------------


def test_a_cache_breakpoint_moved_off_the_first_message_keeps_one_thread(recording: Recording) -> None:
    conv = recording.conversation()
    conv.user(text("A long document to cache") | CACHE)
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results("found")
    # The client moves its breakpoint to the newest block: the first message's bytes change.
    conv.messages[0] = {"role": "user", "content": [text("A long document to cache")]}
    conv.messages[-1]["content"][-1] |= CACHE
    conv.call(text("Done."))
    assert len(recording.trace().threads) == 1
    assert check(recording, whole_run=True) == []


def test_parallel_runs_of_one_prompt_are_not_crossed(recording: Recording) -> None:
    first, second = recording.conversation(), recording.conversation()
    first.user("Same task")
    second.user("Same task")
    first.call(tool_use("get_customer", {"customer_id": "a"}))
    second.call(tool_use("get_customer", {"customer_id": "b"}))
    # The second run answers first: its request shares the opening with the first run's.
    second.results("b").call(text("B done."))
    first.results("a").call(text("A done."))
    trace = recording.trace()
    assert [(c.thread, c.step) for c in trace.calls] == [(1, 1), (2, 1), (2, 2), (1, 2)]
    assert check(recording, whole_run=True) == []


def test_a_compacted_history_that_drops_the_old_messages_continues_its_thread(recording: Recording) -> None:
    conv = recording.conversation(headers={"anthropic-beta": "compact-2026-01-12"},
                                  extra={"context_management": {"edits": [{"type": "compact_20260112"}]}})
    conv.user("Work through the backlog")
    conv.call(tool_use("get_customer", {"customer_id": "a"}))
    conv.results("a")
    conv.call({"type": "compaction", "content": "Summary of the work so far."}, text("Going on."),
              tool_use("get_customer", {"customer_id": "b"}))
    conv.results("b")
    # Messages before the compaction block are ignored by the API; the client may drop them.
    conv.messages = [conv.messages[0], *conv.messages[-2:]]
    conv.call(text("All done."))
    assert len(recording.trace().threads) == 1
    assert check(recording, whole_run=True) == []


def test_a_history_truncated_mid_run_is_h002_not_a_new_thread(recording: Recording) -> None:
    conv = recording.conversation()
    conv.user("Look them all up")
    for n in range(3):
        conv.call(tool_use("get_customer", {"customer_id": str(n)}))
        conv.results("ok")
    del conv.messages[1:3]
    conv.call(text("Done."))
    findings = check(recording, whole_run=True)
    assert codes(findings) == {"H002"}
    assert len(recording.trace().threads) == 1


# --- pause_turn: a correct loop appends the continuation as its own assistant message -------------


def test_a_paused_turn_followed_by_its_continuation_is_not_h003(recording: Recording) -> None:
    conv = recording.conversation(tools=[*recording.conversation().tools,
                                         {"type": "web_search_20250305", "name": "web_search"}])
    conv.user("Search, then look the customer up")
    conv.call(text("Searching."), *server_search(1), stop_reason="pause_turn")
    conv.call(*server_search(2), tool_use("get_customer", {"customer_id": "a"}))
    conv.results("found")
    conv.call(text("Done."))
    assert check(recording, whole_run=True) == []


def test_two_assistant_messages_in_a_row_without_a_pause_are_still_h003(recording: Recording) -> None:
    conv = recording.conversation()
    conv.user("Look the customer up")
    conv.call(tool_use("get_customer", {"customer_id": "a"}))
    conv.messages.insert(1, {"role": "assistant", "content": "Let me check."})
    conv.messages.append({"role": "user", "content": [{"type": "tool_result",
                                                       "tool_use_id": conv.tool_uses()[0]["id"], "content": "ok"}]})
    conv.call(text("Done."))
    # The API merges them into one valid assistant turn: a warning.
    assert "H003" in codes(check(recording, whole_run=True), "warning")


# --- cloud endpoints: the Messages body through Bedrock and Vertex AI -------------------------------

BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"
VERTEX = ("https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/"
          "models/claude-sonnet-4-5@20250929:streamRawPredict")


def _cloud_exchanges(url: str, second_content: list[dict[str, Any]], *, stream: bool = False) -> list[Any]:
    use = tool_use("get_customer", {"customer_id": "a"})
    user = {"role": "user", "content": "Look a up"}
    first_request = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100, "messages": [user]}
    second_request = {**first_request, "messages": [user, {"role": "assistant", "content": [use]},
                                                    {"role": "user", "content": second_content}]}
    first_answer: Any = {"type": "message", "role": "assistant", "content": [use], "stop_reason": "tool_use",
                         "usage": {"input_tokens": 10, "output_tokens": 5}}
    headers = {"content-type": "application/json"}
    if stream:
        events = [
            {"type": "message_start", "message": {**first_answer, "content": [], "stop_reason": None}},
            {"type": "content_block_start", "index": 0, "content_block": {**use, "input": {}}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": '{"customer_id": "a"}'}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ]
        first_answer = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        headers = {"content-type": "text/event-stream"}
    done = {"type": "message", "role": "assistant", "content": [text("Done.")], "stop_reason": "end_turn",
            "usage": {"input_tokens": 20, "output_tokens": 5}}
    return [
        exchange_from_http(0, "POST", url, {}, json.dumps(first_request), 200, headers, first_answer),
        exchange_from_http(1, "POST", url, {}, json.dumps(second_request), 200, {}, json.dumps(done)),
    ]


def test_bedrock_and_vertex_calls_are_read_and_checked_as_messages_calls() -> None:
    for url, stream in ((BEDROCK, False), (VERTEX, True), (VERTEX.replace(":streamRawPredict", ":rawPredict"), False)):
        ok = _cloud_exchanges(url, [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}], stream=stream)
        ok[1].request_body["messages"][2]["content"][0]["tool_use_id"] = ok[0].response_body["content"][0]["id"]
        trace = build_trace(ok, "cloud")
        assert [(c.thread, c.step) for c in trace.calls] == [(1, 1), (1, 2)], url
        assert "Bedrock or Google Vertex AI" in trace.notes[0]
        assert check_trace(trace, whole_run=True) == [], url
        dropped = build_trace(_cloud_exchanges(url, [text("never mind")], stream=stream), "cloud")
        assert {f.code for f in check_trace(dropped, whole_run=True)} == {"L002"}, url


def test_a_bedrock_stream_kept_as_text_and_other_models_do_not_crash() -> None:
    # A recorder that decoded the binary stream as UTF-8 lost its bytes: nothing is left to read (a whole
    # stream is read and checked: tests/trace/test_eventstream.py).
    stream = exchange_from_http(
        0, "POST", BEDROCK.replace("/invoke", "/invoke-with-response-stream"), {},
        json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10,
                    "messages": [{"role": "user", "content": "hi"}]}),
        200, {"content-type": "application/vnd.amazon.eventstream"},
        "\x00\x00\x01\x0b\x00\x00\x00K\ufffd\ufffd:event-type",
    )
    titan = exchange_from_http(1, "POST",
                               "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-text/invoke",
                               {}, json.dumps({"inputText": "hi"}), 200, {}, json.dumps({"results": []}))
    trace = build_trace([stream, titan], "cloud")
    assert len(trace.calls) == 1
    assert any("neither JSON nor a whole binary event stream: their responses are not checked" in note
               for note in trace.notes)
    assert any("not Messages calls" in note and "amazon.titan-text" in note for note in trace.notes)
    assert check_trace(trace, whole_run=True) == []


# --- retries recorded with whole-second clocks (Ruby VCR's recorded_at) -----------------------------


def _ruby_vcr_retry(tmp_path: Any, retry_after: str | None) -> Any:
    request = '{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}'
    limited = '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}'
    answer = ('{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hello"}],'
              '"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}')
    header = f"\n      Retry-After:\n      - '{retry_after}'" if retry_after else ""
    interactions = []
    for status, body, extra in ((429, limited, header), (200, answer, "")):
        interactions.append(f"""- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      string: '{request}'
    headers:
      Anthropic-Version:
      - '2023-06-01'
  response:
    status:
      code: {status}
      message: ''
    headers:
      Content-Type:
      - application/json{extra}
    body:
      encoding: UTF-8
      string: '{body}'
  recorded_at: Thu, 12 Jun 2025 16:29:20 GMT""")
    path = tmp_path / "retry.yml"
    path.write_text("---\nhttp_interactions:\n" + "\n".join(interactions) + "\nrecorded_with: VCR 6.3.1\n")
    return load_trace(path)


def test_a_retry_within_the_same_recorded_second_is_not_proven_without_back_off(tmp_path: Any) -> None:
    trace = _ruby_vcr_retry(tmp_path, None)
    assert len(trace.calls) == 1 and len(trace.calls[0].attempts) == 2
    assert check_trace(trace, whole_run=True) == []


def test_a_retry_within_the_same_second_still_breaks_a_long_retry_after(tmp_path: Any) -> None:
    findings = check_trace(_ruby_vcr_retry(tmp_path, "30"), whole_run=True)
    assert [f.code for f in findings] == ["E001"]
    assert "retry-after of 30s" in findings[0].message


def test_a_stream_of_another_api_gets_no_line_per_event() -> None:
    # An OpenAI Responses stream (ruby_llm records them beside its Anthropic calls): no Messages call, so
    # nothing about its events "before message_start"; a Messages stream cut short is still said.
    events = "".join(f"event: {kind}\ndata: {json.dumps({'type': kind})}\n\n"
                     for kind in ("response.created", "response.output_text.delta", "response.completed"))
    notes: list[str] = []
    other = exchange_from_http(0, "POST", "https://bedrock-mantle.us-east-1.api.aws/v1/responses", {},
                               json.dumps({"model": "m", "input": "hi", "stream": True}), 200,
                               {"content-type": "text/event-stream"}, events, notes=notes)
    assert other.streamed and notes == []
    cut = 'event: message_start\ndata: {"type":"message_start","message":{"id":"m","content":[]}}\n\n'
    exchange_from_http(1, "POST", "https://api.anthropic.com/v1/messages", {},
                       json.dumps({"model": "m", "max_tokens": 5, "messages": [], "stream": True}), 200,
                       {"content-type": "text/event-stream"}, cut, notes=notes)
    assert notes == ["exchange 1: the stream ends without message_stop (cut after 1 events)"]
