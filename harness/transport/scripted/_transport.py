"""In-process httpx2 transports for the scripted model: the SDK's client talks to it with no socket.

Faults behave as httpx2 reports them on a real connection: a cut stream raises
`RemoteProtocolError` mid-body, a dropped request raises it before any answer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import anyio
import httpx2

from ._wire import Reply

if TYPE_CHECKING:
    from ._model import ScriptedModel

CUT_MESSAGE = "peer closed connection without sending complete message body (scripted cut_after)"
DROPPED_MESSAGE = "Server disconnected without sending a response (scripted cut_after)."


def _response(reply: Reply, stream: httpx2.SyncByteStream | httpx2.AsyncByteStream) -> httpx2.Response:
    return httpx2.Response(reply.status, headers=reply.headers, stream=stream)


class _ReplyStream(httpx2.SyncByteStream):
    def __init__(self, model: ScriptedModel, reply: Reply, request: httpx2.Request) -> None:
        self._model = model
        self._reply = reply
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        yield from self._reply.chunks
        if self._reply.cut:
            raise httpx2.RemoteProtocolError(CUT_MESSAGE, request=self._request)

    def close(self) -> None:
        self._model.finished(self._reply)


class _AsyncReplyStream(httpx2.AsyncByteStream):
    def __init__(self, model: ScriptedModel, reply: Reply, request: httpx2.Request) -> None:
        self._model = model
        self._reply = reply
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._reply.chunks:
            yield chunk
        if self._reply.cut:
            raise httpx2.RemoteProtocolError(CUT_MESSAGE, request=self._request)

    async def aclose(self) -> None:
        self._model.finished(self._reply)


class ScriptedTransport(httpx2.BaseTransport):
    """Answers each request of an `httpx2.Client` from the scripted model."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        reply = self.model.answer(request.method, request.url.raw_path.decode("ascii"), dict(request.headers), body)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.no_response:
            self.model.finished(reply)
            raise httpx2.RemoteProtocolError(DROPPED_MESSAGE, request=request)
        return _response(reply, _ReplyStream(self.model, reply, request))


class AsyncScriptedTransport(httpx2.AsyncBaseTransport):
    """Answers each request of an `httpx2.AsyncClient` from the scripted model."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        reply = self.model.answer(request.method, request.url.raw_path.decode("ascii"), dict(request.headers), body)
        if reply.delay_s:
            await anyio.sleep(reply.delay_s)
        if reply.no_response:
            self.model.finished(reply)
            raise httpx2.RemoteProtocolError(DROPPED_MESSAGE, request=request)
        return _response(reply, _AsyncReplyStream(self.model, reply, request))
