"""The same run gives the same trace through the in-process client and through the local endpoint.

Every shipped scenario is run twice with its own agent: once as shipped (the in-process client the
harness hands it), once with that agent given `task.client()` instead, so every request crosses a
real socket to the run's endpoint. Both traces, findings and verdicts must be the same.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from seam_helpers import FAKE_KEY

from harness.agents import AgentFn, Task
from harness.results import RunResult
from harness.run import RunOptions, execute, load_all, plan, resolve_agents
from harness.run._execute import script_of
from harness.run._plan import Overrides, PlannedRun
from harness.trace import Exchange
from harness.transport.scripted import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "scenarios"
# Per exchange, what may differ between the two paths: when it ran and how long it took.
_NOISE = frozenset({"started_at", "duration_s", "index"})



def through_endpoint(agent: AgentFn) -> AgentFn:
    """The same agent, handed a client on the run's endpoint instead of the in-process one."""
    if inspect.iscoroutinefunction(agent):

        async def async_agent(client: Any, task: Task) -> Any:
            return await agent(task.async_client(), task)

        return async_agent

    def sync_agent(client: Any, task: Task) -> Any:
        return agent(task.client(), task)

    return sync_agent


def comparable(result: RunResult) -> dict[str, Any]:
    """What must not depend on the path. Concurrent subagents reach the model in any order on either
    path, so exchanges and tool runs are compared as sets, and with several threads (numbered by
    arrival) a finding by its code and severity."""
    trace = result.trace
    assert trace is not None, result.error
    concurrent = len(trace.threads) > 1
    # Findings about timing (T008's overlap) quote the times measured, which vary from run to run.
    findings = [{**f.to_dict(), "message": re.sub(r"\d+\.\d+", "N", f.message)} for f in result.findings]
    return {
        "status": result.status,
        "error": result.error,
        "outcome": result.outcome.to_dict() if result.outcome is not None else None,
        "findings": sorted((f["code"], f["severity"]) for f in findings) if concurrent else findings,
        "exchanges": sorted(canonical(_exchange(e)) for e in trace.exchanges),
        "tools": sorted(canonical([t.name, t.input, t.output, t.is_error, t.thread_key])
                        for t in trace.tool_executions),
        "notes": trace.notes,
    }


def _exchange(exchange: Exchange) -> dict[str, Any]:
    data = {k: v for k, v in exchange.to_dict().items() if k not in _NOISE}
    # A live run's stand-in API listens on a new port each time: the origin is not the agent's doing.
    data["url"] = urlsplit(exchange.url).path
    data["request_headers"] = {k: v for k, v in exchange.request_headers.items() if k != "host"}
    return data


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def shipped_runs(mode: str) -> list[tuple[PlannedRun, AgentFn]]:
    sources, errors = load_all([SHIPPED])
    assert not errors
    if mode == "scripted":
        sources = [s for s in sources if s.scenario.script is not None]
    agents, errors = resolve_agents(sources)
    assert not errors
    runs, errors = plan(sources, Overrides(mode=mode))  # type: ignore[arg-type]
    assert not errors
    return [(run, agents[str(run.source.path)]) for run in runs]


@pytest.mark.parametrize("mode", ["replay", "scripted"])
def test_every_shipped_scenario_gives_the_same_trace_through_the_endpoint(mode: str) -> None:
    runs = shipped_runs(mode)
    assert len(runs) >= 10
    for run, agent in runs:
        in_process = execute(run, agent, RunOptions())
        over_http = execute(run, through_endpoint(agent), RunOptions())
        assert comparable(over_http) == comparable(in_process), run.run_id


def test_live_runs_give_the_same_trace_through_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Live against a local stand-in API (each scenario's script served over HTTP), never the internet."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    runs = shipped_runs("scripted")
    for run, agent in runs:
        live = PlannedRun(run.source, run.cell, run.repeats, "live", run.cassette)
        results = []
        for wrap in (lambda a: a, through_endpoint):
            with ScriptedModel(script_of(run.source)).serve() as api:
                monkeypatch.setenv("ANTHROPIC_BASE_URL", api)
                results.append(comparable(execute(live, wrap(agent), RunOptions())))
        assert results[1] == results[0], run.run_id
