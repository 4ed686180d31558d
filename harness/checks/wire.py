"""What a rule reads off the wire: the helpers the built-in rules use, published for plugin rules.

    from harness.checks import rule
    from harness.checks.wire import blocks, of_type, role, trace_index

A trace's calls hold the request and response bodies as recorded (`call.request`, `call.messages`,
`call.content`); these helpers read them without tripping on the shapes real recordings hold (a
string where blocks were expected, a missing role), and `trace_index` answers the questions every
rule asks (which call follows this one in its thread, where its response sits in the next request,
which messages a request adds) once per trace. Names not listed here are private and may change.
"""

from ._wire import (
    KNOWN_STOP_REASONS,
    Answer,
    TraceIndex,
    answered,
    blocks,
    canonical,
    content_blocks,
    declared_tools,
    has_request,
    is_human_turn,
    normalize,
    normalize_blocks,
    normalize_message,
    of_type,
    result_text,
    role,
    same_message,
    trace_index,
)

__all__ = [
    "KNOWN_STOP_REASONS",
    "Answer",
    "TraceIndex",
    "answered",
    "blocks",
    "canonical",
    "content_blocks",
    "declared_tools",
    "has_request",
    "is_human_turn",
    "normalize",
    "normalize_blocks",
    "normalize_message",
    "of_type",
    "result_text",
    "role",
    "same_message",
    "trace_index",
]
