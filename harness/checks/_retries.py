"""E rules: transient errors are retried after a back-off, a bounded number of times; others are not re-sent as is.

Attempts of one call live in `Call.attempts` (the trace groups an identical re-send after a failure);
a re-send interleaved with other calls shows up as a later call with the same body, found by index.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from ..trace._model import Exchange, Trace
from ._examples import ERRORS_DOC, MODEL
from ._registry import DEFAULT_MAX_RETRIES, CheckContext, Example, Finding, rule
from ._wire import trace_index

NOT_RESENT_EXEMPT = frozenset({408, 409, 429})
# A wait this much shorter than retry-after still honours it. Three rounded stamps make one gap
# (HAR and the harness's cassettes keep milliseconds), and timers may fire a millisecond early
# (Node's setTimeout): a back-off that honoured retry-after can measure a few ms short, on any machine.
_CLOCK_SLACK_S = 0.01
# ...plus this share of the wait: the stamps come from the wall clock, which NTP may slew while the
# client sleeps (0.05% at most), and a long retry-after gives it time to.
_CLOCK_SLACK_SHARE = 0.01
# A back-off is a deliberate wait. When the answer names none (no retry-after), E001 asks for at least
# this long: the SDKs' first wait is 0.375 s or more (0.5 s less a quarter of jitter), and common
# retry libraries start at 0.5 s to 4 s, while a loop that asks again at once leaves a few
# milliseconds between attempts, tens on a loaded machine. A gap measured only a little short of it
# (rounded stamps, an early timer) is let pass by the same clock slack as retry-after.
MIN_BACKOFF_S = 0.1
# Ruby VCR's `recorded_at` (an HTTP date) keeps whole seconds and no duration: two attempts a
# back-off of 0.5 s apart often carry the same second, which proves nothing about the wait.
_WHOLE_SECOND_SLACK_S = 1.0


def _failed(exchange: Exchange) -> bool:
    return not exchange.ok or not exchange.stream_complete


def _describe(exchange: Exchange) -> str:
    kind = ""
    error = exchange.stream_error
    if error is None and isinstance(exchange.response_body, dict):
        inner = exchange.response_body.get("error")
        error = inner if isinstance(inner, dict) else None
    if error is not None:
        kind = f" {error.get('type')}"
    if exchange.status is None:
        return "no answer (connection error)"
    if exchange.ok and not exchange.stream_complete:
        return "a stream cut before message_stop"
    return f"{exchange.status}{kind}"


def retry_after_s(exchange: Exchange) -> float | None:
    """The wait the server asked for, from retry-after-ms or retry-after (seconds)."""
    headers = {k.lower(): v for k, v in exchange.response_headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue  # an HTTP-date: nothing to compare it with but the recording's own clock
    return None


def should_retry(exchange: Exchange) -> bool | None:
    """The server's own word on retrying (`x-should-retry: true|false`), which the SDKs obey over their
    policy; None when the answer does not say."""
    value = next((v for k, v in exchange.response_headers.items() if k.lower() == "x-should-retry"), None)
    if value is None:
        return None
    word = value.strip().lower()
    return True if word == "true" else False if word == "false" else None


def _clock_slack(failed: Exchange, again: Exchange) -> float:
    """How far the recorded gap between two attempts may be from the real one."""
    whole_seconds = all(t is not None and float(t).is_integer() for t in (failed.started_at, again.started_at))
    return _WHOLE_SECOND_SLACK_S if whole_seconds and failed.duration_s is None else _CLOCK_SLACK_S


def _client_error(exchange: Exchange) -> bool:
    status = exchange.status
    return status is not None and 400 <= status < 500 and status not in NOT_RESENT_EXEMPT


@rule(
    "E001", "429, 529 and 5xx are retried after a back-off honouring retry-after; retries are bounded",
    reads=("attempts", "headers"),
    warning="when the recording may be a fragment and simply ends after the failure",
    why="Overload and rate limits pass; retrying at once keeps hitting them (and adds to the overload), "
        "never retrying fails runs that a short wait would have saved, and retrying without bound never ends.",
    fix="Retry transient errors with exponential back-off and jitter, wait at least retry-after, cap the "
        "retries (the SDKs do this with max_retries).",
    docs=(ERRORS_DOC, "https://platform.claude.com/docs/en/api/rate-limits"),
    example=Example((
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}, "status": 529,
         "response": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
         "at": 0.0, "duration_s": 0.1},
        {"request": {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]},
         "response": {"content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"},
         "at": 0.1, "duration_s": 0.5},
    )),
)
def retried_with_backoff(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A call that got 429, 529 or another 5xx (or a stream cut short) is retried, after a back-off that
    honours the answer's `retry-after` / `retry-after-ms` when given (at least 0.1 s when not: an
    attempt sent at once is no back-off), and no more than `max_retries`
    times (default 5). An answer that says `x-should-retry: false` is not retried: the SDKs obey it.
    An answer the harness gave itself (`x-harness-answer`: a replay miss, a script that ran out) is
    never judged: no wait would have changed it."""
    max_retries = ctx.option("max_retries", DEFAULT_MAX_RETRIES)
    index = trace_index(trace)
    for call in trace.calls:
        attempts = call.attempts
        retries = len(attempts) - 1
        if isinstance(max_retries, int) and retries > max_retries:
            yield ctx.finding("E001", call, f"the call was retried {retries} times, more than the bound of "
                              f"{max_retries}; cap retries and surface the error")
        for n, (failed, again) in enumerate(pairwise(attempts), start=1):
            if not (_failed(failed) and failed.retryable):
                continue
            if should_retry(failed) is False:
                yield ctx.finding("E001", call, f"attempt {n + 1} re-sends the request although the answer to attempt "
                                  f"{n} ({_describe(failed)}) said x-should-retry: false; do not retry what the "
                                  "server says will fail again (the SDKs obey this header)")
                continue
            if failed.started_at is None or again.started_at is None:
                continue
            gap = again.started_at - (failed.started_at + (failed.duration_s or 0.0))
            wait = retry_after_s(failed)
            slack = _clock_slack(failed, again)
            if slack > _CLOCK_SLACK_S and gap < slack:
                # Whole-second stamps: only a retry-after the gap cannot have covered is proven broken.
                if wait is not None and gap + slack < wait:
                    yield ctx.finding("E001", call, f"attempt {n + 1} started within {gap + slack:g}s of attempt {n} "
                                      f"({_describe(failed)}), before its retry-after of {wait:g}s")
                continue
            if wait is None and gap < MIN_BACKOFF_S - slack:
                yield ctx.finding("E001", call, f"attempt {n + 1} started {gap:.3f}s after attempt {n} "
                                  f"({_describe(failed)}) ended: no back-off (the answer gave no retry-after, "
                                  f"and a wait is at least {MIN_BACKOFF_S:g}s); wait (exponential back-off) "
                                  "before retrying")
            elif wait is not None and gap < wait - slack - wait * _CLOCK_SLACK_SHARE:
                yield ctx.finding("E001", call, f"attempt {n + 1} started {gap:.3f}s after attempt {n} "
                                  f"({_describe(failed)}) ended, before its retry-after of {wait:g}s")
        final = call.final
        if (len(attempts) == 1 and _failed(final) and final.retryable and should_retry(final) is not False
                and not index.later_with_body(call)):
            yield ctx.at_end("E001", call, f"the call failed with {_describe(final)} and was never retried; "
                             "retry 408, 409, 429 and 5xx after a back-off, as the SDKs do")


@rule(
    "E002", "A 4xx other than 408/409/429 is not re-sent unchanged",
    # "Unchanged" compares request bodies: spans without the messages or the other parameters make
    # every request look alike, and a loop that fixed its request would be called a resender.
    reads=("attempts", "content", "request"),
    why="A 400, 401, 403 or 404 says the request itself is wrong: sent again as is, it fails again, "
        "wasting time and hiding the real error behind a retry loop.",
    fix="Surface the error, or fix the request (the model id, the parameters, the key) before sending it again.",
    docs=(ERRORS_DOC,),
    example=Example((
        {"request": {"model": "claude-sonet-4-5", "messages": [{"role": "user", "content": "Hi"}]}, "status": 404,
         "response": {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-sonet-4-5"}},
         "at": 0.0, "duration_s": 0.1},
        {"request": {"model": "claude-sonet-4-5", "messages": [{"role": "user", "content": "Hi"}]}, "status": 404,
         "response": {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-sonet-4-5"}},
         "at": 2.0, "duration_s": 0.1},
    )),
)
def client_errors_not_resent(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
    """A request answered with a 4xx other than 408, 409 or 429 is not sent again unchanged."""
    index = trace_index(trace)
    for call in trace.calls:
        for n, (failed, again) in enumerate(pairwise(call.attempts), start=1):
            if _client_error(failed) and again.request_body == failed.request_body:
                yield ctx.finding("E002", call, f"attempt {n + 1} re-sends unchanged the request that got "
                                  f"{_describe(failed)}; fix the request instead of sending it again")
        final = call.final
        if _client_error(final):
            later = index.later_with_body(call)
            if later:
                yield ctx.finding("E002", later[0], f"this request is the one that got {_describe(final)} at "
                                  f"{call.where}, sent again unchanged; fix the request "
                                  "instead of sending it again")
