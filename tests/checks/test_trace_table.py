"""The per-call and per-message tables the rules read (`TraceIndex.rows`, `TraceIndex.turn`) say what
asking each call and message directly says, on real traffic and on every rule's example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.checks import rules
from harness.checks._wire import answered, blocks, has_request, of_type, role, trace_index
from harness.trace import Trace, load_trace

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "recordings"
NOT_RECORDINGS = {"README.md", "MANIFEST.tsv", "LICENSE"}


def _traces() -> list[Any]:
    real = [pytest.param(path, id=str(path.relative_to(CORPUS))) for path in sorted(CORPUS.rglob("*"))
            if path.is_file() and path.name not in NOT_RECORDINGS]
    examples = [pytest.param(code, id=f"example-{code}") for code, r in rules().items() if r.example is not None]
    return real + examples


def _trace(source: Path | str) -> Trace:
    if isinstance(source, Path):
        return load_trace(source)
    example = rules()[source].example
    assert example is not None
    return example.trace()


@pytest.mark.parametrize("source", _traces())
def test_the_tables_say_what_the_calls_and_messages_say(source: Path | str) -> None:
    trace = _trace(source)
    index = trace_index(trace)
    assert [row.call for row in index.rows] == trace.calls
    for row, call in zip(index.rows, trace.calls, strict=True):
        assert (row.request, row.has_request, row.messages) == (call.request, has_request(call), call.messages)
        assert (row.response, row.answered, row.stop_reason) == (call.response, answered(call), call.stop_reason)
        assert row.content == call.content and row.tool_uses == of_type(call.content, "tool_use")
        assert index.added_turns(call) == [(i, index.turn(m)) for i, m in index.added(call)]
        for message in call.messages:
            turn = index.turn(message)
            assert turn is index.turn(message)  # made once per message object
            assert (turn.role, turn.blocks) == (role(message), blocks(message))
            assert turn.tool_uses == of_type(blocks(message), "tool_use")
            assert turn.tool_results == of_type(blocks(message), "tool_result")
            assert turn.use_ids == [str(b.get("id")) for _, b in of_type(blocks(message), "tool_use")]
            assert turn.result_ids == [str(b.get("tool_use_id")) for _, b in of_type(blocks(message), "tool_result")]
            assert turn.only_results == all(b.get("type") == "tool_result" for b in blocks(message))

