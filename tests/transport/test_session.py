"""open_session: one entry point per mode, clients wired to the seam, and a close that settles the run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import pytest
from seam_helpers import FAKE_KEY, MODEL, THREE_CALL_SCRIPT, aconverse, converse

from harness.errors import NoMatchingInteraction, UnplayedInteractions
from harness.transport import open_session, read_cassette_metadata
from harness.transport.scripted import ScriptedModel

HI = [{"role": "user", "content": "hi"}]


def test_scripted_mode_captures_the_run_and_fails_on_unused_steps() -> None:
    session = open_session("scripted", script=[{"text": "first"}, {"text": "never asked for"}])
    session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert [e.response_body["content"][0]["text"] for e in session.exchanges] == ["first"]
    with pytest.raises(UnplayedInteractions, match="1 of 2 scripted responses were not used"):
        session.close()


def test_scripted_mode_accepts_a_model_or_a_script_file(tmp_path: Path) -> None:
    model = ScriptedModel([{"text": "from a model"}])
    with open_session("scripted", script=model) as session:
        assert session.model is model
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    script = tmp_path / "script.yaml"
    script.write_text("- text: from a file\n")
    with open_session("scripted", script=script) as session:
        answer = session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert answer.content[0].text == "from a file"


def test_async_clients_record_and_replay_the_same_conversation(tmp_path: Path) -> None:
    cassette = tmp_path / "async.yaml"

    async def record() -> list[dict[str, Any]]:
        async with open_session("scripted", script=THREE_CALL_SCRIPT, cassette=cassette) as session:
            return await aconverse(session.async_client())

    async def replay() -> tuple[list[dict[str, Any]], int]:
        async with open_session("replay", cassette=cassette) as session:
            answers = await aconverse(session.async_client())
            return answers, len(session.exchanges)

    recorded = asyncio.run(record())
    replayed, exchanges = asyncio.run(replay())
    assert replayed == recorded and exchanges == 3
    assert read_cassette_metadata(cassette)["recorded_against"] == "scripted model"  # type: ignore[index]


def test_sync_and_async_clients_of_one_session_share_the_capture(tmp_path: Path) -> None:
    with open_session("scripted", script=[{"text": "sync"}, {"text": "async"}]) as session:
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)

        async def call() -> None:
            async with session.async_client() as client:
                await client.messages.create(model=MODEL, max_tokens=8, messages=HI)

        asyncio.run(call())
        assert [e.response_body["content"][0]["text"] for e in session.exchanges] == ["sync", "async"]
        assert [e.index for e in session.exchanges] == [0, 1]


def test_clients_keep_the_sdk_retry_default_unless_told() -> None:
    with open_session("scripted", script=[{"text": "ok"}]) as session:
        assert session.client().max_retries == anthropic.DEFAULT_MAX_RETRIES == 2
        assert session.async_client(max_retries=5).max_retries == 5
        assert session.client().api_key == "replay-no-key"
        with pytest.raises(TypeError, match="owns the HTTP client"):
            session.client(http_client=None)
        client = session.client(max_retries=0)
        assert client.max_retries == 0
        client.messages.create(model=MODEL, max_tokens=8, messages=HI)


def test_a_closed_session_hands_out_no_client() -> None:
    session = open_session("scripted", script=[{"text": "ok"}])
    session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    session.close()
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        session.client()


def test_contradictory_options_are_refused_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="mode 'replay' is offline and cannot record"):
        open_session("replay", cassette=tmp_path / "c.yaml", record_mode="once")
    with pytest.raises(ValueError, match="needs cassette="):
        open_session("replay")
    with pytest.raises(ValueError, match="record_mode needs cassette="):
        open_session("scripted", script=[{"text": "ok"}], record_mode="all")
    with pytest.raises(ValueError, match="not one of replay, record, live, scripted"):
        open_session("playback")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not one of none, once, new_episodes, all"):
        open_session("scripted", script=[], cassette=tmp_path / "c.yaml",
                     record_mode="sometimes")  # type: ignore[arg-type]
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    with pytest.raises(ValueError, match="would record nothing"):
        open_session("record", cassette=tmp_path / "c.yaml", record_mode="none")
    assert list(tmp_path.iterdir()) == []


def test_a_session_records_with_the_client_key_scrubbed_from_exchanges(tmp_path: Path) -> None:
    with open_session("scripted", script=THREE_CALL_SCRIPT, cassette=tmp_path / "c.yaml") as session:
        converse(session.client(api_key=FAKE_KEY))
        assert all(FAKE_KEY not in str(e.to_dict()) for e in session.exchanges)
        assert session.problems == []


def test_an_async_miss_reaches_the_agent_unretried_and_is_kept(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    with open_session("scripted", script=[{"text": "recorded"}], cassette=cassette) as session:
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)

    async def run() -> None:
        session = open_session("replay", cassette=cassette)
        client = session.async_client()
        with pytest.raises(NoMatchingInteraction, match=r"values_changed root\['max_tokens'\]: 8 -> 9"):
            await client.messages.create(model=MODEL, max_tokens=9, messages=HI)
        # The miss is kept as the session's problem, not as traffic: no model ever saw that request.
        assert len(session.exchanges) == 0 and len(session.problems) == 1
        with pytest.raises(UnplayedInteractions):
            await session.aclose()

    asyncio.run(run())


def test_recording_keeps_the_whole_stream_when_the_agent_stops_reading_early(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    kwargs: dict[str, Any] = dict(model=MODEL, max_tokens=64, messages=HI)
    with open_session("scripted", script=[{"text": "one two three four five"}], cassette=cassette) as session:
        with session.client().messages.stream(**kwargs) as stream:
            for event in stream:
                if event.type == "content_block_start":
                    break
        assert session.exchanges[0].stream_complete is False

    with open_session("replay", cassette=cassette) as session:
        with session.client().messages.stream(**kwargs) as stream:
            assert stream.get_final_message().content[0].text == "one two three four five"
        assert session.exchanges[0].stream_complete is True


def test_a_recording_made_through_a_base_url_replays_without_it(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # How a user records with a key against `harness serve` (or a proxy): ANTHROPIC_BASE_URL set,
    # mode record. Replay later runs with the default base URL and must still find the answers.
    cassette = tmp_path / "c.yaml"
    model = ScriptedModel([{"text": "served"}])
    with model.serve() as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        with open_session("record", cassette=cassette, environ={"ANTHROPIC_API_KEY": FAKE_KEY}) as session:
            session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    text = cassette.read_text()
    assert FAKE_KEY not in text and FAKE_KEY[-12:] not in text
    metadata = read_cassette_metadata(cassette)
    assert metadata is not None and metadata["base_url"] == base_url and metadata["recorded_against"] == "live API"
    with open_session("replay", cassette=cassette) as session:
        answer = session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
        assert str(session.client().base_url).startswith("https://api.anthropic.com")
    assert answer.content[0].text == "served"


@pytest.mark.parametrize("record_mode", ["once", "new_episodes", "all"])
def test_a_scripted_session_never_replays_its_cassette_in_place_of_the_script(tmp_path: Path, record_mode: str) -> None:
    cassette = tmp_path / "c.yaml"
    with open_session("scripted", script=[{"text": "first"}], cassette=cassette) as session:
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    before = cassette.read_text()
    with open_session("scripted", script=[{"text": "second"}], cassette=cassette, record_mode=record_mode) as session:
        answer = session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert answer.content[0].text == "second"  # the script answered, every step used
    after = cassette.read_text()
    if record_mode == "once":
        assert after == before  # an existing cassette is left alone
    else:
        assert "second" in after and "first" not in after
