"""How checks are declared, registered and run.

Built-in rules and a user's own use the same decorator, `@rule`, so a project can add checks
beside its scenarios (`harness check --plugin mypkg.rules`) or ship them in a package that names its
rules module in the `harness.rules` entry-point group (loaded with the built-ins). A rule is a function from a trace and
a context to findings; the context carries the options and says whether the trace is a whole run.
What a rule is for lives with its registration: the function's docstring says what it checks,
`@rule(why=, fix=, docs=, example=)` the rest; `harness rules --markdown` renders docs/rules.md from it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from .._imports import import_user_module
from ..errors import UsageError
from ..trace._model import Call, Fact, Trace, field_values
from ..trace._normalize import printable

if TYPE_CHECKING:
    from ._options import CheckOptions

DEFAULT_MAX_RETRIES = 5
"""Retries allowed per call (E001) when the options name none."""

Severity = Literal["error", "warning"]
Needs = Literal["wire", "events", "scenario"]


@dataclass(frozen=True)
class Finding:
    """One broken rule: where it happened and why, in words that point at the fix."""

    code: str
    severity: Severity
    thread: int | None
    """Thread id, 1-based (None for findings about the run as a whole)."""
    step: int | None
    """Position of the call within its thread, 1-based."""
    message: str
    """One line: what is wrong, with the offending values."""
    message_index: int | None = None
    """Index into the request's `messages` (0-based), where it applies."""
    block_index: int | None = None
    """Index into that message's `content` (0-based), where it applies."""
    call: int | None = None
    """Index of the call in the whole trace (0-based), for viewers that link to it."""
    run: str | None = None
    """For a finding about a run as a whole in a file that holds several runs (`Trace.runs`), which run:
    its number in the file and, where the file names it, its trace id. A call's finding is placed by its
    thread, which the file numbers across its runs."""

    def to_dict(self) -> dict[str, Any]:
        data = field_values(self)
        if self.run is None:
            # Most findings: no key, so results lines read as they did before findings named runs
            # (by an older harness too, which refuses keys it does not know).
            del data["run"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(**data)

    def where(self) -> str:
        parts = [f"run {self.run}"] if self.run is not None else []
        if self.thread is not None:
            parts.append(f"thread {self.thread}")
        if self.step is not None:
            parts.append(f"step {self.step}")
        if self.message_index is not None:
            spot = f"messages[{self.message_index}]"
            if self.block_index is not None:
                spot += f".content[{self.block_index}]"
            parts.append(spot)
        return ", ".join(parts) or "run"

    def line(self, *, severity: bool = False) -> str:
        """The one way a finding is shown in text: `T001 thread 1, step 2, messages[3]: why`
        (`T001 error thread 1, ...` with `severity`, where warnings are listed beside errors)."""
        head = f"{self.code} {self.severity}" if severity else self.code
        return f"{head} {self.where()}: {self.message}"


@dataclass
class CheckContext:
    """What a rule may know besides the trace."""

    whole_run: bool = False
    """The trace is a complete run, so what is missing after its last call is an error."""
    options: dict[str, Any] = field(default_factory=dict)
    """The check options as plain values (`CheckOptions.as_dict()`): `limits`, `sequential_tools`, the W
    policies, and a plugin's own options by name."""
    notes: list[str] = field(default_factory=list)
    """What the rules recognised and let pass on purpose (e.g. a run ending on its output tool); they
    join the trace's notes, so the reader sees why a rule stayed silent."""

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def finding(
        self,
        code: str,
        call: Call | None,
        message: str,
        *,
        message_index: int | None = None,
        block_index: int | None = None,
        severity: Severity = "error",
    ) -> Finding:
        return Finding(
            code=code,
            severity=severity,
            thread=call.thread if call else None,
            step=call.step if call else None,
            # Messages quote recorded values; a lone surrogate among them must not break the writers.
            message=printable(message),
            message_index=message_index,
            block_index=block_index,
            call=call.index if call else None,
        )

    def note(self, code: str, call: Call, message: str) -> None:
        """Say why `code` did not fire where it would look like it should."""
        self.notes.append(printable(f"{code} {call.where}: {message}"))

    def at_end(self, code: str, call: Call, message: str, **where: Any) -> Finding:
        """A finding about what should have come after the last call of a thread.

        Only a whole run can prove that nothing came; in a fragment it is a warning that says so.
        """
        if self.whole_run:
            return self.finding(code, call, message, **where)
        return self.finding(
            code,
            call,
            f"{message} (the trace ends here; if it is a whole run, pass --whole-run to make this an error)",
            severity="warning",
            **where,
        )


RuleFn = Callable[[Trace, CheckContext], Iterable[Finding]]

EXAMPLE_URL = "https://api.anthropic.com/v1/messages"


@dataclass(frozen=True)
class Example:
    """A minimal trace that breaks a rule: docs/rules.md shows it, and a test runs it through the checker.

    Each exchange is `{"request": body, "response": body}` as sent and received on `POST /v1/messages`,
    with optional `status` (default 200), `request_headers`, `response_headers`, `at` (seconds since the
    run started) and `duration_s`, for the rules that read them.
    """

    exchanges: tuple[Mapping[str, Any], ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    """The check options the example runs with (a scenario's limits or policies), as `CheckOptions` fields."""
    outcome: Mapping[str, Any] | None = None
    """How the run ended, as an agent run by the harness reports it (`status`, `limit`, `final_text`)."""
    tool_executions: tuple[Mapping[str, Any], ...] = ()
    """The harness's tool events (`tool_use_id`, `name`, `input`, `started_at`, `ended_at`, `is_error`)."""
    whole_run: bool = False
    """The trace is a complete run, so what is missing after its last call is an error."""

    def trace(self) -> Trace:
        """The example as the checker sees it, read as a recording's exchanges are."""
        from ..trace import exchange_from_http
        from ..trace._model import Outcome, ToolExecution
        from ..trace._threads import build_trace

        exchanges = [
            exchange_from_http(
                i,
                "POST",
                EXAMPLE_URL,
                # Every SDK sends anthropic-version; without it a recording is taken to have dropped its headers.
                {"anthropic-version": "2023-06-01", **item.get("request_headers", {})},
                item["request"],
                item.get("status", 200),
                item.get("response_headers", {}),
                item.get("response"),
                started_at=item.get("at"),
                duration_s=item.get("duration_s"),
            )
            for i, item in enumerate(self.exchanges)
        ]
        trace = build_trace(exchanges, "example", whole_run=self.whole_run or self.outcome is not None)
        trace.tool_executions = [ToolExecution(**dict(e)) for e in self.tool_executions]
        if self.outcome is not None:
            trace.outcome = Outcome(**dict(self.outcome))
        return trace


@dataclass(frozen=True)
class Rule:
    """A registered check, with what docs/rules.md says about it."""

    code: str
    title: str
    """One line: what holds when the rule passes."""
    fn: RuleFn
    needs: Needs = "wire"
    """What the rule reads: the wire alone, the harness's tool events, or a scenario policy."""
    severity: Severity = "error"
    """The severity of its findings."""
    warning: str = ""
    """When its findings are warnings instead (e.g. a trace that may be a fragment of a run)."""
    why: str = ""
    """What goes wrong for the agent or its users when the rule is broken."""
    fix: str = ""
    """What to change in the agent loop."""
    docs: tuple[str, ...] = ()
    """Anthropic documentation the rule rests on."""
    example: Example | None = None
    reads: frozenset[Fact] = frozenset()
    """Facts of the trace the rule cannot be judged without; a trace lacking one (spans that did not
    capture content, say) skips the rule instead of judging a guess. See `harness.trace._model.Fact`."""

    @property
    def checks(self) -> str:
        """What exactly the rule checks: the rule function's docstring."""
        return inspect.cleandoc(self.fn.__doc__ or "")


_RULES: dict[str, Rule] = {}


def rule(
    code: str,
    title: str,
    *,
    needs: Needs = "wire",
    severity: Severity = "error",
    warning: str = "",
    why: str = "",
    fix: str = "",
    docs: Iterable[str] = (),
    example: Example | None = None,
    reads: Iterable[Fact] = (),
) -> Callable[[RuleFn], RuleFn]:
    """Register a check under a stable code. Codes are unique; registering one twice is an error.

    The function's docstring says what it checks; `why`, `fix`, `docs` (Anthropic documentation URLs)
    and `example` (a trace that breaks it) complete its entry in `harness rules --markdown`. `reads` names
    the facts the rule needs beyond the model id (`Fact`); a rule that names none runs on every trace.
    """

    def register(fn: RuleFn) -> RuleFn:
        existing = _RULES.get(code)
        if existing is not None and existing.fn is not fn:
            raise UsageError(
                f"rule {code} is already registered by {existing.fn.__module__}.{existing.fn.__qualname__}")
        _RULES[code] = Rule(code=code, title=title, fn=fn, needs=needs, severity=severity, warning=warning,
                            why=why, fix=fix, docs=tuple(docs), example=example, reads=frozenset(reads))
        return fn

    return register


def rules() -> dict[str, Rule]:
    """Every registered rule by code, built-ins loaded."""
    global _sorted
    _load_builtins()
    # Asked on every check of a file: sorting the catalogue's (code, rule) pairs cost more than a
    # small file's rules take to start. Sorted again only when a rule came or went.
    registered = tuple(_RULES.values())
    if _sorted[0] != registered:
        _sorted = (registered, {code: _RULES[code] for code in sorted(_RULES)})
    return dict(_sorted[1])


_sorted: tuple[tuple[Rule, ...], dict[str, Rule]] = ((), {})
"""(the rules registered, in registration order; the same by code), as `rules` last sorted them."""


def load_plugin(module: str) -> None:
    """Import a module whose `@rule` functions add to the catalogue.

    The current folder is searched too, as for a user's agent: a rules file beside the recordings
    imports without being installed. A module not found raises an ImportError saying where it looked.
    """
    import_user_module(module)


ENTRY_POINT_GROUP = "harness.rules"
"""Installed packages add rules by naming a module in this group: `[project.entry-points."harness.rules"]`."""

_installed_loaded = False


def _load_builtins() -> None:
    from . import builtin  # noqa: F401  (registers the catalogue)

    _load_installed()


def _load_installed() -> None:
    """Import the rule modules that installed packages declare, once per process."""
    global _installed_loaded
    if _installed_loaded:
        return
    _installed_loaded = True
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry.load()
        except Exception as exc:
            raise UsageError(
                f"the installed rule plugin {entry.name!r} ({entry.value}, from the "
                f"{entry.dist.name if entry.dist else 'unknown'} package) cannot be loaded: "
                f"{type(exc).__name__}: {exc}; fix or uninstall that package"
            ) from exc


def check_trace(
    trace: Trace,
    *,
    disabled: Iterable[str] = (),
    options: CheckOptions | Mapping[str, Any] | None = None,
    whole_run: bool | None = None,
) -> list[Finding]:
    """Run every enabled rule on a trace; findings come sorted by call then code.

    `options` is a `CheckOptions` or a mapping of its fields; an unknown key is a UsageError.
    """
    if trace.runs:
        return _check_runs(trace, disabled=disabled, options=options, whole_run=whole_run)
    ctx = CheckContext(
        whole_run=trace.whole_run if whole_run is None else whole_run,
        options=option_values(options),
    )
    off = {code.upper() for code in disabled}
    catalogue = rules()
    unknown = off - catalogue.keys()
    if unknown:
        known = ", ".join(catalogue)
        raise UsageError(f"unknown rule code(s) to disable: {', '.join(sorted(unknown))}; known codes: {known}")
    findings: list[Finding] = []
    missing = trace.missing
    # What every run pays once per rule, whatever the trace holds, is kept to the call itself.
    for code, registered in catalogue.items():
        if code in off or (missing and registered.reads & missing.keys()):
            continue
        for finding in registered.fn(trace, ctx):
            if finding.code != code:
                raise UsageError(f"rule {code} produced a finding with code {finding.code}; a rule reports only "
                                 "its own code")
            findings.append(finding)
    # Checking a trace twice (a test, a report rebuilt) must not repeat its notes.
    trace.notes.extend(note for note in ctx.notes if note not in trace.notes)
    findings.sort(key=lambda f: (f.call if f.call is not None else -1, f.code,
                                 f.message_index or 0, f.block_index or 0))
    return findings


def _check_runs(trace: Trace, *, disabled: Iterable[str], options: CheckOptions | Mapping[str, Any] | None,
                whole_run: bool | None) -> list[Finding]:
    """Each run of a multi-run file checked alone (`Trace.runs`); findings point at the file's calls."""
    findings: list[Finding] = []
    disabled = tuple(disabled)
    offset = 0
    for number, run in enumerate(trace.runs, 1):
        if trace.outcome is not None:
            run.outcome = trace.outcome  # how the user said the runs ended (--outcome)
        # "run" alone would not say which of the file's runs a run-wide finding is about.
        name = f"{number} of {len(trace.runs)}" + (f" (traceId {run.run_key})" if run.run_key else "")
        for finding in check_trace(run, disabled=disabled, options=options, whole_run=whole_run):
            findings.append(replace(finding, call=finding.call + offset) if finding.call is not None
                            else replace(finding, run=name))
        offset += len(run.calls)
        trace.notes.extend(note for note in run.notes if note not in trace.notes)
    return findings


def option_values(options: CheckOptions | Mapping[str, Any] | None) -> dict[str, Any]:
    """The options as rules read them (`CheckOptions.as_dict()`).

    Without options they are the defaults, spelt out here: validating options imports pydantic, which
    is most of what `harness check FILE` takes to start (a test keeps them equal to `CheckOptions()`'s).
    """
    if options is None:
        return {"limits": {}, "sequential_tools": [], "history_projection": False,
                "max_retries": DEFAULT_MAX_RETRIES, "output_tools": [], "prerequisites": [], "approvals": [],
                "circuit_breakers": []}
    from ._options import CheckOptions

    return CheckOptions.of(options).as_dict()


def unjudged(trace: Trace, *, disabled: Iterable[str] = ()) -> dict[str, list[str]]:
    """Why each enabled rule is skipped on this trace: {missing fact's reason: [codes]}, in code order."""
    off = {code.upper() for code in disabled}
    skipped: dict[str, list[str]] = {}
    if not trace.missing:
        return skipped
    facts = get_args(Fact)  # typing introspection: once, not once per rule
    for code, registered in rules().items():
        lacking = [fact for fact in facts if fact in registered.reads and fact in trace.missing]
        # A scenario rule says nothing without its policy; only `harness run` gives one, on full traces.
        if code not in off and lacking and registered.needs != "scenario":
            skipped.setdefault(trace.missing[lacking[0]], []).append(code)
    return skipped

