"""Record every request an agent sends, and the answer it gets, as trace exchanges.

`CaptureTransport` wraps any httpx2 transport (live, cassette, scripted) without changing what the
agent sees: streamed bodies are teed as the SDK reads them, and the exchange is completed on close.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator

import httpx2

from ..errors import HarnessError
from ..trace import Exchange, exchange_from_http

StreamDone = Callable[[bytes, bool, "BaseException | None"], None]
"""Called once when a teed body is closed: the bytes read, whether its end was reached, the error."""


class TeeStream(httpx2.SyncByteStream):
    """Pass a response body through chunk by chunk while keeping a copy of every chunk."""

    def __init__(self, inner: httpx2.SyncByteStream, done: StreamDone, *, drain_on_close: bool = False) -> None:
        self._inner = inner
        self._iterator: Iterator[bytes] | None = None
        self._parts: list[bytes] = []
        self._ended = False
        self._error: BaseException | None = None
        self._finished = False
        self._done = done
        # A recorder needs the whole body even when the reader stops early (an agent that breaks
        # out of a stream); a capture keeps only what the agent actually read.
        self._drain_on_close = drain_on_close

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
            if self._drain_on_close and not self._ended and self._error is None:
                try:
                    for chunk in self._iterator if self._iterator is not None else iter(self._inner):
                        self._parts.append(chunk)
                    self._ended = True
                except Exception as err:
                    self._error = err
            self._inner.close()
        finally:
            self._finish()

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            self._done(b"".join(self._parts), self._ended, self._error)


class AsyncTeeStream(httpx2.AsyncByteStream):
    """The async twin of `TeeStream`."""

    def __init__(self, inner: httpx2.AsyncByteStream, done: StreamDone, *, drain_on_close: bool = False) -> None:
        self._inner = inner
        self._iterator: AsyncIterator[bytes] | None = None
        self._parts: list[bytes] = []
        self._ended = False
        self._error: BaseException | None = None
        self._finished = False
        self._done = done
        self._drain_on_close = drain_on_close

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
            if self._drain_on_close and not self._ended and self._error is None:
                try:
                    async for chunk in self._iterator if self._iterator is not None else aiter(self._inner):
                        self._parts.append(chunk)
                    self._ended = True
                except Exception as err:
                    self._error = err
            await self._inner.aclose()
        finally:
            if not self._finished:
                self._finished = True
                self._done(b"".join(self._parts), self._ended, self._error)


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
        self._secrets: list[str] = list(secrets)

    @property
    def exchanges(self) -> list[Exchange]:
        """Completed exchanges in request order; one whose response is still open is not listed yet."""
        with self._lock:
            return [self._finished[i] for i in sorted(self._finished)]

    def add_secret(self, secret: str) -> None:
        """Scrub this value too (e.g. the api_key a client was given) from exchanges made from now on."""
        with self._lock:
            if secret not in self._secrets:
                self._secrets.append(secret)

    def _start(self) -> int:
        with self._lock:
            index = self._next_index
            self._next_index += 1
            return index

    def _finish(
        self,
        index: int,
        request: httpx2.Request,
        request_body: bytes,
        started_at: float,
        started: float,
        response: httpx2.Response | None,
        response_body: bytes | None,
    ) -> None:
        with self._lock:
            secrets = tuple(self._secrets)
        exchange = exchange_from_http(
            index,
            request.method,
            str(request.url),
            dict(request.headers.items()),
            request_body,
            response.status_code if response is not None else None,
            dict(response.headers.items()) if response is not None else {},
            response_body,
            started_at=started_at,
            duration_s=time.perf_counter() - started,
            secrets=secrets,
        )
        with self._lock:
            self._finished[index] = exchange


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
        body = request.read()
        index = self.capture._start()
        started_at, started = time.time(), time.perf_counter()
        try:
            response = self.inner.handle_request(request)
        except HarnessError:
            # The harness itself refused the request (a replay miss): nothing reached a model, so it
            # is no exchange; the run reports the refusal as its error instead.
            raise
        except Exception:
            self.capture._finish(index, request, body, started_at, started, None, None)
            raise

        def done(read: bytes, ended: bool, error: BaseException | None) -> None:
            self.capture._finish(index, request, body, started_at, started, response, read)

        stream = raw_stream(response)
        if not isinstance(stream, httpx2.SyncByteStream):
            raise TypeError(f"{type(self.inner).__name__} returned an async body to a sync client")
        return teed_response(response, request, TeeStream(stream, done))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not isinstance(self.inner, httpx2.AsyncBaseTransport):
            raise TypeError(f"{type(self.inner).__name__} is sync only: use it from a sync client")
        body = await request.aread()
        index = self.capture._start()
        started_at, started = time.time(), time.perf_counter()
        try:
            response = await self.inner.handle_async_request(request)
        except HarnessError:
            # The harness itself refused the request (a replay miss): nothing reached a model, so it
            # is no exchange; the run reports the refusal as its error instead.
            raise
        except Exception:
            self.capture._finish(index, request, body, started_at, started, None, None)
            raise

        def done(read: bytes, ended: bool, error: BaseException | None) -> None:
            self.capture._finish(index, request, body, started_at, started, response, read)

        stream = raw_stream(response)
        if not isinstance(stream, httpx2.AsyncByteStream):
            raise TypeError(f"{type(self.inner).__name__} returned a sync body to an async client")
        return teed_response(response, request, AsyncTeeStream(stream, done))

    def close(self) -> None:
        if self._close_inner and isinstance(self.inner, httpx2.BaseTransport):
            self.inner.close()

    async def aclose(self) -> None:
        if self._close_inner and isinstance(self.inner, httpx2.AsyncBaseTransport):
            await self.inner.aclose()
