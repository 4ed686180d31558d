"""The scripted model as a real local HTTP server, for agents in any language (SDKs, curl).

A stdlib threaded server speaking HTTP/1.1: JSON answers with a length, streams in chunked
encoding one SSE event per chunk, and a cut stream drops the socket before the last chunk.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ..._console import loggable_target
from ._wire import Reply

if TYPE_CHECKING:
    from ._model import ScriptedModel


class ScriptedServer(ThreadingHTTPServer):
    """One thread per connection, so concurrent subagents are answered concurrently."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, model: ScriptedModel, host: str, port: int, *, log: Callable[[str], None] | None = None
    ) -> None:
        self.model = model
        self.log = log
        super().__init__((host, port), _Handler)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer is part of what agents do; only real faults are printed.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle and delayed ACKs add ~40 ms each.
    disable_nagle_algorithm = True
    server: ScriptedServer

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def do_DELETE(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the stdlib's access log would mix with the agent's output; see `_log`."""

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _answer(self) -> None:
        model = self.server.model
        body = self._read_body()
        reply = model.answer(self.command, self.path, {k: v for k, v in self.headers.items()}, body)
        try:
            if reply.delay_s:
                # Each connection has its own thread, so one slow answer does not hold up others.
                time.sleep(reply.delay_s)
            if reply.no_response:
                self.close_connection = True
            else:
                self._send(reply)
        finally:
            # Logged before `finished`, which may let `harness serve --exit-when-done` stop the process.
            self._log(reply)
            model.finished(reply)

    def _send(self, reply: Reply) -> None:
        # The stdlib knows no phrase for the API's own 529.
        self.send_response(reply.status, "Overloaded" if reply.status == 529 else None)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.streamed:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        if not reply.streamed:
            self.wfile.write(reply.body)
            self.wfile.flush()
            return
        for chunk in reply.chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        if reply.cut:
            # Without the closing zero-length chunk the client sees an incomplete body, as on a real drop.
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _log(self, reply: Reply) -> None:
        if self.server.log is None:
            return
        answered = f"step {reply.step.number} ({reply.step.describe()})" if reply.step else f"HTTP {reply.status}"
        how = " cut" if reply.cut else " dropped" if reply.no_response else ""
        fault = reply.step.stream_error if reply.step else None
        if fault is not None:
            # Else the log reads as a clean end_turn while the client got an error: say which.
            how += (
                f" with event: error {fault.type} after {fault.after} event(s)"
                if reply.streamed
                else f" answered as HTTP {reply.status} {fault.type}"
            )
        kind = " stream" if reply.streamed else ""
        self.server.log(f"{self.command} {loggable_target(self.path)} -> {answered}{kind}{how}")
