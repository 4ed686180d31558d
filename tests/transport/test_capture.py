"""The capture wrapper: every request the SDK sends becomes an Exchange, without changing what it gets."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from typing import Any

import anthropic
import httpx2
import pytest
from seam_helpers import FAKE_KEY, MODEL, THREE_CALL_SCRIPT, TOOLS, aconverse, converse

from harness.transport import Capture, CaptureTransport
from harness.transport.scripted import ScriptedModel


def sdk(transport: httpx2.BaseTransport, **options: Any) -> anthropic.Anthropic:
    options.setdefault("api_key", FAKE_KEY)
    return anthropic.Anthropic(http_client=httpx2.Client(transport=transport), **options)


def test_json_and_streamed_calls_are_captured_with_what_the_sdk_returned() -> None:
    model = ScriptedModel(THREE_CALL_SCRIPT)
    capture = CaptureTransport(model.transport(), Capture(secrets=[FAKE_KEY]))

    answers = converse(sdk(capture))

    exchanges = capture.exchanges
    assert [e.index for e in exchanges] == [0, 1, 2]
    assert [e.streamed for e in exchanges] == [False, False, True]
    for exchange, answer in zip(exchanges, answers, strict=True):
        assert exchange.method == "POST" and exchange.url.endswith("/v1/messages")
        assert exchange.status == 200
        assert exchange.stream_complete
        assert exchange.response_body["content"] == answer["content"]
        assert exchange.response_body["stop_reason"] == answer["stop_reason"]
        assert exchange.started_at is not None and exchange.duration_s is not None and exchange.duration_s >= 0
    # The stream reassembled from the teed bytes is the message the SDK's stream helper built.
    assert exchanges[2].response_body["id"] == answers[2]["id"]
    assert exchanges[2].raw_response is not None and "message_stop" in exchanges[2].raw_response
    assert len(exchanges[2].request_body["messages"]) == 5
    model.assert_complete()


def test_the_key_never_reaches_an_exchange() -> None:
    capture = CaptureTransport(ScriptedModel(THREE_CALL_SCRIPT).transport(), Capture(secrets=[FAKE_KEY]))
    converse(sdk(capture, default_headers={"x-api-key": FAKE_KEY, "x-upstream-credential": FAKE_KEY}))
    dumped = json.dumps([e.to_dict() for e in capture.exchanges])
    assert FAKE_KEY not in dumped
    assert capture.exchanges[0].request_headers["x-upstream-credential"] == "[REDACTED]"


def test_a_stream_cut_midway_still_yields_an_incomplete_exchange() -> None:
    model = ScriptedModel([{"text": "This answer never finishes arriving.", "cut_after": 3}])
    capture = CaptureTransport(model.transport())
    client = sdk(capture, max_retries=0)

    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)):
        with client.messages.stream(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            stream.get_final_message()

    [exchange] = capture.exchanges
    assert exchange.status == 200
    assert exchange.streamed
    assert exchange.stream_complete is False


def test_a_connection_error_yields_an_exchange_without_status() -> None:
    model = ScriptedModel([{"text": "Never sent.", "cut_after": 0}])
    capture = CaptureTransport(model.transport())

    with pytest.raises(anthropic.APIConnectionError):
        sdk(capture, max_retries=0).messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )

    [exchange] = capture.exchanges
    assert exchange.status is None
    assert exchange.request_body["messages"] == [{"role": "user", "content": "hi"}]


def test_gzip_bodies_are_teed_raw_and_decoded_once() -> None:
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": "compressed"}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }

    def edge(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200,
            headers={"content-type": "application/json", "content-encoding": "gzip"},
            content=gzip.compress(json.dumps(message).encode()),
        )

    capture = CaptureTransport(httpx2.MockTransport(edge))
    response = sdk(capture).messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])

    assert response.content[0].text == "compressed"
    assert capture.exchanges[0].response_body["content"] == message["content"]


def test_an_agent_that_stops_reading_a_stream_gets_an_incomplete_exchange_on_close() -> None:
    model = ScriptedModel([{"text": "one two three four five six seven eight"}])
    capture = CaptureTransport(model.transport())
    client = sdk(capture)

    with client.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
        for event in stream:
            if event.type == "content_block_start":
                break

    [exchange] = capture.exchanges
    assert exchange.streamed and exchange.stream_complete is False


def test_concurrent_requests_are_all_captured_once_in_request_order() -> None:
    script = [{"text": f"answer {n}"} for n in range(8)]
    capture = CaptureTransport(ScriptedModel(script).transport())
    client = sdk(capture)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def call(n: int) -> None:
        try:
            barrier.wait()
            client.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": f"q{n}"}])
        except BaseException as err:  # surfaced by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    exchanges = capture.exchanges
    assert [e.index for e in exchanges] == list(range(8))
    asked = sorted(e.request_body["messages"][0]["content"] for e in exchanges)
    assert asked == [f"q{n}" for n in range(8)]


def test_async_client_is_captured_streams_included() -> None:
    model = ScriptedModel(THREE_CALL_SCRIPT)
    capture = CaptureTransport(model.async_transport())

    async def run() -> list[dict[str, Any]]:
        client = anthropic.AsyncAnthropic(api_key=FAKE_KEY, http_client=httpx2.AsyncClient(transport=capture))
        async with client:
            return await aconverse(client)

    answers = asyncio.run(run())

    exchanges = capture.exchanges
    assert [e.streamed for e in exchanges] == [False, False, True]
    assert exchanges[2].response_body["content"] == answers[2]["content"]
    assert exchanges[0].request_body["tools"] == TOOLS
    model.assert_complete()


def test_capture_over_a_real_socket_tees_the_live_stream() -> None:
    model = ScriptedModel(THREE_CALL_SCRIPT)
    with model.serve() as base_url:
        capture = CaptureTransport(httpx2.HTTPTransport())
        answers = converse(sdk(capture, base_url=base_url))
        capture.close()

    exchanges = capture.exchanges
    assert [e.streamed for e in exchanges] == [False, False, True]
    assert all(e.stream_complete for e in exchanges)
    assert exchanges[2].response_body["content"] == answers[2]["content"]
