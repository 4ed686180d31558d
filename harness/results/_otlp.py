"""Send stored runs to OpenTelemetry: one trace per run, in the GenAI semantic conventions.

A root `invoke_agent` span per run (scenario, model, effort, outcome, cost), a `chat` span per HTTP
attempt of each model call (model, usage with cache reads and writes, finish reasons, status), an
`execute_tool` span per tool the harness ran, and each finding as a `harness.finding` event on the
call it is about (or on the root). Message content goes out only when asked (`content=True`), and
redacted like every output. Spans are built and sent by the OpenTelemetry SDK and its OTLP
exporters (the `otel` extra): OTLP/HTTP to a URL, OTLP/JSON lines to a file, which `harness check`
reads back.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._output import write_text
from ..errors import HarnessError, InputError
from ..trace._model import Call, Exchange
from ..trace._scrub import default_secrets, redact_json
from ..trace.formats._otlp import HARNESS_SCOPE
from ._model import RunResult

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, Span

INSTALL_HINT = "pip install 'agent-harness[otel]'"
EXPORT_TIMEOUT_S = 5.0
"""How long an OTLP/HTTP export may take before it is given up (one attempt, no retries: a harness run
must not hang on a collector that is down)."""
_EXPORTED_HEADERS = ("anthropic-beta", "anthropic-version", "x-stainless-retry-count", "x-harness-thread",
                     "retry-after", "x-should-retry", "request-id")


class ExportError(HarnessError):
    """The spans could not be written or sent; the message says where and why, in one line."""


@dataclass
class ExportSummary:
    runs: int
    spans: int
    target: str

    def __str__(self) -> str:
        return f"exported {self.runs} run(s) as {self.spans} span(s) to {self.target}"


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
"""A URL's scheme: a target that has one is an endpoint, never a file name."""


def export_results(results: Sequence[RunResult], target: str, *, content: bool = False) -> ExportSummary:
    """Send one trace per result to `target`: an OTLP/HTTP URL (http:// or https://) or an OTLP/JSON file.

    Raises ExportError with one line when the SDK is missing or the target refuses the spans; the
    results themselves are never touched.
    """
    spans = build_spans(results, content=content)
    exporter = _exporter(target)
    try:
        with _quiet_exporter_logs():
            outcome = exporter.export(spans)
    finally:
        exporter.shutdown()
    if outcome.name != "SUCCESS":
        raise ExportError(f"OTLP export to {target} failed ({_why(target)}); {len(results)} run(s) not exported")
    return ExportSummary(runs=len(results), spans=len(spans), target=target)


def build_spans(results: Sequence[RunResult], *, content: bool = False) -> list[ReadableSpan]:
    """The finished spans of every result, built with the SDK (not sent anywhere)."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError as exc:
        raise ExportError(f"OpenTelemetry export needs the OpenTelemetry SDK ({exc.name} is missing): "
                          f"{INSTALL_HINT}") from exc
    from ..transport._cassette import harness_version

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent-harness"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(HARNESS_SCOPE, harness_version())
    secrets = default_secrets()
    for result in results:
        _RunSpans(tracer, result, content=content, secrets=secrets).emit()
    provider.shutdown()
    return list(memory.get_finished_spans())


def _is_url(target: str) -> bool:
    """An OTLP/HTTP endpoint, whatever the case of its scheme (`HTTP://` is a URL, not a file name)."""
    return target.lower().startswith(("http://", "https://"))


def _exporter(target: str) -> Any:
    scheme = _SCHEME.match(target)
    if scheme and not _is_url(target):
        # Any other URL (ftp://, grpc://) would be a file path here: spans written to ./grpc:/host:4317.
        raise ExportError(f"{target}: {scheme.group(1)}:// is no OTLP/HTTP endpoint; give an http:// or "
                          "https:// URL (http://host:4318) or a file path")
    if _is_url(target):
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ExportError(f"OTLP/HTTP export needs opentelemetry-exporter-otlp-proto-http: {INSTALL_HINT}") from exc
        endpoint = target if target.rstrip("/").endswith("/v1/traces") else target.rstrip("/") + "/v1/traces"
        return OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_S)
    try:
        from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    except ImportError as exc:
        raise ExportError(f"OTLP/JSON file export needs opentelemetry-exporter-otlp-json-file: {INSTALL_HINT}") from exc
    try:
        # One export, one file (the exporter itself appends to it); never a file reached through a
        # symlink out of its folder.
        path = write_text(target, "")
    except InputError as exc:
        raise ExportError(str(exc)) from exc
    return FileSpanExporter(path)


def _why(target: str) -> str:
    if _is_url(target):
        return "no OTLP/HTTP receiver answered in time, or it refused the spans"
    return "the file could not be written"


@contextmanager
def _quiet_exporter_logs() -> Iterator[None]:
    """The OTLP exporters log each failed attempt with a traceback; the caller prints one line instead."""
    loggers = [logging.getLogger(name) for name in ("opentelemetry.exporter", "opentelemetry.sdk")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class _RunSpans:
    """The spans of one run, with the times it kept (a replayed run has the replay's times)."""

    def __init__(self, tracer: Any, result: RunResult, *, content: bool, secrets: tuple[str, ...]) -> None:
        self.tracer = tracer
        self.result = result
        self.content = content
        self.secrets = secrets
        self.start = _epoch(result.started_at)
        self.end = self.start + max(result.duration_s, 0.0)

    def emit(self) -> None:
        from opentelemetry import trace as otel_trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        result = self.result
        root = self.tracer.start_span(f"invoke_agent {result.scenario}", kind=SpanKind.INTERNAL,
                                      attributes=self._root_attributes(), start_time=_ns(self.start))
        if result.status != "passed":
            root.set_status(Status(StatusCode.ERROR, result.error or f"run {result.status}"))
        context = otel_trace.set_span_in_context(root)
        trace = result.trace
        # The span of each call's answer, and when it ends: it stays open until its findings are added.
        call_spans: dict[int, tuple[Span, int]] = {}
        if trace is not None:
            for call in trace.calls:
                for exchange in call.attempts:
                    span, end = self._call_span(call, exchange, context)
                    if exchange is call.final:
                        call_spans[call.index] = (span, end)
                    else:
                        span.end(end_time=end)
            for tool in trace.tool_executions:
                self._tool_span(tool, context)
        for finding in result.findings:
            target = call_spans[finding.call][0] if finding.call in call_spans else None
            attributes = {k: v for k, v in {
                "harness.finding.code": finding.code, "harness.finding.severity": finding.severity,
                "harness.finding.message": finding.message, "harness.finding.location": finding.where(),
                "harness.finding.thread": finding.thread, "harness.finding.step": finding.step,
                "harness.finding.message_index": finding.message_index,
                "harness.finding.block_index": finding.block_index,
            }.items() if v is not None}
            (target or root).add_event("harness.finding", attributes)
        for span, end in call_spans.values():
            span.end(end_time=end)
        root.end(end_time=_ns(self.end))

    def _root_attributes(self) -> dict[str, Any]:
        result = self.result
        outcome = result.outcome
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": result.scenario,
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": result.model,
            "harness.run_id": result.run_id,
            "harness.scenario": result.scenario,
            "harness.scenario_path": result.scenario_path,
            "harness.cell": result.run_id.rpartition("[")[2].rstrip("]"),
            "harness.effort": result.effort or "",
            "harness.repeat": result.repeat,
            "harness.mode": result.mode,
            "harness.status": result.status,
            "harness.steps": result.steps,
            "gen_ai.usage.input_tokens": result.usage.input_tokens,
            "gen_ai.usage.output_tokens": result.usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": result.usage.cache_read_input_tokens,
            "gen_ai.usage.cache_creation.input_tokens": result.usage.cache_creation_input_tokens,
        }
        if result.case is not None:
            attributes["harness.case"] = result.case
        if outcome is not None:
            attributes["harness.outcome"] = outcome.status
            attributes["harness.outcome.reason"] = self._redact(outcome.reason)
            if outcome.limit:
                attributes["harness.outcome.limit"] = outcome.limit
            if self.content and outcome.final_text is not None:
                attributes["harness.outcome.final_text"] = self._redact(outcome.final_text)
        if result.cost_usd is not None:
            attributes["harness.cost_usd"] = result.cost_usd
        if result.error:
            attributes["error.type"] = "harness_error"
            attributes["harness.error"] = self._redact(result.error)
        return attributes

    def _call_span(self, call: Call, exchange: Exchange, context: Any) -> tuple[Span, int]:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        request = exchange.request_body if isinstance(exchange.request_body, dict) else {}
        model = str(request.get("model") or self.result.model)
        start = exchange.started_at if exchange.started_at is not None else self.start
        end = start + (exchange.duration_s or 0.0)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": model,
            "harness.thread": call.thread,
            "harness.step": call.step,
        }
        for key in ("max_tokens", "temperature", "top_p", "top_k"):
            if isinstance(request.get(key), (int, float)) and not isinstance(request.get(key), bool):
                attributes[f"gen_ai.request.{key}"] = request[key]
        if exchange.status is not None:
            attributes["http.response.status_code"] = exchange.status
        for side, headers in (("request", exchange.request_headers), ("response", exchange.response_headers)):
            for name in _EXPORTED_HEADERS:
                if name in headers:
                    attributes[f"http.{side}.header.{name}"] = [self._redact(headers[name])]
        answer = exchange.response_body if exchange.ok and isinstance(exchange.response_body, dict) else None
        if answer is not None:
            usage: dict[str, Any] = answer["usage"] if isinstance(answer.get("usage"), dict) else {}
            for key, name in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                              ("cache_read_input_tokens", "cache_read.input_tokens"),
                              ("cache_creation_input_tokens", "cache_creation.input_tokens")):
                if isinstance(usage.get(key), int):
                    attributes[f"gen_ai.usage.{name}"] = usage[key]
            if isinstance(answer.get("id"), str):
                attributes["gen_ai.response.id"] = answer["id"]
            if isinstance(answer.get("model"), str):
                attributes["gen_ai.response.model"] = answer["model"]
            if isinstance(answer.get("stop_reason"), str):
                attributes["gen_ai.response.finish_reasons"] = [answer["stop_reason"]]
        else:
            body = exchange.response_body if isinstance(exchange.response_body, dict) else {}
            error = exchange.stream_error or body.get("error")
            attributes["error.type"] = str(error.get("type")) if isinstance(error, dict) else \
                (str(exchange.status) if exchange.status is not None else "no_response")
        if self.content:
            attributes.update(self._content(request, exchange.response_body))
        span = self.tracer.start_span(f"chat {model}", context=context, kind=SpanKind.CLIENT,
                                      attributes=attributes, start_time=_ns(start))
        if answer is None:
            span.set_status(Status(StatusCode.ERROR, str(attributes.get("error.type"))))
        return span, _ns(end)

    def _content(self, request: dict[str, Any], response: Any) -> dict[str, Any]:
        """The conversation as GenAI semantic-convention parts for viewers, and the exact bodies for checks."""
        attributes: dict[str, Any] = {
            "anthropic.request.body": self._redact(json.dumps(request, ensure_ascii=False)),
            "gen_ai.input.messages": self._redact(json.dumps(
                [_parts_message(m) for m in request.get("messages") or [] if isinstance(m, dict)], ensure_ascii=False)),
        }
        system = request.get("system")
        if system:
            blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
            attributes["gen_ai.system_instructions"] = self._redact(json.dumps(
                [_part(b) for b in blocks if isinstance(b, dict)], ensure_ascii=False))
        if isinstance(request.get("tools"), list):
            attributes["gen_ai.tool.definitions"] = self._redact(json.dumps(request["tools"], ensure_ascii=False))
        if isinstance(response, dict):
            attributes["anthropic.response.body"] = self._redact(json.dumps(response, ensure_ascii=False))
            if response.get("type", "message") == "message":
                message = _parts_message({"role": "assistant", "content": response.get("content") or []})
                message["finish_reason"] = response.get("stop_reason")
                attributes["gen_ai.output.messages"] = self._redact(json.dumps([message], ensure_ascii=False))
        return attributes

    def _tool_span(self, tool: Any, context: Any) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.call.id": tool.tool_use_id,
        }
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = self._redact(json.dumps(tool.input, ensure_ascii=False))
            attributes["gen_ai.tool.call.result"] = self._redact(
                tool.output if isinstance(tool.output, str) else json.dumps(tool.output, ensure_ascii=False))
        if tool.is_error:
            attributes["error.type"] = "tool_error"
        span = self.tracer.start_span(f"execute_tool {tool.name}", context=context, kind=SpanKind.INTERNAL,
                                      attributes=attributes, start_time=_ns(self.start + tool.started_at))
        if tool.is_error:
            span.set_status(Status(StatusCode.ERROR, self._redact(tool.error or "tool returned is_error")))
        span.end(end_time=_ns(self.start + tool.ended_at))

    def _redact(self, text: str) -> str:
        # redact_json works on JSON text; a plain string is redacted as the JSON string it would be.
        redacted: str = json.loads(redact_json(json.dumps(text, ensure_ascii=False), self.secrets))
        return redacted


def _parts_message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = ([{"type": "text", "text": content}] if isinstance(content, str)
              else content if isinstance(content, list) else [])
    role = message.get("role")
    return {"role": role, "parts": [_part(b) for b in blocks if isinstance(b, dict)]}


def _part(block: dict[str, Any]) -> dict[str, Any]:
    """A Messages block as a GenAI-convention part; fields the conventions lack keep their own names."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text", "")}
    if kind == "thinking":
        return {"type": "reasoning", "content": block.get("thinking", ""), "signature": block.get("signature")}
    if kind == "tool_use":
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
    if kind == "tool_result":
        return {"type": "tool_call_response", "id": block.get("tool_use_id"), "response": block.get("content"),
                "is_error": bool(block.get("is_error"))}
    return dict(block)


def _epoch(iso: str) -> float:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)
