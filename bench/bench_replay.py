"""Benchmark: `harness run` replaying the shipped scenarios, beside plain vcrpy + the SDK replaying their calls.

The harness side is the function the CLI calls for `harness run scenarios --mode replay` (load,
plan, run each agent on its cassette, check every trace, write results). The floor sends each
cassette's recorded request bodies with `client.messages.create(**body)` under `vcr.use_cassette`,
nothing else. Both are timed in the same process, interleaved, best of --repeat; then one cProfile
pass of the harness says what its time goes to.

    .venv/bin/python bench/bench_replay.py [SCENARIOS] [--repeat 7] [--top 12]
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import io
import json
import pstats
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anthropic
import vcr

from harness._commands import run as run_command
from harness.cli import build_parser
from harness.run import Overrides, load_all, plan

ROOT = Path(__file__).resolve().parent.parent
# vcrpy's own matchers; its "body" compares JSON bodies parsed (by content-type), as the harness's does.
MATCH_ON = ["method", "uri", "body"]
_CREATE_PARAMS = frozenset(inspect.signature(anthropic.Anthropic(api_key="k").messages.create).parameters)


@dataclass(frozen=True)
class Replay:
    """What one replay of every cassette did."""

    requests: int
    """Requests answered from the cassettes (a re-sent request counts again, as vcrpy plays it again)."""
    tools_s: float = 0.0
    """Wall time tools were running (fixtures' delay_s: the scenarios' designed latency, not harness work)."""


def harness_replay(scenarios: Path, results: Path) -> Replay:
    """`harness run SCENARIOS --mode replay` through the CLI's own function."""
    args = build_parser().parse_args(["run", str(scenarios), "--mode", "replay", "--fresh", "--results",
                                      str(results), "--no-report"])
    status = run_command.run(args, out=io.StringIO(), err=io.StringIO())
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    if status == 2 or not lines:
        raise SystemExit(f"harness run could not replay {scenarios} (exit {status}); run it by hand to see why")
    return Replay(
        requests=sum(len(result["trace"]["exchanges"]) for result in lines if result.get("trace")),
        tools_s=sum(_busy_s(result["trace"]["tool_executions"]) for result in lines if result.get("trace")),
    )


def _busy_s(executions: list[dict[str, Any]]) -> float:
    """Wall time covered by tool executions; parallel ones overlap and count once."""
    busy, reached = 0.0, float("-inf")
    for started, ended in sorted((e["started_at"], e["ended_at"]) for e in executions):
        if ended > reached:
            busy += ended - max(started, reached)
            reached = ended
    return busy


def cassettes_of(scenarios: Path) -> list[Path]:
    """The cassettes `harness run` replays for these scenarios, in its order."""
    sources, _ = load_all([scenarios])
    runs, _ = plan(sources, Overrides(mode="replay"))
    return [run.cassette for run in runs]


def floor_replay(cassettes: list[Path]) -> Replay:
    """Every recorded request sent once by the SDK, answered by vcrpy."""
    calls = 0
    # One client for every cassette: vcrpy patches the transport class, and a client per cassette
    # would spend most of the floor building SSL contexts that never see a socket.
    # Retries off: each recorded interaction is played exactly once, error answers included.
    with anthropic.Anthropic(api_key="replay-no-key", base_url="https://api.anthropic.com", max_retries=0) as client:
        for path in cassettes:
            with vcr.use_cassette(str(path), record_mode="none", match_on=MATCH_ON) as cassette:
                for request in list(cassette.requests):
                    _send(client, json.loads(request.body))
                    calls += 1
                if not cassette.all_played:
                    raise SystemExit(
                        f"{path}: vcrpy left recorded interactions unplayed; the floor is not the same calls")
    return Replay(requests=calls)


def _send(client: anthropic.Anthropic, body: dict[str, Any]) -> None:
    # Keys this SDK's create() does not name (a legacy field a buggy agent sent) travel as extra_body,
    # so the bytes sent parse to the recorded body and vcrpy's body matcher finds the interaction.
    known = {k: v for k, v in body.items() if k in _CREATE_PARAMS}
    extra = {k: v for k, v in body.items() if k not in _CREATE_PARAMS}
    try:
        if body.get("stream"):
            with client.messages.create(**known, extra_body=extra or None) as stream:
                for _ in stream:
                    pass
        else:
            client.messages.create(**known, extra_body=extra or None)
    except anthropic.APIStatusError:
        pass  # a recorded 4xx is an answer like any other


def best_of(repeat: int, **timed: Callable[[], Replay]) -> dict[str, tuple[float, Replay]]:
    """Best wall time of each function over `repeat` interleaved rounds, with what that round did."""
    best: dict[str, tuple[float, Replay]] = {}
    for _ in range(repeat):
        for name, fn in timed.items():
            start = time.perf_counter()
            replay = fn()
            elapsed = time.perf_counter() - start
            if name not in best or elapsed < best[name][0]:
                best[name] = (elapsed, replay)
    return best


Func = tuple[str, int, str]
# Idle threads waiting on others: their time is already counted in the threads they wait for.
_WAITS = ("acquire' of '_thread.lock", "get' of '_queue.SimpleQueue", "select.")


def profile(fn: Callable[[], Replay], top: int) -> tuple[list[str], str]:
    """cProfile's top entries by own time, and a line naming where most of that time is spent.

    `harness run` makes its runs in worker threads, which a cProfile of the calling thread never
    sees; each new thread gets its own profiler, and their stats are merged with the caller's.
    """
    profilers = [cProfile.Profile()]

    def start_in_thread(frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        profilers.append(cProfile.Profile())
        profilers[-1].enable()

    threading.setprofile(start_in_thread)
    try:
        profilers[0].runcall(fn)
    finally:
        threading.setprofile(None)
    stats = pstats.Stats(profilers[0], stream=io.StringIO())
    for worker in profilers[1:]:
        worker.disable()
        stats.add(worker)
    # The raw table, with each function's callers: what the caller walk below needs.
    raw: dict[Func, Any] = vars(stats)["stats"]

    # Own time grouped by the harness function it was spent under; outside the harness (the floor),
    # by the installed library it was spent under, so json.dumps counts for the SDK that called it.
    places: dict[str, float] = defaultdict(float)
    libraries: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    rows = []
    for func, (_, calls, own, cum, _) in raw.items():
        if any(wait in func[2] for wait in _WAITS):
            continue
        owner = _owner(raw, func)
        entry = _harness_entry(raw, func)
        place = _label(entry) if entry is not None else _library_of(raw, func) or owner
        places[place] += own
        libraries[place][owner] += own
        rows.append((own, cum, calls, _label(func)))
    total = sum(places.values()) or 1.0
    rows.sort(reverse=True)
    lines = [f"{'own s':>7} {'cum s':>7} {'calls':>8}  function (thread waits left out)"]
    lines += [f"{own:>7.3f} {cum:>7.3f} {calls:>8}  {where}" for own, cum, calls, where in rows[:top]]
    parts = []
    for place, seconds in sorted(places.items(), key=lambda item: item[1], reverse=True)[:4]:
        under = sorted(libraries[place].items(), key=lambda item: item[1], reverse=True)[:2]
        inside = ", ".join(owner for owner, _ in under)
        parts.append(f"{place} {100 * seconds / total:.0f}%" + (f" ({inside})" if inside != place else ""))
    return lines, "; ".join(parts)


def _owner(raw: dict[Func, Any], func: Func) -> str:
    """Who a function's own time belongs to: 'harness.transport', 'deepdiff', 'yaml', 'stdlib'...

    A C builtin belongs to its heaviest caller's owner (fsync to whoever writes), except sleep,
    which is time nobody computes and is named as such.
    """
    filename = func[0]
    if filename == "~":
        if "sleep" in func[2]:
            return "sleep"
        callers = raw[func][4]
        if not callers:
            return "builtins"
        return _owner(raw, max(callers, key=lambda caller: callers[caller][3]))
    parts = Path(filename).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].removesuffix(".py").split("-")[0]
    if "harness" in parts:
        rest = parts[parts.index("harness") + 1:]
        return "harness." + (rest[0].removesuffix(".py") if len(rest) > 1 else "top")
    return "stdlib"


def _harness_entry(raw: dict[Func, Any], func: Func) -> Func | None:
    """The harness function a library function was reached from, following the heaviest callers."""
    seen = set()
    while func not in seen:
        seen.add(func)
        if "harness" in Path(func[0]).parts:
            return func
        callers = raw.get(func, (0, 0, 0, 0, {}))[4]
        if not callers:
            return None
        func = max(callers, key=lambda caller: callers[caller][3])
    return None


def _library_of(raw: dict[Func, Any], func: Func) -> str | None:
    """The installed library a stdlib or builtin function was called from (json.dumps under the SDK)."""
    seen = set()
    while func not in seen:
        seen.add(func)
        parts = Path(func[0]).parts
        if "site-packages" in parts:
            return parts[parts.index("site-packages") + 1].removesuffix(".py").split("-")[0]
        callers = raw.get(func, (0, 0, 0, 0, {}))[4]
        if not callers:
            return None
        func = max(callers, key=lambda caller: callers[caller][3])
    return None


def _label(func: Func) -> str:
    filename, line, name = func
    parts = Path(filename).parts
    for anchor in ("site-packages", "harness"):
        if anchor in parts:
            where = "/".join(parts[parts.index(anchor) + (anchor == "site-packages"):])
            return f"{where}:{line}({name})"
    if filename == "~":
        return name
    return f"{Path(filename).name}:{line}({name})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenarios", nargs="?", default=str(ROOT / "scenarios"),
                        help="scenario folder (default: the shipped ones)")
    parser.add_argument("--repeat", type=int, default=7,
                        help="interleaved rounds; the best of each is kept (default 7)")
    parser.add_argument("--top", type=int, default=12, help="cProfile entries to print (default 12)")
    args = parser.parse_args()
    scenarios = Path(args.scenarios)
    cassettes = cassettes_of(scenarios)

    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        harness = partial(harness_replay, scenarios, results)
        floor = partial(floor_replay, cassettes)
        harness(), floor()  # warm-up: first imports and caches count in neither
        best = best_of(args.repeat, harness=harness, floor=floor)
        (h_s, h), (f_s, f) = best["harness"], best["floor"]
        if h.requests != f.requests:
            print(
                f"note: harness run sent {h.requests} requests, the floor {f.requests}: an agent "
                "strayed from its cassette")
        print(f"{len(cassettes)} cassettes, {f.requests} recorded calls; best of {args.repeat} interleaved rounds")
        print(f"{'':>24} {'total s':>8} {'ms/call':>8} {'ms/cassette':>12}")
        rows = (("harness run (replay)", h_s, h.requests), ("  less tools' own time", h_s - h.tools_s, h.requests),
                ("vcrpy + SDK floor", f_s, f.requests))
        for name, seconds, calls in rows:
            print(f"{name:>24} {seconds:>8.3f} {1e3 * seconds / calls:>8.2f} {1e3 * seconds / len(cassettes):>12.2f}")
        print(f"ratio {h_s / f_s:.2f}: the harness adds {100 * (h_s / f_s - 1):.0f}% over the floor (aim: under 20%); "
              f"{(h_s - h.tools_s) / f_s:.2f} without the {h.tools_s:.3f} s its scenarios' tools take by design")

        for name, fn in (("harness run", harness), ("floor", floor)):
            lines, dominated = profile(fn, args.top)
            print(f"\ncProfile, {name}:")
            print("\n".join(lines))
            print(f"{name} dominated by (own time): {dominated}")


if __name__ == "__main__":
    main()
