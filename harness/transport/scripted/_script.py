"""The script a scripted model plays: steps read from YAML/JSON or Python, validated strictly.

The file format is the strict models of `_format.py`; this module reads a validated script into
the steps the model plays, with the rules that tie several keys together. Every mistake is reported
with the file, the line when known, the step number and the key, and the valid choices, so a typo
in a script fails loudly instead of producing a surprising answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from ..._strict import explain, kind
from ..._yaml import Loc, format_loc, parse_yaml, read_text
from ...errors import ScriptError
from ._format import STEPS, ErrorSpec, ErrorStep, MessageStep, StepModel, StreamErrorSpec

LineOf = Callable[[Loc], int | None]

ERROR_TYPE_BY_STATUS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
STATUS_BY_ERROR_TYPE: dict[str, int] = {kind: status for status, kind in ERROR_TYPE_BY_STATUS.items()}
DEFAULT_ERROR_MESSAGES: dict[str, str] = {
    "invalid_request_error": "Invalid request.",
    "authentication_error": "invalid x-api-key",
    "billing_error": "Your credit balance is too low to access the Anthropic API.",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found.",
    "conflict_error": "The request conflicts with the current state of a resource.",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "This request would exceed your organization's rate limit.",
    "api_error": "Internal server error",
    "timeout_error": "Request timed out.",
    "overloaded_error": "Overloaded",
}


@dataclass(frozen=True)
class ScriptedError:
    """An HTTP error answer: the API's error envelope with this status, type and message."""

    status: int
    type: str
    message: str
    retry_after: float | None = None
    """Seconds sent in the `retry-after` header, when given."""
    should_retry: bool | None = None
    """Sent as the `x-should-retry` header, which the SDKs obey over their own policy."""


@dataclass(frozen=True)
class StreamError:
    """An `event: error` sent inside a stream after `after` events, then the stream ends."""

    type: str
    message: str
    after: int = 1


@dataclass(frozen=True)
class Step:
    """One scripted answer: a message or an error, and the faults to inject while giving it."""

    number: int
    """Position in the script, 1-based (the number used in every message about the step)."""
    content: tuple[dict[str, Any], ...] = ()
    """The message's content blocks, shorthands expanded; ids and signatures may still be missing."""
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    """Usage fields given by the script; the rest is computed from the request and the content."""
    model: str | None = None
    """The answer's model; the request's model when None."""
    id: str | None = None
    error: ScriptedError | None = None
    """Set for an error step, which answers with this HTTP error instead of a message."""
    thread: str | None = None
    """Answer only requests whose `x-harness-thread` header equals this key."""
    delay_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    """Response headers sent as given, e.g. `anthropic-ratelimit-requests-remaining`."""
    cut_after: int | None = None
    """Close the connection after this many stream events (no `message_stop`)."""
    stream_error: StreamError | None = None
    line: int | None = None
    """Line of the script file where the step starts, when read from YAML."""

    @property
    def tool_names(self) -> list[str]:
        return [str(b["name"]) for b in self.content if b.get("type") == "tool_use"]

    def describe(self) -> str:
        """A few words naming the step in messages: `tool_use get_customer`, `error 429 rate_limit_error`."""
        if self.error is not None:
            words = f"error {self.error.status} {self.error.type}"
        else:
            words = str(self.stop_reason)
            if self.tool_names:
                words += " " + ", ".join(self.tool_names)
        if self.thread is not None:
            words += f", thread {self.thread}"
        return words


@dataclass(frozen=True)
class Script:
    """The steps of a script, in the order they answer requests, and where they were read from."""

    steps: tuple[Step, ...]
    source: str = "<script>"
    threads: frozenset[str] = field(default=frozenset())
    """Every thread key some step is routed to."""

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]


def load_script(path: str | Path) -> Script:
    """Read a script from a YAML or JSON file (a list of steps, or a mapping with `steps:`)."""
    source = str(path)
    document = parse_yaml(read_text(path, error=ScriptError, what="script"), source, error=ScriptError)
    return parse_script(document.data, source=source, line_of=document.line_of)


def parse_script(data: Any, *, source: str = "<script>", line_of: LineOf | None = None) -> Script:
    """Validate a script given as Python data: a list of step mappings (or `{"steps": [...]}`).

    `line_of` gives the line of a path in the file the data was read from, for the errors.
    """
    line_of = line_of or _no_lines
    base: Loc = ()
    if isinstance(data, Mapping):
        extra = sorted(str(k) for k in data if k != "steps")
        if extra or "steps" not in data:
            raise ScriptError(
                source,
                "a script is a list of steps, or a mapping whose only key is `steps`"
                + (f"; unknown keys: {', '.join(extra)}" if extra else ""),
                line=line_of(()),
            )
        data = data["steps"]
        base = ("steps",)
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        raise ScriptError(source, f"a script is a list of steps, got {kind(data)}")
    if not data:
        raise ScriptError(source, "the script has no steps; give at least one answer")
    try:
        models = STEPS.validate_python(list(data))
    except ValidationError as exc:
        raise explain(exc, list(data), list[StepModel], source=source, error=ScriptError,
                      line_of=lambda loc: line_of((*base, *loc)), render=_step_key, problem=_not_a_step) from None
    steps = tuple(_StepReader(source, number, raw, model, line_of, (*base, number - 1)).read()
                  for number, (raw, model) in enumerate(zip(data, models, strict=True), start=1))
    return Script(steps=steps, source=source, threads=frozenset(s.thread for s in steps if s.thread is not None))


def _not_a_step(error: Any, loc: Loc) -> str | None:
    if len(loc) == 1 and error["type"] == "model_type":
        return f"a step is a mapping (e.g. `text: ...` or `error: ...`), got {kind(error.get('input'))}"
    return None


def _step_key(loc: Loc) -> str:
    """(1, "content", 0, "input") -> `step 2: content[0].input`."""
    if not loc or not isinstance(loc[0], int):
        return format_loc(loc)
    rest = format_loc(loc[1:])
    return f"step {loc[0] + 1}" + (f": {rest}" if rest else "")


class _StepReader:
    """Reads one validated step into a `Step`, applying the rules that tie its keys together, and
    knowing where it sits so every error can point at it."""

    def __init__(self, source: str, number: int, raw: Mapping[str, Any], model: MessageStep | ErrorStep,
                 line_of: LineOf, loc: Loc) -> None:
        self.source = source
        self.number = number
        self.raw = raw
        self.model = model
        self.line_of = line_of
        self.loc = loc
        self.line = line_of(loc)

    def fail(self, key: str | None, problem: str) -> NoReturn:
        line = self.line_of((*self.loc, *_key_loc(key))) if key else self.line
        label = f"step {self.number}" + (f": {key}" if key else "")
        raise ScriptError(self.source, problem, line=line, key=label)

    def read(self) -> Step:
        if not self.raw:
            self.fail(None, "empty step; give `content`, `text`, `tool_use`, `stop_reason` or `error`")
        step = self.model
        common: dict[str, Any] = {"delay_s": step.delay_s}
        if step.thread is not None:
            common["thread"] = step.thread
        if step.headers:
            common["headers"] = tuple(step.headers.items())
        if isinstance(step, ErrorStep):
            return Step(number=self.number, error=self.read_error(step.error), line=self.line, **common)
        return self.read_message(step, common)

    def read_error(self, spec: ErrorSpec) -> ScriptedError:
        status, error_type = spec.status, spec.type
        if status is None and error_type is None:
            self.fail("error", "give `status` or `type` (or both); known types: " + ", ".join(STATUS_BY_ERROR_TYPE))
        if status is None:
            if error_type not in STATUS_BY_ERROR_TYPE:
                self.fail("error.status", f"required for the unknown error type {error_type!r}; "
                                          f"known types: {', '.join(STATUS_BY_ERROR_TYPE)}")
            status = STATUS_BY_ERROR_TYPE[error_type]
        if error_type is None:
            error_type = ERROR_TYPE_BY_STATUS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        message = spec.message if spec.message is not None else DEFAULT_ERROR_MESSAGES.get(error_type, error_type)
        return ScriptedError(status=status, type=error_type, message=message, retry_after=spec.retry_after,
                             should_retry=spec.should_retry)

    def read_message(self, step: MessageStep, common: dict[str, Any]) -> Step:
        raw = self.raw
        shorthands = [k for k in ("thinking", "text", "tool_use") if raw.get(k) is not None]
        if step.content is not None and shorthands:
            self.fail(shorthands[0], "cannot be combined with `content`; put every block in `content`")
        if step.content is not None:
            blocks = [self.read_block(f"content[{i}]", block) for i, block in enumerate(raw["content"])]
        else:
            blocks = self.read_shorthands(step)
        if not blocks and step.stop_reason is None:
            self.fail(None, "empty message; give `content`, `text`, `tool_use` or `thinking`, "
                            "or an explicit `stop_reason` for a message with no content (e.g. `refusal`)")
        stop_reason = step.stop_reason
        if stop_reason is not None:
            if step.stop_sequence is not None and stop_reason != "stop_sequence":
                self.fail("stop_sequence", f"only goes with `stop_reason: stop_sequence`, not {stop_reason!r}")
        elif step.stop_sequence is not None:
            stop_reason = "stop_sequence"
        else:
            stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
        if step.cut_after is not None and step.stream_error is not None:
            self.fail("cut_after", "cannot be combined with `stream_error`; a step fails one way")
        return Step(
            number=self.number,
            content=tuple(blocks),
            stop_reason=stop_reason,
            stop_sequence=step.stop_sequence,
            stop_details=self.plain("stop_details", raw["stop_details"]) if step.stop_details is not None else None,
            usage=self.plain("usage", raw["usage"]) if step.usage is not None else None,
            model=step.model,
            id=step.id,
            cut_after=step.cut_after,
            stream_error=self.read_stream_error(step.stream_error) if step.stream_error is not None else None,
            line=self.line,
            **common,
        )

    def read_shorthands(self, step: MessageStep) -> list[dict[str, Any]]:
        # The order a model emits them in: reasoning, then prose, then the tool calls.
        blocks: list[dict[str, Any]] = []
        if step.thinking is not None:
            blocks.append({"type": "thinking", "thinking": step.thinking})
        if step.text is not None:
            blocks.append({"type": "text", "text": step.text})
        if step.tool_use is not None:
            calls = self.raw["tool_use"]
            single = isinstance(calls, Mapping)
            for i, call in enumerate([calls] if single else calls):
                blocks.append(self.read_block("tool_use" if single else f"tool_use[{i}]", {"type": "tool_use", **call}))
        return blocks

    def read_block(self, key: str, block: Mapping[str, Any]) -> dict[str, Any]:
        if block["type"] in ("tool_use", "server_tool_use"):
            block = {**block, "input": block.get("input", {})}
        return self.plain(key, block)

    def plain(self, key: str, value: Any) -> dict[str, Any]:
        """A deep copy as plain JSON data, refusing what JSON cannot carry (a date, a set)."""
        try:
            copied: dict[str, Any] = json.loads(json.dumps(value))
        except (TypeError, ValueError) as exc:
            self.fail(key, f"holds a value JSON cannot carry ({exc}); quote dates and use plain numbers")
        return copied

    def read_stream_error(self, spec: StreamErrorSpec) -> StreamError:
        message = spec.message if spec.message is not None else DEFAULT_ERROR_MESSAGES.get(spec.type, spec.type)
        return StreamError(type=spec.type, message=message, after=spec.after)


def _key_loc(key: str) -> Loc:
    """`content[1].input` -> ("content", 1, "input")."""
    return tuple(int(token[1:-1]) if token.startswith("[") else token
                 for token in re.findall(r"\[\d+\]|[^.\[\]]+", key))


def _no_lines(loc: Loc) -> int | None:
    return None
