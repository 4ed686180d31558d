"""The local endpoint: a session served over real HTTP on loopback, reached by the real SDK."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import yaml
from seam_helpers import FAKE_KEY, MODEL, THREE_CALL_SCRIPT, aconverse, converse
from upstream import upstream

from harness.agents import Task
from harness.errors import NoMatchingInteraction, UnplayedInteractions
from harness.transport import open_session

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
    assert error["type"] == "not_found_error"
    assert "POST /chat/completions is not a Messages API call" in error["message"]
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


def test_404_bodies_name_the_path_but_never_its_query_string() -> None:
    query = "?api_key=sk-ant-in-a-query"
    with open_session("scripted", script=[{"text": "hi"}]) as session:
        base_url = session.serve()
        root = base_url.split("/run/")[0]
        answers = {
            "not an API path": httpx2.get(f"{base_url}/v2/chat{query}"),
            "an offline run's unknown /v1/ path": httpx2.post(f"{base_url}/v1/complete{query}", json={}),
            "no run's path": httpx2.get(f"{root}/v1/models{query}"),
            "a tool that is not there": httpx2.post(f"{base_url}/harness/tools/nothing{query}", json={}),
        }
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    answers["a run that ended"] = httpx2.post(f"{base_url}/v1/messages{query}", json={})
    for what, answer in answers.items():
        assert answer.status_code == 404, what
        assert "sk-ant-in-a-query" not in answer.text, what
    assert "POST /v1/complete?[query of 25 characters not logged] is not a Messages API call" in answers[
        "an offline run's unknown /v1/ path"].json()["error"]["message"]


def test_a_task_no_harness_runs_says_where_base_url_comes_from() -> None:
    with pytest.raises(RuntimeError, match="task.base_url is set when the harness runs the task"):
        Task(prompt="hi").client()


def test_record_forwards_with_the_real_key_and_writes_a_cassette_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "recorded.yaml"
    with upstream([{"text": "from upstream"}, {"text": "streamed upstream"}]) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        with open_session("record", cassette=cassette) as session:
            task = Task(prompt="hi", base_url=session.serve())
            client = task.client(max_retries=0)
            first = client.messages.create(model=MODEL, max_tokens=8, messages=HI)
            with client.messages.stream(model=MODEL, max_tokens=8, messages=HI) as stream:
                second = stream.get_final_message()
            task.close_clients()
    assert first.content[0].text == "from upstream"  # type: ignore[union-attr]
    assert second.content[0].text == "streamed upstream"  # type: ignore[union-attr]
    # The key went upstream in the header the client used; the agent's placeholder never left.
    assert api.credentials == [{"Authorization": f"Bearer {FAKE_KEY}"}] * 2
    assert all(e.url == f"{api.base_url}/v1/messages" for e in session.exchanges)
    written = cassette.read_text(encoding="utf-8")
    assert FAKE_KEY not in written and task.api_key not in written and "Bearer" not in written
    for interaction in yaml.safe_load(written)["interactions"]:
        headers = {name.lower(): value for name, value in interaction["request"]["headers"].items()}
        assert headers.get("authorization", ["[REDACTED]"]) == ["[REDACTED]"]
        assert headers.get("x-api-key", ["[REDACTED]"]) == ["[REDACTED]"]

    with open_session("replay", cassette=cassette) as replay:
        client = anthropic.Anthropic(base_url=replay.serve(), api_key="k", max_retries=0)
        reply = client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        assert reply.content[0].text == "from upstream"  # type: ignore[union-attr]
        with client.messages.stream(model=MODEL, max_tokens=8, messages=HI) as stream:
            assert stream.get_final_message().content[0].text == "streamed upstream"  # type: ignore[union-attr]
        client.close()


def test_a_client_sending_x_api_key_gets_the_real_key_upstream_in_that_header(monkeypatch: pytest.MonkeyPatch) -> None:
    with upstream([{"text": "ok"}]) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        with open_session("live") as session:
            answer = httpx2.post(
                f"{session.serve()}/v1/messages",
                headers={"x-api-key": "placeholder", "anthropic-version": "2023-06-01"},
                json={"model": MODEL, "max_tokens": 8, "messages": HI},
            )
    assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "ok"
    assert api.credentials == [{"x-api-key": FAKE_KEY}]
    assert session.exchanges[0].request_headers["x-api-key"] == "[REDACTED]"


def test_an_unreachable_upstream_drops_the_connection_and_the_request_is_in_the_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    with open_session("live") as session:
        client = anthropic.Anthropic(base_url=session.serve(), api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIConnectionError):
            client.messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert [e.status for e in session.exchanges] == [None]
    assert session.notes[0].startswith(f"no answer from http://127.0.0.1:{port} to POST /v1/messages (ConnectError")


def test_a_runs_local_handler_answers_its_paths_and_its_faults_are_a_500() -> None:
    def tools(method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any]:
        if path.endswith("/boom"):
            raise ValueError("broken fixture")
        return 200, {"path": path, "input": json.loads(body)}

    with open_session("scripted", script=[{"text": "hi"}]) as session:
        base_url = session.serve()
        assert session.route is not None
        session.route.local["/harness/tools/"] = tools
        answer = httpx2.post(f"{base_url}/harness/tools/lookup", json={"id": 1})
        broken = httpx2.post(f"{base_url}/harness/tools/boom", json={})
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert answer.status_code == 200 and answer.json() == {"path": "/harness/tools/lookup", "input": {"id": 1}}
    assert broken.status_code == 500 and "ValueError: broken fixture" in broken.json()["error"]["message"]
    assert session.notes == []
