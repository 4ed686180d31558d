"""The live API needs a key; every other mode must run without one."""

from __future__ import annotations

from pathlib import Path

import pytest
from seam_helpers import FAKE_KEY, MODEL

from harness.errors import MissingApiKey
from harness.transport import open_session, require_api_key


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


@pytest.mark.usefixtures("no_key")
def test_live_without_a_key_says_how_to_set_it_and_what_needs_none() -> None:
    with pytest.raises(MissingApiKey) as caught:
        open_session("live")
    message = str(caught.value)
    assert "ANTHROPIC_API_KEY is not set" in message
    assert "export ANTHROPIC_API_KEY=" in message
    assert "'replay'" in message and "'scripted'" in message and "neither needs a key" in message


@pytest.mark.usefixtures("no_key")
def test_record_without_a_key_fails_before_any_file_is_made(tmp_path: Path) -> None:
    cassette = tmp_path / "never.yaml"
    with pytest.raises(MissingApiKey, match="mode 'record'"):
        open_session("record", cassette=cassette)
    assert not cassette.exists()


def test_a_blank_key_counts_as_missing() -> None:
    with pytest.raises(MissingApiKey):
        require_api_key("live", {"ANTHROPIC_API_KEY": "   "})
    assert require_api_key("live", {"ANTHROPIC_API_KEY": FAKE_KEY}) == FAKE_KEY


@pytest.mark.usefixtures("no_key")
def test_scripted_and_replay_need_no_key(tmp_path: Path) -> None:
    cassette = tmp_path / "offline.yaml"
    with open_session("scripted", script=[{"text": "offline"}], cassette=cassette) as session:
        session.client().messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    with open_session("replay", cassette=cassette) as session:
        answer = session.client().messages.create(model=MODEL, max_tokens=8,
                                                  messages=[{"role": "user", "content": "hi"}])
    assert answer.content[0].text == "offline"


def test_live_with_a_key_hands_it_to_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    # No request is sent: building the session and a client must not touch the network.
    with open_session("live") as session:
        assert session.client().api_key == FAKE_KEY
    with pytest.raises(ValueError, match="use mode 'record'"):
        open_session("live", cassette="somewhere.yaml")
