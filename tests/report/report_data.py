"""Realistic stored results for the report and diff tests, built from hand-made wire exchanges.

The traces go through `build_trace` like a recording would: a coordinator thread with thinking,
parallel tool_use, an is_error result, a retried 529, a web search, and a subagent thread
("main/sub"). Hostile strings sit in every place a page could execute them.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import re
from typing import Any

from harness.checks._registry import Finding
from harness.cost import cost_of_trace
from harness.results import ExpectationResult, RunResult, Usage
from harness.trace import Exchange, Outcome, build_trace
from harness.trace._model import Trace

# Each payload would leave a mark in the page if it ever ran.
HOSTILE_TEXT = "<script>window.__pwned='text'</script><img src=x onerror=\"window.__pwned='img'\">"
HOSTILE_JSON = "</script><script>document.title='pwned-json'</script><!--"
HOSTILE_LINK = "[click me](javascript:window.__pwned='link') <a href=\"javascript:window.__pwned='a'\">a</a>"
HOSTILE_FINDING = "tool said <svg onload=\"window.__pwned='finding'\"></svg>"

SYSTEM = "You are a support agent. Use tools; never guess."
TOOLS = [
    {"name": "get_customer", "description": "Look up a customer", "input_schema": {"type": "object"}},
    {"name": "search_docs", "description": "Search the help centre", "input_schema": {"type": "object"}},
    {"name": "delegate", "description": "Ask a research subagent", "input_schema": {"type": "object"}},
]


def exchange(
    index: int,
    messages: list[dict[str, Any]],
    content: list[dict[str, Any]] | None,
    *,
    model: str = "claude-opus-4-8",
    key: str | None = "main",
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    status: int = 200,
    system: str = SYSTEM,
    tools: list[dict[str, Any]] | None = None,
    started_at: float = 1_760_000_000.0,
    duration_s: float = 1.5,
    effort: str | None = None,
    replay_s: float | None = 0.004,
) -> Exchange:
    """`duration_s` is what the model took. The runs are replays (`result_for` says mode replay), so by
    default the answer was played in `replay_s` with `duration_s` recorded in the cassette; `replay_s`
    None makes it a live exchange that took `duration_s`."""
    request: dict[str, Any] = {"model": model, "max_tokens": 4096, "system": system, "messages": messages}
    if tools is not None:
        request["tools"] = tools
    if effort is not None:
        request["output_config"] = {"effort": effort}
    body: dict[str, Any]
    if status == 200:
        body = {"id": f"msg_{index}", "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": stop_reason, "usage": usage or {"input_tokens": 10, "output_tokens": 5}}
    else:
        body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return Exchange(index=index, method="POST", url="https://api.anthropic.com/v1/messages",
                    request_headers={"anthropic-version": "2023-06-01"}, request_body=request, status=status,
                    response_headers={}, response_body=body, started_at=started_at,
                    duration_s=duration_s if replay_s is None else replay_s,
                    replayed=replay_s is not None, recorded_duration_s=None if replay_s is None else duration_s,
                    recorded_started_at=None if replay_s is None else started_at, thread_key=key)


def rich_trace(model: str = "claude-opus-4-8", source: str = "run", effort: str | None = "high") -> Trace:
    """Coordinator: 3 steps (first retried after a 529), a subagent thread between steps 2 and 3."""
    user = {"role": "user", "content": f"Can customer c-42 get a refund? {HOSTILE_TEXT}"}
    step1 = [
        {"type": "thinking", "thinking": "I should verify the customer first, then read the policy.",
         "signature": "EqQBCkYIARgCKkB" + "x" * 40},
        {"type": "text", "text": "Let me check the customer and the policy."},
        {"type": "tool_use", "id": "toolu_01", "name": "get_customer", "input": {"customer_id": "c-42"}},
        {"type": "tool_use", "id": "toolu_02", "name": "search_docs", "input": {"query": HOSTILE_JSON}},
    ]
    results1 = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": '{"id": "c-42", "name": "Ada"}'},
        {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": True,
         "content": f"Error: search backend timed out {HOSTILE_TEXT}"},
    ]}
    h2 = [user, {"role": "assistant", "content": step1}, results1]
    step2 = [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "refund policy"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
         "content": [{"type": "web_search_result", "url": "https://example.com/refunds", "title": "Refunds"}]},
        {"type": "text", "text": f"Found it. {HOSTILE_LINK}"},
        {"type": "tool_use", "id": "toolu_03", "name": "delegate", "input": {"brief": "Check refund eligibility"}},
    ]
    brief = [{"role": "user", "content": "## Objective\nCheck refund eligibility for c-42."}]
    sub = [{"type": "text", "text": f"Eligible: purchase 10 days ago. {HOSTILE_LINK}"}]
    h3 = [*h2, {"role": "assistant", "content": step2},
          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_03", "content": "Eligible."}]}]
    final = [{"type": "text", "text": "Yes: c-42 can get a refund."}]
    exchanges = [
        exchange(0, [user], None, model=model, status=529, tools=TOOLS, duration_s=0.3, effort=effort),
        exchange(1, [user], step1, model=model, stop_reason="tool_use", tools=TOOLS, started_at=1_760_000_001.0,
                 duration_s=2.0, effort=effort,
                 usage={"input_tokens": 1200, "output_tokens": 300, "cache_creation_input_tokens": 2000,
                        "cache_read_input_tokens": 0,
                        "cache_creation": {"ephemeral_5m_input_tokens": 1500, "ephemeral_1h_input_tokens": 500}}),
        exchange(2, h2, step2, model=model, stop_reason="tool_use", tools=TOOLS, started_at=1_760_000_004.0,
                 duration_s=3.0, effort=effort,
                 usage={"input_tokens": 400, "output_tokens": 250, "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 2000, "server_tool_use": {"web_search_requests": 1}}),
        exchange(3, brief, sub, model="claude-sonnet-5", key="main/sub", system="You research refunds.",
                 started_at=1_760_000_008.0, duration_s=1.0,
                 usage={"input_tokens": 100, "output_tokens": 40}),
        exchange(4, h3, final, model=model, tools=TOOLS, started_at=1_760_000_010.0, duration_s=1.2, effort=effort,
                 usage={"input_tokens": 500, "output_tokens": 20, "cache_creation_input_tokens": 100,
                        "cache_read_input_tokens": 2000}),
    ]
    trace = build_trace(exchanges, source, whole_run=True)
    trace.outcome = Outcome(status="completed", final_text="Yes: c-42 can get a refund.")
    return trace


def result_for(
    trace: Trace | None,
    *,
    scenario: str = "refund",
    model: str = "claude-opus-4-8",
    effort: str | None = "high",
    repeat: int = 0,
    status: str = "passed",
    findings: list[Finding] | None = None,
    duration_s: float = 9.0,
    error: str | None = None,
) -> RunResult:
    usage = Usage()
    if trace is not None:
        for call in trace.calls:
            u = call.usage
            usage.input_tokens += int(u.get("input_tokens", 0))
            usage.output_tokens += int(u.get("output_tokens", 0))
            usage.cache_creation_input_tokens += int(u.get("cache_creation_input_tokens", 0))
            usage.cache_read_input_tokens += int(u.get("cache_read_input_tokens", 0))
    return RunResult(
        run_id=f"{scenario}[{model}-{effort or 'default'}-r{repeat}]",
        scenario=scenario,
        scenario_path=f"scenarios/{scenario}.yaml",
        model=model,
        effort=effort,
        repeat=repeat,
        mode="replay",
        status=status,  # type: ignore[arg-type]
        outcome=trace.outcome if trace else None,
        findings=findings or [],
        expectations=[ExpectationResult("outcome", status == "passed", "expected completed")],
        error=error,
        started_at="2026-11-30T09:00:00Z",
        duration_s=duration_s,
        steps=len(trace.calls) if trace else 0,
        usage=usage,
        cost_usd=cost_of_trace(trace) if trace else None,
        trace=trace,
    )


def finding_at(trace: Trace, code: str, thread: int, step: int, message: str, severity: str = "error") -> Finding:
    call = next(c for c in trace.calls if c.thread == thread and c.step == step)
    return Finding(code=code, severity=severity, thread=thread, step=step, message=message,  # type: ignore[arg-type]
                   message_index=2, block_index=1, call=call.index)


def matrix() -> list[RunResult]:
    """2 scenarios x 3 models x 2 efforts x 2 repeats, with failures, an error and an unpriced model."""
    results: list[RunResult] = []
    for scenario, model, effort, repeat in itertools.product(
        ["refund", "lookup"], ["claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5"], ["low", "high"], [0, 1]
    ):
        trace = rich_trace(model, source=f"{scenario}-{model}-{effort}-{repeat}", effort=effort)
        findings: list[Finding] = [finding_at(trace, "T005", 1, 2, HOSTILE_FINDING, severity="warning")]
        status = "passed"
        # Haiku at low effort fails the refund scenario; Haiku at high effort fails once (flaky).
        if model == "claude-haiku-4-5" and (effort == "low" or (scenario == "refund" and repeat == 1)):
            status = "failed"
            findings.append(finding_at(trace, "T001", 1, 3, "tool_use toolu_03 has no tool_result"))
        results.append(result_for(trace, scenario=scenario, model=model, effort=effort, repeat=repeat,
                                  status=status, findings=findings, duration_s=5.0 + repeat + len(results) % 4))
    results.append(result_for(None, scenario="lookup", model="claude-sonnet-5", effort="low", repeat=2,
                              status="error", error="cassette mismatch: no recorded answer for step 2"))
    results.append(result_for(rich_trace("claude-mystery-1", source="mystery"), scenario="refund",
                              model="claude-mystery-1", effort=None))
    return results


_CHUNK = re.compile(r'<script type="application/gzip" class="run-chunk" data-first="(\d+)" data-count="(\d+)">'
                    r'([A-Za-z0-9+/=]*)</script>')
_DATA = re.compile(r'<script type="application/json" id="runs-data">(.*?)</script>', re.S)


def runs_data(page: str) -> list[dict[str, Any]]:
    """The runs as the page's script reads them (the data element's text, JSON)."""
    found = _DATA.search(page)
    assert found is not None, "the page holds no runs data"
    return list(json.loads(found.group(1)))


def run_details(page: str) -> dict[int, dict[str, Any]]:
    """Each run's details (the data the page's script draws a run from) by run number, inflated from
    the page's chunks as its script does."""
    details: dict[int, dict[str, Any]] = {}
    for first, count, data in _CHUNK.findall(page):
        chunk = json.loads(gzip.decompress(base64.b64decode(data)))
        assert len(chunk) == int(count)
        details.update({int(first) + i: run for i, run in enumerate(chunk)})
    return details
