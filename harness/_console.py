"""Everything the harness prints passes through here: secrets redacted, control characters inert.

Recordings, scenario names, tool names, agents' error messages and request paths are untrusted
text: one may hold the API key (an agent's error that quotes it), another terminal escapes that
erase the line above (`\\x1b[1A\\x1b[2K`). `harness` commands run inside `guarded_console()`, so
every line written to stdout or stderr is redacted and has its control characters escaped
(`\\x1b` printed as the four characters `\\x1b`). The harness's own terminal output (the progress
bar, the summary table) is drawn by rich on `rich_console`, the one way around the guard: what it is
given must already be `inert`, the same treatment for a single string (a log line, a table cell).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO, cast

from ._secrets import redact

if TYPE_CHECKING:
    from rich.console import Console

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


# Embeddings, overrides, isolates and the invisible marks that steer bidirectional layout. Escaping
# stops markup; it does not stop a right-to-left override (U+202E) or an isolate from making
# `process_refund` display as something else, or flipping the words around it ("Trojan Source").
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI = re.compile(f"[{_BIDI_CONTROLS}]")


def reveal_bidi(text: str) -> str:
    """Direction controls shown as `<U+202E>`, so that text reads in the order it was sent: every string
    a page or a summary (HTML, Markdown, SVG, JUnit) shows from a trace goes through here."""
    # Nearly no text holds one. Twelve `in` searches (C's string search) find that out in a tenth of the
    # time the regex takes to scan the text once: a character class has no fast search in `re`, and a
    # 10,000-run page passes 25 MB of its runs' data through here. Written out, not a generator over
    # _BIDI_CONTROLS: in text of one byte a character, as most is, each search answers at once (no
    # control fits), and the generator's twelve resumptions were four fifths of the time.
    # A plain str only: the regex makes a plain str of a subclass (a Markup comes back as text to
    # escape), and so must this.
    if type(text) is str and not (
            "\u061c" in text or "\u200e" in text or "\u200f" in text or "\u202a" in text or "\u202b" in text
            or "\u202c" in text or "\u202d" in text or "\u202e" in text or "\u2066" in text or "\u2067" in text
            or "\u2068" in text or "\u2069" in text):
        return text
    return _BIDI.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", text)


_BIDI_UTF8 = tuple(control.encode("utf-8") for control in _BIDI_CONTROLS)


def holds_bidi(data: bytes) -> bool:
    """Whether UTF-8 `data` holds a direction control, which `reveal_bidi` would show: for a text kept as
    bytes (a run's details on a page) rather than decoded for this alone. Each control's encoding starts
    with byte E2 or D8 (U+061C): a text with neither, as nearly every one is, is told by two C byte
    searches (ASCII, as a run's record mostly is, by one test that reads eight bytes at a time); one with
    either (an em dash, curly quotes) by looking for each control's bytes."""
    if data.isascii() or (b"\xe2" not in data and b"\xd8" not in data):
        return False
    return any(control in data for control in _BIDI_UTF8)


def inert(text: str) -> str:
    """`text` safe to print or log: secrets redacted, control characters escaped."""
    return escape_controls(redact(text))


def loggable_target(target: str) -> str:
    """A request target for a log line: the path only, since a query string may carry a key
    (`?key=sk-ant-...`); what it held is said, not shown."""
    path, mark, query = target.partition("?")
    return inert(path) + (f"?[query of {len(query)} characters not logged]" if mark else "")


class _OverStream(io.TextIOBase):
    """A text stream written through to `raw`, which it stands for: a terminal if `raw` is one, its
    encoding and its descriptor."""

    raw: TextIO

    def isatty(self) -> bool:
        return bool(getattr(self.raw, "isatty", lambda: False)())

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.raw, "encoding", "utf-8"))

    def fileno(self) -> int:
        return self.raw.fileno()


class GuardedStream(_OverStream):
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



class ReaderMayLeave(_OverStream):
    """A standard stream whose reader may go away (`harness run | head -1`): from then on what is
    written is dropped, quietly, as a Unix tool stops writing, while the command finishes its work
    (every run made, the results file and the report written) and exits with its own status."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.raw.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.raw.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self.gone = True
        # The real stream still holds what it could not write, and Python flushes it once more at
        # exit: its descriptor now leads to /dev/null, so that flush has nowhere to fail.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.raw.fileno())
            os.close(devnull)

    def isatty(self) -> bool:
        return not self.gone and super().isatty()


def rich_console(stream: TextIO) -> Console:
    """A rich console drawing on `stream` past the guard, so its styles and cursor moves reach the
    terminal. Every text handed to it must be `inert` already. Off a terminal (a pipe, a CI log) it
    writes plain text and never wraps: a line per row, however wide, is what a log reader greps."""
    from rich.console import Console  # only commands that draw pay for importing rich

    if isinstance(stream, GuardedStream):
        stream.flush()
        stream = stream.raw
    terminal = bool(getattr(stream, "isatty", lambda: False)())
    return Console(file=stream, force_terminal=terminal, width=None if terminal else 100_000,
                   highlight=False, markup=False, emoji=False, soft_wrap=not terminal)


def print_rich(stream: TextIO, renderable: Any) -> None:
    """Draw `renderable` (a rich table, say, of `inert` text) on `stream`: styled on a terminal, plain
    text without trailing blanks elsewhere."""
    console = rich_console(stream)
    if console.is_terminal:
        console.print(renderable)
        return
    stream.write(render_rich(renderable, styled=False))


def render_rich(renderable: Any, *, styled: bool, width: int = 80) -> str:
    """The text rich draws for `renderable` (of `inert` text), for a writer of its own to print (pytest's
    terminal reporter): styled and fitted to `width` columns for a terminal; otherwise plain, never
    wrapped and without trailing blanks, as `rich_console` writes to a log."""
    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=styled, width=width if styled else 100_000,
                      highlight=False, markup=False, emoji=False, soft_wrap=not styled)
    with console.capture() as captured:
        console.print(renderable)
    if styled:
        return captured.get()
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


@contextlib.contextmanager
def guarded_console() -> Iterator[None]:
    """Inside the block, sys.stdout and sys.stderr are guarded; they are put back after."""
    saved = sys.stdout, sys.stderr
    # A stream closed before the command started (`>&-`) is None: what goes there is dropped, as when its
    # reader has left, where writing to None was a traceback.
    sinks = [open(os.devnull, "w", encoding="utf-8") for stream in saved if stream is None]  # noqa: SIM115
    spare = iter(sinks)
    out, err = (GuardedStream(cast(TextIO, ReaderMayLeave(stream if stream is not None else next(spare))))
                for stream in saved)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved
        for sink in sinks:
            sink.close()
