"""Realistic traffic the shipped cassettes do not show: correct loops that must pass, buggy ones caught by the right code.

Each case is one shape found while checking recordings of other clients (moved cache breakpoints,
parallel runs of one prompt, compaction, pause_turn continuations, cloud endpoints...).
"""

from __future__ import annotations

from typing import Any

from .conftest import Recording, check, codes, text, thinking, tool_use

CACHE = {"cache_control": {"type": "ephemeral"}}


def server_search(n: int) -> list[dict[str, Any]]:
    return [
        {"type": "server_tool_use", "id": f"srvtoolu_{n:020d}", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{n:020d}", "content": []},
    ]


# --- threads: the same conversation, however its history is re-sent -------------------------------


def test_a_cache_breakpoint_moved_off_the_first_message_keeps_one_thread(recording: Recording) -> None:
    conv = recording.conversation()
    conv.user(text("A long document to cache") | CACHE)
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results("found")
    # The client moves its breakpoint to the newest block: the first message's bytes change.
    conv.messages[0] = {"role": "user", "content": [text("A long document to cache")]}
    conv.messages[-1]["content"][-1] |= CACHE
    conv.call(text("Done."))
    assert len(recording.trace().threads) == 1
    assert check(recording, whole_run=True) == []


def test_parallel_runs_of_one_prompt_are_not_crossed(recording: Recording) -> None:
    first, second = recording.conversation(), recording.conversation()
    first.user("Same task")
    second.user("Same task")
    first.call(tool_use("get_customer", {"customer_id": "a"}))
    second.call(tool_use("get_customer", {"customer_id": "b"}))
    # The second run answers first: its request shares the opening with the first run's.
    second.results("b").call(text("B done."))
    first.results("a").call(text("A done."))
    trace = recording.trace()
    assert [(c.thread, c.step) for c in trace.calls] == [(1, 1), (2, 1), (2, 2), (1, 2)]
    assert check(recording, whole_run=True) == []


def test_a_compacted_history_that_drops_the_old_messages_continues_its_thread(recording: Recording) -> None:
    conv = recording.conversation(headers={"anthropic-beta": "compact-2026-01-12"},
                                  extra={"context_management": {"edits": [{"type": "compact_20260112"}]}})
    conv.user("Work through the backlog")
    conv.call(tool_use("get_customer", {"customer_id": "a"}))
    conv.results("a")
    conv.call({"type": "compaction", "content": "Summary of the work so far."}, text("Going on."),
              tool_use("get_customer", {"customer_id": "b"}))
    conv.results("b")
    # Messages before the compaction block are ignored by the API; the client may drop them.
    conv.messages = [conv.messages[0], *conv.messages[-2:]]
    conv.call(text("All done."))
    assert len(recording.trace().threads) == 1
    assert check(recording, whole_run=True) == []


def test_a_history_truncated_mid_run_is_h002_not_a_new_thread(recording: Recording) -> None:
    conv = recording.conversation()
    conv.user("Look them all up")
    for n in range(3):
        conv.call(tool_use("get_customer", {"customer_id": str(n)}))
        conv.results("ok")
    del conv.messages[1:3]
    conv.call(text("Done."))
    findings = check(recording, whole_run=True)
    assert codes(findings) == {"H002"}
    assert len(recording.trace().threads) == 1


# --- pause_turn: seed 000's loop appends the continuation as its own assistant message -------------


def test_a_paused_turn_followed_by_its_continuation_is_not_h003(recording: Recording) -> None:
    conv = recording.conversation(tools=[*recording.conversation().tools,
                                         {"type": "web_search_20250305", "name": "web_search"}])
    conv.user("Search, then look the customer up")
    conv.call(text("Searching."), *server_search(1), stop_reason="pause_turn")
    conv.call(*server_search(2), tool_use("get_customer", {"customer_id": "a"}))
    conv.results("found")
    conv.call(text("Done."))
    assert check(recording, whole_run=True) == []


def test_two_assistant_messages_in_a_row_without_a_pause_are_still_h003(recording: Recording) -> None:
    conv = recording.conversation()
    conv.user("Look the customer up")
    conv.call(tool_use("get_customer", {"customer_id": "a"}))
    conv.messages.insert(1, {"role": "assistant", "content": "Let me check."})
    conv.messages.append({"role": "user", "content": [{"type": "tool_result",
                                                       "tool_use_id": conv.tool_uses()[0]["id"], "content": "ok"}]})
    conv.call(text("Done."))
    assert "H003" in codes(check(recording, whole_run=True))
