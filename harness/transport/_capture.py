"""Record every request an agent sends, and the answer it gets, as trace exchanges.

`CaptureTransport` wraps any httpx2 transport (live, cassette, scripted) without changing what the
agent sees: streamed bodies are teed as the SDK reads them, and the exchange is completed on close.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass

import httpx2

from ..errors import HarnessError
from ..trace import Exchange, exchange_from_http
from ..trace._model import HARNESS_ANSWER_HEADER
from ..trace._timing import REPLAY_EXTENSION

SENT_TO_EXTENSION = "harness.sent_to"
"""A request's extension: the URL its client sent it to, when the harness passes it on under another
(the endpoint forwards `http://127.0.0.1:PORT/v1/messages` as the upstream's, which a cassette
matches on), so that what the harness says about the request names what the client used."""

StreamDone = Callable[[bytes, bool, "BaseException | None"], None]
"""Called once when a teed body is closed: the bytes read, whether its end was reached, the error."""


class _Tee:
    """What the sync and async tees share: the chunks kept, how the body ended, and the one report."""

    def __init__(self, done: StreamDone, drain_on_close: bool) -> None:
        self._parts: list[bytes] = []
        self._ended = False
        self._error: BaseException | None = None
        self._finished = False
        self._done = done
        # A recorder needs the whole body even when the reader stops early (an agent that breaks
        # out of a stream); a capture keeps only what the agent actually read.
        self._drain_on_close = drain_on_close

    def _must_drain(self) -> bool:
        return self._drain_on_close and not self._ended and self._error is None

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            self._done(b"".join(self._parts), self._ended, self._error)


class TeeStream(_Tee, httpx2.SyncByteStream):
    """Pass a response body through chunk by chunk while keeping a copy of every chunk."""

    def __init__(self, inner: httpx2.SyncByteStream, done: StreamDone, *, drain_on_close: bool = False) -> None:
        super().__init__(done, drain_on_close)
        self._inner = inner
        self._iterator: Iterator[bytes] | None = None

    def __iter__(self) -> Iterator[bytes]:
        if self._iterator is None:
            self._iterator = iter(self._inner)
        try:
            for chunk in self._iterator:
                self._parts.append(chunk)
                yield chunk
        except Exception as err:
            self._error = err
            raise
        self._ended = True

    def close(self) -> None:
        try:
            if self._must_drain():
                try:
                    for chunk in self._iterator if self._iterator is not None else iter(self._inner):
                        self._parts.append(chunk)
                    self._ended = True
                except Exception as err:
                    self._error = err
            self._inner.close()
        finally:
            self._finish()


class AsyncTeeStream(_Tee, httpx2.AsyncByteStream):
    """The async twin of `TeeStream`."""

    def __init__(self, inner: httpx2.AsyncByteStream, done: StreamDone, *, drain_on_close: bool = False) -> None:
        super().__init__(done, drain_on_close)
        self._inner = inner
        self._iterator: AsyncIterator[bytes] | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._iterator is None:
            self._iterator = aiter(self._inner)
        try:
            async for chunk in self._iterator:
                self._parts.append(chunk)
                yield chunk
        except Exception as err:
            self._error = err
            raise
        self._ended = True

    async def aclose(self) -> None:
        try:
            if self._must_drain():
                try:
                    async for chunk in self._iterator if self._iterator is not None else aiter(self._inner):
                        self._parts.append(chunk)
                    self._ended = True
                except Exception as err:
                    self._error = err
            await self._inner.aclose()
        finally:
            self._finish()


def teed_response(
    response: httpx2.Response, request: httpx2.Request, stream: httpx2.SyncByteStream | httpx2.AsyncByteStream
) -> httpx2.Response:
    """A fresh response carrying `stream`: a fresh one, because a response built from `content=`
    is already read, and the client would never pull its body through the tee."""
    return httpx2.Response(
        status_code=response.status_code,
        headers=response.headers.raw,
        stream=stream,
        extensions=response.extensions,
        request=request,
    )


def raw_stream(response: httpx2.Response) -> httpx2.SyncByteStream | httpx2.AsyncByteStream:
    """The undecoded body of a response a transport returned (gzip stays gzip, as on the wire)."""
    stream = response.stream
    if not isinstance(stream, (httpx2.SyncByteStream, httpx2.AsyncByteStream)):
        raise TypeError(f"transport returned a response whose body is {type(stream).__name__}, not a byte stream")
    return stream


class Capture:
    """The exchanges seen by one or more capture transports, numbered in the order requests started."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._next_index = 0
        self._finished: dict[int, Exchange] = {}
        self._refused: dict[int, Exchange] = {}
        self._secrets: list[str] = list(secrets)
        self._in_flight = 0
        self._last_end: float | None = None
        self._first_started_at: float | None = None
        self.gate: Callable[[], None] | None = None
        """Called before each request goes on; what it raises (a HarnessError: a deadline passed)
        refuses the request, which the agent gets instead of an answer."""

    @property
    def first_started_at(self) -> float | None:
        """When the first request started (epoch seconds), where rule B003 starts a run's clock."""
        with self._lock:
            return self._first_started_at

    def activity(self) -> tuple[int, float]:
        """Requests under way now, and seconds since the last one ended (infinite if none has)."""
        with self._lock:
            idle = float("inf") if self._last_end is None else time.monotonic() - self._last_end
            return self._in_flight, idle

    def admit(self) -> None:
        """Let a request go on, or raise what the gate refuses it with."""
        if self.gate is not None:
            self.gate()

    @property
    def exchanges(self) -> list[Exchange]:
        """Completed exchanges in request order; one whose response is still open is not listed yet."""
        with self._lock:
            return [self._finished[i] for i in sorted(self._finished)]

    @property
    def refused(self) -> list[Exchange]:
        """Requests the harness itself refused (a replay miss), without an answer: not exchanges with
        a model, but what the agent sent, so the run can still check them like any other request."""
        with self._lock:
            return [self._refused[i] for i in sorted(self._refused)]

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values scrubbed from every exchange."""
        with self._lock:
            return tuple(self._secrets)

    def add_secret(self, secret: str) -> None:
        """Scrub this value too (e.g. the api_key a client was given) from exchanges made from now on."""
        with self._lock:
            if secret not in self._secrets:
                self._secrets.append(secret)

    def record(self, request: httpx2.Request, body: bytes, response: httpx2.Response, response_body: bytes) -> None:
        """Record an answer that no transport gave (the endpoint's own 404) as an exchange."""
        self._finish(self._start(request, body), response, response_body)

    def _start(self, request: httpx2.Request, body: bytes) -> _Pending:
        with self._lock:
            index = self._next_index
            self._next_index += 1
            self._in_flight += 1
            started_at = time.time()
            if self._first_started_at is None:
                self._first_started_at = started_at
        return _Pending(self, index, request, body, started_at=started_at, started=time.perf_counter())

    def _finish(
        self, pending: _Pending, response: httpx2.Response | None, response_body: bytes | None, *, refused: bool = False
    ) -> None:
        with self._lock:
            secrets = tuple(self._secrets)
        request = pending.request
        # A cassette's played answer says so, with the timing it was recorded with: the time
        # measured here is then the replay's, which must never pass for the model's.
        replay = response.extensions.get(REPLAY_EXTENSION) if response is not None else None
        recorded = replay if isinstance(replay, dict) else {}
        # A refusal has no answer from a model: marked as the harness's own, no rule blames the agent for it.
        harness_answer = {HARNESS_ANSWER_HEADER: "refused"} if refused else {}
        exchange = exchange_from_http(
            pending.index,
            request.method,
            str(request.url),
            dict(request.headers.items()),
            pending.body,
            response.status_code if response is not None else None,
            dict(response.headers.items()) if response is not None else harness_answer,
            response_body,
            started_at=pending.started_at,
            duration_s=time.perf_counter() - pending.started,
            replayed=replay is not None,
            recorded_started_at=recorded.get("started_at"),
            recorded_duration_s=recorded.get("duration_s"),
            secrets=secrets,
        )
        with self._lock:
            (self._refused if refused else self._finished)[pending.index] = exchange
            self._in_flight -= 1
            self._last_end = time.monotonic()


@dataclass(frozen=True)
class _Pending:
    """A request on its way: its place in the capture's order, and when it started."""

    capture: Capture
    index: int
    request: httpx2.Request
    body: bytes
    started_at: float
    """Wall clock (epoch seconds), for the exchange."""
    started: float
    """perf_counter, for the duration."""

    @contextlib.contextmanager
    def forwarding(self) -> Iterator[None]:
        """Around the call to the inner transport: a request that got no answer is still an exchange."""
        try:
            yield
        except HarnessError:
            # The harness itself refused the request (a replay miss): nothing reached a model, so it
            # is no exchange; the run reports the refusal, and checks the request that caused it.
            self.capture._finish(self, None, None, refused=True)
            raise
        except Exception:
            self.capture._finish(self, None, None)
            raise

    def on_close(self, response: httpx2.Response) -> StreamDone:
        """The tee's report: the exchange is complete once the agent has closed the body."""

        def done(read: bytes, ended: bool, error: BaseException | None) -> None:
            self.capture._finish(self, response, read)

        return done


class CaptureTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Forward to `inner` and record each request/response into `capture` (sync and async)."""

    def __init__(
        self,
        inner: httpx2.BaseTransport | httpx2.AsyncBaseTransport,
        capture: Capture | None = None,
        *,
        close_inner: bool = True,
    ) -> None:
        self.inner = inner
        self.capture = capture if capture is not None else Capture()
        # Several clients of one session share the inner transport; the session closes it once.
        self._close_inner = close_inner

    @property
    def exchanges(self) -> list[Exchange]:
        return self.capture.exchanges

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not isinstance(self.inner, httpx2.BaseTransport):
            raise TypeError(f"{type(self.inner).__name__} is async only: use it from an async client")
        pending = self.capture._start(request, request.read())
        with pending.forwarding():
            self.capture.admit()
            response = self.inner.handle_request(request)
        stream = raw_stream(response)
        if not isinstance(stream, httpx2.SyncByteStream):
            raise TypeError(f"{type(self.inner).__name__} returned an async body to a sync client")
        return teed_response(response, request, TeeStream(stream, pending.on_close(response)))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not isinstance(self.inner, httpx2.AsyncBaseTransport):
            raise TypeError(f"{type(self.inner).__name__} is sync only: use it from a sync client")
        pending = self.capture._start(request, await request.aread())
        with pending.forwarding():
            self.capture.admit()
            response = await self.inner.handle_async_request(request)
        stream = raw_stream(response)
        if not isinstance(stream, httpx2.AsyncByteStream):
            raise TypeError(f"{type(self.inner).__name__} returned a sync body to an async client")
        return teed_response(response, request, AsyncTeeStream(stream, pending.on_close(response)))

    def close(self) -> None:
        if self._close_inner and isinstance(self.inner, httpx2.BaseTransport):
            self.inner.close()

    async def aclose(self) -> None:
        if self._close_inner and isinstance(self.inner, httpx2.AsyncBaseTransport):
            await self.inner.aclose()
