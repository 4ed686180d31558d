"""The local Messages API endpoint: every run reachable over real HTTP on loopback, in every mode.

One `Endpoint` (a threaded HTTP/1.1 server) serves many runs at once. Each run opens a `Route` and
gets its own base URL, `http://127.0.0.1:PORT/run/<id>`: every SDK and framework appends
`/v1/messages` to the base URL it is given, so a path prefix tells runs apart with no header to
configure. `harness serve` serves a single run at the root (`http://127.0.0.1:PORT`) instead.

Inside a run's prefix:

    /v1/...          forwarded through the run's seam, the same capture -> cassette -> far end chain
                     as its in-process clients: the scripted model, the cassette, or the real API
                     (`ANTHROPIC_BASE_URL` when set). Upstream of a live or recording run the
                     client's credentials are replaced by the real key, which only the harness holds.
    a local prefix   answered by the route's own handler (`Route.local`, e.g. tool fixtures); a 4xx
                     it gives is noted for the run's trace, with its message.
    anything else    404 with a JSON error naming the path, recorded in the run's trace; so is a
                     /v1/ path of a replayed or scripted run that is no Messages API call.
                     Error messages name the path only, never its query string (it may hold a key).

Bad HTTP never reaches a run: a malformed request line or header, a bad Content-Length or chunk
size, JSON nested too deeply to parse get a 400; a body over `MAX_BODY_BYTES` a 413; a request
that has not arrived whole `client_timeout_s` after its first byte (a client that stalls, or
trickles) a 408, and its connection is closed; a kept-alive connection idle that long is closed
without an answer. Every answer of the endpoint's own is JSON in the API's error envelope. Each
connection has its own thread, so a slow client holds up no other; at most `MAX_CONNECTIONS` are
served at once. Over that, a new connect waits in the listen backlog (`LISTEN_BACKLOG` of them),
costing no thread, so a flood of connections is bounded, and the kept-alive connection idle longest
is closed to make room for it at once; with none idle, it waits until a connection closes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import secrets
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

from .._console import loggable_target
from ..errors import HarnessError
from ._capture import SENT_TO_EXTENSION, Capture

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body accepted (413 above): the Messages API's own request size limit."""
MAX_JSON_DEPTH = 500
"""Bodies with more brackets than this are parsed before forwarding: JSON nested too deeply to parse
(the 100k-deep kind) gets a 400 instead of breaking the run's capture."""
CLIENT_TIMEOUT_S = 120.0
"""How long a request may take to arrive whole from its first byte (then 408), and how long a kept-alive
connection may sit idle (then closed)."""
_TIMEOUT_SLACK = 0.01
"""A request may overrun the client timeout by this share of it before its 408 (see `_RequestReader`)."""
LISTEN_BACKLOG = 256
"""Connections the kernel queues while every handler thread is busy starting: 200 agents at once fit."""
MAX_CONNECTIONS = 256
"""Connections served at once, each by its own thread (a kept-alive idle one included, until a connect
waiting for its slot closes it); more wait in the backlog. `harness run -j 16` needs a few per run:
this leaves room for hundreds of agents."""
ENDPOINT_API_KEY = "harness-endpoint-no-key"
"""The key an agent gives its client for the endpoint: any value works, it never leaves the machine."""
UPSTREAM_TIMEOUT = {"connect": 5.0, "read": 600.0, "write": 600.0, "pool": 600.0}
"""Timeouts of a forwarded request, as the SDK's defaults (a stalled upstream must not hold a thread forever)."""

RUN_PREFIX = "/run/"
_RUN_PATH = re.compile(r"/run/([A-Za-z0-9_-]+)(.*)", re.DOTALL)
# Headers about one connection, not forwarded: the length is recomputed for the body sent. A request's
# `connection` goes along (as an in-process client's does), so both paths record the same headers.
_NOT_FORWARDED = frozenset({
    "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
    "content-length", "host", "expect",
})
_NOT_RELAYED = _NOT_FORWARDED | {"connection"}
# The Messages API's own paths (messages, count_tokens, batches, models), which an offline run forwards
# to its cassette or scripted model; any other /v1/ path of an offline run is the endpoint's 404.
_API_PATH = re.compile(r"/v1/(messages(/count_tokens|/batches(/[^?]*)?)?|models(/[^/?]+)?)/?")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,8}")
_MAX_TRAILER_LINES = 64

LocalHandler = Callable[[str, str, Mapping[str, str], bytes], tuple[int, Any]]
"""A route's own answer for a local path: (method, path inside the run, headers, body) -> (status, JSON)."""


@dataclass
class Route:
    """One run as the endpoint sees it: where its Messages API traffic goes and what is noted.

    Built by `Session.serve()`; a test or a front may build one directly around any transport.
    """

    transport: httpx2.BaseTransport
    """The run's seam (capture included): every /v1/ request goes through it."""
    upstream: str
    """Base URL a forwarded request is addressed to, e.g. `https://api.anthropic.com`: the same URL
    an in-process client of the run uses, so both paths give the same trace."""
    api_key: str | None = None
    """When set (live, record), the key sent upstream in place of the client's credentials."""
    capture: Capture | None = None
    """Where the endpoint's own answers (404 to a path that is no API call) are recorded as exchanges."""
    offline: bool = False
    """Nothing behind the run but a cassette or a scripted model (replay, scripted): a /v1/ path that is
    no Messages API call gets the endpoint's 404 naming it, since nothing there could answer it."""
    local: dict[str, LocalHandler] = field(default_factory=dict)
    """Handlers by path prefix inside the run (e.g. `/harness/tools/`), tried before the 404."""
    notes: list[str] = field(default_factory=list)
    """What the endpoint noticed about the run's traffic, for the trace's notes."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note(self, text: str) -> None:
        with self._lock:
            if text not in self.notes:
                self.notes.append(text)


class _Refused(Exception):
    """A request the endpoint answers itself, with this status and message, then hangs up."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Endpoint(ThreadingHTTPServer):
    """A loopback HTTP server for runs: `open(route)` gives a run its base URL, `close_route` ends it.

    One thread per connection, so concurrent runs and subagents are answered concurrently, up to
    `max_connections` at once: past that no connection is accepted until one closes.
    """

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        client_timeout_s: float = CLIENT_TIMEOUT_S,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_connections: int = MAX_CONNECTIONS,
        log: Callable[[str], None] | None = None,
    ) -> None:
        """Binds at once: a port in use raises OSError here (errno EADDRINUSE)."""
        self.client_timeout_s = client_timeout_s
        self.max_connections = max_connections
        self._connections = 0
        self._slots = threading.Condition()
        """Guards `_connections`, `_idle_connections` and `_closing`; notified when a connection closes or
        goes idle, or the server stops."""
        self._idle_connections: dict[socket.socket, None] = {}
        """Kept-alive connections waiting for their next request, the one waiting longest first."""
        self._closing: set[socket.socket] = set()
        """Idle connections closed for a connect waiting for a slot, until their slot is free."""
        self._stopping = False
        self.max_body_bytes = max_body_bytes
        self.log = log
        """Receives one line per request answered, e.g. `POST /v1/messages -> 200 stream` (a console)."""
        self.log_forwarded = True
        """False when what answers behind the endpoint logs its own lines (`harness serve`'s scripted model
        names the step): the requests passed to it are then left out here, the endpoint's own answers
        (a 404 to a path that is no API call, a malformed request) still logged."""
        self.default: Route | None = None
        """The route served at the root, without a /run/<id> prefix (`harness serve`)."""
        self._in_flight = 0
        self._idle = threading.Condition()
        self._routes: dict[str, Route] = {}
        self._routes_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__((host, port), _Handler)

    @property
    def base_url(self) -> str:
        """The server's root URL, e.g. `http://127.0.0.1:8765`."""
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def open(self, route: Route) -> str:
        """Serve `route` under a fresh /run/<id> prefix; returns the run's base URL."""
        run_id = secrets.token_hex(6)
        with self._routes_lock:
            self._routes[run_id] = route
        return f"{self.base_url}{RUN_PREFIX}{run_id}"

    def close_route(self, base_url: str) -> None:
        """Stop serving the run at `base_url`; its later requests get a 404 naming the path."""
        run_id = base_url.rsplit("/", 1)[-1]
        with self._routes_lock:
            self._routes.pop(run_id, None)

    def route(self, run_id: str) -> Route | None:
        return self._routes.get(run_id)

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Count a request as in flight while it is answered (see `wait_idle`)."""
        with self._idle:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no request is being answered (True), or `timeout` seconds pass (False)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def start(self) -> Endpoint:
        """Answer requests in a background (daemon) thread until `stop()`."""
        if self._thread is None:
            # A short poll interval keeps `shutdown()` quick, so a test's teardown does not wait.
            self._thread = threading.Thread(
                target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="harness-endpoint", daemon=True
            )
            self._thread.start()
        return self

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept a connection once fewer than `max_connections` are served; until then it waits in the
        listen backlog, and the kept-alive connection idle longest is closed to free a slot for it.
        Called by `serve_forever` when a connect is pending; OSError (skipped by it) when the server
        stops while waiting."""
        with self._slots:
            while self._connections >= self.max_connections and not self._stopping:
                # One closed at a time: its slot frees when its thread ends, and this connect needs one.
                if self._closing or not self._close_longest_idle():
                    self._slots.wait()
            if self._stopping:
                raise OSError("the endpoint is stopping")
            self._connections += 1
        try:
            return super().get_request()
        except BaseException:
            self._release_slot()
            raise

    def _close_longest_idle(self) -> bool:
        """Close the kept-alive connection idle longest (under `_slots`); False when none is idle.

        Without this, an agent that leaves a pooled connection idle per client it never closes holds
        every slot, and each new connect waits out the idle timeout: a hang. Closing an idle kept-alive
        connection is what HTTP servers do, and clients retry a request on a connection closed while
        idle. Never one mid-request: a connection is idle only while its thread waits for the first byte
        of the next request, and stops being idle under this same lock (`_await_request`).
        """
        for sock in self._idle_connections:
            # A first byte that has reached this machine is a request begun, though its thread has not
            # woken yet to take it: that connection is not idle. (Peeked without consuming it.)
            with selectors.DefaultSelector() as selector:
                selector.register(sock, selectors.EVENT_READ)
                if selector.select(0):
                    continue
            del self._idle_connections[sock]
            self._closing.add(sock)
            with contextlib.suppress(OSError):
                # Its thread, waiting in `_await_request`, wakes to the end of the stream and ends.
                sock.shutdown(socket.SHUT_RDWR)
            return True
        return False

    def _await_request(self, sock: socket.socket) -> bool:
        """Wait on a kept-alive connection for the next request's first byte, idle (and so closable for a
        connect waiting for a slot) meanwhile: True when it came, False when the connection is to close
        (closed for a waiting connect, by the client, or idle past the client timeout)."""
        with self._slots:
            self._idle_connections[sock] = None
            # A connect may be waiting with every slot busy: this one can now make room for it.
            self._slots.notify()
        try:
            # Peeked, not read: the byte stays in the socket, where `_close_longest_idle` sees it.
            arrived = bool(sock.recv(1, socket.MSG_PEEK))
        except OSError:  # idle past the timeout, or reset
            arrived = False
        with self._slots:
            if sock not in self._idle_connections:
                return False  # closed for a waiting connect: its request, if one came since, is not begun
            del self._idle_connections[sock]
        return arrived

    def shutdown_request(self, request: Any) -> None:
        # Called once for every connection `get_request` accepted, however it ended.
        try:
            super().shutdown_request(request)
        finally:
            self._release_slot(request)

    def _release_slot(self, request: Any = None) -> None:
        with self._slots:
            self._connections -= 1
            self._closing.discard(request)
            self._slots.notify()

    def shutdown(self) -> None:
        # `serve_forever` may be waiting for a slot, not polling: wake it so that it sees the request.
        with self._slots:
            self._stopping = True
            self._slots.notify_all()
        super().shutdown()

    def stop(self) -> None:
        """Stop answering and release the port."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up or stalls is part of what agents do; only real faults are printed.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


_shared: Endpoint | None = None
_shared_lock = threading.Lock()


def shared_endpoint() -> Endpoint:
    """The process's endpoint on an ephemeral loopback port, started on first use, serving every run."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Endpoint().start()
        return _shared


def _forget_in_child() -> None:
    """In a forked process (a worker of `harness run -j`): the parent's endpoint thread did not come
    along, so its endpoint would answer nothing here; the child starts its own on first use."""
    global _shared, _shared_lock
    if _shared is not None:
        with contextlib.suppress(OSError):
            _shared.socket.close()  # the child's copy only: the parent goes on serving
    _shared = None
    _shared_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The API's error envelope."""
    return {"type": "error", "error": {"type": kind, "message": message}}


class _RequestReader(socket.SocketIO):
    """A connection's reads, each given only what is left of its request's time: a client that
    trickles a byte at a time is cut as surely as one that stops."""

    def __init__(self, sock: socket.socket, timeout_s: float, await_request: Callable[[socket.socket], bool]) -> None:
        super().__init__(sock, "rb")
        self.sock = sock
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        self._timeout = timeout_s
        """What the socket's timeout is now."""
        self._await_request = await_request
        self._kept_alive = False
        """A request has been read: a read outside one is the wait for the next (`Endpoint._await_request`)."""

    def readinto(self, buffer: Any) -> int | None:
        if self.deadline is None:
            # Outside a request, with nothing of the next one buffered (else no read): the connection is
            # idle. A fresh one is not (its client connected to send a request), so is never closed.
            if self._kept_alive and not self._await_request(self.sock):
                return 0
        else:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request took longer than the endpoint's client timeout")
            # Shortened only once the request is slow: settimeout is a system call, and a request whose
            # body follows its headers by microseconds reads a second time.
            if self._timeout - left > _TIMEOUT_SLACK * self.timeout_s:
                self.sock.settimeout(left)
                self._timeout = left
        return super().readinto(buffer)

    def start(self) -> None:
        """A request has begun: from now on it has `timeout_s` to arrive whole."""
        self.deadline = time.monotonic() + self.timeout_s

    def done(self) -> None:
        """The request is read: the answer's writes and the wait for the next request have the full timeout."""
        self.deadline = None
        self._kept_alive = True
        if self._timeout != self.timeout_s:
            self.sock.settimeout(self.timeout_s)
            self._timeout = self.timeout_s


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle and delayed ACKs add ~40 ms each.
    disable_nagle_algorithm = True
    server: Endpoint
    _forwarded = False
    """The request being answered went to the run's transport (see `Endpoint.log_forwarded`)."""

    def setup(self) -> None:
        super().setup()
        # Every read from the client (request line, headers, body, the next kept-alive request) waits
        # at most this long; then the handler gives up and the thread is freed.
        self.connection.settimeout(self.server.client_timeout_s)
        self.rfile.close()
        self._reader = _RequestReader(self.connection, self.server.client_timeout_s, self.server._await_request)
        self._buffered = io.BufferedReader(self._reader)
        self.rfile = self._buffered

    def handle_one_request(self) -> None:
        """The stdlib's, but a request that stalls after its first byte gets a 408 (the stdlib hangs up
        without a word, and the client cannot tell a stall from a crash); an idle kept-alive
        connection is closed quietly, since a 408 there would race the client's next request."""
        try:
            if not self._buffered.peek(1):
                self.close_connection = True
                return
        except OSError:  # idle past the timeout, or reset
            self.close_connection = True
            return
        self._reader.start()
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.parse_request():
                return
            if not hasattr(self, "do_" + self.command):
                self.send_error(HTTPStatus.NOT_IMPLEMENTED, f"unsupported method {self.command}")
                return
            getattr(self, "do_" + self.command)()
            self.wfile.flush()
        except TimeoutError:
            # Cut in its request line or headers: _answer, which logs the others, was not reached.
            outcome = self._too_slow()
            if self.server.log is not None:
                path = getattr(self, "path", None)
                what = f"{self.command} {loggable_target(path)}" if path else "a request cut in its first line"
                self.server.log(f"{what} -> {outcome}")
        except OSError:
            self.close_connection = True

    def _too_slow(self) -> str:
        """Answer a request that did not arrive whole in time with a 408, and close the connection."""
        self._reader.done()
        self.close_connection = True
        self.request_version = self.protocol_version
        self._send_json(408, error_body(
            "timeout_error",
            f"the request did not arrive whole within {self.server.client_timeout_s:g} s of its first byte "
            "(the endpoint's client timeout); the connection is closed",
        ))
        return f"408 the request did not arrive whole within {self.server.client_timeout_s:g} s"

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the stdlib's access log would mix with the agent's output."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self._answer()

    def do_DELETE(self) -> None:
        self._answer()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The stdlib's answer to a malformed request line or header, as JSON instead of an HTML page."""
        self.close_connection = True
        # A request line that could not be read leaves the version at HTTP/0.9, whose answers have no
        # status line: no client of this API speaks it, and each needs the status to see the error.
        self.request_version = self.protocol_version
        self._send_json(code,
                        error_body("invalid_request_error",
                                   f"{message or 'bad request'}" + (f": {explain}" if explain else "")))

    def _answer(self) -> None:
        self._forwarded = False
        with self.server.busy():
            outcome = self._dispatch()
        if self.server.log is not None and (self.server.log_forwarded or not self._forwarded):
            # The path only: a query string may carry a key (`?key=sk-ant-...`).
            self.server.log(f"{self.command} {loggable_target(self.path)} -> {outcome}")

    def _dispatch(self) -> str:
        """Answer one request; returns how, for the log (the status, a stream, a dropped connection)."""
        try:
            self._check_headers()
            body = self._read_body()
            self._reader.done()
            self._check_json_depth(body)
        except _Refused as refused:
            self._reader.done()
            self.close_connection = True
            self._send_json(refused.status, error_body(_kind(refused.status), refused.message))
            return f"{refused.status} {refused.message}"
        except TimeoutError:
            return self._too_slow()
        except OSError:
            # The client went away mid-body: nothing to answer.
            self.close_connection = True
            return "no answer: the client hung up mid-request"
        route, rest, prefix = self._route()
        if route is None:
            self._send_json(404, error_body("not_found_error", rest))
            return "404 (no run there)"
        if rest == "/v1" or rest.startswith(("/v1/", "/v1?")):
            if not (route.offline and _API_PATH.fullmatch(rest.partition("?")[0]) is None):
                return self._forward(route, prefix, rest, body)
        for local_prefix, handler in route.local.items():
            if rest.startswith(local_prefix):
                try:
                    status, payload = handler(self.command, rest, {k.lower(): v for k, v in self.headers.items()}, body)
                except Exception as exc:  # a fault of the harness's own handler must not take the server down
                    status, payload = 500, error_body("api_error",
                                                      f"harness: {local_prefix} failed: {type(exc).__name__}: {exc}")
                if 400 <= status < 500:
                    # A bad request of the agent's, noted as the 404 to a path that is no API call is.
                    route.note(f"the endpoint answered {status} to {self.command} {loggable_target(rest)}: "
                               f"{_message(payload)}")
                self._send_json(status, payload)
                return str(status)
        self._not_found(route, prefix, rest, body)
        return "404 (not a Messages API path)"

    def _route(self) -> tuple[Route | None, str, str]:
        """(route, path inside the run, the run's prefix); with no route, the path is the error to give."""
        match = _RUN_PATH.fullmatch(self.path)
        if match is not None:
            route = self.server.route(match.group(1))
            rest = match.group(2)
            rest = rest if rest.startswith("/") else "/" + rest
            if route is None:
                return None, (
                    f"no run is open at {RUN_PREFIX}{match.group(1)} ({self.command} "
                    f"{loggable_target(self.path)}): that run has "
                    "ended, or the base URL is not the one the harness gave this run (task.base_url)"
                ), ""
            return route, rest, f"{RUN_PREFIX}{match.group(1)}"
        if self.server.default is not None:
            return self.server.default, self.path, ""
        return None, (
            f"{self.command} {loggable_target(self.path)} is no run's path: this endpoint "
            "serves each run under its own "
            f"base URL ({self.server.base_url}{RUN_PREFIX}<id>, given to the agent as task.base_url)"
        ), ""

    def _forward(self, route: Route, prefix: str, rest: str, body: bytes) -> str:
        self._forwarded = True
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _NOT_FORWARDED]
        if route.api_key is not None:
            headers = _with_key(headers, route.api_key)
        sent_to = self.server.base_url + prefix + rest
        request = httpx2.Request(self.command, route.upstream + rest, headers=headers, content=body,
                                 extensions={"timeout": UPSTREAM_TIMEOUT, SENT_TO_EXTENSION: sent_to})
        try:
            response = route.transport.handle_request(request)
        except HarnessError as exc:
            # The harness could not answer (a replay miss, an exhausted script): nothing reached a model.
            # Asking again cannot help, so tell the SDKs not to retry, and the failure shows at once.
            self._send_json(500, error_body("api_error", f"harness: {exc}"), [("x-should-retry", "false")])
            return f"500 {type(exc).__name__}"
        except Exception as exc:
            # No answer from the far end (unreachable, dropped): the client sees its connection drop,
            # as it would talking to that far end directly. The capture has recorded the request;
            # the cause, which the client cannot see, goes in the run's notes.
            self.close_connection = True
            route.note(f"no answer from {route.upstream} to {self.command} {loggable_target(rest)} "
                       f"({type(exc).__name__}: {exc}); "
                       "the endpoint dropped the client's connection")
            return f"no answer ({type(exc).__name__}: {exc})"
        return self._relay(response)

    def _relay(self, response: httpx2.Response) -> str:
        """Send the far end's answer on; returns how it went, for the log.

        The run's exchange is settled (its stream closed) before the client can see the end of the
        body: an agent that returns at once must find its last exchange in the trace.
        """
        stream = response.stream
        assert isinstance(stream, httpx2.SyncByteStream)
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in response.headers.raw
            if name.decode("latin-1").lower() not in _NOT_RELAYED
        ]
        streamed = "text/event-stream" in response.headers.get("content-type", "")
        closed = False
        try:
            if not streamed:
                # A whole body (JSON): read it all, settle the exchange, then send it with its length.
                body = b"".join(stream)
                closed = True
                stream.close()
                self._write(response.status_code, response.reason_phrase, headers, body)
                return str(response.status_code)
            # A stream (SSE): each event goes on as it comes; the closing chunk only once settled.
            self.wfile.write(self._head(response.status_code, response.reason_phrase,
                                        [*headers, ("transfer-encoding", "chunked")]))
            for chunk in stream:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            closed = True
            stream.close()
            self.wfile.write(b"0\r\n\r\n")
            return f"{response.status_code} stream"
        except httpx2.HTTPError:
            # The far end cut the body: the client must see the cut too.
            self.close_connection = True
            return f"{response.status_code} cut"
        except OSError:
            self.close_connection = True
            return f"{response.status_code}, the client hung up"
        finally:
            if not closed:
                stream.close()

    def _not_found(self, route: Route, prefix: str, rest: str, body: bytes) -> None:
        message = (
            f"{self.command} {loggable_target(rest)} is not a Messages API call: the harness endpoint "
            "serves the Anthropic API "
            f"under {self.server.base_url}{prefix}/v1/ (e.g. POST /v1/messages)"
        )
        sent = _json_bytes(error_body("not_found_error", message))
        # Noted before it is sent, so that an agent that stops on the 404 finds it in its trace.
        route.note(f"the endpoint answered 404 to {self.command} {loggable_target(rest)}: not a Messages API path")
        if route.capture is not None:
            request = httpx2.Request(self.command, self.server.base_url + prefix + rest,
                                     headers=list(self.headers.items()))
            route.capture.record(request, body,
                                 httpx2.Response(404, headers=[("content-type", "application/json")]), sent)
        self._send(404, sent)

    def _send_json(self, status: int, payload: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
        self._send(status, _json_bytes(payload), headers)

    def _send(self, status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> None:
        try:
            self._write(status, None, [("content-type", "application/json"), *headers], body)
        except OSError:
            self.close_connection = True

    def _write(self, status: int, reason: str | None, headers: Iterable[tuple[str, str]], body: bytes) -> None:
        """Status line, headers and body in one write. An agent in this same process is woken once,
        with the whole answer: each extra write would cost it a hand-over of the GIL (milliseconds)."""
        self.wfile.write(self._head(status, reason, [*headers, ("content-length", str(len(body)))]) + body)

    def _head(self, status: int, reason: str | None, headers: Iterable[tuple[str, str]]) -> bytes:
        if self.close_connection:
            headers = [*headers, ("connection", "close")]
        phrase = reason or _PHRASES.get(status, "")
        lines = [f"{self.protocol_version} {status} {phrase}\r\n",
                 *(f"{name}: {value}\r\n" for name, value in headers), "\r\n"]
        return "".join(lines).encode("latin-1")

    def _check_headers(self) -> None:
        """Refuse a header line that is not `Name: value`. The stdlib's parser stops at such a line
        and keeps the lines after it as a "body": a Content-Length among them went unseen, so the
        request was forwarded without its body and the body's bytes were read as the next request.
        A value folded onto a second line (obsolete in HTTP/1.1) is refused too, as RFC 9112 allows."""
        if self.headers.defects or self.headers.get_payload():
            raise _Refused(400, "malformed request header: a header line is not of the form `Name: value`")
        if any("\r" in value or "\n" in value for value in self.headers.values()):
            raise _Refused(400, "malformed request header: a header value is folded onto a second line")

    def _read_body(self) -> bytes:
        encodings = self.headers.get_all("transfer-encoding") or []
        lengths = self.headers.get_all("content-length") or []
        if encodings:
            if lengths:
                raise _Refused(400, "a request with both Transfer-Encoding and Content-Length is ambiguous")
            if [e.strip().lower() for e in ",".join(encodings).split(",")] != ["chunked"]:
                raise _Refused(400, f"unsupported Transfer-Encoding {_quoted(', '.join(encodings))}: "
                                    "only chunked is accepted")
            return self._read_chunked()
        if not lengths:
            return b""
        values = {value.strip() for value in lengths}
        value = values.pop()
        if values or not value.isdigit():
            raise _Refused(400, f"bad Content-Length {_quoted(', '.join(lengths))}: expected one non-negative integer")
        size = int(value)
        if size > self.server.max_body_bytes:
            raise _Refused(413,
                           f"request body of {size} bytes is over the endpoint's limit of "
                           f"{self.server.max_body_bytes} bytes")
        body = self.rfile.read(size)
        if len(body) < size:
            raise ConnectionError("the client closed the connection before sending its whole body")
        return body

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1026)
            if not line.endswith(b"\n"):
                raise ConnectionError("the client closed the connection mid-body") if not line else _Refused(
                    400, "chunk size line too long"
                )
            size_text = line.split(b";", 1)[0].strip()
            if _CHUNK_SIZE.fullmatch(size_text) is None:
                raise _Refused(400, f"bad chunk size {_quoted(size_text[:20].decode('latin-1'))}: "
                                    "expected a hexadecimal number")
            size = int(size_text, 16)
            if size == 0:
                break
            total += size
            if total > self.server.max_body_bytes:
                raise _Refused(413,
                               "chunked request body is over the endpoint's limit of "
                               f"{self.server.max_body_bytes} bytes")
            chunk = self.rfile.read(size)
            if len(chunk) < size:
                raise ConnectionError("the client closed the connection mid-chunk")
            parts.append(chunk)
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise _Refused(400, "a chunk is longer than its size says (no CRLF after it)")
        for _ in range(_MAX_TRAILER_LINES):
            if self.rfile.readline(8194) in (b"\r\n", b"\n", b""):
                return b"".join(parts)
        raise _Refused(400, "too many trailer lines after the last chunk")

    @staticmethod
    def _check_json_depth(body: bytes) -> None:
        # Nesting cannot exceed the number of brackets, so only a body with many is parsed here; the
        # parser stops at its recursion limit, where the capture's own parse would fail later.
        if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
            return
        try:
            json.loads(body)
        except RecursionError:
            raise _Refused(400, "request JSON is nested too deeply to parse") from None
        except ValueError:
            pass  # not JSON: the far end answers that as the API would


def _with_key(headers: list[tuple[str, str]], key: str) -> list[tuple[str, str]]:
    """The client's headers with its placeholder credential replaced by the real key, in the header
    (and scheme) it used, as the client would have sent the key itself; `x-api-key` when it sent none."""
    out: list[tuple[str, str]] = []
    replaced = False
    for name, value in headers:
        lowered = name.lower()
        if lowered == "x-api-key":
            value, replaced = key, True
        elif lowered == "authorization":
            value, replaced = f"Bearer {key}", True
        out.append((name, value))
    if not replaced:
        out.append(("x-api-key", key))
    return out


_PHRASES = {status.value: status.phrase for status in HTTPStatus} | {529: "Overloaded"}


def _json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _quoted(text: str) -> str:
    """A value from the wire in an error message: in JSON's quotes, escaped, as the client would write it."""
    return json.dumps(text, ensure_ascii=False)


def _message(payload: Any) -> str:
    """The message of an answer in the API's error envelope."""
    error = payload.get("error") if isinstance(payload, dict) else None
    return str(error.get("message", "")) if isinstance(error, dict) else ""


def _kind(status: int) -> str:
    return {413: "request_too_large", 404: "not_found_error"}.get(status, "invalid_request_error")

