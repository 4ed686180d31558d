"""A scenario's `expect`, evaluated on a finished run, and the run's verdict.

Each expectation gives one `ExpectationResult` saying what was expected and what happened. A run
passes when every expectation holds and no error finding is left (codes the scenario expects to
find are the anti-pattern's point, so they do not fail it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..checks import Finding
from ..results import ExpectationResult, Usage
from ..scenario import contains
from ..scenario._model import Expect, ExpectedCall, ToolsCalled
from ..scores import Score, ToolCall, tool_calls
from ..scores._tools import pair_calls
from ..trace import Outcome, Trace

_UNPRICED_COST = ("cost unknown: a model of the run has no price; price it with harness run --prices FILE "
                  "(under pytest: --harness-prices FILE)")


def evaluate(
    expect: Expect,
    *,
    trace: Trace,
    outcome: Outcome | None,
    findings: Sequence[Finding],
    usage: Usage,
    cost_usd: float | None,
) -> list[ExpectationResult]:
    """Every expectation the scenario declares, in declaration order of the `Expect` fields."""
    results: list[ExpectationResult] = []
    if expect.outcome is not None:
        results.append(_outcome(expect, outcome))
    if expect.final_text is not None:
        results.extend(_final_text(expect, outcome))
    if expect.tools_called is not None:
        results.append(_tools_called(expect.tools_called, tool_calls(trace)))
    steps = len(trace.calls)
    if expect.max_steps is not None:
        results.append(_at_most("max_steps", steps, expect.max_steps, "model calls"))
    if expect.max_cost_usd is not None:
        if cost_usd is None:
            results.append(ExpectationResult("max_cost_usd", False, _UNPRICED_COST))
        else:
            results.append(
                ExpectationResult(
                    "max_cost_usd",
                    cost_usd <= expect.max_cost_usd,
                    f"cost ${cost_usd:.4f}, at most ${expect.max_cost_usd:.4f} expected",
                )
            )
    if expect.max_tokens_total is not None:
        results.append(_at_most("max_tokens_total", usage.total, expect.max_tokens_total, "tokens"))
    if expect.findings:
        found = {f.code for f in findings}
        for code in expect.findings:
            results.append(
                ExpectationResult(
                    f"findings.{code}",
                    code in found,
                    f"{code} found as expected" if code in found else f"{code} expected but not found"
                    + (f" (found: {', '.join(sorted(found))})" if found else " (no findings)"),
                )
            )
    return results


def min_score_results(min_score: float | dict[str, float] | None, scores: Sequence[Score]) -> list[ExpectationResult]:
    """`expect.min_score`: the mean of every score (a number), or each named score (`mean` for the
    mean). A score without a value never passes, and makes the mean unknown."""
    if min_score is None:
        return []
    wanted = {"mean": float(min_score)} if isinstance(min_score, (int, float)) else dict(min_score)
    by_name = {score.name: score for score in scores}
    results: list[ExpectationResult] = []
    for name, least in wanted.items():
        if name == "mean":
            valueless = [s.name for s in scores if s.value is None]
            if valueless or not scores:
                why = f"no value for {', '.join(valueless)}" if valueless else "no scores"
                results.append(ExpectationResult("min_score.mean", False, f"mean score unknown: {why}"))
                continue
            mean = sum(s.value for s in scores if s.value is not None) / len(scores)
            results.append(ExpectationResult("min_score.mean", mean >= least - 1e-9,
                                             f"mean score {mean:.3g} of {len(scores)}, at least {least:g} expected"))
            continue
        score = by_name.get(name)
        if score is None or score.value is None:
            if score is None:
                why = "not scored"
            elif score.label is not None:
                why = f"no value: its label {score.label!r} is not valued by the entry's `labels` ({score.reason})"
            else:
                why = f"no value ({score.reason})"
            results.append(ExpectationResult(f"min_score.{name}", False, f"{name}: {why}, at least {least:g} expected"))
            continue
        shown = f"{score.value:.3g}" + (f" ({score.label})" if score.label else "")
        results.append(ExpectationResult(f"min_score.{name}", score.value >= least - 1e-9,
                                         f"{name} {shown}, at least {least:g} expected: {score.reason}"))
    return results


def verdict(expect: Expect, findings: Sequence[Finding], expectations: Sequence[ExpectationResult]) -> bool:
    """True when the run passed: expectations met and no unexpected error finding."""
    expected = set(expect.findings)
    failing = [f for f in findings if f.severity == "error" and f.code not in expected]
    return not failing and all(e.passed for e in expectations)


def _at_most(name: str, actual: int, most: int, unit: str) -> ExpectationResult:
    return ExpectationResult(name, actual <= most, f"{actual} {unit}, at most {most} expected")


def _outcome(expect: Expect, outcome: Outcome | None) -> ExpectationResult:
    if outcome is None:
        return ExpectationResult("outcome", False, f"expected {expect.outcome}, but the run has no outcome")
    want = f"{expect.outcome}" + (f" ({expect.limit})" if expect.limit else "")
    got = outcome.status + (f" ({outcome.limit})" if outcome.limit else "")
    passed = outcome.status == expect.outcome and (expect.limit is None or outcome.limit == expect.limit)
    reason = f": {outcome.reason}" if outcome.reason and not passed else ""
    return ExpectationResult("outcome", passed, f"expected {want}, got {got}{reason}")


def _final_text(expect: Expect, outcome: Outcome | None) -> list[ExpectationResult]:
    spec = expect.final_text
    assert spec is not None
    text = outcome.final_text if outcome else None
    shown = _short(text)
    results: list[ExpectationResult] = []
    needles = [spec.contains] if isinstance(spec.contains, str) else list(spec.contains or [])
    for needle in needles:
        ok = text is not None and needle in text
        results.append(ExpectationResult("final_text.contains", ok, f"{needle!r} {'in' if ok else 'not in'} {shown}"))
    if spec.equals is not None:
        ok = text == spec.equals
        results.append(ExpectationResult("final_text.equals", ok, f"expected {spec.equals!r}, got {shown}"))
    if spec.matches is not None:
        ok = text is not None and re.search(spec.matches, text) is not None
        results.append(
            ExpectationResult("final_text.matches", ok,
                              f"/{spec.matches}/ {'matches' if ok else 'does not match'} {shown}")
        )
    return results


def _short(text: str | None, size: int = 120) -> str:
    if text is None:
        return "no final text"
    return repr(text if len(text) <= size else text[: size - 3] + "...")


def _tools_called(spec: ToolsCalled, actual: list[ToolCall]) -> ExpectationResult:
    expected = spec.calls
    made = ", ".join(c.name for c in actual) or "none"
    wanted = ", ".join(c.name for c in expected) or "none"

    def fits(call: ToolCall, want: ExpectedCall) -> bool:
        return call.name == want.name and contains(call.input, want.input)

    if spec.mode == "strict":
        ok = len(actual) == len(expected) and all(fits(a, e) for a, e in zip(actual, expected, strict=True))
        problem = _first_strict_difference(actual, expected, fits)
    else:
        owner = pair_calls(actual, expected, fits)
        pairs = sum(1 for holder in owner if holder is not None)
        paired = {holder for holder in owner if holder is not None}
        # name the calls left over, not just a count: same-named calls differ only in their input
        extra = [f"{c.name} {c.input!r}" for i, c in enumerate(actual) if i not in paired]
        missing = [f"{e.name} {e.input!r}" for e, holder in zip(expected, owner, strict=True) if holder is None]
        if spec.mode == "unordered":
            ok = pairs == len(actual) == len(expected)
            parts = ([f"not expected: {'; '.join(extra)}"] if extra else []) + (
                [f"not made: {'; '.join(missing)}"] if missing else [])
        elif spec.mode == "subset":
            ok = pairs == len(actual)
            parts = [f"not expected: {'; '.join(extra)}"] if extra else []
        else:
            ok = pairs == len(expected)
            parts = [f"not made: {'; '.join(missing)}"] if missing else []
        problem = "" if ok else ", ".join(parts)
    message = f"mode {spec.mode}: expected [{wanted}], made [{made}]" + (f"; {problem}" if problem and not ok else "")
    return ExpectationResult("tools_called", ok, message)


def _first_strict_difference(actual: list[ToolCall], expected: list[ExpectedCall], fits: Any) -> str:
    for index, (call, want) in enumerate(zip(actual, expected, strict=False)):
        if not fits(call, want):
            return f"call {index + 1} is {call.name} {call.input!r}, expected {want.name} {want.input!r}"
    if len(actual) != len(expected):
        return f"{len(actual)} calls made, {len(expected)} expected"
    return ""
