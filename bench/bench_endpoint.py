"""Benchmark: the local endpoint and live/record runs, each beside a baseline measured in the same run.

1. Throughput at -j 16 against `harness serve` (a real local server, as ANTHROPIC_BASE_URL): runs
   of a one-call scenario in mode live and record, through the runner `harness run` uses, beside a
   raw httpx2 client sending the same requests from 16 threads to the same kind of server, and beside
   one anthropic SDK client shared by 16 threads (the SDK's own cost, which every run's agent pays).
2. Replay of every shipped scenario with its agent on a client of the run's endpoint
   (`task.client()`, a real socket), beside the same runs on the in-process client.
3. What the endpoint adds to one call (median over many, loopback): a scripted model's answer over
   the endpoint beside the same answer in-process; and a live run's call through the endpoint to
   `harness serve` beside the same call sent to `harness serve` directly.

Each part runs its contenders in interleaved rounds (a fresh `harness serve` for each), so that every
ratio is taken between figures measured side by side on this shared machine; it prints min / median /
max over the rounds, and the ratio to the round's baseline as min / median / max too. Throughput
also prints the client process's CPU per run (all threads) and the server process's CPU per call
(from /proc), which the machine's other load disturbs far less than the wall clock, and from them
the CPU a run may cost for the runs to reach 80% of the raw client: on threads, which share one
interpreter lock and so one core, or spread over every core beside the server.

    nice -n 5 .venv/bin/python bench/bench_endpoint.py [--runs 400] [--calls 300] [--repeat 5] [--only throughput]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from harness.agents import Task
from harness.results import ResultsWriter
from harness.run import Overrides, RunOptions, execute, load_all, plan, resolve_agents, run_all
from harness.transport import open_session

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-ant-bench-0000000000000000000000000000"
PROMPT = "Is order O1 delivered?"
MODEL = "claude-sonnet-5"
SCENARIO = f"""name: one-call
agent: reference
model: {MODEL}
prompt: {PROMPT}
max_tokens: 64
"""
BODY = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": PROMPT}]}


@dataclass(frozen=True)
class Served:
    """A running `harness serve`: its URL, and its process, whose CPU time the throughput part reads."""

    url: str
    pid: int

    def cpu(self) -> float:
        """The server process's CPU seconds so far (user + system, all its threads), from /proc."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def harness_serve(steps: int) -> Iterator[Served]:
    """`harness serve` with a script of `steps` one-line answers, as a subprocess."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.yaml"
        script.write_text("- text: Delivered yesterday.\n" * steps, encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, "-m", "harness", "serve", str(script), "--port", "0", "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        try:
            line = process.stdout.readline() if process.stdout else ""
            if not line.startswith("export ANTHROPIC_BASE_URL="):
                raise SystemExit(f"harness serve did not start: {line!r}")
            yield Served(line.strip().split("=", 1)[1], process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)


def raw_httpx2(base_url: str, requests: int, jobs: int) -> float:
    """Seconds for a raw httpx2 client, shared by `jobs` threads, to send `requests` Messages calls."""
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with httpx2.Client(base_url=base_url, headers=headers, limits=httpx2.Limits(max_connections=jobs)) as client:
        def one(_: int) -> None:
            client.post("/v1/messages", json=BODY).raise_for_status()

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, range(requests)))
        return time.perf_counter() - started


def raw_sdk(base_url: str, requests: int, jobs: int) -> float:
    """Seconds for one `anthropic.Anthropic`, shared by `jobs` threads, to make `requests` calls: what
    the SDK itself costs above raw httpx2 (building the request, parsing the answer), which every
    run's agent pays too."""
    http_client = anthropic.DefaultHttpxClient(limits=httpx2.Limits(max_connections=jobs))
    with anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0, http_client=http_client) as client:
        def one(_: int) -> None:
            client.messages.create(**BODY)  # type: ignore[call-overload]

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, range(requests)))
        return time.perf_counter() - started


def raw_sdk_per_call(base_url: str, requests: int, jobs: int) -> float:
    """The same, with a client built for each call, as each run's agent gets one: the SDK's own cost
    of building a client (its protocol checks, its httpx2 client) is a cost of every run."""
    pool_transport = httpx2.HTTPTransport(limits=httpx2.Limits(max_connections=jobs))
    shared = _Unclosed(pool_transport)

    def one(_: int) -> None:
        http_client = anthropic.DefaultHttpxClient(transport=shared)
        with anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0, http_client=http_client) as client:
            client.messages.create(**BODY)  # type: ignore[call-overload]

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, range(requests)))
    seconds = time.perf_counter() - started
    pool_transport.close()
    return seconds


class _Unclosed(httpx2.BaseTransport):
    """One pool of connections for many clients: closing a client leaves it open."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self.inner.handle_request(request)

    def close(self) -> None:
        pass


def harness_runs(base_url: str, mode: str, runs: int, jobs: int) -> float:
    """Seconds for the runner to make `runs` runs of the one-call scenario in `mode`, `jobs` at once."""
    return _harness_runs(base_url, mode, runs, jobs)[0]


def _harness_runs(base_url: str, mode: str, runs: int, jobs: int) -> tuple[float, list[dict[str, Any]]]:
    """`harness_runs`, and the request bodies the runs sent (to check they are the raw clients' own)."""
    with tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "scenarios" / "one-call.yaml"
        scenario.parent.mkdir()
        scenario.write_text(SCENARIO, encoding="utf-8")
        sources, errors = load_all([scenario])
        agents, agent_errors = resolve_agents(sources)
        planned, plan_errors = plan(sources, Overrides(repeats=runs, mode=mode))  # type: ignore[arg-type]
        if errors or agent_errors or plan_errors:
            raise SystemExit(f"cannot plan the benchmark's scenario: {errors or agent_errors or plan_errors}")
        environ = _environ(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=KEY)
        with environ, ResultsWriter(Path(folder) / "r.jsonl") as writer:
            started = time.perf_counter()
            report = run_all(planned, agents, writer, jobs=jobs, options=RunOptions())
            elapsed = time.perf_counter() - started
        bad = [result for _, result in report.results if result.status != "passed"]
        if bad or len(report.results) != runs:
            why = bad[0].error if bad else "missing runs"
            raise SystemExit(f"{len(bad)} of {runs} {mode} runs did not pass: {why}")
        bodies = [call.request for _, result in report.results if result.trace for call in result.trace.calls]
        return elapsed, bodies


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _spread(values: list[float], digits: int = 1) -> str:
    return f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f} / {max(values):.{digits}f}"


def throughput(runs: int, jobs: int, repeat: int) -> None:
    print(f"1. throughput at -j {jobs}: {runs} one-call runs (or raw calls) against a fresh harness serve each, "
          f"{repeat} interleaved rounds; min / median / max")
    # Once per process (the TLS context, the endpoint's thread, first imports): not what a batch costs per run.
    for mode in ("live", "record"):
        with harness_serve(jobs) as served:
            _, bodies = _harness_runs(served.url, mode, jobs, jobs)
        # Like with like: the runs' agent sends exactly the raw clients' request body.
        if any(body != BODY for body in bodies):
            raise SystemExit(f"the {mode} runs sent {bodies[0]}, not the raw clients' {BODY}")
    contenders: list[tuple[str, Callable[[str], float]]] = [
        ("raw httpx2", lambda url: raw_httpx2(url, runs, jobs)),
        ("raw anthropic SDK", lambda url: raw_sdk(url, runs, jobs)),
        ("SDK, client a call", lambda url: raw_sdk_per_call(url, runs, jobs)),
        ("harness live", lambda url: harness_runs(url, "live", runs, jobs)),
        ("harness record", lambda url: harness_runs(url, "record", runs, jobs)),
    ]
    rates: dict[str, list[float]] = {name: [] for name, _ in contenders}
    cpu_ms: dict[str, list[float]] = {name: [] for name, _ in contenders}
    server_ms: dict[str, list[float]] = {name: [] for name, _ in contenders}
    ratios: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for _ in range(repeat):
        for name, timed in contenders:
            with harness_serve(runs) as served:
                cpu, server_cpu = _cpu_self(), served.cpu()
                seconds = timed(served.url)
                cpu_ms[name].append(1000 * (_cpu_self() - cpu) / runs)
                server_ms[name].append(1000 * (served.cpu() - server_cpu) / runs)
            rates[name].append(runs / seconds)
        for name in rates:
            ratios[name].append(100 * rates[name][-1] / rates["raw httpx2"][-1])
    print(f"   {'':<19} {'calls/s':>24}   {'% of raw httpx2, same round':>27}   {'client CPU ms/run':>21}"
          f"   {'server CPU ms/call':>21}")
    for name in rates:
        figures = (f"{_spread(rates[name]):>24}   {_spread(ratios[name]):>27}   {_spread(cpu_ms[name], 3):>21}"
                   f"   {_spread(server_ms[name], 3):>21}")
        print(f"   {name:<19} {figures}")
    # What bounds the rate: the client's runs are threads of one process (one interpreter lock, so at
    # most one core), the server is another process, and the machine has os.cpu_count() cores.
    cores = os.cpu_count() or 1
    raw = statistics.median(rates["raw httpx2"])
    server = statistics.median(server_ms["raw httpx2"])
    sdk = statistics.median(cpu_ms["SDK, client a call"])
    print(f"   80% of raw httpx2 is {0.8 * raw:.0f} calls/s: a run may then cost its process at most "
          f"{1000 / (0.8 * raw):.3f} ms of CPU on threads (one core), or {1000 * cores / (0.8 * raw) - server:.3f} ms "
          f"spread over {cores} cores beside the server's {server:.3f} ms a call; the SDK alone, a client a call, "
          f"costs {sdk:.3f} ms")


def shipped_runs() -> list[tuple[Any, Any]]:
    sources, _ = load_all([ROOT / "scenarios"])
    agents, _ = resolve_agents(sources)
    runs, _ = plan(sources, Overrides(mode="replay"))
    return [(run, agents[str(run.source.path)]) for run in runs]


def through_endpoint(agent: Callable[..., Any]) -> Callable[..., Any]:
    import inspect

    if inspect.iscoroutinefunction(agent):
        async def async_agent(client: Any, task: Task) -> Any:
            return await agent(task.async_client(), task)
        return async_agent
    return lambda client, task: agent(task.client(), task)


def replay(repeat: int) -> None:
    runs = shipped_runs()
    print(f"2. replay of the {len(runs)} shipped scenarios, one after another, {repeat} interleaved rounds; "
          "min / median / max")
    seconds: dict[str, list[float]] = {"in-process client": [], "endpoint client": []}
    ratios: list[float] = []
    for _ in range(repeat):
        for name, wrap in (("in-process client", lambda agent: agent), ("endpoint client", through_endpoint)):
            started = time.perf_counter()
            for run, agent in runs:
                result = execute(run, wrap(agent), RunOptions())
                if result.status == "error":
                    raise SystemExit(f"{run.run_id}: {result.error}")
            seconds[name].append(time.perf_counter() - started)
        ratios.append(seconds["endpoint client"][-1] / seconds["in-process client"][-1])
    for name, values in seconds.items():
        print(f"   {name:<18} {_spread(values, 3)} s")
    print(f"   endpoint / in-process, same round: {_spread(ratios, 2)}x")


def per_call(calls: int, repeat: int) -> None:
    print(f"3. one call: the median of {calls} calls in each of {repeat} interleaved rounds (loopback); "
          "min / median / max over the rounds")
    ask = dict(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": PROMPT}])
    medians: dict[str, list[float]] = {}

    def keep(name: str, median: float) -> None:
        medians.setdefault(name, []).append(1000 * median)

    for _ in range(repeat):
        with open_session("scripted", script=[{"text": "Delivered yesterday."}] * (2 * calls)) as session:
            keep("scripted in-process", _median_call(session.client(max_retries=0), ask, calls))
            client = anthropic.Anthropic(base_url=session.serve(), api_key="k", max_retries=0)
            keep("scripted endpoint", _median_call(client, ask, calls))
            client.close()
        with harness_serve(2 * calls + 2) as served, _environ(ANTHROPIC_BASE_URL=served.url, ANTHROPIC_API_KEY=KEY):
            url = served.url
            client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
            keep("serve direct", _median_call(client, ask, calls))
            client.close()
            with open_session("live") as session:
                client = anthropic.Anthropic(base_url=session.serve(), api_key="k", max_retries=0)
                keep("serve through run", _median_call(client, ask, calls))
                client.close()
    added = {
        "scripted": [e - i for e, i in zip(medians["scripted endpoint"], medians["scripted in-process"], strict=True)],
        "live": [t - d for t, d in zip(medians["serve through run"], medians["serve direct"], strict=True)],
    }
    print(f"   scripted, in-process client        {_spread(medians['scripted in-process'], 3)} ms")
    print(f"   scripted, over the endpoint        {_spread(medians['scripted endpoint'], 3)} ms   "
          f"adds {_spread(added['scripted'], 3)} ms")
    print(f"   harness serve, called directly     {_spread(medians['serve direct'], 3)} ms")
    print(f"   harness serve, through a live run  {_spread(medians['serve through run'], 3)} ms   "
          f"adds {_spread(added['live'], 3)} ms")


def _median_call(client: anthropic.Anthropic, ask: dict[str, Any], calls: int) -> float:
    client.messages.create(**ask)  # the connection is opened once, as in a run
    times = []
    for _ in range(calls - 1):
        started = time.perf_counter()
        client.messages.create(**ask)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


# (label, file suffix, function) whose inclusive time `where` reports, in the order a run meets them.
_STAGES = (
    ("open the transport session", "harness/transport/_session.py", "open_session"),
    ("build the agent's SDK client", "harness/transport/_session.py", "client"),
    ("the agent's SDK call, all of it", "anthropic/resources/messages/messages.py", "create"),
    ("  the request through capture/far end", "harness/transport/_capture.py", "handle_request"),
    ("  the exchange made when the body closes", "harness/trace/_exchange.py", "exchange_from_http"),
    ("build the trace", "harness/trace/_threads.py", "build_trace"),
    ("check the trace (the rules)", "harness/checks/_registry.py", "check_trace"),
    ("close the session", "harness/transport/_session.py", "close"),
    ("write the cassette (record)", "harness/transport/_session.py", "settle"),
    ("the results line", "harness/results/_store.py", "line"),
    ("append it to the results file", "harness/results/_store.py", "append"),
)


def where(mode: str, runs: int) -> None:
    """Where one run's CPU time goes: `runs` runs made one after another in this thread, as a worker
    makes them, under cProfile (which slows every call alike, so read shares, not milliseconds)."""
    import cProfile
    import pstats

    print(f"4. where a {mode} run's CPU time goes: {runs} runs one after another under cProfile; "
          "CPU ms per run (profiled) and share of the whole run")
    with harness_serve(runs + 8) as served, tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "scenarios" / "one-call.yaml"
        scenario.parent.mkdir()
        scenario.write_text(SCENARIO, encoding="utf-8")
        sources, _ = load_all([scenario])
        agents, _ = resolve_agents(sources)
        planned, _ = plan(sources, Overrides(repeats=runs + 8, mode=mode))  # type: ignore[arg-type]
        agent = agents[str(scenario)]
        # This thread's CPU time, not the wall clock: waiting for the server's answer costs no CPU.
        profile = cProfile.Profile(time.thread_time)
        environ = _environ(ANTHROPIC_BASE_URL=served.url, ANTHROPIC_API_KEY=KEY)
        with environ, ResultsWriter(Path(folder) / "r.jsonl") as writer:
            for index, run in enumerate(planned):
                if index == 8:  # the first runs pay for imports and the first connection
                    profile.enable()
                result = execute(run, agent, RunOptions())
                writer.append(writer.line(result))
            profile.disable()
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    whole = next(value[3] for (file, _, name), value in stats.items()
                 if file.endswith("harness/run/_execute.py") and name == "execute")
    whole += sum(value[3] for (file, _, name), value in stats.items()
                 if file.endswith("harness/results/_store.py") and name in ("line", "append"))
    print(f"   {'a whole run':<42} {1000 * whole / runs:7.3f} ms   100.0%")
    for label, suffix, function in _STAGES:
        seconds = sum(value[3] for (file, _, name), value in stats.items()
                      if file.endswith(suffix) and name == function)
        print(f"   {label:<42} {1000 * seconds / runs:7.3f} ms   {100 * seconds / whole:5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=400, help="runs (and raw requests) per throughput measurement")
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--calls", type=int, default=300, help="calls per latency median")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (at least 5 for figures to report)")
    parser.add_argument("--only", choices=("throughput", "replay", "per-call", "where"), help="measure one part only")
    args = parser.parse_args()
    if args.only in (None, "throughput"):
        throughput(args.runs, args.jobs, args.repeat)
    if args.only in (None, "replay"):
        replay(args.repeat)
    if args.only in (None, "per-call"):
        per_call(args.calls, args.repeat)
    if args.only in (None, "where"):
        for mode in ("live", "record"):
            where(mode, args.runs)


if __name__ == "__main__":
    main()
