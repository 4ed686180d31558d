"""The scripted model driven by the real anthropic SDK, in-process and over a real local HTTP server.

Every test runs the SDK as an agent would (sync and async, JSON and streaming) and checks what it
rebuilt against the script, and what the model saw in `.requests`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.lib.streaming._messages import accumulate_event

from harness.errors import UnplayedInteractions
from harness.transport.scripted import ScriptedModel, ScriptExhausted
from harness.transport.scripted._wire import IdMaker

MODEL = "claude-sonnet-5"
ASK: dict[str, Any] = {"model": MODEL, "max_tokens": 256,
                       "messages": [{"role": "user", "content": "Where is order 7?"}]}

EVERY_STOP_REASON: list[dict[str, Any]] = [
    {"text": "Let me check.", "tool_use": {"name": "get_order", "input": {"order_id": 7, "fields": ["status", "eta"]}}},
    {"text": "Order 7 ships tomorrow."},
    {"text": "The list of every warehouse is: one, two, thr", "stop_reason": "max_tokens"},
    {"text": "Answer: 42", "stop_sequence": "###"},
    {"content": [{"type": "server_tool_use", "name": "web_search", "input": {"query": "order 7"}}],
     "stop_reason": "pause_turn"},
    {"stop_reason": "refusal", "stop_details": {"type": "refusal", "category": "cyber", "explanation": None}},
    {"text": "", "stop_reason": "model_context_window_exceeded"},
    {"text": "From the future.", "stop_reason": "a_reason_not_invented_yet"},
]

Connect = Callable[..., anthropic.Anthropic]


@pytest.fixture(params=["in-process", "http"])
def connect(request: pytest.FixtureRequest) -> Iterator[Connect]:
    """Make an SDK client talking to a model, through the transport or through `serve()`."""
    with contextlib.ExitStack() as stack:

        def make(model: ScriptedModel, **options: Any) -> anthropic.Anthropic:
            if request.param == "in-process":
                return model.client(**options)
            base_url = stack.enter_context(model.serve())
            return anthropic.Anthropic(base_url=base_url, api_key="sk-ant-secret", **options)

        yield make


def answers_as_json(script: list[dict[str, Any]], *, seed: int = 0) -> list[dict[str, Any]]:
    """What each step answers to a plain (non-streamed) request: the messages streams must rebuild."""
    model = ScriptedModel(script, seed=seed)
    client = model.client()
    return [client.messages.create(**ASK).model_dump(mode="json") for _ in script]


def rebuild_raw_stream(client: anthropic.Anthropic) -> dict[str, Any]:
    """`create(stream=True)`, folded with the SDK's own accumulator."""
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    with client.messages.create(**ASK, stream=True) as events:
        for event in events:
            snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    assert snapshot is not None
    return snapshot.model_dump(mode="json")


def test_plain_answers_carry_exactly_what_the_script_says(connect: Connect) -> None:
    model = ScriptedModel(EVERY_STOP_REASON)
    client = connect(model)
    got = [client.messages.create(**ASK) for _ in EVERY_STOP_REASON]

    assert [m.stop_reason for m in got] == [
        "tool_use", "end_turn", "max_tokens", "stop_sequence", "pause_turn", "refusal",
        "model_context_window_exceeded", "a_reason_not_invented_yet",
    ]
    tool_use = got[0].content[1]
    assert tool_use.type == "tool_use" and tool_use.name == "get_order"
    assert tool_use.input == {"order_id": 7, "fields": ["status", "eta"]}
    assert tool_use.id.startswith("toolu_01") and len(tool_use.id) == len("toolu_01") + 22
    assert got[0].content[0].type == "text" and got[0].content[0].text == "Let me check."
    assert got[3].stop_sequence == "###"
    assert got[4].content[0].type == "server_tool_use" and got[4].content[0].id.startswith("srvtoolu_")
    assert got[5].content == [] and got[5].stop_details is not None and got[5].stop_details.category == "cyber"
    assert all(m.model == MODEL and m.id.startswith("msg_01") for m in got)
    model.assert_complete()


@pytest.mark.parametrize("way", ["stream-helper", "create-stream"])
def test_streams_rebuild_the_scripted_message_exactly(connect: Connect, way: str) -> None:
    expected = answers_as_json(EVERY_STOP_REASON)
    model = ScriptedModel(EVERY_STOP_REASON)
    client = connect(model)
    rebuilt = []
    for _ in EVERY_STOP_REASON:
        if way == "stream-helper":
            with client.messages.stream(**ASK) as stream:
                rebuilt.append(stream.get_final_message().model_dump(mode="json"))
        else:
            rebuilt.append(rebuild_raw_stream(client))
    assert rebuilt == expected
    assert all(r.body["stream"] is True for r in model.requests)
    model.assert_complete()


def test_stream_sends_text_and_tool_input_as_deltas_like_the_api(connect: Connect) -> None:
    model = ScriptedModel([{
        "text": "Looking up the customer record for you right now.",
        "tool_use": {"name": "get_customer", "input": {"customer_id": "C-1042", "note": "ñandú ✓"}},
    }])
    client = connect(model)
    with client.messages.create(**ASK, stream=True) as stream:
        events = [event.model_dump(mode="json") for event in stream]

    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert events[0]["message"]["content"] == [] and events[0]["message"]["usage"]["input_tokens"] > 0
    text_deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta" and e["index"] == 0]
    assert len(text_deltas) > 1 and "".join(text_deltas) == "Looking up the customer record for you right now."
    tool_start = next(e for e in events if e["type"] == "content_block_start" and e["index"] == 1)
    assert tool_start["content_block"]["input"] == {}
    json_deltas = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta" and e["index"] == 1]
    assert len(json_deltas) > 2 and "".join(json_deltas) == '{"customer_id":"C-1042","note":"ñandú ✓"}'
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


def test_thinking_comes_with_a_signature_and_redacted_thinking_with_data(connect: Connect) -> None:
    script: list[dict[str, Any]] = [
        {"thinking": "The customer asked twice; check the order first.", "text": "Checking."},
        {"content": [
            {"type": "thinking", "thinking": "Given.", "signature": "sig-from-script"},
            {"type": "redacted_thinking"},
            {"type": "text", "text": "Done."},
        ]},
    ]
    model = ScriptedModel(script)
    client = connect(model)
    with client.messages.stream(**ASK) as stream:
        first = stream.get_final_message()
    second = client.messages.create(**ASK)

    thinking = first.content[0]
    assert thinking.type == "thinking" and thinking.thinking == "The customer asked twice; check the order first."
    assert len(thinking.signature) > 40
    assert second.content[0].type == "thinking" and second.content[0].signature == "sig-from-script"
    assert second.content[1].type == "redacted_thinking" and len(second.content[1].data) > 40
    assert [b.type for b in first.content] == ["thinking", "text"]


def test_server_tool_results_arrive_whole_in_content_block_start(connect: Connect) -> None:
    results = [{"type": "web_search_result", "title": "Order tracking", "url": "https://example.com/7",
                "encrypted_content": "EqQBCioIBhgC", "page_age": None}]
    script: list[dict[str, Any]] = [{"content": [
        {"type": "server_tool_use", "name": "web_search", "input": {"query": "order 7 tracking"}},
        {"type": "web_search_tool_result", "content": results},
        {"type": "text", "text": "It is on its way."},
    ]}]
    expected = answers_as_json(script)[0]
    model = ScriptedModel(script)
    client = connect(model)
    with client.messages.create(**ASK, stream=True) as stream:
        events = [event.model_dump(mode="json") for event in stream]

    start = next(e for e in events if e["type"] == "content_block_start" and e["index"] == 1)
    assert start["content_block"]["content"] == results
    assert start["content_block"]["tool_use_id"] == expected["content"][0]["id"]
    assert not [e for e in events if e["type"] == "content_block_delta" and e["index"] == 1]
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot,
                                    json_bufs=json_bufs)  # type: ignore[arg-type]
    assert snapshot is not None and snapshot.model_dump(mode="json") == expected


def test_compaction_block_streams_like_the_beta_api(connect: Connect) -> None:
    script: list[dict[str, Any]] = [{"content": [
        {"type": "compaction", "content": "Summary: the user wants order 7.", "encrypted_content": "EnC0"},
        {"type": "text", "text": "Hello."},
    ]}]
    model = ScriptedModel(script)
    client = connect(model)
    with client.beta.messages.stream(**ASK) as stream:
        message = stream.get_final_message()
    assert message.content[0].type == "compaction"
    assert message.content[0].content == "Summary: the user wants order 7."
    assert message.content[0].encrypted_content == "EnC0"


def test_unknown_blocks_pass_through_as_given(connect: Connect) -> None:
    block = {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "x", "refs": [1]}}
    model = ScriptedModel([{"content": [block]}, {"content": [block]}])
    client = connect(model)
    # Read the wire itself: the SDK's models would add their own defaults to an unknown block.
    streamed = client.messages.with_raw_response.create(**ASK, stream=True).http_response.read().decode()
    starts = [json.loads(line[len("data: "):]) for line in streamed.splitlines() if '"content_block_start"' in line]
    assert [s["content_block"] for s in starts] == [block]
    plain = client.messages.with_raw_response.create(**ASK).http_response.json()
    assert plain["content"] == [block]


def test_generated_ids_are_reproducible_from_the_seed() -> None:
    script: list[dict[str,
                      Any]] = [{"tool_use": [{"name": "a", "input": {}}, {"name": "b", "input": {}},
                                             {"name": "c", "id": "toolu_mine"}]}]
    first = answers_as_json(script, seed=7)[0]
    again = answers_as_json(script, seed=7)[0]
    other = answers_as_json(script, seed=8)[0]
    ids = [b["id"] for b in first["content"]]
    assert first == again
    assert ids[2] == "toolu_mine" and len(set(ids)) == 3
    assert [b["id"] for b in other["content"]][:2] != ids[:2] and other["id"] != first["id"]


def test_a_seed_gives_the_ids_it_always_gave() -> None:
    # Cassettes recorded from scripts hold these ids: drawing them faster must not change one of them.
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    for seed in (0, 7, "3:outside-script"):
        ids, before = IdMaker(random.Random(seed)), random.Random(seed)
        for _ in range(50):
            assert ids.message_id() == "msg_01" + "".join(before.choice(alphabet) for _ in range(22))
            assert ids.request_id() == "req_011C" + "".join(before.choice(alphabet) for _ in range(20))


def test_usage_is_computed_deterministically_unless_scripted() -> None:
    script: list[dict[str, Any]] = [{"text": "short"}, {"text": "x" * 400},
                                    {"text": "given", "usage": {"output_tokens": 5, "cache_read_input_tokens": 100}}]
    first, second, third = answers_as_json(script)
    assert first["usage"]["input_tokens"] == second["usage"]["input_tokens"] > 0
    assert second["usage"]["output_tokens"] > first["usage"]["output_tokens"] >= 1
    assert third["usage"]["output_tokens"] == 5 and third["usage"]["cache_read_input_tokens"] == 100
    assert third["usage"]["input_tokens"] == first["usage"]["input_tokens"]
    assert answers_as_json(script) == [first, second, third]


def test_the_model_named_is_the_requests_unless_scripted() -> None:
    model = ScriptedModel([{"text": "a"}, {"text": "b", "model": "claude-haiku-5"}])
    client = model.client()
    assert client.messages.create(**ASK).model == MODEL
    assert client.messages.create(**ASK).model == "claude-haiku-5"


def test_rate_limit_and_overload_are_retried_by_the_sdk(connect: Connect) -> None:
    model = ScriptedModel([
        {"error": {"status": 429, "type": "rate_limit_error", "message": "Slow down.", "retry_after": 0.01}},
        {"error": {"status": 529, "retry_after": 0.01}},
        {"text": "Finally."},
    ])
    client = connect(model, max_retries=2)
    message = client.messages.create(**ASK)

    assert message.content[0].text == "Finally."  # type: ignore[union-attr]
    assert [(r.step, r.retry_count) for r in model.requests] == [(1, 0), (2, 1), (3, 2)]
    model.assert_complete()


def test_error_answers_use_the_api_envelope_and_headers(connect: Connect) -> None:
    model = ScriptedModel([{"error": {"status": 429, "retry_after": 3, "message": "Slow down."}}])
    client = connect(model, max_retries=0)
    raw = client.messages.with_raw_response.create  # the raw response keeps the headers of a failure
    with pytest.raises(anthropic.RateLimitError) as caught:
        raw(**ASK)
    response = caught.value.response
    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"
    assert response.headers["request-id"].startswith("req_")
    assert response.json() == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Slow down."},
        "request_id": response.headers["request-id"],
    }


@pytest.mark.parametrize(("status", "error_class"), [
    (400, anthropic.BadRequestError),
    (401, anthropic.AuthenticationError),
    (404, anthropic.NotFoundError),
])
def test_client_errors_raise_the_sdks_exception_without_retry(connect: Connect, status: int,
                                                              error_class: type[Exception]) -> None:
    model = ScriptedModel([{"error": {"status": status, "message": "messages: roles must alternate"}}])
    client = connect(model)
    with pytest.raises(error_class, match="roles must alternate"):
        client.messages.create(**ASK)
    assert len(model.requests) == 1


def test_a_409_is_the_apis_conflict_error(connect: Connect) -> None:
    # The API answers 409 with conflict_error (its errors page); a script giving only the status must
    # get that type, as a 529 gets overloaded_error, not the catch-all invalid_request_error.
    model = ScriptedModel([{"error": {"status": 409}}])
    client = connect(model, max_retries=0)
    with pytest.raises(anthropic.ConflictError) as caught:
        client.messages.create(**ASK)
    assert caught.value.body["error"] == {  # type: ignore[index]
        "type": "conflict_error", "message": "The request conflicts with the current state of a resource."}
    assert ScriptedModel([{"error": {"type": "conflict_error"}}]).steps[0].error.status == 409  # type: ignore[union-attr]


def test_a_cut_stream_raises_in_the_sdk_after_the_events_sent(connect: Connect) -> None:
    model = ScriptedModel([{"text": "This answer will not arrive in full.", "cut_after": 3}])
    client = connect(model, max_retries=0)
    seen: list[str] = []
    with pytest.raises(httpx2.RemoteProtocolError):
        with client.messages.create(**ASK, stream=True) as stream:
            for event in stream:
                seen.append(event.type)
    # message_start, content_block_start, then the ping; never message_stop.
    assert seen == ["message_start", "content_block_start"]
    assert model.done


def test_a_dropped_plain_request_is_a_connection_error(connect: Connect) -> None:
    model = ScriptedModel([{"text": "lost", "cut_after": 0}, {"text": "Second try."}])
    client = connect(model, max_retries=0)
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.create(**ASK)
    assert client.messages.create(**ASK).content[0].text == "Second try."  # type: ignore[union-attr]
    assert [r.step for r in model.requests] == [1, 2]


def test_an_error_event_inside_the_stream_raises(connect: Connect) -> None:
    model = ScriptedModel([
        {"text": "Half an answer", "stream_error": {"type": "overloaded_error", "after": 3}},
        {"text": "Plain", "stream_error": {"type": "overloaded_error"}},
    ])
    client = connect(model, max_retries=0)
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error") as caught:
        with client.messages.stream(**ASK) as stream:
            stream.get_final_message()
    assert caught.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    # Not streamed, the same fault is the HTTP error it would be.
    with pytest.raises(anthropic.OverloadedError):
        client.messages.create(**ASK)


def test_a_request_after_the_script_ran_out_gets_a_500_and_is_remembered(connect: Connect) -> None:
    model = ScriptedModel([{"text": "Only answer."}])
    client = connect(model)  # the SDK's default retries: the answer says not to retry
    client.messages.create(**ASK)
    with pytest.raises(anthropic.InternalServerError, match="script ran out: request 2 "):
        client.messages.create(**ASK)

    assert [r.number for r in model.overflow] == [2]
    with pytest.raises(ScriptExhausted, match=r"1 request\(s\) came after the script ran out \(1 steps\): request 2"):
        model.assert_complete()


def test_assert_complete_names_the_steps_left_unused() -> None:
    model = ScriptedModel([
        {"text": "Hi."},
        {"error": {"status": 529}},
        {"text": "Hm.", "stop_reason": "max_tokens", "thread": "billing"},
        {"tool_use": {"name": "get_customer", "input": {"id": "C1"}}},
        {"text": "Done."},
    ])
    client = model.client(max_retries=0)
    client.messages.create(**ASK)
    with pytest.raises(anthropic.OverloadedError):
        client.messages.create(**ASK)
    with pytest.raises(UnplayedInteractions) as caught:
        model.assert_complete()
    assert str(caught.value) == (
        "3 of 5 scripted responses were not used: step 3 (max_tokens, thread billing), "
        "step 4 (tool_use get_customer), step 5 (end_turn)"
    )


def test_steps_routed_by_thread_answer_only_their_thread() -> None:
    model = ScriptedModel([
        {"text": "Coordinator: dispatching."},
        {"text": "Billing agent done.", "thread": "billing"},
        {"text": "Shipping agent done.", "thread": "shipping", "delay_s": 0.05},
        {"text": "Shipping agent, second turn.", "thread": "shipping"},
        {"text": "Coordinator: all done."},
    ])
    answers: dict[str, list[str]] = {"billing": [], "shipping": [], "main": []}

    def agent(thread: str, turns: int, client: anthropic.Anthropic) -> None:
        for _ in range(turns):
            message = client.messages.create(**ASK, extra_headers={"x-harness-thread": thread})
            answers[thread].append(message.content[0].text)  # type: ignore[union-attr]

    with model.serve() as base_url:
        client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
        agent("main", 1, client)  # a thread no step names takes the unrouted steps
        workers = [threading.Thread(target=agent, args=(t, n, client)) for t, n in (("shipping", 2), ("billing", 1))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        agent("main", 1, client)

    assert answers == {
        "billing": ["Billing agent done."],
        "shipping": ["Shipping agent done.", "Shipping agent, second turn."],
        "main": ["Coordinator: dispatching.", "Coordinator: all done."],
    }
    assert {r.thread: r.step for r in model.requests if r.thread == "billing"} == {"billing": 2}
    model.assert_complete()


def test_requests_are_recorded_with_secrets_scrubbed(connect: Connect) -> None:
    model = ScriptedModel([{"text": "ok"}])
    client = connect(model, default_headers={"X-Api-Key": "sk-ant-api-secret"})
    client.messages.create(**ASK)
    (request,) = model.requests
    assert request.method == "POST" and request.path == "/v1/messages" and request.number == 1 and request.step == 1
    assert request.headers["x-api-key"] == "[REDACTED]"
    assert request.headers["authorization"] == "[REDACTED]"
    assert request.headers["anthropic-version"] and request.headers["x-stainless-lang"] == "python"
    assert request.body == ASK
    assert "secret" not in repr(model.requests)


def test_count_tokens_and_models_answer_without_using_steps(connect: Connect) -> None:
    model = ScriptedModel([{"text": "ok"}])
    client = connect(model)
    counted = client.messages.count_tokens(model=MODEL, messages=ASK["messages"])
    assert counted.input_tokens == client.messages.count_tokens(model=MODEL, messages=ASK["messages"]).input_tokens > 0
    assert [m.id for m in client.models.list()] == ["claude-scripted"]
    assert client.models.retrieve(MODEL).id == MODEL
    assert [s.number for s in model.unused] == [1]
    assert client.messages.create(**ASK).usage.input_tokens == counted.input_tokens


@pytest.mark.parametrize("carrier", ["in-process", "http"])
def test_async_clients_get_the_same_answers(carrier: str) -> None:
    script: list[dict[str, Any]] = [
        {"error": {"status": 529, "retry_after": 0.01}},
        {"thinking": "Plan.", "tool_use": {"name": "get_order", "input": {"order_id": 7}}},
        {"text": "Shipped."},
    ]
    plain = ScriptedModel(script).client(max_retries=1)
    expected = [plain.messages.create(**ASK).model_dump(mode="json") for _ in range(2)]

    async def run(client: anthropic.AsyncAnthropic) -> list[dict[str, Any]]:
        first = await client.messages.create(**ASK)
        async with client.messages.stream(**ASK) as stream:
            second = await stream.get_final_message()
        return [first.model_dump(mode="json"), second.model_dump(mode="json")]

    model = ScriptedModel(script)
    with contextlib.ExitStack() as stack:
        if carrier == "in-process":
            client = model.async_client(max_retries=1)
        else:
            base_url = stack.enter_context(model.serve())
            client = anthropic.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=1)
        got = asyncio.run(run(client))

    assert got == expected
    assert [(r.step, r.retry_count, r.headers["x-stainless-async"]) for r in model.requests][:2] == [
        (1, 0, "async:asyncio"), (2, 1, "async:asyncio"),
    ]
    model.assert_complete()


def test_the_transports_plug_into_clients_built_by_hand() -> None:
    model = ScriptedModel([{"text": "sync"}, {"text": "async"}])
    client = anthropic.Anthropic(
        api_key="test", base_url="http://scripted.local", http_client=httpx2.Client(transport=model.transport())
    )
    assert client.messages.create(**ASK).content[0].text == "sync"  # type: ignore[union-attr]

    async def ask() -> str:
        async_client = anthropic.AsyncAnthropic(
            api_key="test", base_url="http://scripted.local",
            http_client=httpx2.AsyncClient(transport=model.async_transport()),
        )
        message = await async_client.messages.create(**ASK)
        return message.content[0].text  # type: ignore[union-attr]

    assert asyncio.run(ask()) == "async"
    model.assert_complete()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_any_http_client_can_stream_from_the_server() -> None:
    model = ScriptedModel([{"text": "Hello from the wire."}])
    with model.serve() as base_url:
        out = subprocess.run(
            ["curl", "-sS", "-N", f"{base_url}/v1/messages", "-H", "content-type: application/json",
             "-d", '{"model": "m", "max_tokens": 9, "stream": true, "messages": [{"role": "user", "content": "hi"}]}'],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout
    assert out.startswith("event: message_start\ndata: {")
    assert '"delta":{"type":"text_delta","text":"Hello ' in out
    assert out.endswith('event: message_stop\ndata: {"type":"message_stop"}\n\n')


@pytest.mark.parametrize("body", [b"hello", b"", b"[1, 2]"])
def test_a_body_that_is_no_json_object_is_a_400_and_spends_no_step(body: bytes) -> None:
    model = ScriptedModel([{"text": "Order 7 ships tomorrow."}])
    with httpx2.Client(transport=model.transport(), base_url="http://scripted.local") as http:
        refused = http.post("/v1/messages", content=body, headers={"content-type": "application/json"})
        answered = http.post("/v1/messages", json=ASK)
    assert refused.status_code == 400
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert "played no step" in refused.json()["error"]["message"]
    assert answered.status_code == 200 and answered.json()["content"][0]["text"] == "Order 7 ships tomorrow."
    model.assert_complete()  # the step went to the well-formed request; nothing counts as past the script
    assert [request.step for request in model.requests] == [None, 1]
