"""The local endpoint: a session served over real HTTP on loopback, reached by the real SDK."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.agents import Task
from harness.errors import NoMatchingInteraction, UnplayedInteractions
from harness.transport import open_session
from seam_helpers import MODEL, THREE_CALL_SCRIPT, aconverse, converse

HI = [{"role": "user", "content": "hi"}]


def test_a_scripted_run_is_served_on_loopback_with_json_streams_and_count_tokens() -> None:
    with open_session("scripted", script=[{"text": "first"}, {"text": "streamed"}]) as session:
        base_url = session.serve()
        assert base_url.startswith("http://127.0.0.1:") and "/run/" in base_url
        client = anthropic.Anthropic(base_url=base_url, api_key="anything", max_retries=0)
        first = client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        counted = client.messages.count_tokens(model=MODEL, messages=HI)
        with client.messages.stream(model=MODEL, max_tokens=8, messages=HI) as stream:
            second = stream.get_final_message()
        client.close()
    assert first.content[0].text == "first"  # type: ignore[union-attr]
    assert second.content[0].text == "streamed"  # type: ignore[union-attr]
    assert counted.input_tokens > 0
    exchanges = session.exchanges
    assert [e.url.split("/", 3)[3] for e in exchanges] == ["v1/messages", "v1/messages/count_tokens", "v1/messages"]
    assert exchanges[2].streamed and exchanges[2].stream_complete


def test_the_endpoint_and_the_in_process_client_feed_one_capture(tmp_path: Path) -> None:
    cassette = tmp_path / "three.yaml"
    with open_session("scripted", script=THREE_CALL_SCRIPT, cassette=cassette) as session:
        recorded = converse(session.client())
    with open_session("replay", cassette=cassette) as session:
        task = Task(prompt="hi", base_url=session.serve())
        replayed = converse(task.client())
        task.close_clients()
    assert replayed == recorded
    assert len(session.exchanges) == 3 and all(e.replayed for e in session.exchanges)


def test_async_clients_reach_the_endpoint_too(tmp_path: Path) -> None:
    async def run() -> list[dict[str, Any]]:
        async with open_session("scripted", script=THREE_CALL_SCRIPT) as session:
            task = Task(prompt="hi", base_url=session.serve())
            answers = await aconverse(task.async_client())
            await task.aclose_clients()
            return answers

    answers = asyncio.run(run())
    assert answers[-1]["content"][0]["text"] == "Both customers are active."


def test_a_replay_miss_is_an_unretried_error_and_stays_the_runs_problem(tmp_path: Path) -> None:
    cassette = tmp_path / "one.yaml"
    with open_session("scripted", script=[{"text": "recorded"}], cassette=cassette) as session:
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    session = open_session("replay", cassette=cassette)
    client = anthropic.Anthropic(base_url=session.serve(), api_key="k")
    with pytest.raises(anthropic.InternalServerError) as raised:
        client.messages.create(model=MODEL, max_tokens=9, messages=HI)
    assert raised.value.response.headers["x-should-retry"] == "false"
    assert "no recorded interaction matches" in str(raised.value)
    # One request only: the SDK obeyed x-should-retry and did not ask again.
    assert len(session.problems) == 1 and isinstance(session.problems[0], NoMatchingInteraction)
    assert session.exchanges == []
    with pytest.raises(UnplayedInteractions):
        session.close(run_failed=True)


def test_a_path_that_is_no_api_call_gets_a_json_404_noted_in_the_trace() -> None:
    with open_session("scripted", script=[{"text": "hi"}]) as session:
        base_url = session.serve()
        answer = httpx2.post(f"{base_url}/chat/completions", json={"model": "gpt"})
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["type"] == "not_found_error" and "POST /chat/completions is not a Messages API call" in error["message"]
    assert session.notes == ["the endpoint answered 404 to POST /chat/completions: not a Messages API path"]
    assert [e.status for e in session.exchanges] == [404, 200]


def test_a_run_that_ended_or_a_wrong_prefix_gets_a_404_naming_the_path() -> None:
    with open_session("scripted", script=[{"text": "hi"}]) as session:
        base_url = session.serve()
        assert session.serve() == base_url
        anthropic.Anthropic(base_url=base_url, api_key="k").messages.create(model=MODEL, max_tokens=8, messages=HI)
    late = httpx2.post(f"{base_url}/v1/messages", json={})
    assert late.status_code == 404 and "that run has ended" in late.json()["error"]["message"]
    root = base_url.split("/run/")[0]
    stray = httpx2.get(f"{root}/v1/models")
    assert stray.status_code == 404 and "GET /v1/models is no run's path" in stray.json()["error"]["message"]


def test_a_task_no_harness_runs_says_where_base_url_comes_from() -> None:
    with pytest.raises(RuntimeError, match="task.base_url is set when the harness runs the task"):
        Task(prompt="hi").client()
