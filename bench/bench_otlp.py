"""Benchmark: `harness check` on OpenTelemetry spans against the same traffic as a cassette.

Writes the calls of bench_check's conversations twice: as a vcrpy JSON cassette, and as OTLP/JSON
lines of OpenInference-style spans (the request and answer as `input.value` / `output.value`, one
export per conversation, as the SDK's JSON file exporter writes). Times reading + checking each,
and prints the ratio of spans to cassette, measured side by side in the same run.

    .venv/bin/python bench/bench_otlp.py [--sizes 100,1000,5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_check import _conversation, best_of, check, write_cassette  # noqa: E402


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": value}


def write_spans(path: Path, calls: int) -> None:
    lines = []
    written = 0
    thread = 0
    while written < calls:
        spans = []
        for step, interaction in enumerate(_conversation(thread)[: calls - written]):
            request, response = interaction["request"]["body"], interaction["response"]["body"]["string"]
            attributes = {"openinference.span.kind": "LLM", "llm.provider": "anthropic",
                          "llm.model_name": "claude-sonnet-5", "input.value": request, "output.value": response,
                          "input.mime_type": "application/json", "output.mime_type": "application/json"}
            start = 1_800_000_000_000_000_000 + (thread * 100 + step) * 1_000_000_000
            spans.append({"traceId": f"{thread + 1:032x}", "spanId": f"{step + 1:016x}", "name": "messages.create",
                          "kind": 3, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 500_000_000),
                          "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
                          "status": {"code": 1}})
            written += 1
        lines.append(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
            {"scope": {"name": "openinference.instrumentation.anthropic"}, "spans": spans}]}]}))
        thread += 1
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'calls':>6} {'cassette MB':>11} {'spans MB':>9} {'cassette s':>10} {'spans s':>9} {'ratio':>6} findings")
    with tempfile.TemporaryDirectory() as tmp:
        for calls in (int(s) for s in args.sizes.split(",")):
            cassette, spans = Path(tmp) / f"c-{calls}.json", Path(tmp) / f"s-{calls}.jsonl"
            write_cassette(cassette, calls)
            write_spans(spans, calls)
            on_wire = best_of(check, cassette, args.repeat)
            on_spans = best_of(check, spans, args.repeat)
            findings = (check(cassette), check(spans))
            print(f"{calls:>6} {cassette.stat().st_size / 1e6:>11.2f} {spans.stat().st_size / 1e6:>9.2f} "
                  f"{on_wire:>10.4f} {on_spans:>9.4f} {on_spans / on_wire:>6.2f} {findings[0]}/{findings[1]}")


if __name__ == "__main__":
    main()
