"""`assert_no_violations` and `assert_expectations`: checks of a trace that fail like an `assert`.

They belong to no test framework (an AssertionError is what every runner reports), so importing them
from `harness` does not import pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import UsageError

if TYPE_CHECKING:
    from .checks._registry import Finding
    from .trace._model import Outcome, Trace


def _as_trace(trace: Trace | Callable[[], Trace]) -> Trace:
    from .trace._model import Trace

    return trace if isinstance(trace, Trace) else trace()


def assert_no_violations(
    trace: Trace | Callable[[], Trace],
    disabled: Iterable[str] = (),
    *,
    options: Mapping[str, Any] | None = None,
    whole_run: bool | None = None,
    warnings: bool = False,
) -> list[Finding]:
    """Fail with every error finding of the trace (`CODE thread T, step S: reason`); return all findings.

    `disabled` are rule codes not checked; `warnings=True` fails on warnings too.
    """
    __tracebackhide__ = True  # the failure points at the user's assert line, not at this helper
    from .checks._registry import check_trace

    actual = _as_trace(trace)
    findings = check_trace(actual, disabled=disabled, options=dict(options or {}), whole_run=whole_run)
    failing = [f for f in findings if f.severity == "error" or warnings]
    if failing:
        listed = "\n".join(f"  {f.line()}" for f in failing)
        raise AssertionError(f"{len(failing)} violation(s) in {actual.source}:\n{listed}")
    return findings


def assert_expectations(
    trace: Trace | Callable[[], Trace],
    expect: Mapping[str, Any] | None = None,
    *,
    outcome: Outcome | str | None = None,
    disabled: Iterable[str] = (),
    options: Mapping[str, Any] | None = None,
    **keys: Any,
) -> None:
    """Fail unless the trace meets expectations written like a scenario's `expect:` mapping.

    `assert_expectations(harness_trace, tools_called={"calls": [{"name": "get_customer"}]}, max_steps=3,
    outcome="Refund issued.")`: a string `outcome` is the final text of a completed run; None takes the
    trace's own outcome. Unknown keys fail with the valid ones, as in a scenario file.
    """
    __tracebackhide__ = True
    from pydantic import ValidationError

    from .checks._registry import check_trace
    from .cost import cost_of_trace
    from .run import evaluate, usage_of
    from .scenario import Expect
    from .trace._model import Outcome

    actual = _as_trace(trace)
    try:
        expected = Expect.model_validate({**dict(expect or {}), **keys})
    except ValidationError as exc:
        valid = ", ".join(Expect.model_fields)
        raise UsageError(f"assert_expectations: not a scenario `expect` (valid keys: {valid}):\n{exc}") from None
    if isinstance(outcome, str):
        outcome = Outcome(status="completed", final_text=outcome)
    findings = check_trace(actual, disabled=disabled, options=dict(options or {}))
    usage = usage_of(actual)
    results = evaluate(expected, trace=actual, outcome=outcome or actual.outcome, findings=findings, usage=usage,
                       cost_usd=cost_of_trace(actual))
    failed = [r for r in results if not r.passed]
    if failed:
        listed = "\n".join(f"  expect {r.name}: {r.message}" for r in failed)
        raise AssertionError(f"{len(failed)} expectation(s) not met in {actual.source}:\n{listed}")
