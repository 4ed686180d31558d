"""What the model took is kept in the cassette, survives plain vcrpy, and comes back with a replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx2
import vcr
import yaml
from seam_helpers import MODEL

from harness.trace import Trace, build_trace, load_trace
from harness.trace._model import TRACE_SCHEMA
from harness.transport import open_session

DELAY_S = 0.12
SCRIPT: list[dict[str, Any]] = [{"text": "first", "delay_s": DELAY_S}, {"text": "second", "delay_s": DELAY_S}]


def ask(client: anthropic.Anthropic, *questions: str) -> list[str]:
    answers = []
    for question in questions:
        response = client.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": question}])
        answers.append(response.content[0].text)
    return answers


def record(path: Path) -> None:
    with open_session("scripted", script=SCRIPT, cassette=path) as session:
        assert ask(session.client(), "one", "two") == ["first", "second"]


def timings(path: Path) -> list[Any]:
    return [i["response"].get("harness") for i in yaml.safe_load(path.read_text())["interactions"]]


def strip_timings(path: Path) -> None:
    """The cassette as recorded before durations were kept."""
    data = yaml.safe_load(path.read_text())
    for interaction in data["interactions"]:
        interaction["response"].pop("harness")
    path.write_text(yaml.safe_dump(data))


def test_a_recorded_cassette_keeps_each_answers_duration_and_start(tmp_path: Path) -> None:
    cassette = tmp_path / "timed.yaml"
    record(cassette)
    kept = timings(cassette)
    assert len(kept) == 2
    for entry in kept:
        # The scripted model waited DELAY_S before answering: the recorded time is the model's.
        assert DELAY_S <= entry["duration_s"] < DELAY_S + 2
        assert entry["started_at"] > 1.7e9
    assert kept[0]["started_at"] <= kept[1]["started_at"]


def test_plain_vcrpy_replays_a_timed_cassette_and_saves_the_durations_back(tmp_path: Path) -> None:
    cassette = tmp_path / "timed.yaml"
    record(cassette)
    before = timings(cassette)
    asked: list[str] = []

    def edge(request: httpx2.Request) -> httpx2.Response:
        asked.append(request.url.path)
        return httpx2.Response(200, json={
            "id": "msg_new", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": "new"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        })

    # new_episodes: vcrpy replays the two it holds, records a third, and rewrites the whole file.
    with vcr.use_cassette(str(cassette), record_mode="new_episodes", match_on=["method", "path", "body"]) as plain:
        client = anthropic.Anthropic(api_key="any", http_client=httpx2.Client(transport=httpx2.MockTransport(edge)))
        assert ask(client, "one", "two", "three") == ["first", "second", "new"]
    assert plain.play_count == 2 and len(asked) == 1
    after = timings(cassette)
    assert after[:2] == before and after[2] is None


def test_a_replay_carries_the_recorded_latency_not_its_own(tmp_path: Path) -> None:
    cassette = tmp_path / "timed.yaml"
    record(cassette)
    kept = timings(cassette)
    with open_session("replay", cassette=cassette) as session:
        assert ask(session.client(), "one", "two") == ["first", "second"]
        exchanges = session.exchanges
    assert [e.replayed for e in exchanges] == [True, True]
    assert [e.recorded_duration_s for e in exchanges] == [k["duration_s"] for k in kept]
    assert [e.recorded_started_at for e in exchanges] == [k["started_at"] for k in kept]
    for exchange in exchanges:
        assert exchange.duration_s is not None and exchange.duration_s < DELAY_S  # the replay's own time
        assert exchange.model_latency_s == exchange.recorded_duration_s

    # And it survives the results file.
    again = Trace.from_dict(build_trace(exchanges, "replay").to_dict())
    assert [e.recorded_duration_s for e in again.exchanges] == [k["duration_s"] for k in kept]
    assert all(e.replayed for e in again.exchanges)


def test_a_live_or_scripted_exchange_is_its_own_latency(tmp_path: Path) -> None:
    with open_session("scripted", script=SCRIPT[:1]) as session:
        ask(session.client(), "one")
        (exchange,) = session.exchanges
    assert not exchange.replayed and exchange.recorded_duration_s is None
    assert exchange.model_latency_s == exchange.duration_s


def test_an_old_cassette_without_durations_replays_with_latency_unknown(tmp_path: Path) -> None:
    cassette = tmp_path / "old.yaml"
    record(cassette)
    strip_timings(cassette)
    with open_session("replay", cassette=cassette) as session:
        assert ask(session.client(), "one", "two") == ["first", "second"]
        exchanges = session.exchanges
    assert all(e.replayed and e.recorded_duration_s is None for e in exchanges)
    # Not the replay's few milliseconds dressed up as the model's.
    assert [e.model_latency_s for e in exchanges] == [None, None]


def test_harness_check_reads_the_recorded_durations_from_our_cassettes(tmp_path: Path) -> None:
    cassette = tmp_path / "timed.yaml"
    record(cassette)
    kept = timings(cassette)
    trace = load_trace(cassette)
    assert [e.recorded_duration_s for e in trace.exchanges] == [k["duration_s"] for k in kept]
    assert [e.model_latency_s for e in trace.exchanges] == [k["duration_s"] for k in kept]
    # Kept apart from started_at/duration_s, which the retry and deadline checks time runs with.
    assert all(e.duration_s is None and e.started_at is None for e in trace.exchanges)

    strip_timings(cassette)
    assert [e.model_latency_s for e in load_trace(cassette).exchanges] == [None, None]


def test_bad_recorded_timings_are_unknown_not_a_crash(tmp_path: Path) -> None:
    cassette = tmp_path / "edited.yaml"
    record(cassette)
    data = yaml.safe_load(cassette.read_text())
    data["interactions"][0]["response"]["harness"] = {"duration_s": "slow", "started_at": -1}
    data["interactions"][1]["response"]["harness"] = "not a mapping"
    cassette.write_text(yaml.safe_dump(data))
    assert [e.recorded_duration_s for e in load_trace(cassette).exchanges] == [None, None]
    with open_session("replay", cassette=cassette) as session:
        ask(session.client(), "one", "two")
        assert [e.model_latency_s for e in session.exchanges] == [None, None]


def test_a_schema_1_trace_reads_back_with_nothing_recorded(tmp_path: Path) -> None:
    cassette = tmp_path / "timed.yaml"
    record(cassette)
    data = load_trace(cassette).to_dict()
    assert data["schema"] == TRACE_SCHEMA
    data["schema"] = 1
    for exchange in data["exchanges"]:
        for key in ("replayed", "recorded_started_at", "recorded_duration_s"):
            del exchange[key]
    old = Trace.from_dict(data)
    assert all(not e.replayed and e.recorded_duration_s is None for e in old.exchanges)
