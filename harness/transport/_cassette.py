"""Replay and record vcrpy cassettes through the transport seam, not vcrpy's global patching.

Each `CassetteTransport` owns one vcrpy `Cassette`, so several runs can replay different cassettes
at once in threads. Files stay plain vcrpy cassettes (`vcr.use_cassette` can replay them).

Record modes (as in pytest-recording; each stands alone, no option overrides another):

    none          replay only; a request the cassette does not hold fails (NoMatchingInteraction).
    once          the cassette file exists: exactly like `none`. It does not: record every request.
    new_episodes  replay the requests the cassette holds, forward and record the others, and append them.
    all           forward and record every request; the file is rewritten with this run only.

Matching: method, scheme, host, path and the JSON body compared parsed (key order and whitespace do
not matter; `ignore_body_keys` drops top-level keys that legitimately vary). Identical requests
play the identical recorded interactions in recorded order. Whenever a mode replays, recorded
interactions left unplayed fail `finish()` (UnplayedInteractions).

A request that matches nothing is answered by raising an error that is both NoMatchingInteraction
and `anthropic.AnthropicError`: the SDK passes such errors through unwrapped and does not retry
them, so the agent fails fast; the error is also kept in `failures` for the harness.

Writing is atomic: the text is scanned for secrets, written to a temp file in the same folder, then
moved with `os.replace`; a temp file left by a killed save is swept when a process next records into
its folder. Request and response headers are scrubbed before they are stored. Where the cassette was recorded is kept
under the top-level `metadata: {harness: ...}` key, which vcrpy itself loads and saves unchanged.
How long the model took to answer is kept per interaction, as `response: {harness: {started_at,
duration_s}}` (see `harness.trace._timing`), and handed up with each played answer so a replay's
trace carries the recorded latency instead of the replay's own few milliseconds.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from importlib import metadata as _importlib_metadata
from pathlib import Path
from typing import Any, Literal

import anthropic
import httpx2
import yaml
from vcr import matchers as vcr_matchers
from vcr.cassette import Cassette
from vcr.persisters.filesystem import CassetteNotFoundError, FilesystemPersister
from vcr.record_mode import RecordMode as VcrRecordMode
from vcr.request import Request as VcrRequest
from vcr.serialize import serialize as vcr_serialize
from vcr.serializers import jsonserializer, yamlserializer

from .._modes import RECORD_MODES, RecordMode
from .._output import why_not_written
from ..errors import CassetteError, NoMatchingInteraction, SecretLeak, UnplayedInteractions, UsageError
from ..trace._decode import inflate_bounded
from ..trace._model import HARNESS_ROLE_HEADER
from ..trace._scrub import default_secrets, find_secret, scrub_headers
from ..trace._timing import REPLAY_EXTENSION, RESPONSE_KEY, recorded_timing, timing_entry
from ._capture import SENT_TO_EXTENSION, AsyncTeeStream, StreamDone, TeeStream, raw_stream, teed_response

RecordedAgainst = Literal["live API", "scripted model"]

_MAX_DIFF_LINES = 12
_MAX_VALUE_CHARS = 80


_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# libyaml's parser: the pure-Python one took 0.7 ms for a cassette's few lines of metadata, which
# every replay reads (`read_cassette_metadata`), ten times the rest of that read.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"


class _CassetteDumper(_SafeDumper):  # type: ignore[misc,valid-type]
    """vcrpy's YAML, the same text, built in about half the time: a cassette is only strings,
    lists, dicts, ints, bools and None (bodies are text, or bytes for a compressed one), and PyYAML
    looks every node's representer up through the type's MRO, which was the largest cost of
    saving a recorded run. Anything else goes the ordinary way, where PyYAML's safe representer
    refuses what no safe loader could read back, as vcrpy's own dumper does."""

    def represent_data(self, data: Any) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return yaml.ScalarNode(_TAG + "str", data)
        if kind is dict or kind is list:
            # An object met twice is an anchor and an alias, as PyYAML writes it.
            node: yaml.Node | None = self.represented_objects.get(id(data))
            if node is not None:
                return node
            if kind is dict:
                try:
                    items = sorted(data.items())  # yaml.dump's sort_keys
                except TypeError:
                    unsortable: yaml.Node = super().represent_data(data)
                    return unsortable
                mapping = yaml.MappingNode(_TAG + "map", [], flow_style=False)
                self.represented_objects[id(data)] = mapping
                self.object_keeper.append(data)
                mapping.value = [(self.represent_data(key), self.represent_data(value)) for key, value in items]
                return mapping
            sequence = yaml.SequenceNode(_TAG + "seq", [], flow_style=False)
            self.represented_objects[id(data)] = sequence
            self.object_keeper.append(data)
            sequence.value = [self.represent_data(item) for item in data]
            return sequence
        if kind is int:
            return yaml.ScalarNode(_TAG + "int", str(data))
        if kind is bool:
            return yaml.ScalarNode(_TAG + "bool", "true" if data else "false")
        if data is None:
            return yaml.ScalarNode(_TAG + "null", "null")
        other: yaml.Node = super().represent_data(data)
        return other


class _YamlSerializer:
    """vcrpy's YAML serializer (its loader), writing with `_CassetteDumper`."""

    deserialize = staticmethod(yamlserializer.deserialize)

    @staticmethod
    def serialize(cassette_dict: dict[str, Any]) -> str:
        return yaml.dump(cassette_dict, Dumper=_CassetteDumper)


class ReplayMiss(NoMatchingInteraction, anthropic.AnthropicError):
    """A replay miss as the SDK must see it.

    The SDK wraps any other exception from the transport in APIConnectionError and retries it;
    an AnthropicError it passes through as is, unretried, so the agent fails on the first miss.
    """


@functools.cache
def harness_version() -> str:
    """The installed harness's version, read once: every recording's metadata names it, and reading
    the package metadata costs more than a short run's call."""
    try:
        return _importlib_metadata.version("agent-harness")
    except _importlib_metadata.PackageNotFoundError:
        return "unknown"


_YAML_METADATA = re.compile(r"^metadata:[^\n]*\n(?:[ \t-][^\n]*\n?|\n)*", re.MULTILINE)


def read_cassette_metadata(path: str | Path) -> dict[str, Any] | None:
    """What the harness wrote about where a cassette was recorded, or None for a foreign cassette."""
    text = Path(path).read_text(encoding="utf-8")
    serializer = jsonserializer if str(path).endswith(".json") else yamlserializer
    # Every replay asks where its answers came from: a YAML cassette's top-level `metadata:` block
    # (a key at column 0, which no body's text can be) is parsed alone, not the whole recording.
    block = _YAML_METADATA.search(text) if serializer is yamlserializer else None
    try:
        data = yaml.load(block.group(0), Loader=_SafeLoader) if block else serializer.deserialize(text)
    except (ValueError, yaml.YAMLError) as err:
        raise CassetteError(str(path), f"not a readable cassette: {err}") from err
    meta = data.get("metadata") if isinstance(data, dict) else None
    harness = meta.get("harness") if isinstance(meta, dict) else None
    return harness if isinstance(harness, dict) else None


def _parse_json(body: Any) -> Any:
    """The parsed JSON body, or the raw bytes when it is not JSON (compared as they are)."""
    if body is None or body == b"" or body == "":
        return None
    if isinstance(body, str):
        body = body.encode("utf-8")
    if not isinstance(body, (bytes, bytearray)):
        return body
    try:
        return json.loads(body)
    except ValueError:
        return bytes(body)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def _changed_text(recorded: str, sent: str) -> str:
    """Two long texts (a prompt, a judge's rubric) by where they start to differ, not by their
    shared opening: `... from character 212: 'says where order O1 is' -> 'says when order O1 is'`."""
    if len(recorded) <= _MAX_VALUE_CHARS and len(sent) <= _MAX_VALUE_CHARS:
        return f"{_short(recorded)} -> {_short(sent)}"
    start = next((i for i, (a, b) in enumerate(zip(recorded, sent, strict=False)) if a != b),
                 min(len(recorded), len(sent)))
    begin = max(0, start - 10)
    return (f"from character {begin}: {_short(recorded[begin:begin + _MAX_VALUE_CHARS // 2])} -> "
            f"{_short(sent[begin:begin + _MAX_VALUE_CHARS // 2])}")


def body_diff(recorded: Any, sent: Any) -> list[str]:
    """One line per difference, recorded -> sent, e.g. "values_changed root['model']: 'a' -> 'b'"."""
    from deepdiff import DeepDiff  # about 0.4 s with pandas and numpy: paid only when a request is unmatched

    tree = DeepDiff(recorded, sent, view="tree")
    lines: list[str] = []
    for kind, items in tree.items():
        for item in items:
            if kind.endswith("_added"):
                lines.append(f"{kind} {item.path()}: {_short(item.t2)}")
            elif kind.endswith("_removed"):
                lines.append(f"{kind} {item.path()}: {_short(item.t1)}")
            elif isinstance(item.t1, str) and isinstance(item.t2, str):
                lines.append(f"{kind} {item.path()}: {_changed_text(item.t1, item.t2)}")
            else:
                lines.append(f"{kind} {item.path()}: {_short(item.t1)} -> {_short(item.t2)}")
    lines.sort()
    if len(lines) > _MAX_DIFF_LINES:
        lines = lines[:_MAX_DIFF_LINES] + [f"... {len(lines) - _MAX_DIFF_LINES} more differences"]
    return lines


def _label(number: int, request: VcrRequest) -> str:
    """'#4 POST /v1/messages (messages: 7)': enough to find the interaction in the file."""
    text = f"#{number} {request.method} {request.path or '/'}"
    body = _parse_json(request.body)
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        text += f" (messages: {len(body['messages'])})"
    role = _harness_role(request)
    return text + (f" [{_ROLE_NAMES[role]}]" if role else "")


_ROLE_NAMES = {"judge": "the judge's call", "user": "the simulated user's call"}


def _harness_role(request: VcrRequest) -> str | None:
    """`judge` or `user` for a recorded call the harness made itself (header x-harness-role)."""
    value = {name.lower(): v for name, v in request.headers.items()}.get(HARNESS_ROLE_HEADER)
    value = value[0] if isinstance(value, list) and value else value
    return value if value in _ROLE_NAMES else None


_HOW_TO_RECORD = (
    "open_session('record', record_mode='all') against the live API (needs ANTHROPIC_API_KEY), or "
    "open_session('scripted', cassette=...) to rebuild it from a script; record_mode='new_episodes' keeps "
    "what still matches and records the rest."
)


class _Persister:
    """vcrpy's filesystem persister, made atomic and made to refuse a file that holds a secret."""

    def __init__(self, secrets: Callable[[], Iterable[str]], metadata: Callable[[], dict[str, Any]]) -> None:
        self._secrets = secrets
        self._metadata = metadata

    def load_cassette(self, cassette_path: str | Path, serializer: Any) -> Any:
        try:
            loaded = FilesystemPersister.load_cassette(cassette_path, serializer)
        except CassetteNotFoundError:
            raise
        except Exception as err:
            # vcrpy would log this and treat the cassette as empty, then overwrite it; a replay
            # must stop instead and say the file is unreadable.
            raise CassetteError(
                str(cassette_path), f"not a readable vcrpy cassette ({type(err).__name__}: {err})"
            ) from err
        # vcrpy keeps a response as the mapping it read: a hand-edited status, header or body would
        # only fail when played, inside the run, as a TypeError or an answer the SDK retries into a
        # replay miss. Said here instead, with the line to fix.
        # (requests, responses), and the metadata third when the cassette has any.
        for index, response in enumerate(loaded[1]):
            unplayable = _unplayable(response)
            if unplayable is not None:
                keys, problem = unplayable
                raise _located(Path(cassette_path), index, keys, problem)
        return loaded

    def save_cassette(self, cassette_path: str | Path, cassette_dict: dict[str, Any], serializer: Any) -> None:
        path = Path(cassette_path)
        previous_meta = cassette_dict.get("metadata") or {}
        cassette_dict = {**cassette_dict, "metadata": {**previous_meta, "harness": self._metadata()}}
        data = vcr_serialize(cassette_dict, serializer)
        # Scanned before a byte reaches the disk: a temp file killed mid-write must not hold the key.
        secrets = (*self._secrets(), *default_secrets())
        place = _locate_secret(cassette_dict, secrets)
        where = find_secret(data, secrets)
        if place is not None or where is not None:
            raise SecretLeak(f"{path}: not written: the cassette would contain "
                             f"{where or 'a secret'}{', in ' + place if place else ''}. {_fix_for(place)}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
        except OSError as exc:  # a read-only folder, a file where a folder goes: said, not a traceback
            raise CassetteError(str(path), f"cannot be written ({why_not_written(exc, path)}); "
                                "a cassette already there is kept unchanged") from None
        temp = Path(temp_name)
        try:
            with _sigterm_raises(), os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise


def _unplayable(response: Any) -> tuple[tuple[str, ...], str] | None:
    """Why a loaded response cannot be played back as HTTP: the keys under `response` where it is
    wrong and what was expected; None when `_played_response` can play it."""
    if not isinstance(response, dict):
        return (), "expected a mapping with status, headers and body"
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else None
    if not isinstance(status, dict):
        return ("status",), f"expected a mapping with code and message, got {status!r}"
    if not isinstance(code, int) or isinstance(code, bool) or not 100 <= code <= 599:
        return ("status", "code"), f"expected an HTTP status code from 100 to 599, got {code!r}"
    message = status.get("message")
    if message is not None and not (isinstance(message, str) and message.isascii()):
        return ("status", "message"), f"expected the reason phrase as ASCII text, got {message!r}"
    headers = response.get("headers")
    if headers is not None:
        if not isinstance(headers, dict):
            return ("headers",), f"expected a mapping of header names to lists of values, got {headers!r}"
        for name, values in headers.items():
            # A bare string would be played a character per header line.
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                return ("headers", str(name)), f"expected a list of values (`- value` lines), got {values!r}"
    body = response.get("body")
    if body is not None and not (isinstance(body, dict) and isinstance(body.get("string"), (str, bytes, type(None)))):
        return ("body",), f"expected a mapping with string (the body as text), got {body!r}"
    return None


def _located(path: Path, index: int, keys: tuple[str, ...], problem: str) -> CassetteError:
    """The error for interaction `index`'s response at `keys`, with its line (the file is read again:
    only on this error path)."""
    from ..trace.formats._base import Recording

    at = ("interactions", index)
    try:
        recording = Recording(str(path), path.read_bytes())
        recording.document  # noqa: B018 -- parsed first: the lines are the parse's
        line = recording.line_of(at, "response", *keys)
    except (OSError, CassetteError):
        line = None
    return CassetteError(str(path), problem, line=line, key=".".join((f"interactions[{index}].response", *keys)))


TEMP_SUFFIX = ".tmp"
_STALE_AFTER_S = 60.0


# The name of a temp file of `save_cassette`'s, parts as `sweep_stale_temps_in` says them.
_ANY_TEMP = re.compile(r"\..+\.(?:yaml|yml|json)\.[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))


def sweep_stale_temps_in(folder: Path) -> list[Path]:
    """Remove the files of `folder` named as `save_cassette` names its temp files (`.NAME.XXXXXXXX.tmp`:
    NAME a cassette's file name ending in .yaml, .yml or .json, XXXXXXXX the eight characters mkstemp
    draws from a-z, 0-9 and _; only that exact shape, as another tool's temp file is not ours to remove)
    and last written over a minute ago: taken as left by a save that was killed. A
    cassette named otherwise (any name records) leaves its rare killed save's temp file to be removed by
    hand: without the cassette suffixes, the shape alone would claim other tools' temp files.

    A save takes far less than a minute, so an older temp file is no one's work in progress; left
    there, `git add cassettes/` would commit it. A file of another name, or a fresher one, is kept.
    """
    removed: list[Path] = []
    now = time.time()
    # Names compared as strings, not globbed: a glob per recorded cassette was once the largest cost
    # of a batch of short recordings.
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if name.endswith(TEMP_SUFFIX) and _ANY_TEMP.fullmatch(name):
            with contextlib.suppress(OSError):
                if entry.is_file() and now - entry.stat().st_mtime > _STALE_AFTER_S:
                    os.unlink(entry.path)
                    removed.append(folder / name)
    return removed


_swept: set[Path] = set()
_swept_lock = threading.Lock()


def _sweep_once(cassette: Path) -> None:
    """Sweep the stale temp files of every cassette in `cassette`'s folder, the first time this
    process records into that folder. Only a killed process leaves one, so looking again finds
    nothing new, and a look per cassette read the folder once for each of its cassettes: a batch
    recording N cassettes into one folder read N entries N times."""
    folder = cassette.parent
    with _swept_lock:
        if folder in _swept:
            return
        _swept.add(folder)
    sweep_stale_temps_in(folder)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While a temp file is written, SIGTERM unwinds (and so removes it) instead of killing outright."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fix_for(place: str | None) -> str:
    if place is None:
        return "Find where the key entered the run, keep it out, and record again."
    if "URL" in place:
        return ("A query string is recorded as it was sent: pass the key in the x-api-key header "
                "(the SDK's api_key), not in the URL, and record again.")
    if "header" in place:
        return "That header escaped scrubbing: pass its value in secrets= and record again."
    return ("Headers are scrubbed but bodies are not: keep the key out of prompts and tool results, "
            "then record again.")


def _origin(request: VcrRequest) -> str:
    """`http://127.0.0.1:8765`: the base URL a recorded request went to, default ports left out."""
    default = {"http": 80, "https": 443}.get(request.scheme)
    port = "" if request.port in (None, default) else f":{request.port}"
    return f"{request.scheme}://{request.host}{port}"


def _locate_secret(cassette_dict: dict[str, Any], secrets: tuple[str, ...]) -> str | None:
    """'interaction #2 request body': where a secret sits, naming the place, never the value.

    Bodies are looked at decoded (gzip inflated, a stream's text deltas joined), so a key the model
    echoed across several events, or one inside a compressed answer, is found too.
    """
    texts: list[tuple[str, str]] = []
    pairs = zip(cassette_dict["requests"], cassette_dict["responses"], strict=False)
    for number, (request, response) in enumerate(pairs, start=1):
        places: list[tuple[str, Any]] = [
            ("request URL", request.uri),
            *((f"request header {name!r}", value) for name, value in request.headers.items()),
            ("request body", request.body),
            *((f"response header {name!r}", value) for name, value in (response.get("headers") or {}).items()),
            ("response body", (response.get("body") or {}).get("string")),
        ]
        texts.extend((f"interaction #{number} {place}", text)
                     for place, value in places for text in _readable_forms(value))
    # One scan of all the texts joined: what any one of them holds, the joined text holds too, so a clean
    # join means a clean cassette (a scan per text was most of a short recording's save). A find is then
    # placed text by text; one that only the joining made finds no place, and the cassette is clean.
    if find_secret("\n".join(text for _, text in texts), secrets) is None:
        return None
    return next((place for place, text in texts if find_secret(text, secrets) is not None), None)


def _readable_forms(value: Any) -> Iterator[str]:
    """The value as text, and its decoded forms: inflated when gzip, text deltas joined when a stream."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _readable_forms(item)
        return
    if isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        if data[:2] == b"\x1f\x8b":
            inflated = inflate_bounded(data)
            if inflated is not None:
                data = inflated
        text = data.decode("utf-8", errors="replace")
    else:
        text = "" if value is None else str(value)
    yield text
    if "event:" in text or "data:" in text:
        yield "".join(_DELTA_TEXT.findall(text))


_DELTA_TEXT = re.compile(r'"(?:text|partial_json|thinking)"\s*:\s*"((?:[^"\\]|\\.)*)"')


class CassetteTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Answer from a cassette, and/or forward to a real transport and record, per `record_mode`."""

    def __init__(
        self,
        path: str | Path,
        *,
        record_mode: RecordMode = "none",
        inner: httpx2.BaseTransport | None = None,
        async_inner: httpx2.AsyncBaseTransport | None = None,
        recorded_against: RecordedAgainst = "live API",
        secrets: Iterable[str] = (),
        ignore_body_keys: Collection[str] = (),
        rerecord_hint: str | None = None,
        harness_calls: bool = True,
    ) -> None:
        """`rerecord_hint` says how to (re-)record this cassette, ending the messages of a replay miss,
        of unplayed answers and of a missing file. The default speaks of `open_session`; a caller
        such as `harness run` knows the exact command to type instead.

        `harness_calls=False`: the run makes none of the harness's own calls (`harness serve` serves
        an agent alone), so the recorded judge and simulated-user calls are not its to play: they are
        counted apart (`harness_calls_left`), never as unplayed."""
        if record_mode not in RECORD_MODES:
            raise UsageError(f"record_mode {record_mode!r} is not one of {', '.join(RECORD_MODES)}")
        self.path = Path(path)
        self.record_mode: RecordMode = record_mode
        self.recorded_against = recorded_against
        self.failures: list[NoMatchingInteraction] = []
        """Every replay miss of the run, in order, even those the agent caught and swallowed."""
        self._inner = inner
        self._async_inner = async_inner
        self._secrets: list[str] = list(secrets)
        self._ignore_body_keys = frozenset(ignore_body_keys)
        self._lock = threading.Lock()
        self._finished = False
        self.held = False
        """`finish(hold=True)` left a recording to write or drop by `settle`."""
        self.not_written: str | None = None
        """After `finish`: why a recording cassette was not written (None when written, or not recording)."""
        self.rerecord_hint = rerecord_hint or _HOW_TO_RECORD
        self._plays_harness_calls = harness_calls

        if record_mode != "none":
            _sweep_once(self.path.absolute())
        exists = self.path.is_file() and self.path.stat().st_size > 0
        # "once" decides between replaying and recording by the file, once, when the run starts.
        self.replays = record_mode in ("none", "new_episodes") or (record_mode == "once" and exists)
        self.records = record_mode in ("new_episodes", "all") or (record_mode == "once" and not exists)
        if record_mode == "none" and not exists:
            raise CassetteError(
                str(self.path),
                f"no cassette here to replay. Record it first: {self.rerecord_hint}",
            )
        if self.records and inner is None and async_inner is None:
            raise UsageError(f"record_mode {record_mode!r} may record, so it needs an inner transport to forward to")

        cassette_kwargs: dict[str, Any] = dict(
            path=str(self.path),
            serializer=jsonserializer if self.path.suffix == ".json" else _YamlSerializer,
            persister=_Persister(lambda: tuple(self._secrets), self._metadata),
            record_mode=VcrRecordMode(record_mode),
            # Not scheme, host nor port: the base URL is where the run was pointed (the API, a proxy,
            # `harness serve`), not what the agent did; a cassette recorded through ANTHROPIC_BASE_URL
            # must replay without it, and one recorded from the API must replay behind a gateway.
            match_on=(vcr_matchers.method, vcr_matchers.path, self._body),
            # "all" rewrites the file with this run only; loaded interactions never survive it.
            drop_unused_requests=record_mode == "all",
        )
        # "all" never reads the old file, so a broken one can be re-recorded over.
        self.cassette = Cassette.load(**cassette_kwargs) if self.replays else Cassette(**cassette_kwargs)
        self._loaded = len(self.cassette.data)

    def add_secret(self, secret: str) -> None:
        """Also refuse to write this value (e.g. the api_key a client was given)."""
        with self._lock:
            if secret not in self._secrets:
                self._secrets.append(secret)

    def _metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "recorded_against": self.recorded_against,
            "recorded_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "harness_version": harness_version(),
            "record_mode": self.record_mode,
        }
        # The in-process scripted model has no address: the URL its requests carry is only the SDK's
        # default, so writing it would claim answers came from the API. A scripted model behind
        # `harness serve` is recorded as "live API" through its local URL, which is kept below.
        if self.recorded_against == "scripted model":
            return metadata
        # "live API" may well have been a proxy, a gateway or `harness serve` (ANTHROPIC_BASE_URL):
        # say where the answers really came from.
        origins = sorted({_origin(request) for request in self.cassette.requests})
        if origins:
            metadata["base_url"] = origins[0] if len(origins) == 1 else origins
        return metadata

    def _body(self, r1: VcrRequest, r2: VcrRequest) -> None:
        """vcrpy matcher: JSON bodies equal once parsed, minus the ignored top-level keys."""
        # vcrpy tries this against every recorded request; the readable diff is built once, by
        # _mismatch, only when nothing matched.
        if self._comparable(r1) != self._comparable(r2):
            raise AssertionError("the bodies differ")

    def _comparable(self, request: VcrRequest) -> Any:
        body = _parse_json(request.body)
        if self._ignore_body_keys and isinstance(body, dict):
            body = {k: v for k, v in body.items() if k not in self._ignore_body_keys}
        return body

    def _vcr_request(self, request: httpx2.Request, body: bytes) -> VcrRequest:
        headers = scrub_headers(request.headers.items(), self._secrets)
        return VcrRequest(request.method, str(request.url), body, headers)

    def _route(self, request: httpx2.Request, body: bytes) -> tuple[VcrRequest, dict[str, Any] | None]:
        """The recorded answer to play, or None when the request is to be forwarded and recorded."""
        vcr_request = self._vcr_request(request, body)
        with self._lock:
            if self.replays and vcr_request in self.cassette:
                return vcr_request, self.cassette.play_response(vcr_request)
            if self.records:
                return vcr_request, None
            failure = self._mismatch(vcr_request, sent_to=request.extensions.get(SENT_TO_EXTENSION))
            self.failures.append(failure)
        raise failure

    def _mismatch(self, sent: VcrRequest, *, sent_to: str | None = None) -> ReplayMiss:
        """Name the closest recorded request and how its body differs from the one sent; `sent_to`
        is the URL the client sent it to, when that is not the one matched (see SENT_TO_EXTENSION)."""
        head = f"replay: no recorded interaction matches {sent.method} {sent_to or sent.uri}."
        same_route = [
            (i, recorded)
            for i, recorded in enumerate(self.cassette.requests)
            if recorded.method == sent.method and recorded.path == sent.path
        ]
        sent_body = self._comparable(sent)
        identical = [i for i, recorded in same_route if self._comparable(recorded) == sent_body]
        if identical:
            detail = (
                f"The cassette holds {len(identical)} identical request(s) "
                f"({', '.join(_label(i + 1, self.cassette.requests[i]) for i in identical)}), all already played: "
                "the agent sent this request more times than when it was recorded."
            )
        elif same_route:
            from deepdiff import DeepDiff

            def distance(entry: tuple[int, VcrRequest]) -> tuple[bool, float]:
                index, recorded = entry
                diff = DeepDiff(self._comparable(recorded), sent_body, get_deep_distance=True)
                # Prefer an interaction still to be played: that is the one the agent was meant to get.
                return (self.cassette.play_counts[index] > 0, float(diff.get("deep_distance", 0.0)))

            index, closest = min(same_route, key=distance)
            lines = body_diff(self._comparable(closest), sent_body)
            detail = f"Closest recorded: {_label(index + 1, closest)}; its body (recorded -> sent):\n" + "\n".join(
                f"  {line}" for line in lines
            )
        elif self.cassette.requests:
            routes = sorted({f"{r.method} {r.path}" for r in self.cassette.requests})
            detail = f"The cassette holds no {sent.method} {sent.path}; it holds: {', '.join(routes)}."
        else:
            detail = "The cassette holds no interactions."
        whose = "these" if _harness_role(sent) else "the agent's"
        return ReplayMiss(f"{head}\n{detail}\nCassette: {self.path}\n"
            f"If {whose} requests changed on purpose, record the cassette again: {self.rerecord_hint}")

    def _played_response(self, recorded: dict[str, Any], request: httpx2.Request) -> httpx2.Response:
        status = recorded["status"]
        body = (recorded.get("body") or {}).get("string") or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        message = status.get("message")
        started_at, duration_s = recorded_timing(recorded)
        extensions: dict[str, Any] = {REPLAY_EXTENSION: {"started_at": started_at, "duration_s": duration_s}}
        if message:
            extensions["reason_phrase"] = message.encode("ascii")
        return httpx2.Response(
            status["code"],
            headers=[(name, value) for name, values in recorded["headers"].items() for value in values],
            # A stream, not content=, so the client reads it like a real body (and a tee sees it).
            stream=httpx2.ByteStream(body),
            extensions=extensions,
            request=request,
        )

    def _recorder(
        self, vcr_request: VcrRequest, response: httpx2.Response, started_at: float, started: float
    ) -> StreamDone:
        """`started_at` (wall clock) and `started` (perf_counter): when the request was forwarded."""

        def done(body: bytes, ended: bool, error: BaseException | None) -> None:
            # vcrpy cannot replay a cut connection, so only whole bodies are recorded.
            if not ended or error is not None:
                return
            # Up to the body's end, as the capture measures a live exchange: for a stream, the
            # model's whole answer, not only its first bytes.
            duration_s = time.perf_counter() - started
            headers = scrub_headers(response.headers.multi_items(), self._secrets)
            recorded = {
                "status": {"code": response.status_code, "message": response.reason_phrase},
                "headers": {name: [value] for name, value in headers.items()},
                "body": {"string": body},
                RESPONSE_KEY: timing_entry(started_at, duration_s),
            }
            with self._lock:
                self.cassette.append(vcr_request, recorded)

        return done

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        vcr_request, played = self._route(request, body)
        if played is not None:
            return self._played_response(played, request)
        if self._inner is None:
            raise TypeError("this cassette transport records from an async transport only: use an async client")
        started_at, started = time.time(), time.perf_counter()
        response = self._inner.handle_request(request)
        stream = raw_stream(response)
        if not isinstance(stream, httpx2.SyncByteStream):
            raise TypeError(f"{type(self._inner).__name__} returned an async body to a sync client")
        tee = TeeStream(stream, self._recorder(vcr_request, response, started_at, started), drain_on_close=True)
        return teed_response(response, request, tee)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        vcr_request, played = self._route(request, body)
        if played is not None:
            return self._played_response(played, request)
        if self._async_inner is None:
            raise TypeError("this cassette transport records from a sync transport only: use a sync client")
        started_at, started = time.time(), time.perf_counter()
        response = await self._async_inner.handle_async_request(request)
        stream = raw_stream(response)
        if not isinstance(stream, httpx2.AsyncByteStream):
            raise TypeError(f"{type(self._async_inner).__name__} returned a sync body to an async client")
        tee = AsyncTeeStream(stream, self._recorder(vcr_request, response, started_at, started), drain_on_close=True)
        return teed_response(response, request, tee)

    def _unplayed(self) -> list[tuple[int, VcrRequest]]:
        if not self.replays:
            return []
        with self._lock:
            return [(i, request) for i, request in enumerate(self.cassette.requests[: self._loaded])
                    if self.cassette.play_counts[i] == 0]

    def unplayed(self) -> list[str]:
        """Labels of the loaded interactions this run has not played (and had to)."""
        return [_label(i + 1, request) for i, request in self._unplayed()
                if self._plays_harness_calls or not _harness_role(request)]

    def unplayed_are_harness_calls(self) -> bool:
        """Every interaction left unplayed is one of the harness's own (a judge's, a simulated user's)."""
        return all(_harness_role(request) for _, request in self._unplayed())

    def harness_calls_left(self) -> int:
        """With `harness_calls=False`: how many of the harness's own recorded calls this run left alone."""
        if not self.replays or self._plays_harness_calls:
            return 0
        with self._lock:
            return sum(1 for request in self.cassette.requests[: self._loaded] if _harness_role(request))

    def finish(self, *, save: bool = True, why: str | None = None, hold: bool = False) -> None:
        """End of run: write what was recorded (atomically), then fail on unplayed interactions.

        `save=False` (the run itself failed, for the reason `why`) keeps the previous file exactly as
        it was, and so does a run that recorded no interaction; `not_written` then says why.
        `hold=True` writes nothing yet: the caller decides with `settle` once the run is judged, so
        that a run that failed its checks does not replace a good cassette either.
        """
        if self._finished:
            return
        self._finished = True
        if self.records:
            with self._lock:
                recorded_now = len(self.cassette.data) > self._loaded
                # An empty recording is never worth keeping: under "all" it would replace a good
                # cassette with `interactions: []` (an API that could not be reached records nothing),
                # and a missing cassette created empty would make the next "once" replay nothing.
                if not save:
                    self.not_written = why or "the run failed"
                elif not recorded_now:
                    self.not_written = "the run recorded no interaction"
                elif hold:
                    self.held = True
                else:
                    self.cassette._save(force=True)
            if self.not_written is not None:
                self._say_kept()
        left = self.unplayed()
        if left:
            who = "The judge or simulated user" if all(label.endswith("call]") for label in left) else "The agent"
            raise UnplayedInteractions(
                f"{len(left)} of {self._loaded - self.harness_calls_left()} recorded interactions were not played: "
                f"{', '.join(left)}.\n"
                f"Cassette: {self.path}\n{who} made fewer requests than when it was recorded. "
                f"If that is on purpose, record the cassette again: {self.rerecord_hint}"
            )

    def _say_kept(self) -> None:
        kept = "the previous cassette is kept unchanged" if self.path.exists() else "no cassette was created"
        self.not_written = f"cassette {self.path} not written ({kept}): {self.not_written}"

    @property
    def failed_path(self) -> Path:
        """Where a failed recording is kept for inspection: `NAME.failed.yaml` beside the cassette."""
        return self.path.with_name(f"{self.path.stem}.failed{self.path.suffix}")

    def settle(self, *, keep: bool, why: str | None = None, keep_failed: bool = False) -> None:
        """After `finish(hold=True)`: write the held recording when the run passed (`keep`), else leave
        the previous cassette as it was and say why; `keep_failed` writes any failed recording (held or
        refused by `finish`) to `failed_path` instead, scanned for secrets like the cassette itself."""
        if not self.records:
            return
        with self._lock:
            recorded_now = len(self.cassette.data) > self._loaded
            if self.held and keep:
                self.cassette._save(force=True)
            elif self.held:
                self.not_written = why or "the run did not pass"
                self._say_kept()
            self.held = False
            if keep_failed and self.not_written is not None and recorded_now:
                # vcrpy's own save, pointed elsewhere: the same interactions, metadata and secret scan.
                path = self.cassette._path
                self.cassette._path = str(self.failed_path)
                try:
                    self.cassette._save(force=True)
                finally:
                    self.cassette._path = path
                self.not_written += f"; the failed recording is in {self.failed_path}"

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()

    async def aclose(self) -> None:
        if self._async_inner is not None:
            await self._async_inner.aclose()
