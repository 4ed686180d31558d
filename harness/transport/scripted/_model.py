"""The scripted model: a fake Messages API that answers each request with the script's next step.

It is the one place that decides what to answer; the in-process transports and the HTTP server
only carry its `Reply` objects. It remembers every request, and which steps were never played.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._console import loggable_target
from ...errors import ScriptExhausted, UnplayedInteractions
from ...trace._model import HARNESS_ANSWER_HEADER, HARNESS_ROLE_HEADER
from ._script import Script, Step, load_script, parse_script
from ._wire import (
    IdMaker,
    Reply,
    build_message,
    count_input_tokens,
    dumps,
    error_envelope,
    resolve_content,
    sse_event,
    stream_events,
)

if TYPE_CHECKING:
    import anthropic
    import httpx2

THREAD_HEADER = "x-harness-thread"
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "proxy-authorization", "cookie"})
SCRIPTED_MODEL_ID = "claude-scripted"
SCRIPTED_BASE_URL = "http://scripted.local"
"""The address of the in-process model: no socket behind it, nothing leaves the process."""


@dataclass(frozen=True)
class ScriptedRequest:
    """One request the scripted model received, as it arrived (secrets scrubbed)."""

    number: int
    """Arrival order, 1-based, over every request (count_tokens and models included)."""
    method: str
    path: str
    """The path with its query string, e.g. `/v1/messages?beta=true`."""
    headers: dict[str, str]
    """Names lower-cased; authorization and x-api-key replaced by `[REDACTED]`."""
    body: Any
    """The body parsed as JSON; None when empty or not JSON."""
    step: int | None
    """Number of the step that answered it, or None (not a Messages call, or the script ran out)."""
    received_at: float = 0.0
    """When it arrived (epoch seconds): what a test of waits and back-offs compares."""

    @property
    def thread(self) -> str | None:
        """The queue of steps this request takes: its `x-harness-thread`, or for the harness's own
        calls their `x-harness-role` (`judge`, `user`), so `thread: judge` steps answer the judge."""
        return self.headers.get(THREAD_HEADER) or self.headers.get(HARNESS_ROLE_HEADER)

    @property
    def retry_count(self) -> int | None:
        """The SDK's `x-stainless-retry-count`: 0 for a first attempt, 1 for the first retry..."""
        value = self.headers.get("x-stainless-retry-count")
        return int(value) if value is not None and value.isdigit() else None


@dataclass
class _Prepared:
    """The random parts of a step, drawn once up front so they do not depend on arrival order."""

    message_id: str
    request_id: str
    content: list[dict[str, Any]]


class ScriptedModel:
    """A fake Messages API playing `script` in order; steps may be routed to a thread.

    `script` is a `Script`, a list of step mappings, or the path of a YAML/JSON script file.
    Every id and signature the script leaves out is drawn from an RNG seeded with `seed`.
    """

    def __init__(self, script: Script | Sequence[Mapping[str, Any]] | str | Path, *, seed: int = 0) -> None:
        if isinstance(script, (str, Path)):
            script = load_script(script)
        elif not isinstance(script, Script):
            script = parse_script(script)
        self.script: Script = script
        self.seed = seed
        ids = IdMaker(random.Random(seed))
        self._prepared = [
            _Prepared(
                message_id=step.id or ids.message_id(),
                request_id=ids.request_id(),
                content=resolve_content(step, ids),
            )
            for step in script.steps
        ]
        # Ids of answers outside the script come from their own RNG, so the script's stay the same.
        self._extra_ids = IdMaker(random.Random(f"{seed}:outside-script"))
        self._lock = threading.Condition()
        self._played: set[int] = set()
        self._finished: set[int] = set()
        self._requests: list[ScriptedRequest] = []
        self._overflow: list[ScriptedRequest] = []
        self.log: Callable[[str], None] | None = None
        """Receives one line per reply sent, e.g. `POST /v1/messages -> step 1 (end_turn) stream`."""

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.script.steps

    @property
    def requests(self) -> list[ScriptedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def unused(self) -> list[Step]:
        """Steps no request has taken yet."""
        with self._lock:
            return [s for s in self.script.steps if s.number not in self._played]

    @property
    def overflow(self) -> list[ScriptedRequest]:
        """Messages requests that came when the script had no step left for them (answered 500)."""
        with self._lock:
            return list(self._overflow)

    @property
    def done(self) -> bool:
        """Every step has been played and its answer fully sent."""
        with self._lock:
            return len(self._finished) == len(self.script.steps)

    def wait_until_done(self, timeout: float | None = None) -> bool:
        """Block until every step's answer has been sent (True), or `timeout` seconds pass (False)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._finished) == len(self.script.steps), timeout)

    def assert_complete(self) -> None:
        """Fail unless every step was played and no request came after the script ran out."""
        with self._lock:
            unused = [s for s in self.script.steps if s.number not in self._played]
        problems: list[str] = []
        if unused:
            listed = ", ".join(f"step {s.number} ({s.describe()})" for s in unused)
            problems.append(f"{len(unused)} of {len(self.script.steps)} scripted responses were not used: {listed}")
        exhausted = self.exhausted()
        if exhausted is not None:
            problems.append(str(exhausted))
        if unused:
            raise UnplayedInteractions("; ".join(problems))
        if exhausted is not None:
            raise exhausted

    def exhausted(self) -> ScriptExhausted | None:
        """The requests that came after the script ran out, as the error to report, or None.

        Apart from `assert_complete` because it stays the harness's problem even when the agent
        then fails: the agent only saw the 500 the script's end answered with.
        """
        with self._lock:
            overflow = list(self._overflow)
        if not overflow:
            return None
        listed = ", ".join(f"request {r.number}" + (f" (thread {r.thread})" if r.thread else "") for r in overflow)
        return ScriptExhausted(
            f"{len(overflow)} request(s) came after the script ran out ({len(self.script.steps)} steps): "
            f"{listed}; add steps for them or make the agent stop sooner"
        )

    def answer(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Decide the reply to one HTTP request; the carrier must call `finished(reply)` once it is sent."""
        lowered = {k.lower(): v for k, v in headers.items()}
        parsed = _parse_json(body)
        route = path.split("?", 1)[0].rstrip("/")
        # A body that is no JSON object is no Messages API call: the API answers it 400, and so does
        # the script, without spending a step on it (playing one would hide the agent's fault).
        message_call = method == "POST" and route.endswith("/v1/messages")
        malformed = message_call and not isinstance(parsed, dict)
        with self._lock:
            number = len(self._requests) + 1
            thread = lowered.get(THREAD_HEADER) or lowered.get(HARNESS_ROLE_HEADER)
            step = self._take(thread) if message_call and not malformed else None
            record = ScriptedRequest(
                number=number,
                method=method,
                path=path,
                headers={k: ("[REDACTED]" if k in SECRET_HEADERS else v) for k, v in lowered.items()},
                body=parsed,
                step=step.number if step else None,
                received_at=time.time(),
            )
            self._requests.append(record)
            if step is None and message_call and not malformed:
                self._overflow.append(record)
            extra_request_id = self._extra_ids.request_id()
        if malformed:
            what = "empty" if not body.strip() else "not a JSON object"
            reply = _json_reply(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": f"the request body is {what}: a Messages API request is "
                "a JSON object with model, max_tokens and messages (the scripted model played no step for it)",
            }}, extra_request_id)
            reply.request_line = f"{method} {loggable_target(path)}"
            return reply
        reply = self._reply(method, path, route, step, record, parsed, extra_request_id)
        reply.request_line = f"{method} {loggable_target(path)}"
        return reply

    def _reply(
        self, method: str, path: str, route: str, step: Step | None, record: ScriptedRequest,
        parsed: Any, extra_request_id: str
    ) -> Reply:
        if method == "POST" and route.endswith("/v1/messages"):
            if step is None:
                return self._exhausted(record, extra_request_id)
            return self._play(step, parsed)
        if method == "POST" and route.endswith("/v1/messages/count_tokens"):
            return _json_reply(200, {"input_tokens": count_input_tokens(parsed)}, extra_request_id)
        if method == "GET" and route.endswith("/v1/models"):
            return _json_reply(200, {
                "data": [_model_info(SCRIPTED_MODEL_ID)],
                "has_more": False,
                "first_id": SCRIPTED_MODEL_ID,
                "last_id": SCRIPTED_MODEL_ID,
            }, extra_request_id)
        if method == "GET" and "/v1/models/" in route:
            return _json_reply(200, _model_info(route.rsplit("/", 1)[1]), extra_request_id)
        return _json_reply(404, error_envelope(
            "not_found_error",
            f"the scripted model answers POST /v1/messages, POST /v1/messages/count_tokens and GET /v1/models, "
            f"not {method} {loggable_target(path)}",
            extra_request_id,
        ), extra_request_id)

    def finished(self, reply: Reply) -> None:
        """Record that a reply was sent in full (or its connection dropped), for `done`."""
        if self.log is not None:
            # Before `done` can turn true, which may let `harness serve --exit-when-done` stop the process.
            self.log(reply.describe())
        if reply.step is None:
            return
        with self._lock:
            self._finished.add(reply.step.number)
            self._lock.notify_all()

    def _take(self, thread: str | None) -> Step | None:
        # A thread some step is routed to has its own queue; every other request, with or
        # without a thread header, takes the unrouted steps in order.
        queue = thread if thread in self.script.threads else None
        for step in self.script.steps:
            if step.number not in self._played and step.thread == queue:
                self._played.add(step.number)
                return step
        return None

    def _exhausted(self, record: ScriptedRequest, request_id: str) -> Reply:
        queue = f" for thread {record.thread!r}" if record.thread in self.script.threads else ""
        message = (
            f"scripted model: the script ran out{queue}: request {record.number} "
            f"({record.method} {record.path}) came after all {len(self.script.steps)} steps of "
            f"{self.script.source} were used"
        )
        reply = _json_reply(500, error_envelope("api_error", message, request_id), request_id)
        # Asking again cannot help, so tell the SDKs not to retry and the failure shows at once.
        reply.headers.append(("x-should-retry", "false"))
        reply.headers.append((HARNESS_ANSWER_HEADER, "script-ran-out"))
        return reply

    def _play(self, step: Step, body: Any) -> Reply:
        prepared = self._prepared[step.number - 1]
        streamed = isinstance(body, Mapping) and body.get("stream") is True
        if step.error is not None:
            error = step.error
            reply = _json_reply(error.status,
                                error_envelope(error.type, error.message, prepared.request_id), prepared.request_id)
            if error.retry_after is not None:
                reply.headers.append(("retry-after", _seconds(error.retry_after)))
            if error.should_retry is not None:
                reply.headers.append(("x-should-retry", "true" if error.should_retry else "false"))
        else:
            message = build_message(step, message_id=prepared.message_id, content=prepared.content, request_body=body)
            if streamed:
                reply = _stream_reply(step, message, prepared.request_id)
            elif step.stream_error is not None:
                # Not streamed, the same failure comes back as the HTTP error it would be.
                fault = step.stream_error
                status = {"overloaded_error": 529, "rate_limit_error": 429}.get(fault.type, 500)
                reply = _json_reply(status,
                                    error_envelope(fault.type, fault.message, prepared.request_id), prepared.request_id)
            else:
                reply = _json_reply(200, message, prepared.request_id)
                reply.no_response = step.cut_after is not None
        reply.headers.extend(step.headers)
        reply.step = step
        reply.delay_s = step.delay_s
        return reply

    def transport(self) -> httpx2.BaseTransport:
        """An httpx2 transport answering in-process: `httpx2.Client(transport=model.transport())`."""
        from ._transport import ScriptedTransport

        return ScriptedTransport(self)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        """The same for `httpx2.AsyncClient`."""
        from ._transport import AsyncScriptedTransport

        return AsyncScriptedTransport(self)

    def client(self, *, max_retries: int | None = None, **kwargs: Any) -> anthropic.Anthropic:
        """An `anthropic.Anthropic` wired to this model; `max_retries` stays the SDK's default unless given."""
        import anthropic
        import httpx2

        return anthropic.Anthropic(
            http_client=httpx2.Client(transport=self.transport()), **_client_options(max_retries, kwargs)
        )

    def async_client(self, *, max_retries: int | None = None, **kwargs: Any) -> anthropic.AsyncAnthropic:
        """An `anthropic.AsyncAnthropic` wired to this model."""
        import anthropic
        import httpx2

        return anthropic.AsyncAnthropic(
            http_client=httpx2.AsyncClient(transport=self.async_transport()), **_client_options(max_retries, kwargs)
        )

    @contextlib.contextmanager
    def serve(
        self, host: str = "127.0.0.1", port: int = 0, *, log: Callable[[str], None] | None = None
    ) -> Iterator[str]:
        """Serve this model on a real local HTTP endpoint while the block runs; yields its base URL.

        `log`, when given, receives one line per reply sent (for a console).
        """
        from .._endpoint import Endpoint, Route

        # Binds here, so a port in use raises OSError on entering the block.
        endpoint = Endpoint(host, port)
        endpoint.default = Route(transport=self.transport(), upstream=SCRIPTED_BASE_URL)
        previous, self.log = self.log, log
        endpoint.start()
        try:
            yield endpoint.base_url
        finally:
            endpoint.stop()
            self.log = previous


def _client_options(max_retries: int | None, options: dict[str, Any]) -> dict[str, Any]:
    """SDK client options: any key and base URL do, since nothing leaves the process."""
    options.setdefault("api_key", "test")
    options.setdefault("base_url", SCRIPTED_BASE_URL)
    if max_retries is not None:
        options["max_retries"] = max_retries
    return options


def _parse_json(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _model_info(model_id: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": model_id,
        "display_name": f"Scripted model ({model_id})",
        "created_at": "2025-01-01T00:00:00Z",
    }


def _json_reply(status: int, payload: Any, request_id: str) -> Reply:
    return Reply(
        status=status,
        headers=[("content-type", "application/json"), ("request-id", request_id)],
        chunks=[dumps(payload).encode()],
    )


def _stream_reply(step: Step, message: dict[str, Any], request_id: str) -> Reply:
    events = stream_events(message)
    cut = False
    if step.cut_after is not None and step.cut_after < len(events):
        events = events[: step.cut_after]
        cut = True
    elif step.stream_error is not None:
        fault = step.stream_error
        # The API ends the stream right after an error event, with no message_stop.
        events = events[: min(fault.after, len(events) - 1)] + [
            sse_event("error", {"type": "error", "error": {"type": fault.type, "message": fault.message}})
        ]
    return Reply(
        status=200,
        headers=[
            ("content-type", "text/event-stream; charset=utf-8"),
            ("cache-control", "no-cache"),
            ("request-id", request_id),
        ],
        chunks=events,
        streamed=True,
        cut=cut,
    )
