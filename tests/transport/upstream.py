"""A local stand-in for the real Anthropic API, for record and live tests that must never touch the internet.

It answers from a scripted model over real HTTP, and keeps the credentials each request arrived
with, so a test can check that the real key went upstream and the agent's placeholder did not.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.transport.scripted import ScriptedModel


class Upstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Sequence[Mapping[str, Any]]) -> None:
        self.model = ScriptedModel(script)
        self.credentials: list[dict[str, str]] = []
        """Per request: its x-api-key and authorization headers, as they arrived."""
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: Upstream

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.credentials.append(
            {name: value for name, value in self.headers.items() if name.lower() in ("x-api-key", "authorization")}
        )
        reply = self.server.model.answer(self.command, self.path, dict(self.headers.items()), body)
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.streamed:
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for chunk in reply.chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        self.server.model.finished(reply)


@contextmanager
def upstream(script: Sequence[Mapping[str, Any]]) -> Iterator[Upstream]:
    """A running stand-in API for the block's duration."""
    server = Upstream(script)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
