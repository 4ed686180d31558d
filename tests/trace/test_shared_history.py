"""A recording's requests share the history they re-send (`SharedHistory`), and the nesting of each
request is judged on what it shares as if it were walked whole: a body is dropped exactly when
`_too_deep` says so of it parsed on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from vcr.serializers import jsonserializer, yamlserializer

from harness.trace import read_exchanges
from harness.trace._exchange import MAX_DEPTH, SharedHistory, _too_deep

ANSWER = {"type": "message", "role": "assistant", "stop_reason": "tool_use",
          "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"id": "1"}}]}


def nested(levels: int) -> Any:
    """A value of exactly `levels` levels of objects and arrays."""
    value: Any = "leaf"
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


def interaction(body: dict[str, Any]) -> dict[str, Any]:
    return {"request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": json.dumps(body),
                        "headers": {"content-type": ["application/json"]}},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {"content-type": ["application/json"]},
                         "body": {"string": json.dumps(ANSWER)}}}


def thread(deep: Any, where: str) -> list[dict[str, Any]]:
    """Four requests of one thread; `deep` sits in the second request's new user turn, or in the tools
    or system every request sends."""
    asked = {"role": "user", "content": "Look order 1 up"}
    answered = {"role": "assistant", "content": ANSWER["content"]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                           "content": [{"type": "text", "text": "x", "citations": deep}]
                                           if where == "turn" else "ok"}]}
    tools = [{"name": "lookup", "input_schema": {"type": "object", "properties": deep if where == "tools" else {}}}]
    system = [{"type": "text", "text": "s", "citations": deep}] if where == "system" else "s"
    histories = [[asked], [asked, answered, result], [asked, answered, result, answered, result],
                 [asked, answered, {"role": "user", "content": "Forget that"}]]
    return [{"model": "claude-sonnet-5", "max_tokens": 100, "system": system, "tools": tools, "messages": m}
            for m in histories]


@pytest.mark.parametrize("where", ["turn", "tools", "system"])
@pytest.mark.parametrize("serializer", [yamlserializer, jsonserializer], ids=["yaml", "json"])
def test_a_request_is_dropped_exactly_when_it_nests_too_deeply_whatever_it_shares(
        tmp_path: Path, where: str, serializer: Any) -> None:
    seen: set[bool] = set()
    for levels in range(MAX_DEPTH - 8, MAX_DEPTH):
        bodies = thread(nested(levels), where)
        path = tmp_path / f"{where}-{levels}.{'json' if serializer is jsonserializer else 'yaml'}"
        path.write_text(serializer.serialize({"interactions": [interaction(b) for b in bodies], "version": 1}),
                        encoding="utf-8")
        exchanges, notes = read_exchanges(path)
        judged = [e.request_body is None for e in exchanges]
        assert judged == [_too_deep(json.loads(e.raw_request or "")) for e in exchanges]
        kept = [e.request_body for e in exchanges if e.request_body is not None]
        assert kept == [b for b, dropped in zip(bodies, judged, strict=True) if not dropped]  # nothing changed
        assert sum("nested deeper than" in note for note in notes) == sum(judged)
        seen.update(judged)
    assert seen == {True, False}  # both sides of the limit were judged


def test_a_request_shares_the_history_tools_and_answers_it_resends(tmp_path: Path) -> None:
    bodies = thread("shallow", "turn")
    path = tmp_path / "c.json"
    path.write_text(jsonserializer.serialize({"interactions": [interaction(b) for b in bodies], "version": 1}),
                    encoding="utf-8")
    exchanges, _ = read_exchanges(path)
    first, second, third, fourth = (e.request_body for e in exchanges)
    assert [first, second, third, fourth] == bodies
    assert third["messages"][:3] == second["messages"] and all(
        a is b for a, b in zip(third["messages"][:3], second["messages"], strict=True))
    assert fourth["messages"][0] is first["messages"][0] and fourth["messages"][2] is not second["messages"][2]
    assert fourth["tools"] is first["tools"] and fourth["system"] is first["system"]
    assert second["messages"][1]["content"] is exchanges[0].response_body["content"]  # the answer, re-sent


def test_an_answer_re_sent_as_a_turn_is_judged_where_it_sits_in_the_request(tmp_path: Path) -> None:
    # The request shares the answer's very content list, which sits two levels deeper there than in
    # the response: a response within the limit can make the request that re-sends it too deep.
    seen: set[bool] = set()
    for levels in range(MAX_DEPTH - 8, MAX_DEPTH):
        answer = {**ANSWER, "stop_reason": "end_turn",
                  "content": [{"type": "text", "text": "x", "citations": nested(levels)}]}
        asked = {"role": "user", "content": "Hi"}
        bodies = [{"model": "m", "messages": [asked]},
                  {"model": "m", "messages": [asked, {"role": "assistant", "content": answer["content"]},
                                              {"role": "user", "content": "And?"}]}]
        path = tmp_path / f"answer-{levels}.yaml"
        cassette = {"interactions": [interaction(b) for b in bodies], "version": 1}
        for item in cassette["interactions"]:
            item["response"]["body"]["string"] = json.dumps(answer)
        path.write_text(yamlserializer.serialize(cassette), encoding="utf-8")
        exchanges, _ = read_exchanges(path)
        for exchange in exchanges:
            assert (exchange.response_body is None) == _too_deep(json.loads(exchange.raw_response or ""))
            assert (exchange.request_body is None) == _too_deep(json.loads(exchange.raw_request or ""))
        seen.add(exchanges[1].request_body is None)
    assert seen == {True, False}


def read_in_turn(texts: list[str]) -> list[Any]:
    """Each text parsed by one `SharedHistory`, and kept by it as a recording's reader keeps a request."""
    history = SharedHistory()
    parsed = []
    for text in texts:
        body = history.parse(text)
        if isinstance(body, dict):
            history.share(body)
        parsed.append(body)
    return parsed


def loads_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


ASKED = {"role": "user", "content": "Look order 1 up"}
TURN = {"role": "assistant", "content": [{"type": "text", "text": "On it"}]}


@pytest.mark.parametrize("texts", [
    # the history re-sent, spelt alike or not (separators, whitespace, key order)
    [json.dumps({"model": "m", "messages": [ASKED]}), json.dumps({"model": "m", "messages": [ASKED, TURN, ASKED]})],
    [json.dumps({"messages": [ASKED], "tools": [1]}, separators=(",", ":")),
     json.dumps({"messages": [ASKED, TURN], "tools": [1]}, separators=(",", ":")),
     json.dumps({"messages": [ASKED, TURN], "tools": [1]}, indent=2)],
    [' \n{"messages": [{"a": 1}] }\r\n', '{"messages" : [ {"a": 1} , {"b": 2} ] , "system" : "s"}'],
    # a last item that the next request extends: a number, a string, a literal
    ['{"messages": [1]}', '{"messages": [12]}', '{"messages": [1.5, 2]}', '{"messages": [1e3]}'],
    ['{"messages": ["a"]}', '{"messages": ["a", "b"]}', '{"messages": ["ab"]}', '{"messages": ["a"]}'],
    ['{"messages": [true]}', '{"messages": [true, null]}', '{"messages": [truex]}', '{"messages": [true]]}'],
    # shared keys spelt alike, then extended or followed by something else
    ['{"tools": [1], "messages": []}', '{"tools": [1], "messages": [1]}', '{"tools": [1]0, "messages": [1]}',
     '{"tools": [1]}', '{"system": "s", "tools": [1], "tools": [2]}', '{"system": "s", "tools": [2]}'],
    # repeated keys (the last wins, where the first stood), and what json.loads refuses or is not an object
    ['{"messages": [1], "model": "a", "messages": [1, 2]}', '{"messages": [1, 2, 3], "model": "b"}'],
    ['{"messages": [1]}', '{"messages": [1], }', '{"messages": [1]} x', '{"messages": [1,]}', '[{"messages": [1]}]',
     '{}', '{"messages": []}', '{"messages": [1], "n": 1' + "0" * 5000 + "}", '\ufeff{"messages": [1]}',
     '{"messages": [1], "n": NaN}', '{"messages": [1, "\\ud800"]}', '{"messages": [1, "\x01"]}', 'not json'],
])
def test_a_request_reads_as_json_loads_reads_it_whatever_it_re_sends(texts: list[str]) -> None:
    parsed = read_in_turn(texts)
    expected = [loads_or_none(text) for text in texts]
    assert json.dumps(parsed) == json.dumps(expected)  # key order too (NaN compares unequal to itself)


def test_a_request_spelling_the_history_alike_holds_the_earlier_objects_and_reads_the_rest() -> None:
    texts = [json.dumps({"system": "s", "tools": [{"name": "t"}], "messages": m})
             for m in ([ASKED], [ASKED, TURN, ASKED], [ASKED, TURN, ASKED, TURN, {"role": "user", "content": "x"}])]
    first, second, third = read_in_turn(texts)
    assert third["messages"][:3] == second["messages"] and all(
        a is b for a, b in zip(third["messages"][:3], second["messages"], strict=True))
    assert third["tools"] is first["tools"] and second["messages"][0] is first["messages"][0]
    assert third == json.loads(texts[2])


REPO = Path(__file__).resolve().parents[2]
RECORDINGS = sorted(p for folder in ("cassettes", "tests") for p in (REPO / folder).rglob("*")
                    if p.is_file() and p.suffix in (".yaml", ".yml", ".json") and "__pycache__" not in p.parts)


def test_every_recording_checks_the_same_whether_its_requests_are_read_by_json_loads_or_share_their_spelling(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped cassettes and every recording the tests hold (the corpus of real traffic included),
    checked as before `SharedHistory.parse` read requests a key at a time: the same findings and notes."""
    from harness._commands.check import check_file

    def report(path: Path) -> Any:
        return [check_file(str(path), disabled=[], whole_run=whole).to_dict() for whole in (False, True)]

    read = {path: report(path) for path in RECORDINGS}
    monkeypatch.setattr(SharedHistory, "_read_request", lambda self, text: None)  # json.loads reads them all
    differing = [str(path.relative_to(REPO)) for path in RECORDINGS if report(path) != read[path]]
    assert differing == []
    assert sum(checked[0]["calls"] for checked in read.values()) > 250  # recordings were read, not skipped
