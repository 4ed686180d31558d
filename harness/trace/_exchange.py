"""One HTTP exchange from raw request and answer: headers scrubbed, bodies inflated and parsed once.

`exchange_from_http` is the single door from raw HTTP to an `Exchange`: every recording format and
the live recorder go through it, so a body is decoded, a stream reassembled and a secret scrubbed the
same way whatever wrote the traffic.
"""

from __future__ import annotations

import json
import json.decoder
import re
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._decode import GZIP_MAGIC, GZIP_WBITS, RAW_DEFLATE_WBITS, ZLIB_WBITS, BodyTooLarge, inflate
from ._eventstream import event_stream_as_sse, looks_like_event_stream
from ._json import loads
from ._model import Exchange
from ._scrub import default_secrets, scrub_headers
from ._sse import looks_like_sse, reassemble_stream
from ._threads import is_messages_exchange


def exchange_from_http(
    index: int,
    method: str,
    url: str,
    request_headers: Mapping[str, Any] | Iterable[tuple[str, str]] | None,
    request_body: bytes | str | Mapping[str, Any] | list[Any] | None,
    status: int | None,
    response_headers: Mapping[str, Any] | Iterable[tuple[str, str]] | None,
    response_body: bytes | str | Mapping[str, Any] | list[Any] | None,
    *,
    started_at: float | None = None,
    duration_s: float | None = None,
    replayed: bool = False,
    recorded_started_at: float | None = None,
    recorded_duration_s: float | None = None,
    source_line: int | None = None,
    secrets: Iterable[str] = (),
    environment_secrets: tuple[str, ...] | None = None,
    notes: list[str] | None = None,
    history: SharedHistory | None = None,
) -> Exchange:
    """Turn one raw HTTP request and answer into an Exchange: headers scrubbed, bodies decoded once.

    Bodies may be bytes (possibly gzip/deflate), text, or already-parsed JSON (pydantic-ai's
    `parsed_body`). A streamed answer is reassembled; what had to be guessed is appended to `notes`.
    `environment_secrets`: `default_secrets()` as a reader of many exchanges looked them up once.
    `history`: what a reader of many exchanges shares between their requests (`SharedHistory`).
    """
    # The environment's own key is always scrubbed, whoever calls this.
    secrets = (*secrets, *(default_secrets() if environment_secrets is None else environment_secrets))
    where = f"exchange {index}" + (f" (line {source_line})" if source_line else "")
    said: list[str] = notes if notes is not None else []
    req_headers = scrub_headers(request_headers, secrets)
    resp_headers = scrub_headers(response_headers, secrets)
    raw_request, parsed_request = _decode_body(request_body, req_headers, said, f"{where}: request", history)
    content_type = resp_headers.get("content-type", "").lower()
    # What reading a streamed answer noted: said only of a Messages call (an OpenAI-style stream through
    # the same proxy would otherwise get a line for each of its events, none of which is a Messages one).
    of_stream: list[str] = []
    if isinstance(response_body, (bytes, bytearray)) and looks_like_event_stream(response_body):
        events, stream_notes = event_stream_as_sse(bytes(response_body))
        of_stream.extend(f"{where}: response: {note}" for note in stream_notes)
        if events is not None:
            response_body, content_type = events, "text/event-stream"
    raw_response, parsed_response = _decode_body(response_body, resp_headers, said, f"{where}: response")

    streamed = False
    stream_error: dict[str, Any] | None = None
    stream_complete = True
    if raw_response is not None and parsed_response is None and (
        "text/event-stream" in content_type or looks_like_sse(raw_response)
    ):
        result = reassemble_stream(raw_response)
        streamed = True
        parsed_response = result.message
        if parsed_response is not None and _too_deep(parsed_response):
            of_stream.append(f"{where}: response: the streamed answer nests deeper than {MAX_DEPTH} levels; "
                             "not checked")
            parsed_response = None
        stream_error = result.error
        stream_complete = result.complete
        of_stream.extend(f"{where}: {note}" for note in result.notes)
        if not result.complete and result.error is None:
            of_stream.append(f"{where}: the stream ends without message_stop (cut after {result.events} events)")
    elif "text/event-stream" in content_type and parsed_response is not None:
        # The API answers errors as JSON even when `stream: true` was asked.
        said.append(f"{where}: content-type says text/event-stream but the body is JSON; read as JSON")
    elif status == 200 and parsed_response is None and raw_response and "/v1/messages" in url:
        # A proxy's HTML page or a cut body: no answer to check, which must not read as a clean call.
        said.append(f"{where}: a 200 answer whose body is not JSON ({len(raw_response):,} characters, "
                    f"starting {raw_response[:40]!r}); the answer is not checked")

    exchange = Exchange(
        index=index,
        method=(method or "").upper(),
        url=url,
        request_headers=req_headers,
        request_body=parsed_request,
        status=status,
        response_headers=resp_headers,
        response_body=parsed_response,
        streamed=streamed,
        stream_error=stream_error,
        stream_complete=stream_complete,
        raw_request=raw_request,
        raw_response=raw_response,
        started_at=started_at,
        duration_s=duration_s,
        replayed=replayed,
        recorded_started_at=recorded_started_at,
        recorded_duration_s=recorded_duration_s,
        source_line=source_line,
        thread_key=req_headers.get("x-harness-thread") or None,
    )
    if of_stream and is_messages_exchange(exchange):
        said.extend(of_stream)
    if exchange.is_messages_call and not url.startswith("unknown:"):  # a response-only file says so itself
        # Kept without a body (a stub's request pattern and jsonBody, a recorder told to drop bodies): a
        # call with nothing to check must not read as a clean one.
        if request_body in _NO_BODY:
            said.append(f"{where}: the request's body was not kept; what was sent is not checked")
        if status == 200 and response_body in _NO_BODY:
            said.append(f"{where}: a 200 answer whose body was not kept; the answer is not checked")
    return exchange


_NO_BODY = (None, "", b"")


def _decode_body(body: Any, headers: dict[str, str], notes: list[str], where: str,
                 history: SharedHistory | None = None) -> tuple[str | None, Any]:
    """(text as recorded, parsed JSON or None). Compressed bytes are inflated first. A request's
    parsed body shares its history with the earlier requests `history` holds."""
    if body is None:
        return None, None
    # Text first: a recorded body mostly is, and asking the Mapping ABC about every one costs.
    if not isinstance(body, str) and isinstance(body, (Mapping, list)):
        if _too_deep(body):
            # Already parsed (parsed_body) and too deep even to serialize safely: nothing is kept.
            notes.append(f"{where}: body is nested deeper than {MAX_DEPTH} levels; not kept, not checked")
            return None, None
        if history is not None and isinstance(body, dict):
            history.share(body)
        return json.dumps(body, ensure_ascii=False), body
    if isinstance(body, (bytes, bytearray)):
        decoded = _bytes_to_text(bytes(body), headers.get("content-encoding", "").lower(), notes, where)
        if decoded is None:
            return None, None
        text = decoded
    else:
        text = str(body)
    try:
        parsed = _parse_json(text) if history is None else history.parse(text)
    except RecursionError:
        parsed = MAX_DEPTH  # marker: too deep for json.loads itself
    if parsed is MAX_DEPTH or (parsed is not None and _too_deep_parsed(parsed, text, history)):
        notes.append(f"{where}: body is nested deeper than {MAX_DEPTH} levels; kept as text, not checked")
        return text, None
    return text, parsed


def _too_deep_parsed(parsed: Any, text: str, history: SharedHistory | None) -> bool:
    """Whether JSON text and its parse nest beyond MAX_DEPTH: a request that shares its history is
    measured on the turns new to it (`SharedHistory.share`), any other body on its text."""
    if history is not None and isinstance(parsed, dict):
        return not history.share(parsed)
    return _text_too_deep(text)


_EMPTY_PAIR = re.compile(r"\[\]|\{\}")
_STRUCTURE = {code: None for code in range(128) if chr(code) not in "[]{}"}
"""translate() table dropping every ASCII character but brackets (outside strings, JSON has no other)."""


def _text_too_deep(text: str) -> bool:
    """Nesting beyond MAX_DEPTH in valid JSON text, at C speed: the same answer as `_too_deep` on its parse.

    Walking every parsed node in Python cost more than parsing itself. Here strings are dropped, then
    only brackets kept, then each pass removes the innermost empty pairs: one level per pass. Escapes
    go first (an escaped backslash, then an escaped quote: replace() reads them left to right, as JSON
    does); then every quote opens or closes a string, and what lies between a closing and the next
    opening quote is outside strings. A string regex over the whole text took a third of reading it.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(text.split('"')[0::2])
    brackets = outside.translate(_STRUCTURE)
    for _ in range(MAX_DEPTH):
        brackets = _EMPTY_PAIR.sub("", brackets)
        if not brackets:
            return False
    return True


def _too_deep(value: Any) -> bool:
    """Nesting beyond MAX_DEPTH, found without recursion (the point is not to overflow the stack)."""
    if not isinstance(value, (dict, list)):
        return False
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH):
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
        if not level:
            return False
    return True


def _bytes_to_text(data: bytes, encoding: str, notes: list[str], where: str) -> str | None:
    """The body as text, inflated when compressed; None (with a note) when it inflates past the cap."""
    # The gzip magic is trusted over the header: recorders drop or keep content-encoding at will.
    try:
        if data[:2] == GZIP_MAGIC:
            try:
                data = inflate(data, GZIP_WBITS)
            except (zlib.error, EOFError) as exc:
                notes.append(f"{where}: body looks gzip-compressed but does not inflate ({exc}); kept as is")
        elif "deflate" in encoding:
            try:
                data = inflate(data, ZLIB_WBITS)
            except (zlib.error, EOFError):
                try:
                    data = inflate(data, RAW_DEFLATE_WBITS)
                except (zlib.error, EOFError) as exc:
                    notes.append(f"{where}: content-encoding deflate but the body does not inflate ({exc}); kept as is")
        elif "br" in [part.strip() for part in encoding.split(",")]:
            notes.append(f"{where}: brotli-compressed body cannot be decoded here; kept as is")
    except BodyTooLarge as exc:
        notes.append(f"{where}: body {exc}, not read")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        notes.append(f"{where}: body is not UTF-8; undecodable bytes replaced")
        return data.decode("utf-8", errors="replace")


_OPENS_JSON = re.compile(r"\s*[\[{]")


def _parse_json(text: str) -> Any:
    if not _OPENS_JSON.match(text):  # a match, not text.lstrip(): that copies the whole body
        return None
    try:
        return loads(text)
    except ValueError:
        return None


# --- history shared between the requests of one recording ------------------------------------
#
# The requests of one recording hold the history they re-send once, and its nesting is measured once.
#
# Each request of an agent loop re-sends the whole conversation, and its tools and system: parsed apart,
# a thread of n calls holds n copies of its first message (three times the file's size for a 44 MB
# cassette), and measuring each body's nesting (`MAX_DEPTH`) walked every copy again. `SharedHistory`
# makes a request's history the very objects an earlier request of its thread holds; those sit where
# they sat in a request already found within MAX_DEPTH, so only what is new to a request is walked.

MAX_DEPTH = 128
"""Nesting beyond which a body is kept as text only. Real Messages bodies stay far below it (a deep tool
schema is ~20 levels); the comparisons and rules walk bodies recursively, and Python's stack is not
deep enough for the ~1,000 levels json.loads accepts."""

THREADS_REMEMBERED = 16
"""Threads whose latest history a request is compared with: subagents interleave their calls."""

_SHARED_KEYS = ("tools", "system")
"""Request fields a loop sends the same on every call."""


def height(value: Any) -> int:
    """Levels of nested objects and arrays in parsed JSON (0 for a scalar), counted up to MAX_DEPTH + 1,
    a level at a time, without recursion (the point is not to overflow the stack).

    Parsed JSON holds plain dicts and lists only, so their types are compared, not asked with
    isinstance: twice as fast, on every value of every new turn."""
    level = [value] if type(value) is dict or type(value) is list else []
    levels = 0
    while level and levels <= MAX_DEPTH:
        levels += 1
        below = []
        for node in level:
            for child in node.values() if type(node) is dict else node:
                if type(child) is dict or type(child) is list:
                    below.append(child)
        level = below
    return levels


# JSON's whitespace is what json.decoder skips: [ \t\n\r]. Each pattern takes a delimiter with the
# whitespace around it in one match: a match per step was most of reading a short request.
_OBJECT_OPENS = re.compile(r"[ \t\n\r]*\{[ \t\n\r]*")
_ARRAY_OPENS = re.compile(r"\[[ \t\n\r]*")
_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
_AFTER_MEMBER = re.compile(r"[ \t\n\r]*([,}])[ \t\n\r]*")
_AFTER_ITEM = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")
_scan_value: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""json.loads' own reading of one value at an offset: (value, end), StopIteration where none starts
(an attribute the stubs do not declare, as they do not `scanstring`)."""
_scan_key: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""json.loads' own reading of a string from after its opening quote: (string, end)."""
_PROBE = 256
"""Characters of an earlier history compared first: another thread's history mostly differs early."""

Spelling = tuple[str, int, int]
"""Where a value is spelt: (the request text, start, end)."""


def _spelt_alike(earlier: str, start: int, text: str, at: int, end: int) -> bool:
    """Whether `text[at:end]` is spelt as `earlier` is from `start` on: its opening first (another
    thread's history mostly differs there), so a long text is copied only to be compared whole."""
    return (end <= len(text) and earlier.startswith(text[at:min(end, at + _PROBE)], start)
            and (end - at <= _PROBE or earlier.startswith(text[at:end], start)))


class SharedHistory:
    """What the requests read so far from one recording hold, for the next request to share."""

    def __init__(self) -> None:
        self._recent: list[list[Any]] = []
        """The `messages` of the latest requests kept, one per thread as threads interleave."""
        self._spelt: list[Spelling | None] = []
        """Beside each of `_recent`: where its messages (from the first to the end of the last) are spelt."""
        self._answers: list[list[Any]] = []
        """The content of the latest answers, which the next request of their thread re-sends."""
        self._last: dict[str, Any] | None = None
        """The latest request kept."""
        self._last_spelt: dict[str, Spelling] = {}
        """Where the latest request kept spelt each of its `_SHARED_KEYS`."""
        self._parsed: tuple[dict[str, Any], Spelling | None, int, dict[str, Spelling]] | None = None
        """The body `parse` read last, where its messages are spelt, the brackets of those it read
        anew, and where its shared keys are spelt: remembered by `share` when it keeps that body."""

    def parse(self, text: str) -> Any:
        """`_parse_json(text)` (json.loads, None for text that is not JSON), reading again none of what
        an earlier request kept spelt the same way: its messages, as far as this request re-sends them
        character for character, and its tools and system. Those are the earlier request's very
        objects, which `share` would make them anyway (equal text parses to equal values). Each request
        of a loop re-sends its whole history: parsing it again made a thread's requests cost the square
        of its length. Anything this reading does not expect is left to json.loads, as is every error."""
        if not _OPENS_JSON.match(text):
            return None
        self._parsed = None
        try:
            parsed = self._read_request(text)
        except Exception:  # noqa: BLE001 - json.loads reads it again and says what is wrong, as before
            parsed = None
        if parsed is not None:
            return parsed
        try:
            return loads(text)
        except ValueError:
            return None

    def _read_request(self, text: str) -> dict[str, Any] | None:
        """The top-level object of a request, read a key at a time as json.loads reads it (the last of
        a repeated key wins); None when the text is not one object and whitespace."""
        opened = _OBJECT_OPENS.match(text)
        if opened is None:
            return None
        at = opened.end()
        body: dict[str, Any] = {}
        messages_spelt: Spelling | None = None
        brackets = MAX_DEPTH
        spelt: dict[str, Spelling] = {}
        while text[at:at + 1] == '"':
            key, at = _scan_key(text, at + 1)
            colon = _COLON.match(text, at)
            if colon is None:
                return None
            start = at = colon.end()
            if key == "messages" and text[at:at + 1] == "[":
                value, at, messages_spelt, brackets = self._read_messages(text, at)
            else:
                value, at = self._resent(key, text, at) or _scan_value(text, at)
                if key in _SHARED_KEYS:
                    spelt[key] = (text, start, at)
            body[key] = value
            after = _AFTER_MEMBER.match(text, at)
            if after is None:
                return None
            at = after.end()
            if after.group(1) == "}":
                if at != len(text):
                    return None
                self._parsed = (body, messages_spelt, brackets, spelt)
                return body
        return None

    def _resent(self, key: str, text: str, at: int) -> tuple[Any, int] | None:
        """(the latest kept request's value of a shared key, its end here) when this text spells it the
        same way at `at`; None when it does not."""
        where = self._last_spelt.get(key)
        if where is None or self._last is None or key not in self._last:
            return None
        earlier, start, end = where
        after = at + end - start
        if not _spelt_alike(earlier, start, text, at, after) or _AFTER_MEMBER.match(text, after) is None:
            return None
        return self._last[key], after

    def _read_messages(self, text: str, at: int) -> tuple[list[Any], int, Spelling | None, int]:
        """The `messages` array at `at`: (its items, the end, where its items are spelt, the brackets in
        the spelling of those read anew). The items an earlier kept request spelt the same way are its
        objects; the others are read one by one."""
        opened = _ARRAY_OPENS.match(text, at)
        if opened is None:
            raise ValueError("not a JSON array")
        first = at = opened.end()
        if text[at:at + 1] == "]":
            return [], at + 1, None, 0
        items: list[Any] = []
        for earlier, where in zip(reversed(self._recent), reversed(self._spelt), strict=True):
            if where is None:
                continue
            spelling, start, end = where
            end_here = at + end - start
            after = _spelt_alike(spelling, start, text, at, end_here) and _AFTER_ITEM.match(text, end_here)
            if after:
                items = list(earlier)
                if after.group(1) == "]":
                    return items, after.end(), (text, first, end_here), 0
                at = after.end()
                break
        fresh = at
        while True:
            value, end_here = _scan_value(text, at)
            items.append(value)
            after = _AFTER_ITEM.match(text, end_here)
            if after is None:
                raise ValueError("not a JSON array")
            at = after.end()
            if after.group(1) == "]":
                return items, at, (text, first, end_here), text.count("[", fresh, end_here) + text.count(
                    "{", fresh, end_here)

    def share(self, body: dict[str, Any]) -> bool:
        """Make the history `body` re-sends the objects an earlier request holds, and say whether the
        body is nested at most MAX_DEPTH levels (the body is remembered for the next requests only then).

        Values are only ever replaced by equal ones (`==`, the same comparison the history rules make),
        never changed, so the trace reads the same; comparing histories then stops at the first shared
        message. What is shared sits where it sat in a request within MAX_DEPTH, at the same depth,
        so the body's nesting is that of what is new to it (an answer re-sent as a turn is new: it
        sat higher in its response).
        """
        parsed, self._parsed = self._parsed, None
        mine = parsed is not None and parsed[0] is body
        deepest = 0  # levels under the body's own
        messages = body.get("messages")
        if isinstance(messages, list):
            # A message nests no deeper than the brackets spelling it, and those `parse` took from an
            # earlier kept request sat at the same place in it, within MAX_DEPTH: with few brackets in
            # the turns read anew, none of the new turns needs walking.
            brackets = parsed[2] if mine and parsed is not None and parsed[1] is not None else MAX_DEPTH
            deepest = 1 + self._share_messages(messages, brackets if brackets <= MAX_DEPTH - 2 else None)
        last = self._last
        for key, value in body.items():
            if key == "messages" and isinstance(messages, list):
                continue
            if key in _SHARED_KEYS and last is not None and key in last and last[key] == value:
                body[key] = last[key]
            else:
                deepest = max(deepest, height(value))
        if 1 + deepest > MAX_DEPTH:
            return False
        if isinstance(messages, list) and messages:
            self._recent.append(messages)
            self._spelt.append(parsed[1] if mine and parsed is not None else None)
            if len(self._recent) > THREADS_REMEMBERED:
                del self._recent[0]
                del self._spelt[0]
        self._last = body
        self._last_spelt = parsed[3] if mine and parsed is not None else {}
        return True

    def _share_messages(self, messages: list[Any], highest_known: int | None = None) -> int:
        """Share `messages` with the latest history that opens the same way; the highest of the
        messages new to it (0 when there are none), or `highest_known`, a bound of it, when given."""
        if not messages:
            return 0
        shared = 0
        for earlier in reversed(self._recent):
            if earlier[0] == messages[0]:
                most = min(len(earlier), len(messages))
                # Mostly the whole earlier history is re-sent: compared and shared at C speed.
                if messages[:most] == earlier[:most]:
                    messages[:most] = earlier[:most]
                    shared = most
                while shared < most and earlier[shared] == messages[shared]:
                    messages[shared] = earlier[shared]
                    shared += 1
                break
        highest = 0
        # The turns new to this request: an assistant turn re-sends an answer the file holds already.
        for message in messages[shared:]:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list) and message.get("role") == "assistant":
                answer = next((a for a in reversed(self._answers) if a == content), None)
                if answer is not None:
                    message["content"] = answer
            if highest_known is None:
                highest = max(highest, height(message))
        return highest if highest_known is None else highest_known

    def answered(self, response_body: Any) -> None:
        """Remember an answer's content, which the next request of its thread re-sends."""
        answer = response_body.get("content") if isinstance(response_body, dict) else None
        if isinstance(answer, list) and answer:
            self._answers.append(answer)
            if len(self._answers) > THREADS_REMEMBERED:
                del self._answers[0]
