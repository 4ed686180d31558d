"""What every recording format is given and gives back: the file being read, and the format record.

A format never opens the file itself: it gets a `Recording` that holds the bytes, the text and the
parsed JSON/YAML document (each computed once, on first use), the secrets to scrub and the notes so
far. It returns the exchanges it found, built through `Recording.exchange` so that bodies, streams
and secrets are handled the same way for every format.
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from ..._yaml import MAX_FILE_BYTES, MAX_INT_DIGITS, Loc, load_recording, node_line, parse_yaml, read_bytes
from ...errors import CassetteError
from .._decode import GZIP_MAGIC, BodyTooLarge, inflate
from .._exchange import SharedHistory, exchange_from_http
from .._model import Exchange, Trace
from .._scrub import default_secrets

HEAD_BYTES = 65536
"""How much of a file the byte-level sniffs look at."""

_LONG_NUMBER = re.compile(r"\d{" + str(MAX_INT_DIGITS + 1) + ",}")

UNKNOWN_MESSAGES_URL = "unknown://request-not-recorded/v1/messages"
"""URL given to a response-only recording whose answer is a Messages answer: the request is unknown."""


def read_recording_bytes(path: str) -> bytes:
    """The bytes of a recording file, a gzip-compressed one inflated (LangChain keeps its cassettes as
    `.yaml.gz`): up to the limit of a file read as it is, so that compressing a file lets no more in."""
    data = read_bytes(path, error=CassetteError, what="recording")
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return inflate(data, limit=MAX_FILE_BYTES)
    except BodyTooLarge as exc:
        raise CassetteError(path, f"is gzip-compressed and inflates to over the {MAX_FILE_BYTES // 2**20} MB "
                                  "limit; not read") from exc
    except (zlib.error, EOFError) as exc:
        raise CassetteError(path, f"is gzip-compressed but does not inflate ({exc}); not read") from exc


def recording_suffix(path: str) -> str:
    """The suffix that says what a recording file holds: `.yaml` for `cassette.yaml.gz`."""
    name = Path(path)
    return (name.with_suffix("") if name.suffix.lower() == ".gz" else name).suffix.lower()


class Recording:
    """One file being read: its bytes (inflated, if the file is gzip-compressed), its parsed document on
    demand, and what reading it noted."""

    def __init__(self, path: str, data: bytes, secrets: Sequence[str] = ()) -> None:
        self.path = path
        self._data: bytes | None = data
        self.head = data[:HEAD_BYTES]
        self.suffix = recording_suffix(path)
        self.secrets = tuple(secrets)
        self._environment_secrets = default_secrets()
        """The environment's credentials, looked up once for the file (each lookup reads the environment)."""
        self.notes: list[str] = []
        self._parse_error: CassetteError | None = None
        self._lines: dict[Loc, int] = {}
        self._yaml = False
        self._history = SharedHistory()
        """What the requests read so far hold, for the next ones to share."""
        self.detected: tuple[RecordingFormat | None] | None = None
        """(the format that claims the file,) once `detect` asked every format: reading asks again."""

    @property
    def data(self) -> bytes:
        """The file's bytes. Let go once the file parsed as a document, whose strings are all that is
        read after (the bytes of a 44 MB cassette would stay beside them until the check ends); read
        again from the file when asked for after that (the line of an error, what the file looks like)."""
        if self._data is None:
            try:
                self._data = read_recording_bytes(self.path)
            except CassetteError:
                self._data = b""
        return self._data

    @property
    def text(self) -> str | None:
        """The file as UTF-8 text (a BOM dropped), or None when it is not UTF-8. Decoded on each use:
        the text of a large file is not kept beside its bytes (the parsers read the bytes)."""
        try:
            return self.data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None

    @cached_property
    def _parsed(self) -> Any:
        try:
            document = self._parse()
        except CassetteError as exc:
            self._parse_error = exc
            return None
        if document is not None:
            self._data = None
        return document

    @property
    def document(self) -> Any:
        """The file parsed as JSON (when it opens like JSON) or YAML; None when it parses as neither."""
        return self._parsed

    @cached_property
    def root(self) -> yaml.Node | None:
        """The YAML node tree of `document`, for the line of any key; None for JSON. Built again from
        the file when first asked for (an error's line): reading a file builds none."""
        if self.document is None or not self._yaml:
            return None
        return parse_yaml(self.text or "", self.path, error=CassetteError, recording=True, unique_keys=False).root

    @property
    def parse_error(self) -> CassetteError | None:
        """Why `document` is None, when the file tried to be JSON or YAML and failed."""
        _ = self._parsed
        return self._parse_error

    @cached_property
    def as_json(self) -> tuple[Any, ValueError | RecursionError | None] | None:
        """The file parsed as JSON when it opens like JSON (`{` or `[` after a BOM and blanks) and is
        UTF-8: (document, None), or (None, what json.loads raised); None when it does not open like
        JSON. Never tries YAML (a JSON-lines file read as YAML can take long to fail), never raises:
        a format may decide from it before `document` is asked for."""
        if self.head.removeprefix(codecs.BOM_UTF8).lstrip()[:1] not in (b"{", b"[") or not _is_utf8(self.data):
            return None
        # json.loads reads text: the bytes go first, so the file is held once while it is parsed.
        text = self.data.decode("utf-8-sig")
        self._data = None
        try:
            try:
                return json.loads(text), None
            except (ValueError, RecursionError) as exc:
                self._data = text.encode()  # kept: YAML may be tried next, errors describe the file
                return None, exc
        except BaseException:
            self._data = text.encode()
            raise

    def _parse(self) -> Any:
        parsed = self.as_json
        if parsed is not None:
            document, error = parsed
            if error is None:
                return document
            if isinstance(error, RecursionError):
                raise CassetteError(self.path,
                                    "is nested too deeply to be read as JSON (over ~1,000 levels)") from error
            if not isinstance(error, json.JSONDecodeError):  # an integer longer than Python reads
                text = self.text or ""
                long_number = _LONG_NUMBER.search(text)
                line = text.count("\n", 0, long_number.start()) + 1 if long_number else None
                raise CassetteError(self.path, f"holds an integer of more than {MAX_INT_DIGITS:,} digits; not read",
                                    line=line) from error
            if self.suffix in (".json", ".har"):
                raise CassetteError(self.path, f"is not valid JSON ({error.msg}, column {error.colno})",
                                    line=error.lineno) from error
        elif not _is_utf8(self.data):
            return None
        self._yaml = True
        document, self._lines = load_recording(self.data, self.path, error=CassetteError)
        return document

    def line_of(self, at: Loc, *keys: str | int) -> int | None:
        """1-based line of the entry at path `at` (`("interactions", 3)`), or of the deepest of `keys`
        under it that the file spells out; None for JSON."""
        if not self._yaml:
            return None
        if not keys and at in self._lines:
            return self._lines[at]
        return node_line(self.root, (*at, *keys))

    def fail(self, key: str, problem: str, at: Loc = (), *keys: str | int) -> CassetteError:
        """An error at `key`, with the line of the deepest of `keys` found under the entry at `at` (YAML only)."""
        return CassetteError(self.path, problem, line=self.line_of(at, *keys), key=key)

    def exchange(self, index: int, method: str, url: str, request_headers: Any, request_body: Any,
                 status: int | None, response_headers: Any, response_body: Any, **where: Any) -> Exchange:
        """`exchange_from_http` with this file's secrets, its notes collecting what had to be guessed."""
        made = exchange_from_http(index, method, url, request_headers, request_body, status, response_headers,
                                  response_body, secrets=self.secrets, environment_secrets=self._environment_secrets,
                                  notes=self.notes, history=self._history, **where)
        self._history.answered(made.response_body)
        return made

    def answer_alone(self, what: str, content_type: str, body: Any) -> list[Exchange]:
        """The one exchange of a file that kept a Messages answer and neither its request nor its status
        (`what` the file is): checked as a Messages call answered 200, which the notes say."""
        how = "the stream is reassembled and" if content_type == "text/event-stream" else "the answer is"
        self.notes.append(f"{what}: the request and the status were not kept; {how} checked as a Messages call "
                          "answered 200")
        return [self.exchange(0, "POST", UNKNOWN_MESSAGES_URL, None, None, 200, {"content-type": content_type}, body)]

    def describe(self) -> str:
        """What the file looks like, for the error that says no format matched."""
        if not self.data.strip():
            return "an empty file"
        if self.text is None:
            return f"binary data, not UTF-8 text (starts {self.data[:16]!r})"
        document = self.document
        kind = "a YAML" if self._yaml else "a JSON"
        if isinstance(document, dict):
            return f"{kind} mapping with keys {_keys(document)}"
        if isinstance(document, list):
            first = document[0] if document else None
            inside = f", the first a mapping with keys {_keys(first)}" if isinstance(first, dict) else ""
            return f"{kind} list of {len(document)} item(s){inside}"
        opening = self.text.strip().splitlines()[0][:60]
        return f"text starting {opening!r}"


def _keys(mapping: dict[Any, Any]) -> str:
    keys = sorted(map(str, mapping))
    shown = ", ".join(keys[:8]) + (f", ... ({len(keys)} in all)" if len(keys) > 8 else "")
    return f"({shown or 'none'})"


@dataclass(frozen=True)
class RecordingFormat:
    """A recording format: how to recognise a file of it, and how to read one."""

    name: str
    """Short id, shown in the list of formats tried (`vcrpy`, `go-vcr`, `har`)."""
    description: str
    """What a user would recognise it by, e.g. "a HAR 1.2 file (`log.entries`)"."""
    sniff: Callable[[Recording], bool]
    """Whether a file is of this format. Cheap first (`recording.head`), the parsed `document` only
    when needed; never raises. A file is read by the first format in the registry that claims it."""
    read: Callable[[Recording], list[Exchange]]
    """Every exchange of a claimed file, in order; a CassetteError (file, line, key, expectation) when
    the file is of this format but broken."""
    suffixes: tuple[str, ...] = ()
    """File name endings this format is kept under (`.yaml`): a folder scan reads a file when its
    suffix is one of a format's, or its opening bytes are one of a format's `markers`."""
    markers: tuple[bytes, ...] = ()
    """Byte strings whose presence in a file's head that fails to parse makes it a broken recording of
    this format (reported) rather than some other file met in a folder (skipped)."""
    load: Callable[[Recording, bool], Trace] | None = None
    """For a format that holds more than HTTP exchanges (OpenTelemetry spans: tool runs, how the run
    ended, what the spans do not carry): builds the whole trace, given whether it is a whole run.
    `load_trace` uses it instead of `read` and `build_trace`."""


# --- helpers several formats share ---------------------------------------------------------------


def timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO 8601 string, an HTTP date, a datetime or a number."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp()  # Ruby VCR: "Tue, 01 Apr 2025 12:00:00 GMT"
    except (TypeError, ValueError):
        return None


_STATUS_WORD = re.compile(r"\s*(\d{3})\b")


def status_code(value: Any) -> int | None:
    """An HTTP status from 200, "200", "200 OK" or {code: 200}; None when there is none."""
    if isinstance(value, dict):
        value = value.get("code")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = _STATUS_WORD.match(value)
        return int(match.group(1)) if match else None
    return None


_UTF8_CHUNK = 1 << 20


def _is_utf8(data: bytes) -> bool:
    """Whether `data` is UTF-8, checked a megabyte at a time: no copy of a large file is made."""
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(data), _UTF8_CHUNK):
            decoder.decode(view[start:start + _UTF8_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True
