"""The shared rate limiter of live and recording runs, against the scripted model served as the API.

The scripted model sends what the API sends when it limits: a 429 with `retry-after`, and
`anthropic-ratelimit-*` headers. Waits are checked from when the server received each request
(a lower bound only, which load cannot break), and from the limiter's own count of held requests.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from seam_helpers import FAKE_KEY

from harness.cli import main
from harness.results import read_results
from harness.transport import open_session
from harness.transport._ratelimit import MAX_WAIT_S, RateLimiter, shared_limiter
from harness.transport.scripted import ScriptedModel

HI: list[Any] = [{"role": "user", "content": "hi"}]
MODEL = "claude-sonnet-5"


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Serve the scripted model over HTTP as the API live runs call (ANTHROPIC_BASE_URL)."""

    @contextmanager
    def serve(steps: Sequence[Mapping[str, Any]]) -> Iterator[tuple[ScriptedModel, dict[str, str]]]:
        model = ScriptedModel(steps)
        with model.serve() as base_url:
            env = {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            yield model, env

    return serve


def ask(env: dict[str, str]) -> Any:
    """One call from a live run of its own (a session of its own, as each run has)."""
    with open_session("live") as session:
        return session.client(max_retries=0).messages.create(model=MODEL, max_tokens=8, messages=HI)


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_429s_retry_after_holds_the_next_request_of_every_run(api: Any) -> None:
    with api([{"error": {"status": 429, "retry_after": 1}}, {"text": "hi"}]) as (model, env):
        with pytest.raises(anthropic.RateLimitError):
            ask(env)
        ask(env)  # another run: its request waits out the first run's retry-after
        limited, held = model.requests
    assert held.received_at - limited.received_at >= 1.0
    limiter = shared_limiter(env["ANTHROPIC_BASE_URL"], FAKE_KEY)
    assert limiter.holds == 1 and limiter.why == "retry-after: 1"


@pytest.mark.parametrize("kind", ["requests", "tokens", "input-tokens", "output-tokens"])
def test_a_limit_used_up_holds_every_run_until_its_reset(api: Any, kind: str) -> None:
    reset = math.ceil(time.time()) + 1
    headers = {f"anthropic-ratelimit-{kind}-limit": 50, f"anthropic-ratelimit-{kind}-remaining": 0,
               f"anthropic-ratelimit-{kind}-reset": rfc3339(reset)}
    with api([{"text": "one", "headers": headers}, {"text": "two"}]) as (model, env):
        ask(env)
        ask(env)
        first, second = model.requests
    assert second.received_at >= reset
    assert shared_limiter(env["ANTHROPIC_BASE_URL"],
                          FAKE_KEY).why.startswith(f"anthropic-ratelimit-{kind}-remaining: 0")


def test_a_limit_not_used_up_holds_nothing(api: Any) -> None:
    headers = {"anthropic-ratelimit-requests-remaining": 3,
               "anthropic-ratelimit-requests-reset": rfc3339(time.time() + 30)}
    with api([{"text": "one", "headers": headers}, {"text": "two"}]) as (_, env):
        ask(env)
        ask(env)
    assert shared_limiter(env["ANTHROPIC_BASE_URL"], FAKE_KEY).holds == 0


def test_the_runs_own_sdk_retry_goes_after_the_wait_it_was_told(api: Any) -> None:
    # The SDK honours retry-after itself; the limiter holds it no longer than that.
    with api([{"error": {"status": 529, "retry_after": 0.5}}, {"text": "hi"}]) as (model, env):
        with open_session("live") as session:
            session.client(max_retries=1).messages.create(model=MODEL, max_tokens=8, messages=HI)
        limited, retried = model.requests
    assert retried.received_at - limited.received_at >= 0.5
    assert retried.retry_count == 1


def test_replay_and_scripted_runs_are_never_held(api: Any) -> None:
    with api([{"error": {"status": 429, "retry_after": 30}}]) as (model, env):
        with pytest.raises(anthropic.RateLimitError):
            ask(env)
    scripted = ScriptedModel([{"text": "hi"}])
    with open_session("scripted", script=scripted) as session:
        session.client().messages.create(model=MODEL, max_tokens=8, messages=HI)  # does not wait 30 s
    assert scripted.requests[0].step == 1


@pytest.mark.parametrize(
    ("status", "headers", "wait"),
    [
        (429, {"retry-after": "2"}, 2.0),
        (429, {"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        (503, {"retry-after": "Tue, 01 Dec 2026 06:00:04 GMT"}, 4.0),
        (429, {"retry-after": "3600"}, MAX_WAIT_S),
        (429, {"retry-after": "soon"}, 0.0),
        (200, {"retry-after": "5"}, 0.0),  # only an answer that failed asks to wait by retry-after
        (200,
         {"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": "2026-12-01T06:00:03Z"},
         3.0),
        (200, {"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": "garbage"}, 0.0),
        (200, {"anthropic-ratelimit-requests-remaining": "0"}, 0.0),
    ],
)
def test_what_each_answer_asks_for(status: int, headers: dict[str, str], wait: float) -> None:
    now = datetime(2026, 12, 1, 6, 0, 0, tzinfo=UTC).timestamp()
    limiter = RateLimiter(clock=lambda: now)
    limiter.observe(status, httpx2.Headers(headers))
    assert limiter.wait() == pytest.approx(wait)


CONCURRENT = """name: {name}
prompt: hi
model: claude-sonnet-5
mode: live
headers: {{x-harness-thread: {name}}}
"""


def test_concurrent_runs_of_harness_run_wait_on_one_429(
    api: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run `limited` gets a 429 asking for 3 s at once. Run `busy` is working meanwhile (a tool
    # taking 1 s), then asks again: its request waits out the other run's 429 instead of meeting its own.
    steps = [
        {"error": {"status": 429, "retry_after": 3}, "thread": "limited"},
        {"text": "Done.", "thread": "limited"},
        {"tool_use": {"name": "work", "input": {}}, "thread": "busy"},
        {"text": "Worked.", "thread": "busy"},
    ]
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "limited.yaml").write_text(CONCURRENT.format(name="limited"))
    (folder / "busy.yaml").write_text(CONCURRENT.format(name="busy") + "tools: [{name: work, fixture: "
                                                                       "{output: ok, delay_s: 1}}]\n")
    with api(steps) as (model, _):
        status = main(["run", str(folder), "-j", "2", "--results", str(tmp_path / "r.jsonl"), "--no-report"])
        requests = model.requests
    assert status == 0
    assert {r.scenario: r.status for r in read_results(tmp_path / "r.jsonl")} == {"limited": "passed", "busy": "passed"}
    [limited] = [r for r in requests if r.step == 1]
    [after] = [r for r in requests if r.step == 4]  # busy's second call, sent once its tool was done
    assert after.received_at - limited.received_at >= 3.0
    assert "request(s) held " in capsys.readouterr().out  # busy's; limited's own retry, too, if it came early


def test_requests_are_metered_to_what_is_left_until_the_reset() -> None:
    now = datetime(2026, 12, 1, 6, 0, 0, tzinfo=UTC).timestamp()
    limiter = RateLimiter(clock=lambda: now)
    window = {"anthropic-ratelimit-requests-reset": "2026-12-01T06:00:10Z"}
    limiter.observe(200, httpx2.Headers({**window, "anthropic-ratelimit-requests-remaining": "2"}))
    assert [limiter.take(), limiter.take()] == [0.0, 0.0]
    assert limiter.take() == pytest.approx(10.0)  # a third would be over: it waits for the reset
    # A late answer of the same window that counted fewer requests does not give slots back.
    limiter.observe(200, httpx2.Headers({**window, "anthropic-ratelimit-requests-remaining": "5"}))
    assert limiter.take() == pytest.approx(10.0)
    # The next window starts with what the API says is left in it.
    limiter.observe(200, httpx2.Headers({"anthropic-ratelimit-requests-reset": "2026-12-01T06:01:00Z",
                                         "anthropic-ratelimit-requests-remaining": "1"}))
    assert [limiter.take(), limiter.take()] == [0.0, pytest.approx(60.0)]
