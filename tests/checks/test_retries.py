"""E rules: transient errors retried after a back-off (retry-after honoured, bounded); 4xx never re-sent as is."""

from __future__ import annotations

from .conftest import Conversation, Recording, check, codes, text


def test_e001_a_retry_with_no_back_off(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.fail(529)
    conv.call(text("Hello."), gap=0.0)
    findings = check(recording)
    assert codes(findings) == {"E001"}
    assert "no back-off" in findings[0].message and "529 overloaded_error" in findings[0].message


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
