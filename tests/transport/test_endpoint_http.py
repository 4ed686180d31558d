"""Bad HTTP on the endpoint, sent with raw sockets: a JSON 400/404/413 or a timeout, never a traceback or a hang."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import pytest

from harness.transport import Capture, CaptureTransport, Endpoint, Route
from harness.transport.scripted import ScriptedModel

BODY = json.dumps({"model": "claude-sonnet-5", "max_tokens": 8,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()
LIMIT = 64 * 1024


@pytest.fixture
def endpoint(capfd: pytest.CaptureFixture[str]) -> Iterator[Endpoint]:
    model = ScriptedModel([{"text": "hi"}] * 3)
    server = Endpoint(client_timeout_s=0.5, max_body_bytes=LIMIT)
    server.default = Route(transport=CaptureTransport(model.transport(), Capture()), upstream="http://scripted.local")
    server.start()
    yield server
    server.stop()
    # Whatever came in, the server printed no traceback.
    assert "Traceback" not in capfd.readouterr().err


def exchange(endpoint: Endpoint, raw: bytes, *, timeout: float = 10.0) -> tuple[int, dict[str, Any] | None, bytes]:
    """Send raw bytes, read until the server closes or answers; (status, JSON body, raw answer)."""
    with socket.create_connection(endpoint.server_address[:2], timeout=timeout) as sock:
        sock.sendall(raw)
        answer = read_answer(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body) if body.startswith(b"{") else None, answer


def read_answer(sock: socket.socket) -> bytes:
    data = b""
    while True:
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = next((int(line.split(b":", 1)[1])
                           for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), None)
            if length is not None and len(body) >= length:
                return data
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def post(length_header: bytes, body: bytes = b"", path: bytes = b"/v1/messages") -> bytes:
    head = b"POST " + path + b" HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
    return head + length_header + b"\r\n" + body


def test_a_well_formed_call_with_a_chunked_body_is_answered(endpoint: Endpoint) -> None:
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
    status, body, _ = exchange(endpoint, post(b"Transfer-Encoding: chunked\r\n", chunked))
    assert status == 200 and body is not None and body["content"][0]["text"] == "hi"


@pytest.mark.parametrize(
    ("header", "body", "status", "says"),
    [
        (b"Content-Length: abc\r\n", b"", 400, 'bad Content-Length "abc"'),
        (b"Content-Length: -5\r\n", b"", 400, 'bad Content-Length "-5"'),
        (b"Content-Length: 3\r\nContent-Length: 4\r\n", b"abcd", 400, "expected one non-negative integer"),
        (b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", b"abcd", 400, "ambiguous"),
        (b"Transfer-Encoding: gzip\r\n", b"", 400, "only chunked is accepted"),
        (b"Transfer-Encoding: chunked\r\n", b"zz\r\nabc\r\n0\r\n\r\n", 400, 'bad chunk size "zz"'),
        (b"Transfer-Encoding: chunked\r\n", b"2\r\nabcdef\r\n0\r\n\r\n", 400, "longer than its size says"),
        (b"Content-Length: %d\r\n" % (LIMIT + 1), b"", 413, f"over the endpoint's limit of {LIMIT} bytes"),
        (b"Transfer-Encoding: chunked\r\n", b"%x\r\n" % (LIMIT + 1), 413, "over the endpoint's limit"),
        # A line that is no header hid the headers after it, Content-Length included: the request went
        # on without its body, and the body was read as the next request.
        (b"Host x\r\nContent-Length: %d\r\n" % len(BODY), BODY, 400, "is not of the form `Name: value`"),
        (b": no-name\r\nContent-Length: %d\r\n" % len(BODY), BODY, 400, "is not of the form `Name: value`"),
        (b"X-A: b\r\n folded\r\nContent-Length: %d\r\n" % len(BODY), BODY, 400, "folded onto a second line"),
    ],
)
def test_malformed_bodies_get_a_json_error_and_the_connection_closes(
    endpoint: Endpoint, header: bytes, body: bytes, status: int, says: str
) -> None:
    got, payload, raw = exchange(endpoint, post(header, body))
    assert got == status, raw
    assert payload is not None and payload["type"] == "error" and says in payload["error"]["message"]
    assert b"connection: close" in raw.lower()


def test_json_nested_100k_deep_is_refused(endpoint: Endpoint) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    # Over the fixture's small body limit: this server has the default one.
    server = Endpoint(client_timeout_s=5).start()
    server.default = endpoint.default
    try:
        status, payload, _ = exchange(server, post(b"Content-Length: %d\r\n" % len(deep), deep))
    finally:
        server.stop()
    assert status == 400 and payload is not None and "nested too deeply" in payload["error"]["message"]


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"HELLO\r\n\r\n", 400),
        (b"GET / HTTP/9.9\r\n\r\n", 505),
        (b"BREW /v1/messages HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
        (b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 200 + b"\r\n", 431),
    ],
)
def test_malformed_request_lines_and_headers_get_json_errors(endpoint: Endpoint, raw: bytes, status: int) -> None:
    got, payload, answer = exchange(endpoint, raw)
    assert got == status, answer[:200]
    assert payload is not None and payload["type"] == "error"


def test_a_path_that_is_no_api_call_is_a_404_naming_it(endpoint: Endpoint) -> None:
    status, payload, _ = exchange(endpoint, b"GET /v2/chat HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 404 and payload is not None
    assert "GET /v2/chat is not a Messages API call" in payload["error"]["message"]


@pytest.mark.parametrize(
    "partial",
    [
        pytest.param(b"POST /v1/messages HTTP/1.1\r\nHost", id="a partial header"),
        pytest.param(post(b"Content-Length: 100\r\n"), id="headers then nothing"),
        pytest.param(post(b"Content-Length: 100\r\n", b"{"), id="a partial body"),
        pytest.param(post(b"Transfer-Encoding: chunked\r\n", b"64\r\n{"), id="a partial chunk"),
    ],
)
def test_a_client_that_stalls_mid_request_gets_a_408_and_the_connection_closes(
    endpoint: Endpoint, partial: bytes
) -> None:
    with socket.create_connection(endpoint.server_address[:2], timeout=10) as sock:
        sock.sendall(partial)
        answer = read_answer(sock)
        # The answer is followed by the server closing the connection.
        assert sock.recv(1) == b""
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer[:200]
    assert b"connection: close" in head.lower()
    error = json.loads(body)["error"]
    assert error == {"type": "timeout_error", "message": (
        "the request did not arrive whole within 0.5 s of its first byte (the endpoint's client timeout); "
        "the connection is closed")}


def test_a_client_that_trickles_its_request_gets_a_408_too(endpoint: Endpoint) -> None:
    # A byte at a time, each well within the timeout: only the whole request's time can cut it.
    request = post(b"Content-Length: %d\r\n" % len(BODY), BODY)
    with socket.create_connection(endpoint.server_address[:2], timeout=10) as sock:
        answer = b""
        for byte in request:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break  # the server answered and closed while the request went on
            time.sleep(0.05)
            sock.setblocking(False)
            try:
                answer = sock.recv(65536)
            except BlockingIOError:
                continue
            finally:
                sock.setblocking(True)
            break
        answer += read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_a_stalled_client_blocks_no_other_and_an_idle_kept_alive_one_is_closed_without_an_answer() -> None:
    model = ScriptedModel([{"text": "hi"}] * 2)
    server = Endpoint(client_timeout_s=2)
    server.default = Route(transport=CaptureTransport(model.transport(), Capture()), upstream="http://scripted.local")
    server.start()
    try:
        with socket.create_connection(server.server_address[:2], timeout=10) as stalled:
            stalled.sendall(post(b"Content-Length: 100\r\n", b"{"))
            # Another client is answered while the stalled one waits for its 408.
            status, body, _ = exchange(server, post(b"Content-Length: %d\r\n" % len(BODY), BODY))
            assert status == 200 and body is not None and body["content"][0]["text"] == "hi"
            stalled.setblocking(False)
            with pytest.raises(BlockingIOError):
                stalled.recv(1)
            stalled.setblocking(True)
            assert read_answer(stalled).startswith(b"HTTP/1.1 408 ")
        with socket.create_connection(server.server_address[:2], timeout=10) as idle:
            # A connection that finished its request and sends nothing more is let go quietly: a 408
            # there would race the client's next request on a kept-alive connection.
            idle.sendall(post(b"Content-Length: %d\r\n" % len(BODY), BODY))
            assert read_answer(idle).startswith(b"HTTP/1.1 200 ")
            assert idle.recv(1) == b""
    finally:
        server.stop()


def test_the_endpoint_answers_after_bad_input(endpoint: Endpoint) -> None:
    exchange(endpoint, b"HELLO\r\n\r\n")
    exchange(endpoint, post(b"Content-Length: abc\r\n"))
    status, payload, _ = exchange(endpoint, post(b"Content-Length: %d\r\n" % len(BODY), BODY))
    assert status == 200 and payload is not None and payload["content"][0]["text"] == "hi"


def test_200_clients_connecting_at_once_are_all_answered(endpoint: Endpoint) -> None:
    address = endpoint.server_address[:2]
    # Every connect is made before any request is sent, so all 200 wait in the backlog together.
    sockets = [socket.create_connection(address, timeout=30) for _ in range(200)]
    try:

        def ask(sock: socket.socket) -> int:
            sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            return int(read_answer(sock).split(b" ", 2)[1])

        with ThreadPoolExecutor(max_workers=50) as pool:
            statuses = list(pool.map(ask, sockets))
    finally:
        for sock in sockets:
            sock.close()
    assert statuses == [200] * 200


def test_a_port_in_use_is_an_os_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="in use"):
            Endpoint(port=taken.getsockname()[1])


def _handler_threads() -> int:
    """Threads answering a connection now (the stdlib names them after `process_request_thread`)."""
    return sum("process_request_thread" in thread.name for thread in threading.enumerate())


def _end_handlers(since: set[threading.Thread]) -> None:
    """Wait for the connection threads started since `since` to end: tests that count handler threads
    must not see those of an earlier test's closed connections leave mid-count."""
    for thread in set(threading.enumerate()) - since:
        if "process_request_thread" in thread.name:
            thread.join(timeout=10)


def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_connections_over_the_cap_wait_in_the_backlog_without_a_thread_each_and_are_served_as_slots_free() -> None:
    model = ScriptedModel([{"text": "hi"}])
    server = Endpoint(client_timeout_s=30, max_connections=4)
    server.default = Route(transport=CaptureTransport(model.transport(), Capture()), upstream="http://scripted.local")
    threads = set(threading.enumerate())
    server.start()
    before = _handler_threads()
    address = server.server_address[:2]
    held = [socket.create_connection(address, timeout=10) for _ in range(4)]
    waiting = [socket.create_connection(address, timeout=10) for _ in range(6)]
    try:
        assert _wait_for(lambda: _handler_threads() - before == 4), _handler_threads() - before
        # Ten idle connections, four threads: the other six are connected (the kernel's backlog
        # holds them) but not accepted, so they cost the server nothing.
        time.sleep(0.3)
        assert _handler_threads() - before == 4
        for sock in waiting:
            sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        waiting[0].settimeout(0.3)
        with pytest.raises(TimeoutError):
            waiting[0].recv(1)  # not answered while every slot is held
        waiting[0].settimeout(10)
        held.pop(0).close()
        # One slot frees: the waiting connections are taken in turn, each answered and closed.
        for sock in waiting:
            assert read_answer(sock).startswith(b"HTTP/1.1 200 ")
        assert _handler_threads() - before <= 4
    finally:
        for sock in held + waiting:
            sock.close()
        server.stop()
        _end_handlers(threads)


def test_stopping_with_connections_waiting_for_a_slot_does_not_hang() -> None:
    before = _handler_threads()
    server = Endpoint(client_timeout_s=30, max_connections=2).start()
    address = server.server_address[:2]
    sockets = [socket.create_connection(address, timeout=10) for _ in range(5)]
    try:
        # Both slots held by idle clients, three connects waiting: the server waits for a slot.
        assert _wait_for(lambda: _handler_threads() - before == 2), _handler_threads() - before
        stopping = threading.Thread(target=server.stop, daemon=True)
        stopping.start()
        stopping.join(timeout=5)
        assert not stopping.is_alive(), "stop() hung with connections waiting for a slot"
        # The port is released: a waiting connection is dropped, not left hanging.
        for sock in sockets[2:]:
            try:
                assert sock.recv(1) == b""
            except ConnectionResetError:
                pass
    finally:
        for sock in sockets:
            sock.close()


def _idle_connections(server: Endpoint) -> int:
    """Kept-alive connections the endpoint holds waiting for their next request."""
    with server._slots:
        return len(server._idle_connections)


def _kept_alive_request(sock: socket.socket) -> None:
    sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_answer(sock).startswith(b"HTTP/1.1 200 ")


@pytest.fixture
def two_idle() -> Iterator[tuple[Endpoint, socket.socket, socket.socket]]:
    """An endpoint serving at most 2 connections, both held by kept-alive connections left idle after a
    request (the first idle longest): the agent bug of clients built per call and never closed."""
    model = ScriptedModel([{"text": "hi"}] * 3)
    # An idle timeout far over the tests' bounds: a connection closed in them was closed for a waiting one.
    server = Endpoint(client_timeout_s=60, max_connections=2)
    server.default = Route(transport=CaptureTransport(model.transport(), Capture()), upstream="http://scripted.local")
    threads = set(threading.enumerate())
    server.start()
    first, second = (socket.create_connection(server.server_address[:2], timeout=10) for _ in range(2))
    try:
        _kept_alive_request(first)
        assert _wait_for(lambda: _idle_connections(server) == 1)
        _kept_alive_request(second)
        assert _wait_for(lambda: _idle_connections(server) == 2)
        yield server, first, second
    finally:
        first.close()
        second.close()
        server.stop()
        _end_handlers(threads)


def _newcomer_answered(server: Endpoint) -> bool:
    """A new connection over the cap is answered, well within the 60 s idle timeout (its socket's 10 s
    timeout raises first)."""
    with socket.create_connection(server.server_address[:2], timeout=10) as newcomer:
        newcomer.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return read_answer(newcomer).startswith(b"HTTP/1.1 200 ")


def test_over_the_cap_the_connection_idle_longest_is_closed_and_a_waiting_one_is_answered_at_once(
    two_idle: tuple[Endpoint, socket.socket, socket.socket],
) -> None:
    server, first, second = two_idle
    assert _newcomer_answered(server)
    assert first.recv(1) == b""  # idle longest: closed, as HTTP servers close an idle keep-alive
    _kept_alive_request(second)  # the other is still served


def test_a_connection_mid_request_is_never_the_one_closed_for_a_waiting_one(
    two_idle: tuple[Endpoint, socket.socket, socket.socket],
) -> None:
    server, first, second = two_idle
    # The connection idle longest starts its next request (headers, part of the body) just before the
    # newcomer connects: it is no longer idle, though its thread may not have woken yet to read it.
    first.sendall(post(b"Content-Length: %d\r\n" % len(BODY), BODY[:10]))
    assert _newcomer_answered(server)
    assert second.recv(1) == b""
    first.sendall(BODY[10:])
    answer = read_answer(first)
    assert answer.startswith(b"HTTP/1.1 200 ") and b'"text":"hi"' in answer


def test_sdk_clients_built_per_call_and_never_closed_do_not_stall_a_capped_endpoint() -> None:
    # The real SDK, no retries: each client's pooled connection, closed while idle to make room for
    # another's, is one it sees closed before reusing it, so it connects anew.
    model = ScriptedModel([{"text": "hi"}] * 9)
    server = Endpoint(client_timeout_s=60, max_connections=2)
    server.default = Route(transport=CaptureTransport(model.transport(), Capture()), upstream="http://scripted.local")
    server.start()
    clients = [anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0, timeout=10) for _ in range(3)]
    try:
        texts = [client.messages.create(model="claude-sonnet-5", max_tokens=8,
                                        messages=[{"role": "user", "content": "hi"}]).content[0].text  # type: ignore[union-attr]
                 for _ in range(3) for client in clients]
        assert texts == ["hi"] * 9
    finally:
        for client in clients:
            client.close()
        server.stop()
