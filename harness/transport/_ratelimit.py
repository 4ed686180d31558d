"""One rate limiter per API key and base URL, shared by every live and recording run of the process.

Sixteen concurrent runs against a rate-limited API would otherwise each find the limit alone: each
gets its own 429, backs off by itself, and the retries arrive together. Here the first answer that
says to wait holds every run's next request until then: a `retry-after` (or `retry-after-ms`) on a
429, 529 or 5xx, and any `anthropic-ratelimit-<kind>-remaining: 0` until its `-reset` time
(requests, tokens, input-tokens, output-tokens, and whatever kind the API adds). Requests are also
metered: once an answer said how many requests are left until the reset, no more than that many
go before it. A request already on its way is not held; the SDK's own retry of the answer that said
to wait goes at the same time.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Callable
from datetime import datetime
from email.utils import parsedate_to_datetime

import httpx2

MAX_WAIT_S = 60.0
"""Longest hold one answer can ask for; the SDKs too ignore a longer retry-after (a clock skew, a typo)."""
_PREFIX = "anthropic-ratelimit-"
_REMAINING = "-remaining"


class RateLimiter:
    """When the next request may go, from what the API's answers said."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._until = 0.0
        self._why = ""
        self._requests_left: int | None = None
        """Requests the API said are left before `_requests_reset`, less those sent since."""
        self._requests_reset = 0.0
        self.holds = 0
        """Requests that were held back."""
        self.held_s = 0.0
        """Seconds they waited in all."""

    def wait(self) -> float:
        """Seconds the next request must wait now (0 when it may go)."""
        with self._lock:
            return max(0.0, self._until - self._clock())

    def take(self) -> float:
        """Let a request go (0), counting it against the requests left; or the seconds it must wait."""
        with self._lock:
            now = self._clock()
            if self._until > now:
                return self._until - now
            if self._requests_left is not None and now < self._requests_reset:
                if self._requests_left <= 0:
                    return min(self._requests_reset - now, MAX_WAIT_S)
                self._requests_left -= 1
            return 0.0

    @property
    def why(self) -> str:
        """What the last answer that asked to wait said, e.g. `retry-after: 2` or `...-requests-remaining: 0`."""
        with self._lock:
            return self._why

    def held(self, seconds: float) -> None:
        with self._lock:
            self.holds += 1
            self.held_s += seconds

    def observe(self, status: int, headers: httpx2.Headers) -> None:
        """Read an answer's rate-limit headers: hold every request until the latest time they name."""
        now = self._clock()
        self._meter(headers, now)
        waits: list[tuple[float, str]] = []
        if status == 429 or status >= 500:
            after = _retry_after(headers, now)
            if after is not None:
                waits.append(after)
        for name, value in headers.items():
            name = name.lower()
            if not (name.startswith(_PREFIX) and name.endswith(_REMAINING)) or value.strip() not in ("0", "0.0"):
                continue
            reset = headers.get(name[: -len(_REMAINING)] + "-reset")
            at = _timestamp(reset) if reset else None
            if at is not None:
                waits.append((at - now, f"{name}: 0 until {reset}"))
        if not waits:
            return
        seconds, why = max(waits)
        until = now + min(max(seconds, 0.0), MAX_WAIT_S)
        with self._lock:
            if until > self._until:
                self._until, self._why = until, why


    def _meter(self, headers: httpx2.Headers, now: float) -> None:
        """Keep the requests left until the reset: the API's count, less what went since in the same window."""
        left, reset = headers.get(f"{_PREFIX}requests{_REMAINING}"), headers.get(f"{_PREFIX}requests-reset")
        at = _timestamp(reset) if reset else None
        if left is None or at is None or not left.strip().isdigit() or at <= now:
            return
        with self._lock:
            if at > self._requests_reset or self._requests_left is None:
                self._requests_left, self._requests_reset = int(left), at
            else:  # the same window: answers to requests sent earlier may arrive later
                self._requests_left = min(self._requests_left, int(left))
            if self._requests_left <= 0:
                self._why = f"{_PREFIX}requests{_REMAINING}: 0 until {reset}"


def _retry_after(headers: httpx2.Headers, now: float) -> tuple[float, str] | None:
    """The wait a `retry-after-ms` or `retry-after` header asks for (seconds, or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000, f"retry-after-ms: {millis}"
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value), f"retry-after: {value}"
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - now, f"retry-after: {value}"
    except (TypeError, ValueError):
        return None


def _timestamp(text: str) -> float | None:
    """An RFC 3339 time (`2026-12-01T06:30:00Z`) as epoch seconds, None when it is not one."""
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


_LIMITERS: dict[tuple[str, str], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def shared_limiter(base_url: str, api_key: str) -> RateLimiter:
    """The process's one limiter for this API and key (rate limits are an organization's, per key)."""
    # The key itself is never kept: a digest tells keys apart as well.
    key = (base_url.rstrip("/"), hashlib.sha256(api_key.encode()).hexdigest())
    with _LIMITERS_LOCK:
        return _LIMITERS.setdefault(key, RateLimiter())


def holds_so_far() -> tuple[int, float]:
    """Requests held by every limiter of the process so far, and the seconds they waited in all."""
    with _LIMITERS_LOCK:
        limiters = list(_LIMITERS.values())
    return sum(limiter.holds for limiter in limiters), sum(limiter.held_s for limiter in limiters)


class RateLimitedTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Hold each request until `limiter` lets it go, and tell the limiter what each answer said."""

    def __init__(self, inner: httpx2.BaseTransport | httpx2.AsyncBaseTransport, limiter: RateLimiter) -> None:
        self.inner = inner
        self.limiter = limiter

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not isinstance(self.inner, httpx2.BaseTransport):
            raise TypeError(f"{type(self.inner).__name__} is async only: use it from an async client")
        waited = 0.0
        # Again after each wait: another run's answer may have pushed the time further meanwhile.
        while (wait := self.limiter.take()) > 0:
            time.sleep(wait)
            waited += wait
        if waited:
            self.limiter.held(waited)
        response = self.inner.handle_request(request)
        self.limiter.observe(response.status_code, response.headers)
        return response

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not isinstance(self.inner, httpx2.AsyncBaseTransport):
            raise TypeError(f"{type(self.inner).__name__} is sync only: use it from a sync client")
        waited = 0.0
        while (wait := self.limiter.take()) > 0:
            await asyncio.sleep(wait)
            waited += wait
        if waited:
            self.limiter.held(waited)
        response = await self.inner.handle_async_request(request)
        self.limiter.observe(response.status_code, response.headers)
        return response

    def close(self) -> None:
        if isinstance(self.inner, httpx2.BaseTransport):
            self.inner.close()

    async def aclose(self) -> None:
        if isinstance(self.inner, httpx2.AsyncBaseTransport):
            await self.inner.aclose()
