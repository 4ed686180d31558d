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
from harness.trace._exchange import MAX_DEPTH, _too_deep

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
