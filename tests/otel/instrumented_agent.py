"""An agent loop run under a real OpenTelemetry instrumentation, for tests/otel.

Run as a subprocess (instrumentations patch the SDK for the whole process):
    python instrumented_agent.py INSTRUMENTATION SPANS.jsonl CASSETTE.yaml [--bug text-before-results]

The agent talks to the harness's scripted model through the SDK (a scripted session that also writes
the run's cassette), while the instrumentation writes its spans with the OpenTelemetry SDK's OTLP
JSON file exporter. The test then checks both files and compares the findings.
"""

from __future__ import annotations

import argparse
import os

from opentelemetry import trace
from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

STEPS = [
    {"text": "Let me look the customer and the order up.",
     "tool_use": [{"name": "get_customer", "input": {"customer_id": "C1"}},
                  {"name": "lookup_order", "input": {"order_id": "O1"}}]},
    {"text": "Customer C1, Ana Ruiz, has order O1 delivered."},
]
TOOLS = [
    {"name": "get_customer", "description": "Looks a customer up by id.",
     "input_schema": {"type": "object", "properties": {"customer_id": {"type": "string"}},
                      "required": ["customer_id"]}},
    {"name": "lookup_order", "description": "Looks an order up by id.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
]


def instrument(name: str, provider: TracerProvider) -> None:
    if name == "openllmetry":
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
        AnthropicInstrumentor().instrument(tracer_provider=provider)
    elif name == "openinference":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor as OpenInference
        OpenInference().instrument(tracer_provider=provider)
    elif name == "contrib":
        # The contrib instrumentation records content only when asked to, in the latest conventions.
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
        from opentelemetry.instrumentation.genai.anthropic import AnthropicInstrumentor as Contrib
        Contrib().instrument(tracer_provider=provider)
    elif name == "contrib-no-content":
        from opentelemetry.instrumentation.genai.anthropic import AnthropicInstrumentor as Contrib
        Contrib().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown instrumentation {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("instrumentation")
    parser.add_argument("spans")
    parser.add_argument("cassette")
    parser.add_argument("--bug", choices=("text-before-results", "none"), default="none")
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(args.spans)))
    trace.set_tracer_provider(provider)
    instrument(args.instrumentation, provider)

    from harness.transport import open_session

    with open_session("scripted", script=STEPS, cassette=args.cassette) as session:
        client = session.client()
        messages: list[dict[str, object]] = [{"role": "user", "content": "What about customer C1 and order O1?"}]
        tracer = trace.get_tracer("support-agent")
        with tracer.start_as_current_span("support-agent"):
            while True:
                request = dict(model="claude-sonnet-4-5", max_tokens=1024, system="You are a support agent.",
                               tools=TOOLS, messages=messages)
                if args.stream:
                    with client.messages.stream(**request) as stream:  # type: ignore[arg-type]
                        response = stream.get_final_message()
                else:
                    response = client.messages.create(**request)  # type: ignore[arg-type]
                messages.append({"role": "assistant",
                                 "content": [b.model_dump(exclude_none=True) for b in response.content]})
                if response.stop_reason != "tool_use":
                    break
                results: list[dict[str, object]] = [
                    {"type": "tool_result", "tool_use_id": b.id, "content": f"{b.name} ok"}
                    for b in response.content if b.type == "tool_use"
                ]
                if args.bug == "text-before-results":
                    results.insert(0, {"type": "text", "text": "Here are the results."})
                messages.append({"role": "user", "content": results})
    provider.shutdown()


if __name__ == "__main__":
    main()
