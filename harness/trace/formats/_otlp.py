"""Read OpenTelemetry GenAI spans (OTLP/JSON) into a trace: model calls, threads, tool executions.

Production agents emit spans, not HTTP recordings. This reads what the OpenTelemetry Collector's
file exporter and the SDK's OTLP JSON exporters write (one export request per file or per line), in
the conventions real Anthropic instrumentations use, and turns each model-call span back into the
Messages request and answer it stands for. What a span does not carry is recorded in
`Trace.missing`, so the rules that need it are skipped instead of judged on a guess.

Conventions read, most faithful first (see docs/otel.md for which instrumentation writes which):
- `anthropic.request.body` / `anthropic.response.body`: the exact bodies (the harness's own export);
- OpenInference `input.value` / `output.value` (the request's kwargs and the SDK's message as JSON);
- GenAI semantic conventions: `gen_ai.input.messages` / `gen_ai.output.messages` (parts),
  `gen_ai.system_instructions`, `gen_ai.tool.definitions`, `gen_ai.response.finish_reasons`;
- openllmetry's `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes;
- OpenInference's flattened `llm.input_messages.N.*` / `llm.output_messages.N.*`;
- the event form: `gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice` log records
  (resourceLogs) tied to their span.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, get_args

from ...errors import CassetteError
from .._model import Exchange, Fact, Outcome, ToolExecution, Trace
from .._threads import build_trace
from ._base import Recording, RecordingFormat

OTLP_MARKERS = (b'"resourceSpans"', b'"resourceLogs"', b'"resource_spans"')
"""Bytes near the start of an OTLP/JSON export; the sniffers look for them."""
_OPENS_OBJECT = re.compile(rb"[ \t\n\r\x0b\x0c]*\{")
"""`head.lstrip()[:1] == b"{"` without copying the head (bytes.lstrip's whitespace)."""

HARNESS_SCOPE = "agent-harness"
"""Instrumentation scope of the spans `harness export` writes: one span per HTTP attempt, with the
exact bodies and the headers the rules read."""

STOP_REASONS = frozenset({"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",
                          "model_context_window_exceeded"})
# GenAI semantic-convention finish reasons that name exactly one Anthropic stop_reason ("stop" is
# end_turn or stop_sequence: the rules treat both alike, and a note says it was read so).
_FINISH_REASONS = {"tool_call": "tool_use", "tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}
_CALL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_HEX = re.compile(r"^[0-9a-fA-F]*$")

_WHY: dict[str, str] = {
    "content": "carry no message content (the instrumentation was not set to capture it; docs/otel.md says how)",
    "stop_reason": "carry no stop_reason",
    "answer": "carry the answer only in part (no thinking signatures, blocks rebuilt from attributes)",
    "is_error": "do not record the is_error flag of tool results",
    "turns": "do not record how tool results are grouped into user messages",
    "tools": "do not record the tool definitions as sent",
    "request": "do not record the request's other parameters (tool_choice, thinking, output_config...)",
    "headers": "carry no HTTP headers (beta flags, retry-after)",
    "attempts": "record a call, not each HTTP attempt (retries are not visible)",
}


@dataclass
class _Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: float
    end: float
    status_code: int
    status_message: str
    attrs: dict[str, Any]
    scope: str
    line: int
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Span events and the GenAI log records tied to this span: (name, body or attributes)."""

    @property
    def label(self) -> str:
        return f"span {self.name!r} ({self.span_id})"


@dataclass
class _CallView:
    """What one model-call span says about its request and answer; None where it says nothing."""

    span: _Span
    messages: list[Any] | None = None
    system: Any = None
    tools: list[Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] | None = None
    """The exact request body, when the span carries it whole."""
    content: list[Any] | None = None
    response: dict[str, Any] | None = None
    """The exact answer, when the span carries it whole."""
    stop_reason: str | None = None
    mapped_stop: str | None = None
    """A finish reason read back from the GenAI conventions' names."""
    usage: dict[str, int] = field(default_factory=dict)
    response_id: str | None = None
    response_model: str | None = None
    status: int | None = None
    known: set[str] = field(default_factory=set)
    """Facts this span carries."""


_TOP_KEYS = frozenset({"resourceSpans", "resourceLogs", "resource_spans"})
"""The top-level keys of an export, one of which `_OtlpReader` requires."""


def sniff(recording: Recording) -> bool:
    """An OTLP/JSON export: one JSON object with an export's top-level key, or a file that opens like
    one and names one near its start (JSON lines, one export each; a cut export)."""
    head = recording.head
    if _OPENS_OBJECT.match(head) is None:
        return False
    parsed = recording.as_json
    if parsed is not None and parsed[1] is None:
        # Parsed anyway (every other format reads the document): its keys are exact, where searching
        # the 64 KiB head of a one-line JSON file cost a twentieth of checking a small cassette.
        return isinstance(parsed[0], dict) and not _TOP_KEYS.isdisjoint(parsed[0])
    return named_near_start(recording)


def named_near_start(recording: Recording) -> bool:
    """The file opens like a JSON object and names an export's key in its first 64 KiB."""
    head = recording.head
    # One search for what every marker opens with first.
    return (_OPENS_OBJECT.match(head) is not None and b'"resource' in head
            and any(marker in head for marker in OTLP_MARKERS))


def load(recording: Recording, whole_run: bool) -> Trace:
    """Read an OTLP/JSON file of GenAI spans into a trace, with notes on what was skipped or read so."""
    reader = _OtlpReader(recording)
    reader.read()
    return reader.trace(whole_run=whole_run)


def read(recording: Recording) -> list[Exchange]:
    trace = load(recording, False)
    recording.notes.extend(trace.notes)
    return trace.exchanges


FORMAT = RecordingFormat(
    name="otlp",
    description="OpenTelemetry GenAI spans as OTLP/JSON (`resourceSpans`)",
    sniff=sniff,
    read=read,
    load=load,
    suffixes=(".json", ".jsonl"),
    markers=OTLP_MARKERS,
)


class _OtlpReader:
    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.path = recording.path
        self.spans: list[_Span] = []
        self.logs: list[tuple[str, str, dict[str, Any]]] = []
        """(span id, event name, body) of GenAI event log records."""
        self.notes: list[str] = []

    # --- the file -----------------------------------------------------------------------------

    def read(self) -> None:
        parsed = self.recording.as_json
        if parsed is not None and parsed[1] is None:
            documents = [(1, parsed[0])]  # one export, parsed already when the file was recognised
        else:
            documents = self._documents()
        for line, document in documents:
            self._document(document, line)

    def _documents(self) -> list[tuple[int, Any]]:
        text = self.recording.text
        if text is None:
            raise CassetteError(self.path, "is not UTF-8 text; expected OTLP/JSON")
        parsed = self.recording.as_json
        if parsed is not None and isinstance(parsed[1], json.JSONDecodeError):
            return self._json_lines(text)  # json.loads already stopped at the end of the first export
        try:
            return [(1, json.loads(text))]
        except json.JSONDecodeError:
            return self._json_lines(text)
        except RecursionError as exc:
            raise CassetteError(self.path, "is nested too deeply to be read as JSON") from exc

    def _json_lines(self, text: str) -> list[tuple[int, Any]]:
        """The Collector's file exporter and the SDK's JSON file exporter write one export per line."""
        lines = text.splitlines()
        documents = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                documents.append((number, json.loads(line)))
            except (json.JSONDecodeError, RecursionError) as exc:
                last = number == len(lines) or not any(rest.strip() for rest in lines[number:])
                hint = "; the file looks truncated (cut while being written?)" if last else ""
                detail = f"{exc.msg}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "too deep"
                raise CassetteError(self.path, f"is not valid OTLP/JSON ({detail}){hint}", line=number) from exc
        return documents

    def _document(self, document: Any, line: int) -> None:
        if not isinstance(document, dict) or not ({"resourceSpans", "resourceLogs",
                                                   "resource_spans"} & document.keys()):
            raise CassetteError(self.path,
                                "expected an OTLP/JSON export: an object with resourceSpans (or resourceLogs)",
                                line=line)
        for r, resource in enumerate(_list(document.get("resourceSpans", document.get("resource_spans")),
                                           self._fail(line, "resourceSpans"))):
            where = f"resourceSpans[{r}]"
            resource = _dict(resource, self._fail(line, where))
            for s, scope_spans in enumerate(_list(resource.get("scopeSpans"), self._fail(line, f"{where}.scopeSpans"))):
                key = f"{where}.scopeSpans[{s}]"
                scope_spans = _dict(scope_spans, self._fail(line, key))
                scope: dict[str, Any] = scope_spans["scope"] if isinstance(scope_spans.get("scope"), dict) else {}
                for i, span in enumerate(_list(scope_spans.get("spans"), self._fail(line, f"{key}.spans"))):
                    self.spans.append(self._span(span, line, f"{key}.spans[{i}]", str(scope.get("name", ""))))
        for r, resource in enumerate(_list(document.get("resourceLogs"), self._fail(line, "resourceLogs"))):
            resource = _dict(resource, self._fail(line, f"resourceLogs[{r}]"))
            for s, scope_logs in enumerate(_list(resource.get("scopeLogs"),
                                                 self._fail(line, f"resourceLogs[{r}].scopeLogs"))):
                scope_logs = _dict(scope_logs, self._fail(line, f"resourceLogs[{r}].scopeLogs[{s}]"))
                for i, record in enumerate(_list(scope_logs.get("logRecords"), self._fail(line, "logRecords"))):
                    self._log(record, line, f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{i}]")

    def _fail(self, line: int, key: str) -> _Fail:
        return _Fail(self.path, line, key)

    def _span(self, raw: Any, line: int, key: str, scope: str) -> _Span:
        fail = self._fail(line, key)
        raw = _dict(raw, fail)
        name = raw.get("name")
        label = f"{key} (span {name!r})" if isinstance(name, str) else key
        fail = self._fail(line, label)
        attrs = _attributes(raw.get("attributes"), fail)
        status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
        code = status.get("code", 0)
        events = []
        for e, event in enumerate(_list(raw.get("events"), fail.at("events"))):
            event = _dict(event, fail.at(f"events[{e}]"))
            events.append((str(event.get("name", "")), _attributes(event.get("attributes"), fail.at(f"events[{e}]"))))
        return _Span(
            trace_id=_id(raw.get("traceId"), 16, fail.at("traceId")),
            span_id=_id(raw.get("spanId"), 8, fail.at("spanId")),
            parent_id=_id(raw.get("parentSpanId") or "", 8, fail.at("parentSpanId"), optional=True),
            name=name if isinstance(name, str) else "",
            start=_nanos(raw.get("startTimeUnixNano"), fail.at("startTimeUnixNano")),
            end=_nanos(raw.get("endTimeUnixNano"), fail.at("endTimeUnixNano")),
            status_code=(code if isinstance(code, int)
                         else {"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, code)),
            status_message=str(status.get("message", "")),
            attrs=attrs,
            scope=scope,
            line=line,
            events=events,
        )

    def _log(self, raw: Any, line: int, key: str) -> None:
        fail = self._fail(line, key)
        record = _dict(raw, fail)
        attrs = _attributes(record.get("attributes"), fail)
        name = record.get("eventName") or attrs.get("event.name")
        if not (isinstance(name, str) and name.startswith("gen_ai.")) or not record.get("spanId"):
            return
        body = _any_value(record["body"], fail.at("body")) if isinstance(record.get("body"), dict) else None
        self.logs.append((_id(record.get("spanId"), 8, fail.at("spanId")), name,
                          body if isinstance(body, dict) else {}))

    # --- spans -> trace -----------------------------------------------------------------------

    def trace(self, *, whole_run: bool) -> Trace:
        by_id = {span.span_id: span for span in self.spans}
        for span_id, name, body in self.logs:
            if span_id in by_id:
                by_id[span_id].events.append((name, body))
        views: list[_CallView] = []
        tools: list[_Span] = []
        others: dict[str, int] = {}
        for span in sorted(self.spans, key=lambda s: s.start):
            kind = _span_kind(span)
            if kind == "tool":
                tools.append(span)
            elif kind == "call":
                provider = _provider(span)
                if provider is None:
                    views.append(_view(span))
                else:
                    others[provider] = others.get(provider, 0) + 1
        if others:
            listed = ", ".join(f"{name}: {count}" for name, count in sorted(others.items()))
            self.notes.append(f"{sum(others.values())} model-call span(s) from other providers skipped ({listed}); "
                              "only Anthropic Messages calls are checked")
        calls = _merge_duplicates(views)
        missing = self._missing(calls)
        # Calls of one run stay in that run's threads: a trace with a run or agent span is one run; calls
        # whose trace has none (an app that opens no span around its loop) are threaded together, by content.
        traced = {s.trace_id for s in self.spans if _is_run_span(s)}
        groups: dict[str, list[_CallView]] = {}
        for view in calls:
            groups.setdefault(view.span.trace_id if view.span.trace_id in traced else "", []).append(view)
        group_tools: dict[str, list[_Span]] = {}
        for span in tools:
            group_tools.setdefault(span.trace_id if span.trace_id in traced else "", []).append(span)
        runs = {s.trace_id: s for s in self.spans if "harness.outcome" in s.attrs}
        starts: dict[str, float] = {}
        for span in self.spans:
            group_key = span.trace_id if span.trace_id in traced else ""
            starts[group_key] = min(starts.get(group_key, span.start), span.start)
        first = min(starts.values(), default=0.0)
        parts = []
        offset = 0
        for key, group in groups.items():
            exchanges = [self._exchange(offset + i, view) for i, view in enumerate(group)]
            offset += len(group)
            # One run (or none): its tools are every tool span of the file, as they always were.
            mine, origin = (tools, first) if len(groups) == 1 else (group_tools.get(key, []), starts[key])
            part = self._part(exchanges, runs.get(key) if key else None, mine, origin, whole_run=whole_run,
                              missing=missing)
            part.run_key = key or None
            parts.append(part)
        if not parts:
            parts.append(self._part([], next(iter(runs.values())) if len(runs) == 1 else None, tools, first,
                                    whole_run=whole_run, missing=missing))
        trace = _concatenate(parts, self.path, whole_run=whole_run, notes=self.notes)
        if not trace.calls:
            trace.notes.append("no Anthropic model-call spans in this file; nothing to check"
                               if self.spans else "no spans in this file; nothing to check")
        return trace

    def _part(self, exchanges: list[Exchange], run: _Span | None, tools: list[_Span], origin: float, *,
              whole_run: bool, missing: dict[str, str]) -> Trace:
        """The trace of one run's calls, its tools timed from the run's start (else its first span's); a run
        the harness exported was whole, and its end is known."""
        part = build_trace(exchanges, self.path, whole_run=whole_run)
        part.missing = missing
        origin = run.start if run is not None else origin
        part.tool_executions = [_tool_execution(span, origin) for span in tools]
        if run is not None:
            part.whole_run = True
            part.outcome = Outcome(status=run.attrs["harness.outcome"],
                                   reason=str(run.attrs.get("harness.outcome.reason", "")),
                                   limit=run.attrs.get("harness.outcome.limit"),
                                   final_text=run.attrs.get("harness.outcome.final_text"))
        return part

    def _missing(self, calls: list[_CallView]) -> dict[str, str]:
        missing: dict[str, str] = {}
        for fact in get_args(Fact):
            lacking = [view for view in calls if fact not in view.known]
            if lacking:
                who = ("the spans" if len(lacking) == len(calls)
                       else f"the spans of {len(lacking)} of {len(calls)} calls")
                missing[fact] = f"{who} {_WHY[fact]}"
        if any(view.mapped_stop == "end_turn" and view.stop_reason is None for view in calls):
            self.notes.append("finish reason 'stop' read as stop_reason end_turn (it may have been stop_sequence; "
                              "the rules treat both alike)")
        return missing

    def _exchange(self, index: int, view: _CallView) -> Exchange:
        span = view.span
        request = view.request
        if request is None:
            request = {"model": _first(span.attrs, "gen_ai.request.model", "llm.model_name", "llm.request.model_name")
                       or view.response_model}
            request.update(view.params)
            if view.system is not None:
                request["system"] = view.system
            if view.tools is not None:
                request["tools"] = view.tools
            request["messages"] = view.messages if view.messages is not None else []
        response = view.response
        if response is None and view.status is not None and 200 <= view.status < 300:
            response = {"type": "message", "role": "assistant", "id": view.response_id,
                        "model": view.response_model or request.get("model"),
                        "content": view.content if view.content is not None else [],
                        "stop_reason": view.stop_reason or view.mapped_stop, "usage": view.usage}
        elif response is None:
            error_type = _first(span.attrs, "error.type") or "error"
            response = {"type": "error", "error": {"type": str(error_type), "message": span.status_message}}
        headers = {k.removeprefix("http.request.header."): _header(v) for k, v in span.attrs.items()
                   if k.startswith("http.request.header.")}
        response_headers = {k.removeprefix("http.response.header."): _header(v) for k, v in span.attrs.items()
                            if k.startswith("http.response.header.")}
        exchange = self.recording.exchange(
            index, "POST", f"otlp://trace-{span.trace_id}/span-{span.span_id}/v1/messages", headers, request,
            view.status, response_headers, response,
            started_at=span.start, duration_s=max(0.0, span.end - span.start), source_line=span.line,
        )
        if exchange.thread_key is None and "content" not in view.known:
            exchange.thread_key = _thread_key(span, self.spans)
        return exchange


# --- one span -----------------------------------------------------------------------------------


def _span_kind(span: _Span) -> str | None:
    attrs = span.attrs
    operation = attrs.get("gen_ai.operation.name")
    oi_kind = str(attrs.get("openinference.span.kind", "")).upper()
    if operation == "execute_tool" or oi_kind == "TOOL":
        return "tool"
    if operation in _CALL_OPERATIONS or oi_kind == "LLM" or attrs.get("llm.request.type") in ("chat", "completion"):
        return "call"
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in attrs):
        return "call"
    return None


def _provider(span: _Span) -> str | None:
    """None for an Anthropic Messages call; else the provider to name in the note."""
    provider = _first(span.attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    model = str(_first(span.attrs, "gen_ai.request.model", "llm.model_name", "llm.request.model_name") or "")
    if provider is None or "anthropic" in str(provider).lower() or "claude" in model.lower():
        return None
    return str(provider)


def _view(span: _Span) -> _CallView:
    view = _CallView(span=span)
    attrs = span.attrs
    status = attrs.get("http.response.status_code")
    view.status = int(status) if isinstance(status, int) else (None if span.status_code == 2 else 200)
    _read_exact(view) or _read_openinference_values(view) or _read_semconv(view) or _read_prompt_attributes(view) \
        or _read_openinference_flat(view) or _read_events(view)
    _read_usage_and_stop(view)
    if view.response is not None:
        view.known.add("stop_reason")
    if view.request is not None:
        view.known |= {"content", "turns", "is_error", "tools", "request"}
    if span.scope == HARNESS_SCOPE:
        view.known |= {"headers", "attempts"}
    return view


def _read_exact(view: _CallView) -> bool:
    request = _json(view.span.attrs.get("anthropic.request.body"))
    if not isinstance(request, dict):
        return False
    view.request = request
    view.known.add("answer")  # the exact body, whatever came back
    response = _json(view.span.attrs.get("anthropic.response.body"))
    if isinstance(response, dict) and (response.get("type", "message") == "message"
                                       or (view.status is not None and view.status >= 300)):
        view.response = response
    return True


def _read_openinference_values(view: _CallView) -> bool:
    attrs = view.span.attrs
    request = _json(attrs.get("input.value"))
    if not (isinstance(request, dict) and isinstance(request.get("messages"), list)):
        return False
    view.request = request
    response = _json(attrs.get("output.value"))
    if isinstance(response, dict) and response.get("type") == "message":
        view.response = response
        view.known.add("answer")
    else:
        _read_openinference_output(view)
    return True


def _read_semconv(view: _CallView) -> bool:
    attrs = view.span.attrs
    messages = _json_list(attrs.get("gen_ai.input.messages"))
    output = _json_list(attrs.get("gen_ai.output.messages"))
    if not isinstance(messages, list) and not isinstance(output, list):
        return False
    if isinstance(messages, list):
        view.messages = [_message_from_parts(m) for m in messages if isinstance(m, dict) and m.get("role") != "system"]
        system_parts = [p for m in messages if isinstance(m, dict) and m.get("role") == "system"
                        for p in m.get("parts", [])]
        view.known |= {"content", "turns"}
        if any(isinstance(p, dict) and p.get("type") == "tool_call_response" and "is_error" in p
               for m in messages if isinstance(m, dict) for p in m.get("parts") or []):
            view.known.add("is_error")
        instructions = _json_list(attrs.get("gen_ai.system_instructions"))
        parts = instructions if isinstance(instructions, list) else system_parts
        if parts:
            view.system = [_block_from_part(p) for p in parts]
    if isinstance(output, list) and output and isinstance(output[0], dict):
        view.content = _message_from_parts(output[0])["content"]
        reason = output[0].get("finish_reason")
        if isinstance(reason, str):
            _set_finish_reason(view, reason)
        view.known.add("answer")
    definitions = _json_list(attrs.get("gen_ai.tool.definitions"))
    if isinstance(definitions, list):
        view.tools = [_tool_from_definition(d) for d in definitions]
        if all(isinstance(d, dict) and "input_schema" in d for d in definitions):
            view.known.add("tools")
    _read_request_params(view)
    return True


def _read_prompt_attributes(view: _CallView) -> bool:
    attrs = view.span.attrs
    prompts = _indexed(attrs, "gen_ai.prompt.")
    completions = _indexed(attrs, "gen_ai.completion.")
    if not prompts and not completions:
        return False
    messages = []
    for fields in prompts:
        content = fields.get("content")
        parsed = _json(content)
        content = parsed if isinstance(parsed, list) else content
        if fields.get("role") == "system":
            view.system = content
        else:
            messages.append({"role": fields.get("role", "user"), "content": content if content is not None else ""})
    if prompts and any("content" in f for f in prompts):
        view.messages = messages
        view.known |= {"content", "turns", "is_error"}
    if completions:
        view.content = []
        for fields in completions:
            text = fields.get("content")
            if fields.get("role") == "thinking" and isinstance(text, str):
                view.content.append({"type": "thinking", "thinking": text})
            elif isinstance(text, str) and text:
                view.content.append({"type": "text", "text": text})
            for call in _indexed(fields, "tool_calls."):
                arguments = _json(call.get("arguments"))
                view.content.append({"type": "tool_use", "id": call.get("id"), "name": call.get("name"),
                                     "input": arguments if arguments is not None else {}})
            reason = fields.get("finish_reason")
            if isinstance(reason, str):
                _set_finish_reason(view, reason)
    functions = _indexed(attrs, "llm.request.functions.")
    if functions:
        view.tools = [{"name": f.get("name"), "description": f.get("description"),
                       "input_schema": _json(f.get("input_schema")) or {}} for f in functions]
    _read_request_params(view)
    return True


def _read_openinference_flat(view: _CallView) -> bool:
    inputs = _indexed(view.span.attrs, "llm.input_messages.")
    if not inputs:
        return _read_openinference_output(view)
    messages: list[dict[str, Any]] = []
    for fields in inputs:
        message = _oi_message(fields)
        if message["role"] == "system":
            view.system = message["content"]
        elif message["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": fields.get("message.tool_call_id"),
                     "content": fields.get("message.content", "")}
            if messages and messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list) and \
                    all(b.get("type") == "tool_result" for b in messages[-1]["content"]):
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        else:
            messages.append(message)
    view.messages = messages
    view.known.add("content")
    _read_openinference_output(view)
    return True


def _read_openinference_output(view: _CallView) -> bool:
    outputs = _indexed(view.span.attrs, "llm.output_messages.")
    if outputs:
        view.content = _oi_message(outputs[0])["content"]
    reason = view.span.attrs.get("llm.finish_reason")
    if isinstance(reason, str):
        _set_finish_reason(view, reason)
    return bool(outputs)


def _oi_message(fields: dict[str, Any]) -> dict[str, Any]:
    role = str(fields.get("message.role", "user"))
    contents = _indexed(fields, "message.contents.")
    blocks: list[dict[str, Any]] = []
    for item in contents:
        kind = item.get("message_content.type")
        if kind == "text":
            blocks.append({"type": "text", "text": item.get("message_content.text", "")})
        elif kind == "tool_use":
            arguments = _json(item.get("tool_call.function.arguments"))
            blocks.append({"type": "tool_use", "id": item.get("tool_call.id"),
                           "name": item.get("tool_call.function.name"), "input": arguments or {}})
        elif kind is not None:
            blocks.append({"type": str(kind)})
    if not contents:
        for call in _indexed(fields, "message.tool_calls."):
            arguments = _json(call.get("tool_call.function.arguments"))
            blocks.append({"type": "tool_use", "id": call.get("tool_call.id"),
                           "name": call.get("tool_call.function.name"), "input": arguments or {}})
    content: Any = blocks
    if not contents and "message.content" in fields:
        text = fields["message.content"]
        content = [{"type": "text", "text": text}, *blocks] if blocks else text
    return {"role": role, "content": content}


def _read_events(view: _CallView) -> bool:
    """The event form: one event per message (body `content`), one `gen_ai.choice` per answer block."""
    messages: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    seen = False
    for name, body in view.span.events:
        role = name.removeprefix("gen_ai.").removesuffix(".message")
        if name == "gen_ai.choice":
            seen = True
            message: dict[str, Any] = body["message"] if isinstance(body.get("message"), dict) else {}
            text = message.get("content")
            if isinstance(text, str) and text:
                content.append({"type": "text", "text": text})
            for call in body.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
                content.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                                "input": function.get("arguments") or {}})
            if isinstance(body.get("finish_reason"), str):
                _set_finish_reason(view, body["finish_reason"])
        elif name.endswith(".message") and "content" in body:
            seen = True
            if role == "system":
                view.system = body["content"]
            elif role == "user" and isinstance(body["content"], dict) and "tools" in body["content"]:
                view.tools = body["content"]["tools"]
                view.known.add("tools")
            else:
                messages.append({"role": "assistant" if role == "assistant" else "user", "content": body["content"]})
    if not seen:
        return False
    if messages:
        view.messages = messages
        view.known |= {"content", "turns", "is_error"}
    view.content = content
    return True


def _read_request_params(view: _CallView) -> None:
    for attribute, key in (("gen_ai.request.max_tokens", "max_tokens"), ("gen_ai.request.temperature", "temperature"),
                           ("gen_ai.request.top_p", "top_p"), ("gen_ai.request.top_k", "top_k"),
                           ("gen_ai.request.stop_sequences", "stop_sequences")):
        if attribute in view.span.attrs:
            view.params[key] = view.span.attrs[attribute]


def _read_usage_and_stop(view: _CallView) -> None:
    attrs = view.span.attrs
    if view.response is not None:
        response_id = view.response.get("id")
        view.response_id = response_id if isinstance(response_id, str) else None
        return
    view.response_id = _first(attrs, "gen_ai.response.id")
    view.response_model = _first(attrs, "gen_ai.response.model", "llm.response.model_name")
    raw = _first(attrs, "anthropic.message.stop_reason")
    if isinstance(raw, str):
        view.stop_reason = raw
    reasons = attrs.get("gen_ai.response.finish_reasons")
    if view.stop_reason is None and view.mapped_stop is None and isinstance(reasons, list) and reasons:
        _set_finish_reason(view, str(reasons[0]))
    if view.stop_reason is not None or view.mapped_stop is not None:
        view.known.add("stop_reason")
    for key, names in (
        ("input_tokens", ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")),
        ("output_tokens",
         ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion")),
        ("cache_read_input_tokens", ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                                     "llm.token_count.prompt_details.cache_read")),
        ("cache_creation_input_tokens", ("gen_ai.usage.cache_creation.input_tokens",
                                         "gen_ai.usage.cache_write.input_tokens",
                                         "gen_ai.usage.cache_creation_input_tokens",
                                         "llm.token_count.prompt_details.cache_write")),
    ):
        value = _first(attrs, *names)
        if isinstance(value, int) and not isinstance(value, bool):
            view.usage[key] = value


def _set_finish_reason(view: _CallView, reason: str) -> None:
    if reason in STOP_REASONS:
        view.stop_reason = reason
    elif reason in _FINISH_REASONS:
        view.mapped_stop = _FINISH_REASONS[reason]
    else:
        view.stop_reason = reason  # unknown to both vocabularies: L006 judges it as recorded
    view.known.add("stop_reason")


def _merge_duplicates(views: list[_CallView]) -> list[_CallView]:
    """Spans of one model call, by trace and response id: the SDK's own span and an instrumentation's,
    or two instrumentations side by side. The richest one stands for the call; the others fill its gaps.
    The trace id is part of the key because a response id is unique only within a run: replayed or
    scripted runs exported together answer with the same ids, and merging those made calls vanish."""
    merged: list[_CallView] = []
    by_response: dict[tuple[str, str], _CallView] = {}
    for view in views:
        key = (view.span.trace_id, view.response_id) if view.response_id else None
        first = by_response.get(key) if key else None
        if key is None or first is None:
            merged.append(view)
            if key:
                by_response[key] = view
            continue
        best, other = (view, first) if len(view.known) > len(first.known) else (first, view)
        if best.stop_reason is None:
            best.stop_reason = other.stop_reason
        if best.mapped_stop is None:
            best.mapped_stop = other.mapped_stop
        for usage_key, value in other.usage.items():
            best.usage.setdefault(usage_key, value)
        best.known |= other.known & {"stop_reason", "headers", "attempts"}
        if best.status is None or (other.status is not None and other.span.attrs.get("http.response.status_code")):
            best.status = other.status if other.status is not None else best.status
        merged[merged.index(first)] = best
        by_response[key] = best
    return merged


def _is_run_span(span: _Span) -> bool:
    return ("harness.outcome" in span.attrs
            or span.attrs.get("gen_ai.operation.name") in ("invoke_agent", "create_agent")
            or str(span.attrs.get("openinference.span.kind", "")).upper() == "AGENT")


def _concatenate(parts: list[Trace], source: str, *, whole_run: bool, notes: list[str]) -> Trace:
    """One trace of the file's runs, built apart: its calls, threads and exchanges numbered to follow each
    other, for what counts or shows the file as a whole. Each run stays its own trace in `Trace.runs`,
    which the rules check one by one (a run's request ids, tool_use ids and history are no other run's):
    there its calls keep their own indexes, and its threads take the numbers they have in the file, so a
    finding names the thread as the whole file numbers it."""
    if len(parts) == 1:
        parts[0].notes[:0] = notes
        return parts[0]
    trace = Trace(source=source, exchanges=[], calls=[], threads=[], whole_run=whole_run, notes=list(notes),
                  missing=parts[0].missing, runs=parts)
    for part in parts:
        calls, threads = len(trace.calls), len(trace.threads)
        for thread in part.threads:
            thread.id += threads
            thread.parent = thread.parent + threads if thread.parent is not None else None
        for call in part.calls:
            call.thread += threads
        trace.threads += [replace(thread, calls=[i + calls for i in thread.calls]) for thread in part.threads]
        trace.calls += [replace(call, index=call.index + calls) for call in part.calls]
        trace.exchanges += part.exchanges
        trace.tool_executions += part.tool_executions
        trace.notes += part.notes
    return trace


def _thread_key(span: _Span, spans: list[_Span]) -> str:
    """Without content, threads follow the spans: one per trace and agent span above the call."""
    by_id = {s.span_id: s for s in spans}
    chain: list[str] = []
    parent = by_id.get(span.parent_id)
    while parent is not None:
        operation = parent.attrs.get("gen_ai.operation.name")
        if (operation in ("invoke_agent", "create_agent")
                or str(parent.attrs.get("openinference.span.kind")).upper() == "AGENT"):
            chain.append(parent.span_id)
        parent = by_id.get(parent.parent_id)
    return "/".join([span.trace_id, *reversed(chain)])


def _tool_execution(span: _Span, origin: float) -> ToolExecution:
    attrs = span.attrs
    arguments = _first(attrs, "gen_ai.tool.call.arguments", "input.value")
    result = _first(attrs, "gen_ai.tool.call.result", "output.value")
    parsed_arguments = _json(arguments)
    failed = span.status_code == 2 or "error.type" in attrs
    return ToolExecution(
        tool_use_id=str(_first(attrs, "gen_ai.tool.call.id", "tool_call.id", "tool.id") or span.span_id),
        name=str(_first(attrs, "gen_ai.tool.name", "tool.name") or span.name),
        input=parsed_arguments if parsed_arguments is not None else arguments,
        started_at=span.start - origin,
        ended_at=span.end - origin,
        output=result,
        is_error=failed,
        error=(span.status_message or str(attrs.get("error.type"))) if failed else None,
    )


# --- parts of the GenAI conventions -> Messages blocks ------------------------------------------


def _message_from_parts(message: dict[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    parts = message.get("parts")
    blocks = [_block_from_part(p) for p in parts] if isinstance(parts, list) else []
    if role == "tool":
        role = "user"
    return {"role": role if role in ("user", "assistant") else str(role), "content": blocks}


def _block_from_part(part: Any) -> dict[str, Any]:
    if not isinstance(part, dict):
        return {"type": "text", "text": str(part)}
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("content", "")}
    if kind == "reasoning":
        block = {"type": "thinking", "thinking": part.get("content", "")}
        if "signature" in part:
            block["signature"] = part["signature"]
        return block
    if kind == "tool_call":
        arguments = part.get("arguments")
        parsed = _json(arguments) if isinstance(arguments, str) else arguments
        return {"type": "tool_use", "id": part.get("id"), "name": part.get("name"),
                "input": parsed if parsed is not None else {}}
    if kind == "tool_call_response":
        response = part.get("response", part.get("result"))
        block = {"type": "tool_result", "tool_use_id": part.get("id"),
                 "content": response if isinstance(response, (str, list)) else json.dumps(response)}
        if part.get("is_error"):
            block["is_error"] = True
        return block
    return {k: v for k, v in part.items() if v is not None}


def _tool_from_definition(definition: Any) -> Any:
    if not isinstance(definition, dict) or "input_schema" in definition:
        return definition
    return {"name": definition.get("name"), "description": definition.get("description"),
            "input_schema": definition.get("parameters") or {}}


# --- OTLP/JSON values ---------------------------------------------------------------------------


class _Fail:
    """Where in the file a value sits, to raise an error that names it."""

    def __init__(self, path: str, line: int, key: str) -> None:
        self.path, self.line, self.key = path, line, key

    def at(self, key: str) -> _Fail:
        return _Fail(self.path, self.line, f"{self.key}.{key}")

    def __call__(self, problem: str) -> CassetteError:
        return CassetteError(self.path, problem, line=self.line, key=self.key)


def _list(value: Any, fail: _Fail) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(f"expected a list, got {_kind(value)}")
    return value


def _dict(value: Any, fail: _Fail) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(f"expected an object, got {_kind(value)}")
    return value


def _attributes(raw: Any, fail: _Fail) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for i, item in enumerate(_list(raw, fail.at("attributes"))):
        item = _dict(item, fail.at(f"attributes[{i}]"))
        key = item.get("key")
        if not isinstance(key, str):
            raise fail.at(f"attributes[{i}]")("expected a string key")
        attrs[key] = _any_value(item.get("value"), fail.at(f"attributes[{key!r}]"))
    return attrs


def _any_value(value: Any, fail: _Fail) -> Any:
    """An OTLP AnyValue ({"stringValue": ...}, {"intValue": "3"}, arrays, key-value lists) as plain data."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise fail(f"expected an AnyValue object with one of stringValue, intValue, doubleValue, boolValue, "
                   f"arrayValue, kvlistValue, bytesValue; got {_kind(value)}")
    (kind, inner), = value.items()
    if kind in ("stringValue", "string_value"):
        return str(inner)
    if kind in ("intValue", "int_value"):
        try:
            return int(inner)
        except (TypeError, ValueError):
            raise fail(f"intValue {inner!r} is not an integer") from None
    if kind in ("doubleValue", "double_value"):
        try:
            return float(inner)
        except (TypeError, ValueError):
            raise fail(f"doubleValue {inner!r} is not a number") from None
    if kind in ("boolValue", "bool_value"):
        return bool(inner)
    if kind in ("arrayValue", "array_value"):
        values = inner.get("values") if isinstance(inner, dict) else None
        return [_any_value(v, fail) for v in _list(values, fail)]
    if kind in ("kvlistValue", "kvlist_value"):
        values = inner.get("values") if isinstance(inner, dict) else None
        return {str(_dict(kv, fail).get("key")): _any_value(kv.get("value"), fail) for kv in _list(values, fail)}
    if kind in ("bytesValue", "bytes_value"):
        return str(inner)
    raise fail(f"unknown AnyValue kind {kind!r}")


def _id(value: Any, size: int, fail: _Fail, *, optional: bool = False) -> str:
    """A trace or span id: hex in OTLP/JSON, base64 in protobuf's own JSON mapping."""
    if optional and not value:
        return ""
    if isinstance(value, str):
        if len(value) == size * 2 and _HEX.match(value):
            return value.lower()
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise fail(f"expected a {size * 2}-digit hex id, got {value!r:.60}")


def _nanos(value: Any, fail: _Fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise fail(f"expected nanoseconds since the epoch, got {value!r:.60}")
    try:
        return int(value) / 1e9
    except ValueError:
        raise fail(f"expected nanoseconds since the epoch, got {value!r:.60}") from None


def _kind(value: Any) -> str:
    """What a JSON value is, as JSON names it (Python's `int` or `NoneType` meant nothing to a user)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(type(value), "a number")


def _json(value: Any) -> Any:
    if not isinstance(value, str) or value.lstrip()[:1] not in ("{", "[", '"'):
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _json_list(value: Any) -> list[Any] | None:
    """A JSON array held as a string (what instrumentations write), or as an OTLP array of objects or of
    JSON strings."""
    if isinstance(value, list):
        return [item if isinstance(item, dict) else _json(item) for item in value]
    parsed = _json(value)
    return parsed if isinstance(parsed, list) else None


def _first(attrs: dict[str, Any], *names: str) -> Any:
    for name in names:
        if attrs.get(name) is not None:
            return attrs[name]
    return None


def _header(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.0.role`, `prefix.0.content`, `prefix.1.role`... as [{role, content}, {role}] in index order."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix):].partition(".")
        if index.isdigit() and rest:
            groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]
