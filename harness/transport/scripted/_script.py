"""The script a scripted model plays: steps read from YAML/JSON or Python, validated strictly.

Every mistake is reported with the file, the line when known, the step number and the key, and
the valid choices, so a typo in a script fails loudly instead of producing a surprising answer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ..._yaml import Loc, parse_yaml, read_text
from ...errors import ScriptError

LineOf = Callable[[Loc], int | None]

MESSAGE_KEYS = (
    "content", "text", "tool_use", "thinking", "stop_reason", "stop_sequence", "stop_details",
    "usage", "model", "id", "thread", "delay_s", "cut_after", "stream_error",
)
ERROR_STEP_KEYS = ("error", "thread", "delay_s")
ERROR_KEYS = ("status", "type", "message", "retry_after", "should_retry")
STREAM_ERROR_KEYS = ("type", "message", "after")

# The keys each block type may carry; any other block type is passed through as given, since the
# API grows new block types faster than a script format should.
BLOCK_KEYS: dict[str, tuple[str, ...]] = {
    "text": ("type", "text", "citations"),
    "tool_use": ("type", "id", "name", "input", "caller"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "server_tool_use": ("type", "id", "name", "input", "caller"),
    "web_search_tool_result": ("type", "tool_use_id", "content", "caller"),
    "compaction": ("type", "content", "encrypted_content", "signature", "tool_changes"),
}

ERROR_TYPE_BY_STATUS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
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
        raise ScriptError(source, f"a script is a list of steps, got {_kind(data)}")
    if not data:
        raise ScriptError(source, "the script has no steps; give at least one answer")
    steps = tuple(_StepReader(source, number, raw, line_of, (*base, number - 1)).read()
                  for number, raw in enumerate(data, start=1))
    return Script(steps=steps, source=source, threads=frozenset(s.thread for s in steps if s.thread is not None))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value!r})" if len(value) < 40 else "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, Sequence):
        return "a list"
    return type(value).__name__


class _StepReader:
    """Validates one step, knowing where it sits so every error can point at it."""

    def __init__(self, source: str, number: int, raw: Any, line_of: LineOf, loc: Loc) -> None:
        self.source = source
        self.number = number
        self.raw = raw
        self.line_of = line_of
        self.loc = loc
        self.line = line_of(loc)

    def fail(self, key: str | None, problem: str) -> NoReturn:
        line = self.line_of((*self.loc, *_key_loc(key))) if key else self.line
        label = f"step {self.number}" + (f": {key}" if key else "")
        raise ScriptError(self.source, problem, line=line, key=label)

    def check_keys(self, mapping: Mapping[str, Any], allowed: Sequence[str], key_prefix: str, what: str) -> None:
        for key in mapping:
            if key not in allowed:
                hint = ""
                if what == "step" and key in ERROR_KEYS:
                    hint = f" (`{key}` belongs inside `error:`)"
                self.fail(
                    f"{key_prefix}{key}",
                    f"unknown key in {what}{hint}; valid keys: {', '.join(allowed)}",
                )

    def read(self) -> Step:
        raw = self.raw
        if not isinstance(raw, Mapping):
            self.fail(None, f"a step is a mapping (e.g. `text: ...` or `error: ...`), got {_kind(raw)}")
        if not raw:
            self.fail(None, "empty step; give `content`, `text`, `tool_use`, `stop_reason` or `error`")
        common = self.read_common(raw)
        if "error" in raw:
            self.check_keys(raw, ERROR_STEP_KEYS, "", "step")
            return Step(number=self.number, error=self.read_error(raw["error"]), line=self.line, **common)
        self.check_keys(raw, MESSAGE_KEYS, "", "step")
        return self.read_message(raw, common)

    def read_common(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        common: dict[str, Any] = {}
        if "thread" in raw:
            thread = raw["thread"]
            if not isinstance(thread, str) or not thread:
                self.fail("thread", f"must be a non-empty string (the `x-harness-thread` header value), got {_kind(thread)}")
            common["thread"] = thread
        if "delay_s" in raw:
            common["delay_s"] = self.seconds("delay_s", raw["delay_s"])
        return common

    def seconds(self, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            self.fail(key, f"must be a number of seconds >= 0, got {_kind(value)}")
        return float(value)

    def count(self, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.fail(key, f"must be a whole number >= 0, got {_kind(value)}")
        return value

    def string(self, key: str, value: Any) -> str:
        if not isinstance(value, str):
            self.fail(key, f"must be a string, got {_kind(value)}")
        return value

    def read_error(self, raw: Any) -> ScriptedError:
        if not isinstance(raw, Mapping):
            self.fail("error", f"must be a mapping like `{{status: 429, type: rate_limit_error}}`, got {_kind(raw)}")
        self.check_keys(raw, ERROR_KEYS, "error.", "error")
        status = raw.get("status")
        kind = raw.get("type")
        if status is None and kind is None:
            self.fail("error", "give `status` or `type` (or both); known types: " + ", ".join(STATUS_BY_ERROR_TYPE))
        if status is not None and (isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599):
            self.fail("error.status", f"must be an HTTP error status 400-599, got {_kind(status)}")
        if kind is not None:
            kind = self.string("error.type", kind)
        if status is None:
            if kind not in STATUS_BY_ERROR_TYPE:
                self.fail("error.status", f"required for the unknown error type {kind!r}; known types: {', '.join(STATUS_BY_ERROR_TYPE)}")
            status = STATUS_BY_ERROR_TYPE[kind]
        if kind is None:
            kind = ERROR_TYPE_BY_STATUS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        message = raw.get("message", DEFAULT_ERROR_MESSAGES.get(kind, kind))
        retry_after = self.seconds("error.retry_after", raw["retry_after"]) if "retry_after" in raw else None
        should_retry = raw.get("should_retry")
        if should_retry is not None and not isinstance(should_retry, bool):
            self.fail("error.should_retry", f"must be true or false, got {_kind(should_retry)}")
        return ScriptedError(
            status=status,
            type=kind,
            message=self.string("error.message", message),
            retry_after=retry_after,
            should_retry=should_retry,
        )

    def read_message(self, raw: Mapping[str, Any], common: dict[str, Any]) -> Step:
        shorthands = [k for k in ("thinking", "text", "tool_use") if k in raw]
        if "content" in raw and shorthands:
            self.fail(shorthands[0], "cannot be combined with `content`; put every block in `content`")
        if "content" in raw:
            content = raw["content"]
            if not isinstance(content, Sequence) or isinstance(content, (str, bytes)):
                self.fail("content", f"must be a list of content blocks, got {_kind(content)}")
            blocks = [self.read_block(f"content[{i}]", block) for i, block in enumerate(content)]
        else:
            blocks = self.read_shorthands(raw)
        if not blocks and "stop_reason" not in raw:
            self.fail(None, "empty message; give `content`, `text`, `tool_use` or `thinking`, "
                            "or an explicit `stop_reason` for a message with no content (e.g. `refusal`)")

        stop_sequence = raw.get("stop_sequence")
        if stop_sequence is not None:
            stop_sequence = self.string("stop_sequence", stop_sequence)
        if "stop_reason" in raw:
            stop_reason = self.string("stop_reason", raw["stop_reason"])
            if not stop_reason:
                self.fail("stop_reason", "must not be empty")
            if stop_sequence is not None and stop_reason != "stop_sequence":
                self.fail("stop_sequence", f"only goes with `stop_reason: stop_sequence`, not {stop_reason!r}")
        elif stop_sequence is not None:
            stop_reason = "stop_sequence"
        else:
            stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"

        stop_details = raw.get("stop_details")
        if stop_details is not None and not isinstance(stop_details, Mapping):
            self.fail("stop_details", f"must be a mapping (e.g. `{{type: refusal, category: cyber}}`), got {_kind(stop_details)}")
        usage = raw.get("usage")
        if usage is not None:
            usage = self.read_usage(usage)
        stream_error = self.read_stream_error(raw["stream_error"]) if "stream_error" in raw else None
        cut_after = self.count("cut_after", raw["cut_after"]) if "cut_after" in raw else None
        if cut_after is not None and stream_error is not None:
            self.fail("cut_after", "cannot be combined with `stream_error`; a step fails one way")
        return Step(
            number=self.number,
            content=tuple(blocks),
            stop_reason=stop_reason,
            stop_sequence=stop_sequence,
            stop_details=self.plain("stop_details", stop_details) if stop_details is not None else None,
            usage=usage,
            model=self.string("model", raw["model"]) if "model" in raw else None,
            id=self.string("id", raw["id"]) if "id" in raw else None,
            cut_after=cut_after,
            stream_error=stream_error,
            line=self.line,
            **common,
        )

    def read_shorthands(self, raw: Mapping[str, Any]) -> list[dict[str, Any]]:
        # The order a model emits them in: reasoning, then prose, then the tool calls.
        blocks: list[dict[str, Any]] = []
        if "thinking" in raw:
            blocks.append({"type": "thinking", "thinking": self.string("thinking", raw["thinking"])})
        if "text" in raw:
            blocks.append({"type": "text", "text": self.string("text", raw["text"])})
        if "tool_use" in raw:
            calls = raw["tool_use"]
            if isinstance(calls, Mapping):
                calls = [calls]
            if not isinstance(calls, Sequence) or isinstance(calls, (str, bytes)) or not calls:
                self.fail("tool_use", f"must be `{{name: ..., input: {{...}}}}` or a non-empty list of them, got {_kind(calls)}")
            for i, call in enumerate(calls):
                key = "tool_use" if len(calls) == 1 and isinstance(raw["tool_use"], Mapping) else f"tool_use[{i}]"
                if not isinstance(call, Mapping):
                    self.fail(key, f"must be a mapping `{{name: ..., input: {{...}}}}`, got {_kind(call)}")
                if "type" in call:
                    self.fail(f"{key}.type", "not needed in the `tool_use` shorthand; use `content` for typed blocks")
                blocks.append(self.read_block(key, {"type": "tool_use", **call}))
        return blocks

    def read_block(self, key: str, block: Any) -> dict[str, Any]:
        if not isinstance(block, Mapping):
            self.fail(key, f"a content block is a mapping with a `type`, got {_kind(block)}")
        kind = block.get("type")
        if not isinstance(kind, str) or not kind:
            self.fail(f"{key}.type", f"every content block needs a `type`; known types: {', '.join(BLOCK_KEYS)} (others pass through)")
        allowed = BLOCK_KEYS.get(kind)
        if allowed is None:
            return self.plain_mapping(key, block)
        for name in block:
            if name not in allowed:
                self.fail(f"{key}.{name}", f"unknown key in a {kind} block; valid keys: {', '.join(allowed)}")
        if kind == "text":
            self.string(f"{key}.text", block.get("text"))
            if "citations" in block and not isinstance(block["citations"], list):
                self.fail(f"{key}.citations", f"must be a list, got {_kind(block['citations'])}")
        elif kind in ("tool_use", "server_tool_use"):
            name = block.get("name")
            if not isinstance(name, str) or not name:
                self.fail(f"{key}.name", f"a {kind} block needs the tool's `name`, got {_kind(name)}")
            if "input" in block and not isinstance(block["input"], Mapping):
                self.fail(f"{key}.input", f"must be a mapping (a JSON object of the tool's arguments), got {_kind(block['input'])}")
            if "id" in block:
                self.string(f"{key}.id", block["id"])
            return self.plain_mapping(key, {**block, "input": block.get("input", {})})
        elif kind == "thinking":
            self.string(f"{key}.thinking", block.get("thinking"))
            if "signature" in block:
                self.string(f"{key}.signature", block["signature"])
        elif kind == "redacted_thinking":
            if "data" in block:
                self.string(f"{key}.data", block["data"])
        elif kind == "web_search_tool_result":
            if "content" not in block:
                self.fail(f"{key}.content", "required: the list of web_search_result blocks, or an error mapping")
            if "tool_use_id" in block:
                self.string(f"{key}.tool_use_id", block["tool_use_id"])
        elif kind == "compaction":
            content = block.get("content")
            if content is not None and not isinstance(content, str):
                self.fail(f"{key}.content", f"must be the summary text or null, got {_kind(content)}")
        return self.plain_mapping(key, block)

    def plain(self, key: str, value: Any) -> Any:
        """A deep copy as plain JSON data, refusing what JSON cannot carry (a date, a set)."""
        try:
            return json.loads(json.dumps(value))
        except (TypeError, ValueError) as exc:
            self.fail(key, f"holds a value JSON cannot carry ({exc}); quote dates and use plain numbers")

    def plain_mapping(self, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
        copied: dict[str, Any] = self.plain(key, value)
        return copied

    def read_usage(self, usage: Any) -> dict[str, Any]:
        if not isinstance(usage, Mapping):
            self.fail("usage", f"must be a mapping like `{{input_tokens: 10, output_tokens: 5}}`, got {_kind(usage)}")
        for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            if name in usage:
                self.count(f"usage.{name}", usage[name])
        return self.plain_mapping("usage", usage)

    def read_stream_error(self, raw: Any) -> StreamError:
        if not isinstance(raw, Mapping):
            self.fail("stream_error", f"must be a mapping like `{{type: overloaded_error}}`, got {_kind(raw)}")
        self.check_keys(raw, STREAM_ERROR_KEYS, "stream_error.", "stream_error")
        kind = self.string("stream_error.type", raw.get("type", "overloaded_error"))
        after = self.count("stream_error.after", raw.get("after", 1))
        if after < 1:
            self.fail("stream_error.after", "must be at least 1: the stream starts with `message_start` before any error")
        message = self.string("stream_error.message", raw.get("message", DEFAULT_ERROR_MESSAGES.get(kind, kind)))
        return StreamError(type=kind, message=message, after=after)


def _key_loc(key: str) -> Loc:
    """`content[1].input` -> ("content", 1, "input")."""
    return tuple(int(token[1:-1]) if token.startswith("[") else token
                 for token in re.findall(r"\[\d+\]|[^.\[\]]+", key))


def _no_lines(loc: Loc) -> int | None:
    return None
