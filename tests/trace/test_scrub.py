"""Secrets never reach disk: headers are scrubbed on the way in, and a written trace holds no key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vcr.serializers import yamlserializer

from harness.trace import REDACTED, default_secrets, find_secret, load_trace, scrub_headers

KEY = "sk-ant-api03-" + "Zx9_" * 20 + "AA"
TOKEN = "oauth-token-7f3c9a1be2d54c6e"


def test_authorization_bearer_and_x_api_key_are_redacted() -> None:
    headers = scrub_headers({"Authorization": ["Bearer abcdefghijklmnop"], "X-Api-Key": "anything-at-all",
                             "Content-Type": "application/json"})
    assert headers == {"authorization": REDACTED, "x-api-key": REDACTED, "content-type": "application/json"}


def test_credential_names_are_redacted_but_rate_limit_counters_are_kept() -> None:
    headers = scrub_headers([("Cookie", "a=b"), ("Set-Cookie", "s=1"), ("Proxy-Authorization", "Basic x"),
                             ("anthropic-api-key", "v"), ("X-Amz-Security-Token", "t"),
                             ("anthropic-ratelimit-tokens-remaining", "4000"),
                             ("anthropic-ratelimit-output-tokens-limit", "800")])
    assert {k for k, v in headers.items() if v == REDACTED} == {
        "cookie", "set-cookie", "proxy-authorization", "anthropic-api-key", "x-amz-security-token"}
    assert headers["anthropic-ratelimit-tokens-remaining"] == "4000"


def test_a_key_inside_any_other_header_is_redacted() -> None:
    headers = scrub_headers({"X-Debug-Echo": f"client sent {KEY}", "X-Forwarded-Auth": f"Bearer {TOKEN}",
                             "X-Custom": f"prefix-{TOKEN}", "Accept": ["text/event-stream", "application/json"]},
                            secrets=[TOKEN])
    assert headers["x-debug-echo"] == REDACTED
    assert headers["x-forwarded-auth"] == REDACTED
    assert headers["x-custom"] == REDACTED
    assert headers["accept"] == "text/event-stream, application/json"


class Named(str):
    """A string of another class, as a recorder's own header type may be."""


def test_every_shape_of_header_value_is_kept_as_its_text() -> None:
    # A value is its text; a list or tuple joins its items' texts, None left out; a name given twice joins.
    headers = scrub_headers([("Content-Type", ["application/json"]), (" X-One ", ("a",)), ("X-Many", ["a", None, 2]),
                             ("X-Number", 3), ("X-None", None), ("X-Empty", []), (Named("X-Named"), Named("v")),
                             ("X-List-Of-Named", [Named("w")]), ("X-Twice", "1"), ("x-twice", ["2"])])
    assert headers == {"content-type": "application/json", "x-one": "a", "x-many": "a, 2", "x-number": "3",
                       "x-none": "", "x-empty": "", "x-named": "v", "x-list-of-named": "w", "x-twice": "1, 2"}
    assert all(type(k) is str and type(v) is str for k, v in headers.items())


def test_find_secret_says_where_without_repeating_the_secret() -> None:
    where = find_secret(f'{{"note": "{TOKEN}"}}', [TOKEN])
    assert where is not None and "offset 10" in where and TOKEN not in where
    where = find_secret(f"x-api-key: {KEY}", [])
    assert where is not None and "Anthropic API key" in where and KEY not in where
    assert find_secret("nothing to see, sk-ant- alone is not a key", [TOKEN]) is None


def test_default_secrets_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", TOKEN)
    assert default_secrets() == (KEY, TOKEN)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN")
    assert default_secrets() == (KEY,)


def test_a_trace_written_to_disk_holds_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", TOKEN)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    answer = json.dumps({"type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn",
                         "usage": {"input_tokens": 1, "output_tokens": 1}})
    cassette = {"interactions": [{
        "request": {"body": body, "method": "POST", "uri": "https://api.anthropic.com/v1/messages",
                    "headers": {"X-Api-Key": [KEY], "Authorization": [f"Bearer {TOKEN}"],
                                "X-Trace-Echo": [f"k={KEY}"], "X-Session-Hint": [TOKEN]}},
        "response": {"body": {"string": answer}, "status": {"code": 200, "message": "OK"},
                     "headers": {"X-Echo": [TOKEN], "Content-Type": ["application/json"]}},
    }]}
    source = tmp_path / "with-key.yaml"
    source.write_text(yamlserializer.serialize(cassette))
    assert KEY in source.read_text()

    written = tmp_path / "trace.json"
    written.write_text(json.dumps(load_trace(source).to_dict(), ensure_ascii=False))
    text = written.read_text()
    assert KEY not in text and TOKEN not in text
    assert find_secret(text, [KEY, TOKEN]) is None
    assert text.count(REDACTED) == 5
