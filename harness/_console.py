"""Everything the harness prints passes through here: secrets redacted, control characters inert.

Recordings, scenario names, tool names, agents' error messages and request paths are untrusted
text: one may hold the API key (an agent's error that quotes it), another terminal escapes that
erase the line above (`\\x1b[1A\\x1b[2K`). `harness` commands run inside `guarded_console()`, so
every line written to stdout or stderr is redacted and has its control characters escaped
(`\\x1b` printed as the four characters `\\x1b`). The harness's own cursor moves (the progress bar)
go through `write_control`, the one way around the guard. `inert` is the same treatment for a
single string (a log line, a Markdown cell).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

from ._secrets import redact

# C0 controls but newline and tab, DEL, and the C1 controls (`\x9b` is a one-byte CSI on some terminals).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def escape_controls(text: str) -> str:
    """Control characters (and lone surrogates) written as escapes; newlines and tabs kept."""
    text = _CONTROL.sub(_escape, text)
    if _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def inert(text: str) -> str:
    """`text` safe to print or log: secrets redacted, control characters escaped."""
    return escape_controls(redact(text))


def loggable_target(target: str) -> str:
    """A request target for a log line: the path only, since a query string may carry a key
    (`?key=sk-ant-...`); what it held is said, not shown."""
    path, mark, query = target.partition("?")
    return inert(path) + (f"?[query of {len(query)} characters not logged]" if mark else "")


class GuardedStream(io.TextIOBase):
    """A text stream that redacts and escapes what is written, a whole line at a time.

    A partial line is held until its newline, a flush or the end, so a secret split across two
    writes is still found.
    """

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self._pending = ""
        self._lock = threading.Lock()  # a server logs from its request threads

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            if "\n" in self._pending:
                done, _, self._pending = self._pending.rpartition("\n")
                self.raw.write(inert(done + "\n"))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                text, self._pending = self._pending, ""
                self.raw.write(inert(text))
        self.raw.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.raw, "isatty", lambda: False)())

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.raw, "encoding", "utf-8"))

    def fileno(self) -> int:
        return self.raw.fileno()


def write_control(stream: TextIO, sequence: str) -> None:
    """Write the harness's own terminal control `sequence` (e.g. `\\r\\x1b[K`) past the guard."""
    if isinstance(stream, GuardedStream):
        stream.flush()
        stream.raw.write(sequence)
    else:
        stream.write(sequence)


@contextlib.contextmanager
def guarded_console() -> Iterator[None]:
    """Inside the block, sys.stdout and sys.stderr are guarded; they are put back after."""
    saved = sys.stdout, sys.stderr
    out, err = GuardedStream(sys.stdout), GuardedStream(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved
