"""Cassettes through the seam: real vcrpy files, recorded and replayed per run, with errors that point."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import vcr
import yaml
from seam_helpers import FAKE_KEY, MODEL, QUESTION, THREE_CALL_SCRIPT, TOOLS, converse

from harness.errors import CassetteError, NoMatchingInteraction, SecretLeak, UnplayedInteractions
from harness.transport import CassetteTransport, open_session, read_cassette_metadata
from harness.transport.scripted import ScriptedModel

HI = [{"role": "user", "content": "hi"}]


def record_scripted(path: Path, script: list[dict[str, Any]] = THREE_CALL_SCRIPT,
                    **client_options: Any) -> list[dict[str, Any]]:
    with open_session("scripted", script=script, cassette=path) as session:
        return converse(session.client(**client_options))


def message(text: str) -> dict[str, Any]:
    return {
        "id": f"msg_{abs(hash(text)) % 10**8}", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }


class Edge:
    """The far end for record-mode tests: answers 'echo: <last user text>' and counts requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        return httpx2.Response(200, json=message(f"echo: {body['messages'][-1]['content']}"))

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self)


def ask(far_end: httpx2.BaseTransport | anthropic.Anthropic, *questions: str) -> list[str]:
    """One single-turn call per question, through a client or straight through a transport."""
    client = (
        far_end
        if isinstance(far_end, anthropic.Anthropic)
        else anthropic.Anthropic(api_key="replay-no-key", http_client=httpx2.Client(transport=far_end))
    )
    answers = []
    for question in questions:
        response = client.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": question}])
        answers.append(response.content[0].text)
    return answers


def test_record_then_replay_a_conversation_offline_gives_the_same_sdk_results(tmp_path: Path) -> None:
    cassette = tmp_path / "conversation.yaml"
    recorded = record_scripted(cassette)

    with open_session("replay", cassette=cassette) as session:
        replayed = converse(session.client())
        assert len(session.exchanges) == 3
        assert session.exchanges[2].streamed

    assert replayed == recorded
    meta = read_cassette_metadata(cassette)
    assert meta is not None and meta["recorded_against"] == "scripted model"
    # The in-process model has no address: the SDK's default URL would claim the API answered.
    assert "base_url" not in meta
    assert meta["harness_version"] and meta["recorded_at"]


def test_replay_matches_json_bodies_parsed_not_as_text(tmp_path: Path) -> None:
    cassette = tmp_path / "conversation.yaml"
    recorded = record_scripted(cassette)
    # Re-serialize every recorded body with other key order and whitespace, as another client would.
    data = yaml.safe_load(cassette.read_text())
    for interaction in data["interactions"]:
        body = json.loads(interaction["request"]["body"])
        interaction["request"]["body"] = json.dumps(dict(reversed(list(body.items()))), indent=2)
    cassette.write_text(yaml.safe_dump(data))

    with open_session("replay", cassette=cassette) as session:
        assert converse(session.client()) == recorded


def test_identical_requests_play_their_recorded_answers_in_order(tmp_path: Path) -> None:
    cassette = tmp_path / "repeat.yaml"
    script = [{"text": "first"}, {"text": "second"}]
    with open_session("scripted", script=script, cassette=cassette) as session:
        assert ask(session.client(), "same", "same") == ["first", "second"]

    with open_session("replay", cassette=cassette) as session:
        assert ask(session.client(), "same", "same") == ["first", "second"]


def test_a_cassette_recorded_by_plain_vcrpy_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "plain.yaml"
    edge = Edge()
    with vcr.use_cassette(str(cassette), record_mode="once"):
        recorded = ask(httpx2.MockTransport(edge), "one", "two")
    assert len(edge.requests) == 2 and cassette.is_file()

    with open_session("replay", cassette=cassette) as session:
        replayed = ask(session.client(), "one", "two")
    assert replayed == recorded == ["echo: one", "echo: two"]
    assert read_cassette_metadata(cassette) is None


def test_plain_vcrpy_replays_a_cassette_we_recorded(tmp_path: Path) -> None:
    cassette = tmp_path / "ours.yaml"
    recorded = record_scripted(cassette)

    def unreachable(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError(f"vcrpy should have answered {request.url} from the cassette")

    with vcr.use_cassette(str(cassette), record_mode="none", match_on=["method", "path", "body"]) as plain:
        client = anthropic.Anthropic(api_key="any",
                                     http_client=httpx2.Client(transport=httpx2.MockTransport(unreachable)))
        replayed = converse(client)
        assert plain.all_played
    assert replayed == recorded


def test_two_cassettes_replay_concurrently_in_two_threads(tmp_path: Path) -> None:
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    other_script = [
        {"tool_use": {"name": "get_customer", "input": {"id": "Z9"}}},
        {"tool_use": {"name": "get_customer", "input": {"id": "Z8"}}},
        {"text": "Neither is active."},
    ]
    expected = {first: record_scripted(first), second: record_scripted(second, other_script)}
    results: dict[Path, list[dict[str, Any]]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def replay(path: Path) -> None:
        try:
            with open_session("replay", cassette=path) as session:
                client = session.client()
                barrier.wait()
                results[path] = converse(client)
        except BaseException as err:  # surfaced by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=replay, args=(path,)) for path in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert results == expected
    assert expected[first] != expected[second]


def test_unplayed_interactions_fail_the_run_naming_them(tmp_path: Path) -> None:
    cassette = tmp_path / "conversation.yaml"
    record_scripted(cassette)

    session = open_session("replay", cassette=cassette)
    session.client().messages.create(model=MODEL, max_tokens=256, messages=QUESTION, tools=TOOLS)
    with pytest.raises(UnplayedInteractions) as caught:
        session.close()

    message = str(caught.value)
    assert message.startswith(
        "2 of 3 recorded interactions were not played: #2 POST /v1/messages (messages: 3), "
        "#3 POST /v1/messages (messages: 5)."
    )
    assert str(cassette) in message


def test_a_request_matching_nothing_fails_fast_with_a_diff_against_the_closest(tmp_path: Path) -> None:
    cassette = tmp_path / "conversation.yaml"
    record_scripted(cassette)

    with pytest.raises(UnplayedInteractions):
        with open_session("replay", cassette=cassette) as session:
            client = session.client()  # SDK default: 2 retries, which a miss must not trigger
            with pytest.raises(NoMatchingInteraction) as caught:
                converse(client, tool_result="OK")
            assert isinstance(caught.value, anthropic.AnthropicError)
            message = str(caught.value)
            assert "values_changed root['messages'][2]['content'][0]['content']: 'ok' -> 'OK'" in message
            assert "Closest recorded: #2 POST /v1/messages (messages: 3)" in message
            assert str(cassette) in message and "re-record" in message
            # One answered call, one miss: no retry reached the cassette.
            assert len(session.exchanges) == 2
            assert session.problems == [caught.value]


def test_a_miss_the_agent_swallows_is_still_reported(tmp_path: Path) -> None:
    cassette = tmp_path / "conversation.yaml"
    record_scripted(cassette)
    session = open_session("replay", cassette=cassette)
    client = session.client()
    try:
        client.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "not recorded"}])
    except Exception:  # an agent that swallows every error
        pass
    [problem] = session.problems
    assert isinstance(problem, NoMatchingInteraction)
    assert "dictionary_item_removed root['tools']" in str(problem)
    with pytest.raises(UnplayedInteractions):
        session.close()


def test_a_request_repeated_more_often_than_recorded_says_so(tmp_path: Path) -> None:
    cassette = tmp_path / "once.yaml"
    with CassetteTransport(cassette, record_mode="once", inner=Edge().transport()) as recorder:
        ask(recorder, "again")
        recorder.finish()
    replay = CassetteTransport(cassette)
    assert ask(replay, "again") == ["echo: again"]
    with pytest.raises(NoMatchingInteraction,
                       match=r"1 identical request\(s\) \(#1 POST /v1/messages \(messages: 1\)\), all already played"):
        ask(replay, "again")


def test_record_mode_once_records_a_missing_cassette_then_only_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "once.yaml"
    edge = Edge()
    recorder = CassetteTransport(cassette, record_mode="once", inner=edge.transport())
    assert ask(recorder, "a", "b") == ["echo: a", "echo: b"]
    recorder.finish()
    assert len(edge.requests) == 2

    again = CassetteTransport(cassette, record_mode="once", inner=edge.transport())
    assert ask(again, "a", "b") == ["echo: a", "echo: b"]
    with pytest.raises(NoMatchingInteraction):
        ask(again, "c")
    again.finish()
    assert len(edge.requests) == 2


def test_record_mode_new_episodes_replays_what_matches_and_appends_the_rest(tmp_path: Path) -> None:
    cassette = tmp_path / "episodes.yaml"
    edge = Edge()
    first = CassetteTransport(cassette, record_mode="all", inner=edge.transport())
    ask(first, "a")
    first.finish()

    second = CassetteTransport(cassette, record_mode="new_episodes", inner=edge.transport())
    assert ask(second, "a", "b") == ["echo: a", "echo: b"]
    second.finish()

    assert [r["messages"][0]["content"] for r in edge.requests] == ["a", "b"]
    replay = CassetteTransport(cassette)
    assert ask(replay, "a", "b") == ["echo: a", "echo: b"]
    replay.finish()


def test_record_mode_all_rewrites_the_cassette_with_this_run_only(tmp_path: Path) -> None:
    cassette = tmp_path / "all.yaml"
    edge = Edge()
    for questions in (("a", "b"), ("c",)):
        recorder = CassetteTransport(cassette, record_mode="all", inner=edge.transport())
        ask(recorder, *questions)
        recorder.finish()

    assert len(edge.requests) == 3
    data = yaml.safe_load(cassette.read_text())
    assert [json.loads(i["request"]["body"])["messages"][0]["content"] for i in data["interactions"]] == ["c"]


def test_replaying_a_missing_or_broken_cassette_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="Record it first"):
        open_session("replay", cassette=tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("interactions: [unclosed\n")
    with pytest.raises(CassetteError, match="not a readable vcrpy cassette"):
        open_session("replay", cassette=broken)


@pytest.mark.parametrize(("recorded", "edited", "key", "problem"), [
    ("      code: 200\n", "      code: two\n", "interactions[0].response.status.code",
     "expected an HTTP status code from 100 to 599, got 'two'"),
    ("      code: 200\n", "      code: 99999\n", "interactions[0].response.status.code",
     "expected an HTTP status code from 100 to 599, got 99999"),
    ("      message: OK\n", "      message: [OK]\n", "interactions[0].response.status.message",
     "expected the reason phrase as ASCII text, got ['OK']"),
    ("      request-id:\n      - req_", "      request-id: req_",
     "interactions[0].response.headers.request-id", "expected a list of values (`- value` lines), got 'req_"),
    ("    body:\n      string: '{\"model\"", "    body: 7\n    was:\n      string: '{\"model\"",
     "interactions[0].response.body", "expected a mapping with string"),
])
def test_a_hand_edited_answer_that_cannot_be_played_is_refused_naming_its_line_and_key(
        tmp_path: Path, recorded: str, edited: str, key: str, problem: str) -> None:
    # Replayed as it was, such an answer failed inside the run (a TypeError in the trace, a response
    # the SDK retried into "all already played"): it must stop at load, where the file can be fixed.
    cassette = tmp_path / "edited.yaml"
    record_scripted(cassette)
    text = cassette.read_text(encoding="utf-8")
    assert recorded in text
    cassette.write_text(text.replace(recorded, edited, 1), encoding="utf-8")
    line = next(i for i, row in enumerate(cassette.read_text(encoding="utf-8").splitlines(), 1)
                if row.startswith(edited.splitlines()[0]))
    with pytest.raises(CassetteError) as refused:
        open_session("replay", cassette=cassette)
    assert (refused.value.line, refused.value.key) == (line, key)
    assert problem in refused.value.problem


def test_a_failed_run_keeps_the_previous_cassette_byte_for_byte(tmp_path: Path) -> None:
    cassette = tmp_path / "conversation.yaml"
    record_scripted(cassette)
    before = cassette.read_bytes()

    with pytest.raises(RuntimeError, match="agent crashed"):
        with open_session("scripted", script=[{"text": "changed"}], cassette=cassette) as session:
            session.client().messages.create(model=MODEL, max_tokens=16, messages=HI)
            raise RuntimeError("agent crashed")

    assert cassette.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conversation.yaml"]


def test_a_failed_first_recording_leaves_no_file(tmp_path: Path) -> None:
    cassette = tmp_path / "new.yaml"
    with pytest.raises(RuntimeError):
        with open_session("scripted", script=[{"text": "hi"}], cassette=cassette) as session:
            session.client().messages.create(model=MODEL, max_tokens=16, messages=HI)
            raise RuntimeError("agent crashed")
    assert list(tmp_path.iterdir()) == []


def test_a_run_that_recorded_nothing_never_writes_an_empty_cassette(tmp_path: Path) -> None:
    # An unreachable API records no interaction: "all" must not replace a good cassette with
    # `interactions: []`, and neither "all" nor "once" may create a missing cassette empty.
    good = tmp_path / "good.yaml"
    record_scripted(good)
    before = good.read_bytes()
    recorder = CassetteTransport(good, record_mode="all", inner=Edge().transport())
    recorder.finish()
    assert good.read_bytes() == before
    assert recorder.not_written == (
        f"cassette {good} not written (the previous cassette is kept unchanged): the run recorded no interaction"
    )
    for record_mode in ("all", "once"):
        missing = tmp_path / f"missing-{record_mode}.yaml"
        recorder = CassetteTransport(missing, record_mode=record_mode,
                                     inner=Edge().transport())  # type: ignore[arg-type]
        recorder.finish()
        assert not missing.exists()
        assert recorder.not_written == (f"cassette {missing} not written (no cassette was created): "
                                        "the run recorded no interaction")


def test_a_run_said_to_have_failed_keeps_the_cassette_and_says_why(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    record_scripted(cassette)
    before = cassette.read_bytes()
    recorder = CassetteTransport(cassette, record_mode="all", inner=Edge().transport())
    ask(recorder, "a")
    recorder.finish(save=False, why="the agent ended in an error outcome")
    assert cassette.read_bytes() == before
    assert recorder.not_written == (
        f"cassette {cassette} not written (the previous cassette is kept unchanged): the agent "
        "ended in an error outcome"
    )
    written = CassetteTransport(cassette, record_mode="all", inner=Edge().transport())
    ask(written, "b")
    written.finish()
    assert written.not_written is None and cassette.read_bytes() != before


def test_the_key_appears_nowhere_in_a_recorded_cassette(tmp_path: Path) -> None:
    gateway_secret = "corp-gateway-credential-7f3a9c"
    by_api_key, by_token = tmp_path / "api_key.yaml", tmp_path / "auth_token.yaml"
    with open_session("scripted", script=THREE_CALL_SCRIPT, cassette=by_api_key, secrets=[gateway_secret]) as session:
        converse(session.client(api_key=FAKE_KEY, default_headers={"x-api-key": FAKE_KEY, "x-gateway": gateway_secret}))
    with open_session("scripted", script=THREE_CALL_SCRIPT, cassette=by_token) as session:
        converse(session.client(api_key=None, auth_token=FAKE_KEY,
                                default_headers={"x-forwarded-credential": FAKE_KEY}))

    for path in (by_api_key, by_token):
        text = path.read_text()
        assert FAKE_KEY not in text and FAKE_KEY[:20] not in text
        assert gateway_secret not in text
        headers = yaml.safe_load(text)["interactions"][0]["request"]["headers"]
        assert headers["authorization"] == ["[REDACTED]"]
    first = yaml.safe_load(by_api_key.read_text())["interactions"][0]["request"]["headers"]
    assert first["x-api-key"] == ["[REDACTED]"] and first["x-gateway"] == ["[REDACTED]"]
    second = yaml.safe_load(by_token.read_text())["interactions"][0]["request"]["headers"]
    assert second["x-forwarded-credential"] == ["[REDACTED]"]


def test_a_key_in_a_body_is_a_secret_leak_and_nothing_is_kept(tmp_path: Path) -> None:
    cassette = tmp_path / "leak.yaml"
    record_scripted(cassette)
    before = cassette.read_bytes()

    session = open_session("scripted", script=[{"text": "noted"}], cassette=cassette)
    session.client().messages.create(
        model=MODEL, max_tokens=16, messages=[{"role": "user", "content": f"my key is {FAKE_KEY}"}]
    )
    with pytest.raises(SecretLeak) as caught:
        session.close()

    message = str(caught.value)
    assert FAKE_KEY not in message
    assert "interaction #1 request body" in message
    assert cassette.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leak.yaml"]

    fresh = tmp_path / "fresh.yaml"
    session = open_session("scripted", script=[{"text": "noted"}], cassette=fresh)
    session.client().messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": FAKE_KEY}])
    with pytest.raises(SecretLeak):
        session.close()
    assert not fresh.exists()


def test_record_against_a_served_model_over_http_then_replay_with_no_server(tmp_path: Path) -> None:
    cassette = tmp_path / "served.yaml"
    model = ScriptedModel(THREE_CALL_SCRIPT)
    with model.serve() as base_url:
        with CassetteTransport(cassette, record_mode="all", inner=httpx2.HTTPTransport()) as recorder:
            client = anthropic.Anthropic(api_key=FAKE_KEY, base_url=base_url,
                                         http_client=httpx2.Client(transport=recorder))
            recorded = converse(client)
            recorder.finish()
    model.assert_complete()

    # The server is gone: only the cassette can answer.
    replay = CassetteTransport(cassette)
    client = anthropic.Anthropic(api_key="replay-no-key", base_url=base_url,
                                 http_client=httpx2.Client(transport=replay))
    assert converse(client) == recorded
    replay.finish()
    assert FAKE_KEY not in cassette.read_text()


def _vcrpy_and_ours(cassette_dict: dict[str, Any]) -> tuple[str, str]:
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer

    from harness.transport._cassette import _YamlSerializer

    return serialize(cassette_dict, yamlserializer), serialize(cassette_dict, _YamlSerializer)


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "cassettes").glob("*.yaml")), ids=lambda p: p.name)
def test_the_cassette_writer_writes_exactly_the_text_vcrpy_writes(path: Path) -> None:
    # The harness writes cassettes with a faster representer; every shipped cassette, loaded and
    # written again, must come out as the very text vcrpy's own dumper gives.
    from vcr.serialize import deserialize
    from vcr.serializers import yamlserializer

    loaded = deserialize(path.read_text(encoding="utf-8"), yamlserializer)
    cassette_dict = {"requests": loaded[0], "responses": loaded[1], "metadata": loaded[2] if len(loaded) > 2 else None}
    theirs, ours = _vcrpy_and_ours(cassette_dict)
    assert ours == theirs
    assert yamlserializer.deserialize(ours) == yamlserializer.deserialize(theirs)


def test_the_cassette_writer_matches_vcrpy_on_bytes_floats_shared_objects_and_odd_keys() -> None:
    import gzip

    from vcr.request import Request as VcrRequest

    shared = {"content-type": ["application/json"]}
    request = VcrRequest("POST", "https://api.anthropic.com/v1/messages", b'{"a": "2024-01-01", "b": "yes"}', shared)
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": shared,
        "body": {"string": gzip.compress(b'{"ok": true}', mtime=0)},
        "harness": {"started_at": 1796118778.815, "duration_s": 0.5, "flags": [True, None, 3, "null", "~", ""]},
        "odd keys": {1: "one", "2": "two"},
    }
    theirs, ours = _vcrpy_and_ours({"requests": [request, request], "responses": [response, response], "metadata": {}})
    assert ours == theirs
    assert "!!binary" in ours and "&id001" in ours  # the gzip body and the shared header dict
