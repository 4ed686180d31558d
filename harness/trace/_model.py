"""The trace: what an agent loop did, as plain typed records.

An `Exchange` is one HTTP request/response as recorded; a `Call` is one model call (its retried
attempts grouped); a `Thread` is one conversation. The raw wire bodies stay beside the parsed form.
Every record round-trips through `to_dict`/`from_dict` so results files can be re-read without
re-running anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, TypeVar

from ._json import loads
from ._normalize import as_key, content_blocks
from ._sse import reassemble_stream


def field_values(record: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, each value as it is (not copied). For a record of scalar fields
    this is what `asdict` gives, without its recursion and a deep copy of every value, which were most
    of turning a run's result into its results line."""
    names = _FIELD_NAMES.get(type(record))
    if names is None:
        names = _FIELD_NAMES[type(record)] = tuple(f.name for f in fields(record))
    return {name: getattr(record, name) for name in names}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def field_arguments(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict of `data`'s keys and values for `cls(**...)`, each key that names a field of the
    dataclass `cls` spelt by the field's own name string.

    A JSON reader makes each key a string of its own, never the interned name the class's `__init__`
    declares, and CPython finds a keyword argument among the parameters by identity first, else by
    comparing it with each name in turn: a 20-field `Exchange` made from a results line cost four
    times what it did from the same keys spelt by the field names. The call is otherwise the same: a
    key that names no field is kept as it is, for `cls` to refuse in the TypeError it always raised.
    """
    names = _NAMES_OF.get(cls)
    if names is None:
        names = _NAMES_OF[cls] = {f.name: f.name for f in fields(cls)}
    try:
        return {names[key]: value for key, value in data.items()}
    except KeyError:  # a key that names no field: `cls` says which
        return dict(data)


_NAMES_OF: dict[type, dict[str, str]] = {}


_Record = TypeVar("_Record")


def frozen_record(cls: type[_Record], values: dict[str, Any]) -> _Record:
    """The frozen dataclass `cls` of `values`, every field's value in field order: the record its
    `__init__` makes (the same attributes, equal, hashed alike), without the call to `object.__setattr__`
    that `__init__` makes for each field of a frozen record, three fifths of making one. A report makes a
    `CallCost` (12 fields) for every call of every run. Only for a class without `__post_init__`."""
    record = object.__new__(cls)
    record.__dict__.update(values)
    return record


TRACE_SCHEMA = 3
"""2 added `Exchange.replayed` and `recorded_started_at`/`recorded_duration_s`; a schema-1 trace reads
back with them at their defaults (not replayed, nothing recorded). 3 writes a body once: when the raw
text gives the parsed body back (parsed as JSON, a stream reassembled), only the raw text is written
and the parsed body is derived on read; schema 1 and 2 traces carry both and read as they are."""

Fact = Literal["content", "stop_reason", "answer", "is_error", "turns", "tools", "request", "attempts", "headers"]
"""What a recording may lack, which rules read (`@rule(reads=...)`). HTTP recordings carry all of it;
OpenTelemetry spans carry what their instrumentation chose to record:

- content: the messages sent and the blocks returned
- stop_reason: the response's stop_reason as the API gave it
- answer: the returned blocks exactly as the API gave them (thinking signatures...), for H001
- is_error: the `is_error` flag of tool_result blocks
- turns: how tool_result blocks are grouped into user messages, and their order
- tools: the request's tool definitions as sent (names, `strict`, schemas)
- request: the request's other parameters (tool_choice, thinking, output_config, context_management...)
- attempts: each HTTP attempt of a call (retries), with its status
- headers: HTTP headers (beta flags, retry-after)
"""

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

HARNESS_ROLE_HEADER = "x-harness-role"
"""Marks the harness's own model calls (the judge's, the simulated user's). They go through the run's
transport, so they are recorded into its cassette, replayed and scripted like the agent's calls,
but they are no part of what the agent did: no trace, thread or rule ever counts them."""

HARNESS_ANSWER_HEADER = "x-harness-answer"
"""Marks an answer the harness gave itself, not a model (`refused`: a replay miss, a call past the
deadline; `script-ran-out`: the scripted model had no step left). It tells the rules that a failure
there is the harness's, never the agent's: asking again could not help, so E001 expects no retry."""

HarnessRole = Literal["judge", "user"]
HARNESS_ROLES: tuple[HarnessRole, ...] = ("judge", "user")


def is_count(value: Any) -> bool:
    """A token count as the API writes one: a non-negative integer (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass
class Exchange:
    """One HTTP request and the answer it got, in recording order."""

    index: int
    """Position in the source recording, 0-based."""
    method: str
    url: str
    request_headers: dict[str, str]
    """Header names lower-cased; secrets already scrubbed."""
    request_body: Any
    """The request body parsed as JSON, or None when it is not JSON."""
    status: int | None
    """HTTP status; None when no answer came (connection error, stream cut before headers)."""
    response_headers: dict[str, str]
    response_body: Any
    """The parsed JSON answer; for a stream, the message reassembled from its events."""
    streamed: bool = False
    """The answer was a server-sent event stream."""
    stream_error: dict[str, Any] | None = None
    """An `error` event that arrived inside the stream (e.g. overloaded_error), if any."""
    stream_complete: bool = True
    """False when a stream ended without `message_stop` (cut mid-way)."""
    raw_request: str | None = None
    """The request body exactly as recorded."""
    raw_response: str | None = None
    """The response body exactly as recorded (SSE text for streams)."""
    started_at: float | None = None
    """Wall-clock start, seconds since the epoch, when the recording knows it."""
    duration_s: float | None = None
    """How long this exchange took here, request to end of body. For a replayed exchange that is
    the replay's time, not the model's: see `model_latency_s`."""
    replayed: bool = False
    """The answer was played from a cassette, not given by a model at the time."""
    recorded_started_at: float | None = None
    """When the answer was recorded (epoch seconds), as the cassette keeps it; None when it does not."""
    recorded_duration_s: float | None = None
    """How long the model took when the answer was recorded, as the cassette keeps it."""
    source_line: int | None = None
    """Line of the source file where this exchange starts, when known."""
    thread_key: str | None = None
    """Explicit thread id set by whoever ran the agent (header `x-harness-thread`)."""

    @property
    def harness_role(self) -> HarnessRole | None:
        """`judge` or `user` when the harness itself made this call (header `x-harness-role`), else None."""
        role = self.request_headers.get(HARNESS_ROLE_HEADER)
        return role if role in HARNESS_ROLES else None

    @property
    def harness_answer(self) -> str | None:
        """What the harness answered itself instead of a model (header `x-harness-answer`), else None."""
        return next((v for k, v in self.response_headers.items() if k.lower() == HARNESS_ANSWER_HEADER), None)

    @property
    def model_latency_s(self) -> float | None:
        """How long the model took to answer: the recorded duration when a cassette kept one, else
        the measured one, but never a replay's own time (None then: unknown)."""
        if self.recorded_duration_s is not None:
            return self.recorded_duration_s
        return None if self.replayed else self.duration_s

    @property
    def is_messages_call(self) -> bool:
        """A `POST .../v1/messages` (not count_tokens, not batches)."""
        path = self.url.split("?", 1)[0].rstrip("/")
        return self.method.upper() == "POST" and path.endswith("/v1/messages")

    @property
    def ok(self) -> bool:
        return (
            self.status is not None
            and 200 <= self.status < 300
            and self.stream_error is None
            and isinstance(self.response_body, dict)
            and self.response_body.get("type", "message") == "message"
        )

    @property
    def retryable(self) -> bool:
        """Failed in a way to retry after a back-off (429, 529, 5xx, a cut stream...): rule E001.
        Never an answer of the harness's own (`harness_answer`): no wait makes a cassette match."""
        if self.harness_answer is not None:
            return False
        if self.status is None:
            return True
        if self.status in RETRYABLE_STATUSES or self.status >= 500:
            return True
        if self.stream_error is not None:
            kind = str(self.stream_error.get("type", ""))
            return kind in {"overloaded_error", "api_error", "rate_limit_error"}
        return self.streamed and not self.stream_complete

    def to_dict(self) -> dict[str, Any]:
        """The record, each body once: a parsed body its raw text gives back is left out (TRACE_SCHEMA 3)."""
        # Shallow on purpose: the bodies are plain JSON already, and asdict would deep-copy them.
        data = field_values(self)
        if self.request_body is not None and body_from_raw(self.raw_request, streamed=False) == self.request_body:
            del data["request_body"]
        if self.response_body is not None and body_from_raw(self.raw_response, self.streamed) == self.response_body:
            del data["response_body"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Exchange:
        arguments = field_arguments(cls, data)
        # Only a body the line left out is parsed: setdefault would parse the other one too, for nothing.
        if "request_body" not in arguments:
            arguments["request_body"] = body_from_raw(arguments.get("raw_request"), streamed=False)
        if "response_body" not in arguments:
            arguments["response_body"] = body_from_raw(arguments.get("raw_response"), bool(arguments.get("streamed")))
        return cls(**arguments)


def body_from_raw(raw: str | None, streamed: bool) -> Any:
    """The parsed body a raw one gives: JSON parsed, a stream's message reassembled; None when it
    gives none (no body, text that is not JSON)."""
    if raw is None:
        return None
    if streamed:
        return reassemble_stream(raw).message
    if raw.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return loads(raw)
    except (ValueError, RecursionError):
        return None


@dataclass
class Call:
    """One model call: a Messages request, its retried attempts, and the answer used."""

    index: int
    """Position among the trace's calls, 0-based."""
    thread: int
    """Id of the thread (conversation) this call belongs to, 1-based."""
    step: int
    """Position of the call within its thread, 1-based."""
    attempts: list[Exchange]
    """Every attempt of this call in order; the last one is the answer the agent got."""

    @property
    def where(self) -> str:
        """`thread 1, step 2`: the call as findings, notes and diffs name it."""
        return f"thread {self.thread}, step {self.step}"

    @property
    def final(self) -> Exchange:
        return self.attempts[-1]

    @property
    def request(self) -> dict[str, Any]:
        body = self.attempts[-1].request_body  # not self.final: rules ask this tens of times per call
        return body if isinstance(body, dict) else {}

    conversation: list[dict[str, Any]] | None = field(default=None, repr=False)
    """The whole conversation the model saw, when the request continues a server-held thread
    (`thread: {"type": "continue", "previous_message_id": ...}` sends only the new turn); set by
    `resolve_server_threads`."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation this call sent the model: the request's `messages`, preceded by the
        server-held history when it continues a server-side thread. Finding indexes point into it."""
        if self.conversation is not None:
            return self.conversation
        body = self.attempts[-1].request_body
        messages = body.get("messages") if isinstance(body, dict) else None
        return messages if isinstance(messages, list) else []

    _answer: tuple[Exchange, dict[str, Any] | None] | None = field(default=None, init=False, repr=False,
                                                                     compare=False)
    """(the final attempt, its response): the report asks a call for its response a dozen times
    (usage, model, content, stop_reason...), 50,000 calls over. Kept for that exchange: an exchange
    is not changed once its call is made."""

    @property
    def response(self) -> dict[str, Any] | None:
        """The message the model returned, or None when the call failed."""
        final = self.attempts[-1]
        answer = self._answer
        if answer is None or answer[0] is not final:
            answer = self._answer = (final, final.response_body if final.ok else None)
        return answer[1]

    @property
    def error(self) -> dict[str, Any] | None:
        """The error envelope of a failed call (HTTP error body or in-stream error event)."""
        if self.response is not None:
            return None  # kept once read (`response`): a call that was answered, `final.ok` checked already
        final = self.attempts[-1]
        if final.stream_error is not None:
            return final.stream_error
        body = final.response_body
        if isinstance(body, dict):
            inner = body.get("error")
            return inner if isinstance(inner, dict) else body
        return {"type": "no_response", "message": f"status {final.status}"}

    @property
    def stop_reason(self) -> str | None:
        """The response's stop_reason; one that is not a string (a broken recorder's list or number)
        comes back as its JSON text, so it reads as an unknown stop_reason (L006) instead of breaking
        the set lookups rules do with it."""
        answer = self._answer  # `response`'s, kept, without a second property call (as `content`, `usage`)
        response = answer[1] if answer is not None and answer[0] is self.attempts[-1] else self.response
        if not response:
            return None
        value = response.get("stop_reason")
        # A string, or None, as nearly every response has it, is its own key: no call to `as_key` for it.
        return value if value is None or type(value) is str else as_key(value)

    _content: tuple[Any, list[dict[str, Any]]] | None = field(default=None, init=False, repr=False, compare=False)
    """(the response's content list, its blocks): every rule asks for them, most several times."""

    @property
    def content(self) -> list[dict[str, Any]]:
        """The response's content blocks, each a dict with string identity fields (`content_blocks`):
        rules index and compare them without re-checking the shape a recording may have broken."""
        answer = self._answer
        response = answer[1] if answer is not None and answer[0] is self.attempts[-1] else self.response
        content = response.get("content") if response else None
        if not isinstance(content, list):
            return []
        cached = self._content
        if cached is None or cached[0] is not content:
            cached = self._content = (content, content_blocks(content))
        return cached[1]

    @property
    def usage(self) -> dict[str, Any]:
        """The response's usage, with token counts that are not non-negative integers left out.

        Budgets, costs and the report add these up; a count a broken recorder wrote as a string, a
        negative number or an object is unknown, not zero and not a crash (`shape_notes` says so).
        """
        answer = self._answer
        response = answer[1] if answer is not None and answer[0] is self.attempts[-1] else self.response
        usage = response.get("usage") if response else None
        if not isinstance(usage, dict):
            return {}
        cached = self._usage
        if cached is not None and cached[0] is usage:
            return cached[1]  # the report reads usage several times for each of its 50,000 calls
        checked = usage
        for key, value in usage.items():
            # A plain count first, by its type: a non-negative int needs no look at its key.
            if not (type(value) is int and value >= 0) and str(key).endswith("_tokens") and not is_count(value):
                checked = {k: v for k, v in usage.items() if not str(k).endswith("_tokens") or is_count(v)}
                break
        self._usage = (usage, checked)
        return checked

    _usage: tuple[dict[str, Any], dict[str, Any]] | None = field(default=None, init=False, repr=False, compare=False)
    """(the response's usage, its counts checked), as `_content` keeps the blocks."""

    @property
    def model(self) -> str | None:
        model = self.request.get("model")
        return model if isinstance(model, str) else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "thread": self.thread,
            "step": self.step,
            "attempts": [a.index for a in self.attempts],
        }


def resolve_server_threads(calls: list[Call]) -> list[str]:
    """Give each call that continues a server-held thread the whole conversation it stands for.

    With `thread: {"type": "continue", "previous_message_id": ID}` (the SDK's tool runner sends it by
    default) a request carries only the new turn; the server prepends the conversation of response
    ID and that response itself. Rebuilding it here lets every rule read one history, whoever held
    it. Returns notes on continuations whose previous response is not in the recording.
    """
    notes: list[str] = []
    by_response_id: dict[str, Call] = {}
    for call in calls:
        thread = call.request.get("thread")
        if isinstance(thread, dict) and thread.get("type") == "continue":
            previous = by_response_id.get(str(thread.get("previous_message_id")))
            new = call.request.get("messages")
            new_messages = new if isinstance(new, list) else []
            if previous is not None:
                answer = {"role": "assistant", "content": previous.content}
                call.conversation = [*previous.messages, answer, *new_messages]
            else:
                notes.append(
                    f"call {call.index + 1} continues server-held thread {thread.get('previous_message_id')!r}, whose "
                    "earlier turns are not in this recording; it is checked on the turn it sends"
                )
        response = call.response
        if response is not None and isinstance(response.get("id"), str):
            by_response_id[response["id"]] = call
    return notes


@dataclass
class Thread:
    """One conversation: calls whose histories extend each other."""

    id: int
    calls: list[int] = field(default_factory=list)
    """Indexes into `Trace.calls`, in order."""
    parent: int | None = None
    """The coordinator's thread when this one is a subagent's, when known."""
    key: str | None = None
    """Explicit thread id given by the runner, when there was one."""


@dataclass
class ToolExecution:
    """A tool the harness ran for the agent: when it started, ended and how it went."""

    tool_use_id: str
    name: str
    input: Any
    started_at: float
    """Seconds since the run started."""
    ended_at: float
    output: Any = None
    is_error: bool = False
    error: str | None = None
    """The exception text when the tool raised."""
    thread_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


OutcomeStatus = Literal["completed", "limit", "refused", "error"]


@dataclass
class Outcome:
    """How a run ended, as the agent reported it (only known when the harness ran the agent)."""

    status: OutcomeStatus
    reason: str = ""
    limit: str | None = None
    """Which limit stopped the run: steps, tokens, wall_time or tool_errors."""
    final_text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return field_values(self)


@dataclass
class Trace:
    """Everything checked about one recording or one run."""

    source: str
    """Where the trace came from: a file path or a run id."""
    exchanges: list[Exchange]
    calls: list[Call]
    threads: list[Thread]
    tool_executions: list[ToolExecution] = field(default_factory=list)
    outcome: Outcome | None = None
    whole_run: bool = False
    """True when the trace is a complete run (the harness ran it, or the user said so)."""
    notes: list[str] = field(default_factory=list)
    """What the reader skipped or guessed, in words (e.g. exchanges that are not Messages calls)."""
    missing: dict[str, str] = field(default_factory=dict)
    """Facts (`Fact`) the recording does not carry, each with why; rules that read one are skipped,
    never run on a guess. Empty for HTTP recordings and runs."""
    runs: list[Trace] = field(default_factory=list, repr=False)
    """The runs of a file that holds several (OTLP spans of many traces), each its own trace: the rules
    check each alone, since a run's history and ids are no other run's. A run's calls are indexed from 0
    and its threads keep the file's numbers. Empty for a single run; not stored (`to_dict`)."""
    run_key: str | None = None
    """How the file names this run, when it is one of `runs`: OTLP's traceId (None for calls under no run
    span). A finding about the run as a whole names it, so the reader can find the run. Not stored."""

    def thread_calls(self, thread_id: int) -> list[Call]:
        # A run of a multi-run file numbers its threads from where the previous run's end.
        thread = self.threads[thread_id - (self.threads[0].id if self.threads else 1)]
        return [self.calls[i] for i in thread.calls]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": TRACE_SCHEMA,
            "source": self.source,
            "exchanges": [e.to_dict() for e in self.exchanges],
            "calls": [c.to_dict() for c in self.calls],
            "threads": [{**field_values(t), "calls": list(t.calls)} for t in self.threads],
            "tool_executions": [t.to_dict() for t in self.tool_executions],
            "outcome": self.outcome.to_dict() if self.outcome else None,
            "whole_run": self.whole_run,
            "notes": list(self.notes),
            "missing": dict(self.missing),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        exchanges = [Exchange.from_dict(e) for e in data["exchanges"]]
        by_index = {e.index: e for e in exchanges}
        calls = [
            Call(
                index=c["index"],
                thread=c["thread"],
                step=c["step"],
                attempts=[by_index[i] for i in c["attempts"]],
            )
            for c in data["calls"]
        ]
        resolve_server_threads(calls)
        outcome = data.get("outcome")
        return cls(
            source=data["source"],
            exchanges=exchanges,
            calls=calls,
            threads=[Thread(**t) for t in data["threads"]],
            tool_executions=[ToolExecution(**t) for t in data.get("tool_executions", [])],
            outcome=Outcome(**outcome) if outcome else None,
            whole_run=data.get("whole_run", False),
            notes=list(data.get("notes", [])),
            missing=dict(data.get("missing", {})),
        )
