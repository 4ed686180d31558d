"""E rules: transient errors retried after a back-off (retry-after honoured, bounded); 4xx never re-sent as is."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import pytest
from recordings import Conversation, Recording, check, codes, text

from harness.checks import check_trace
from harness.trace import build_trace
from harness.transport import CaptureTransport
from harness.transport.scripted import ScriptedModel


@pytest.mark.parametrize("gap", [0.0, 0.004])
def test_e001_a_retry_with_no_back_off(conv: Conversation, recording: Recording, gap: float) -> None:
    # A loop that asks again at once still leaves the milliseconds it took to build the request again.
    conv.user("Hi")
    conv.fail(529)
    conv.call(text("Hello."), gap=gap)
    findings = check(recording)
    assert codes(findings) == {"E001"}
    assert f"started {gap:.3f}s after attempt 1 (529 overloaded_error) ended: no back-off" in findings[0].message


@pytest.mark.parametrize("gap", [0.097, 0.375, 2.0])
def test_e001_a_back_off_without_retry_after_is_fine_even_measured_a_little_short(
    conv: Conversation, recording: Recording, gap: float
) -> None:
    # 0.1 s waited, read 0.097 s on rounded stamps with an early timer; the SDKs' shortest wait; a long one.
    conv.user("Hi")
    conv.fail(503, "api_error")
    conv.call(text("Hello."), gap=gap)
    assert check(recording, whole_run=True) == []


def test_e001_a_short_retry_after_honoured_is_a_back_off(conv: Conversation, recording: Recording) -> None:
    # The server names the wait: 10 ms honoured is enough, however short next to a wait of one's own.
    conv.user("Hi")
    conv.fail(429, "rate_limit_error", retry_after="0.01")
    conv.call(text("Hello."), gap=0.01)
    assert check(recording, whole_run=True) == []


def test_e001_a_retry_before_retry_after(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(429, "rate_limit_error", retry_after="2")
    conv.call(text("Hello."), gap=0.5)
    findings = check(recording)
    assert codes(findings) == {"E001"}
    assert "retry-after of 2s" in findings[0].message


def test_e001_retry_after_honoured_is_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(429, "rate_limit_error", retry_after="2")
    conv.fail(503, "api_error", gap=2.0)
    conv.call(text("Hello."), gap=1.6)
    trace = recording.trace()
    assert [a.status for a in trace.calls[0].attempts] == [429, 503, 200]
    assert check(recording, whole_run=True) == []


def test_e001_a_retry_after_honoured_measures_a_few_ms_short_on_rounded_stamps(
    conv: Conversation, recording: Recording
) -> None:
    # HAR keeps milliseconds and a timer may fire a millisecond early: 0.3 s honoured can read 0.297 s.
    conv.user("Hi")
    conv.fail(529, retry_after="0.3")
    conv.call(text("Hello."), gap=0.297)
    assert check(recording, whole_run=True) == []


def test_e001_a_retry_clearly_before_retry_after_is_caught_however_slow_the_machine(
    conv: Conversation, recording: Recording
) -> None:
    conv.user("Hi")
    conv.fail(529, retry_after="0.3")
    conv.call(text("Hello."), gap=0.25)
    assert codes(check(recording)) == {"E001"}


def test_e001_retries_beyond_the_bound(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    for _ in range(6):
        conv.fail(529, gap=1.0)
    conv.call(text("Hello."), gap=1.0)
    findings = check(recording)
    assert codes(findings) == {"E001"} and "retried 6 times" in findings[0].message
    assert check(recording, options={"max_retries": 6}) == []


def test_e001_a_transient_failure_never_retried(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(529)
    assert codes(check(recording), "warning") == {"E001"}
    assert codes(check(recording, whole_run=True)) == {"E001"}


def test_e002_a_client_error_re_sent_unchanged(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(404, "not_found_error")
    conv.fail(404, "not_found_error", gap=1.0)
    findings = check(recording)
    assert codes(findings) == {"E002"}
    assert "attempt 2" in findings[0].message and "404 not_found_error" in findings[0].message


def test_e002_the_same_body_sent_again_by_a_later_call(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(400, "invalid_request_error")
    other = recording.conversation(system="You write haiku.")
    other.user("A haiku about refunds")
    other.call(text("Money flows back home"))
    conv.fail(400, "invalid_request_error")
    findings = check(recording)
    assert codes(findings) == {"E002"}
    assert findings[0].call == 2


def test_e002_a_fixed_request_or_an_exempt_status_is_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(400, "invalid_request_error")
    conv.model = "claude-opus-4-8"
    conv.call(text("Hello."))
    again = recording.conversation(system="Other agent.")
    again.user("Hi")
    again.fail(409, "conflict_error")
    again.call(text("Hello."), gap=1.0)
    assert check(recording, whole_run=True) == []


def test_e001_an_answer_saying_x_should_retry_false_is_not_expected_to_be_retried(
        conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(500, "api_error", should_retry=False)
    assert check(recording, whole_run=True) == []


def test_e001_retrying_what_the_server_said_not_to_retry(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(529, should_retry=False)
    conv.call(text("Hello."), gap=2.0)
    findings = check(recording)
    assert codes(findings) == {"E001"}
    assert "attempt 2 re-sends the request although the answer to attempt 1 (529 overloaded_error) said " \
           "x-should-retry: false" in findings[0].message


def test_e001_on_the_sdk_obeying_x_should_retry_false_from_the_scripted_model() -> None:
    """The real SDK, default retries, against the harness's scripted model: a 500 that says not to retry
    (scripted, and the harness's own "script ran out" answer) is sent once, and that is correct."""
    model = ScriptedModel([{"error": {"status": 500, "should_retry": False}}, {"text": "Only answer."}])
    capture = CaptureTransport(model.transport())
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=httpx2.Client(transport=capture))
    ask: dict[str, Any] = {"model": "claude-opus-4-8", "max_tokens": 64,
                           "messages": [{"role": "user", "content": "Hi"}]}
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(**ask)
    client.messages.create(**{**ask, "messages": [{"role": "user", "content": "Hi again"}]})
    with pytest.raises(anthropic.InternalServerError, match="script ran out"):
        client.messages.create(**{**ask, "messages": [{"role": "user", "content": "More"}]})
    exchanges = capture.exchanges
    assert [e.status for e in exchanges] == [500, 200, 500]  # no retries: the SDK obeyed the header
    trace = build_trace(exchanges, "sdk", whole_run=True)
    assert [f for f in check_trace(trace, whole_run=True) if f.code == "E001"] == []


def test_e001_is_quiet_on_the_sdk_backing_off_from_the_scripted_model() -> None:
    """The real SDK's own back-off (no retry-after: 0.375 s or more) and its honouring of a short
    retry-after: a loaded machine only makes the measured waits longer, so this holds on any."""
    model = ScriptedModel([
        {"error": {"status": 529}}, {"error": {"status": 429, "retry_after": 0.01}}, {"text": "Hi."},
    ])
    capture = CaptureTransport(model.transport())
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=httpx2.Client(transport=capture))
    client.messages.create(model="claude-opus-4-8", max_tokens=64, messages=[{"role": "user", "content": "Hi"}])
    trace = build_trace(capture.exchanges, "sdk", whole_run=True)
    assert [a.status for a in trace.calls[0].attempts] == [529, 429, 200]
    assert check_trace(trace, whole_run=True) == []


def test_e_rules_follow_the_sdk_on_a_409_and_a_408() -> None:
    """The SDK retries 408 and 409 (lock timeout) as it does 429 and 5xx (`_should_retry`): its retries
    are attempts of one call, neither a resend of a bad request (E002) nor a retry without back-off
    (E001); and a 409 given up at once is the unretried failure E001 names, as the SDK would retry it."""
    model = ScriptedModel([{"error": {"status": 409}}, {"error": {"status": 408}}, {"text": "Hi."},
                           {"error": {"status": 409}}])
    capture = CaptureTransport(model.transport())
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=httpx2.Client(transport=capture))
    ask: dict[str, Any] = {"model": "claude-opus-4-8", "max_tokens": 64,
                           "messages": [{"role": "user", "content": "Hi"}]}
    client.messages.create(**ask)
    with pytest.raises(anthropic.ConflictError):
        client.with_options(max_retries=0).messages.create(**{**ask, "messages": [{"role": "user", "content": "Bye"}]})
    trace = build_trace(capture.exchanges, "sdk", whole_run=True)
    assert [[a.status for a in call.attempts] for call in trace.calls] == [[409, 408, 200], [409]]
    [finding] = check_trace(trace, whole_run=True)
    assert (finding.code, finding.call) == ("E001", 1)
    assert finding.message.startswith("the call failed with 409 ") and "retry 408, 409, 429 and 5xx" in finding.message
