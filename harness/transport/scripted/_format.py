"""The script file format: strict pydantic models, one per YAML mapping, and its JSON schema.

The models say which keys exist and what each holds; `_script.py` reads a validated script into the
steps the scripted model plays, with the rules that tie several keys together.
`python -m harness.transport.scripted` rewrites the shipped `script.schema.json`; a test fails when
the file and the models disagree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Discriminator, Field, RootModel, Tag, TypeAdapter

from ..._strict import StrictModel, kind, said

SCHEMA_PATH = Path(__file__).with_name("script.schema.json")

ERROR_KEYS = ("status", "type", "message", "retry_after", "should_retry")

Text = Annotated[str, said("must be a string")]
Name = Annotated[str, Field(min_length=1), said("must be a non-empty string")]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False), said("must be a number of seconds >= 0")]
Count = Annotated[int, Field(ge=0), said("must be a whole number >= 0")]
Thread = Annotated[str, Field(min_length=1), said("must be a non-empty string (the `x-harness-thread` header value)")]


FRAMING_HEADERS = ("content-type", "content-length", "transfer-encoding", "connection")
"""Headers the answer's own framing sets; a script cannot send others in their place."""
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


def _headers(value: Any) -> Any:
    """Header names to one-line values (numbers written as text), names lower-cased."""
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a mapping of header names to values, got {kind(value)}")
    headers: dict[str, str] = {}
    for name, text in value.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not an HTTP header name")
        if name.lower() in FRAMING_HEADERS:
            raise ValueError(f"{name} is set by the answer itself and cannot be scripted")
        if isinstance(text, bool) or not isinstance(text, str | int | float) or "\n" in str(text) or "\r" in str(text):
            raise ValueError(f"{name} must be a string or a number on one line, got {kind(text)}")
        headers[name.lower()] = str(text)
    return headers


Headers = Annotated[dict[str, str], BeforeValidator(_headers, json_schema_input_type=dict[str, str | int | float])]
"""Response headers sent as given, e.g. `anthropic-ratelimit-requests-remaining: 0` to play a rate-limited API."""


class TextBlock(StrictModel):
    """Prose the model writes."""

    type: Literal["text"]
    text: Text
    citations: Annotated[list[Any], said("must be a list")] | None = None


_TOOL_INPUT = "must be a mapping (a JSON object of the tool's arguments)"


class ToolUseBlock(StrictModel):
    """A call of one of the request's tools; `id` is generated when not given."""

    missing_hints = {"name": "a tool_use block needs the tool's `name`"}

    type: Literal["tool_use"]
    id: Text | None = None
    name: Annotated[str, Field(min_length=1), said("a tool_use block needs the tool's `name`")]
    input: Annotated[dict[str, Any], said(_TOOL_INPUT)] = {}
    caller: Any = None


class ServerToolUseBlock(StrictModel):
    """A call of a server tool (web search, code execution) the API runs itself."""

    missing_hints = {"name": "a server_tool_use block needs the tool's `name`"}

    type: Literal["server_tool_use"]
    id: Text | None = None
    name: Annotated[str, Field(min_length=1), said("a server_tool_use block needs the tool's `name`")]
    input: Annotated[dict[str, Any], said(_TOOL_INPUT)] = {}
    caller: Any = None


class ThinkingBlock(StrictModel):
    """Extended thinking; the signature is generated when not given."""

    type: Literal["thinking"]
    thinking: Text
    signature: Text | None = None


class RedactedThinkingBlock(StrictModel):
    """Thinking the API returns encrypted."""

    type: Literal["redacted_thinking"]
    data: Text | None = None


class WebSearchToolResultBlock(StrictModel):
    """The results of a server-side web search."""

    missing_hints = {"content": "required: the list of web_search_result blocks, or an error mapping"}

    type: Literal["web_search_tool_result"]
    tool_use_id: Text | None = None
    content: Any
    caller: Any = None


class CompactionBlock(StrictModel):
    """A context-compaction summary."""

    type: Literal["compaction"]
    content: Annotated[str, said("must be the summary text or null")] | None = None
    encrypted_content: Any = None
    signature: Any = None
    tool_changes: Any = None


BLOCK_TYPES = ("text", "tool_use", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
               "compaction")


class OtherBlock(StrictModel):
    """A block type the script format does not know, passed through as given: the API grows new
    block types faster than a script format should."""

    model_config = ConfigDict(extra="allow")
    missing_hints = {"type": f"every content block needs a `type`; known types: {', '.join(BLOCK_TYPES)} "
                             "(others pass through)"}

    # Excluding the known types keeps the schema's `oneOf` of blocks unambiguous for editors.
    type: Annotated[str, Field(min_length=1, json_schema_extra={"not": {"enum": list(BLOCK_TYPES)}}),
                    said("every content block needs a `type`")]


def _block_tag(value: Any) -> str:
    block_type = value.get("type") if isinstance(value, Mapping) else None
    return block_type if block_type in BLOCK_TYPES else "other"


Block = Annotated[
    Annotated[TextBlock, Tag("text")] | Annotated[ToolUseBlock, Tag("tool_use")]
    | Annotated[ServerToolUseBlock, Tag("server_tool_use")] | Annotated[ThinkingBlock, Tag("thinking")]
    | Annotated[RedactedThinkingBlock, Tag("redacted_thinking")]
    | Annotated[WebSearchToolResultBlock, Tag("web_search_tool_result")]
    | Annotated[CompactionBlock, Tag("compaction")] | Annotated[OtherBlock, Tag("other")],
    Discriminator(_block_tag),
]


class ToolUseShorthand(StrictModel):
    """`tool_use: {name: ..., input: {...}}`: a tool_use block without its `type`."""

    key_hints = {"type": "not needed in the `tool_use` shorthand; use `content` for typed blocks"}
    missing_hints = ToolUseBlock.missing_hints

    id: Text | None = None
    name: Annotated[str, Field(min_length=1), said("a tool_use block needs the tool's `name`")]
    input: Annotated[dict[str, Any], said(_TOOL_INPUT)] = {}
    caller: Any = None


def _calls(value: Any) -> Any:
    """One call or a non-empty list of them, read as a list."""
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, list) and value:
        return value
    raise ValueError(f"must be `{{name: ..., input: {{...}}}}` or a non-empty list of them, got {kind(value)}")


class Usage(StrictModel):
    """Usage fields to report; the others are computed from the request and the content."""

    model_config = ConfigDict(extra="allow")

    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cache_creation_input_tokens: Count | None = None
    cache_read_input_tokens: Count | None = None


class StreamErrorSpec(StrictModel):
    """An `event: error` sent inside a stream after `after` events, then the stream ends."""

    type: Text = "overloaded_error"
    message: Text | None = None
    """The error's message; the API's usual one for the type when not given."""
    after: Annotated[int, Field(ge=1), said(
        "must be at least 1: the stream starts with `message_start` before any error")] = 1


class MessageStep(StrictModel):
    """An answer with a message: `content` blocks, or the `thinking`/`text`/`tool_use` shorthands."""

    key_hints = {key: f"`{key}` belongs inside `error:`" for key in ERROR_KEYS}

    content: list[Block] | None = None
    """The message's content blocks, as the API returns them (ids and signatures may be left out)."""
    text: Text | None = None
    """Shorthand for one text block."""
    tool_use: Annotated[list[ToolUseShorthand], BeforeValidator(
        _calls, json_schema_input_type=ToolUseShorthand | list[ToolUseShorthand])] | None = None
    """Shorthand for tool_use blocks: one `{name, input}` or a list of them."""
    thinking: Text | None = None
    """Shorthand for one thinking block, placed first."""
    stop_reason: Name | None = None
    """`tool_use` when the message calls a tool, `stop_sequence` with `stop_sequence`, else `end_turn`."""
    stop_sequence: Text | None = None
    stop_details: Annotated[dict[str, Any], said("must be a mapping (e.g. `{type: refusal, category: cyber}`)")] \
        | None = None
    usage: Usage | None = None
    model: Text | None = None
    """The answer's model; the request's model when not given."""
    id: Text | None = None
    """The message id; generated when not given."""
    thread: Thread | None = None
    """Answer only requests whose `x-harness-thread` header equals this key."""
    delay_s: Seconds = 0.0
    """Seconds to wait before answering."""
    headers: Headers | None = None
    """Response headers sent as given, e.g. `anthropic-ratelimit-requests-remaining: 0` and its `-reset`."""
    cut_after: Count | None = None
    """Close the connection after this many stream events (no `message_stop`)."""
    stream_error: StreamErrorSpec | None = None


class ErrorSpec(StrictModel):
    """An HTTP error answer: give `status`, `type` or both; the other is the API's usual one."""

    status: Annotated[int, Field(ge=400, le=599), said("must be an HTTP error status 400-599")] | None = None
    type: Text | None = None
    message: Text | None = None
    retry_after: Seconds | None = None
    """Seconds sent in the `retry-after` header."""
    should_retry: Annotated[bool, said("must be true or false")] | None = None
    """Sent as the `x-should-retry` header, which the SDKs obey over their own policy."""


class ErrorStep(StrictModel):
    """An answer with an HTTP error instead of a message."""

    error: ErrorSpec
    thread: Thread | None = None
    """Answer only requests whose `x-harness-thread` header equals this key."""
    delay_s: Seconds = 0.0
    """Seconds to wait before answering."""
    headers: Headers | None = None
    """Response headers sent as given, e.g. `anthropic-ratelimit-requests-remaining: 0` and its `-reset`."""


def _step_tag(value: Any) -> str:
    return "error" if isinstance(value, Mapping) and "error" in value else "message"


StepModel = Annotated[
    Annotated[MessageStep, Tag("message")] | Annotated[ErrorStep, Tag("error")], Discriminator(_step_tag)
]
STEPS = TypeAdapter(list[StepModel])
"""Validates a script's list of steps."""


class StepsMapping(StrictModel):
    """`steps: [...]`: the list of steps under a key, for a file that may grow other keys."""

    steps: Annotated[list[StepModel], Field(min_length=1)]


class ScriptFile(RootModel[Annotated[list[StepModel], Field(min_length=1)] | StepsMapping]):
    """A script: a list of steps, or a mapping whose only key is `steps`."""


def script_schema() -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of a script file."""
    schema = ScriptFile.model_json_schema()
    return {**schema, "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "harness script"}


def schema_text() -> str:
    return json.dumps(script_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
