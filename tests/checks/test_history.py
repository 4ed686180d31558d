"""H rules: the response is re-sent whole, the history only grows, roles alternate."""

from __future__ import annotations

import copy

import pytest
from recordings import Conversation, Recording, check, codes, result, text, thinking, tool_use


def resend_edited(conv: Conversation, edit: object) -> None:
    """A loop that rebuilds the assistant message by hand: the last response, edited, then the tool results."""
    assert conv.last is not None
    content = copy.deepcopy(conv.last["content"])
    edit(content)  # type: ignore[operator]
    conv.messages.append({"role": "assistant", "content": content})
    conv.results("Ana")
    conv.call(text("Ana."))


def thinking_turn(conv: Conversation) -> None:
    conv.user("Look up c1")
    conv.call(thinking("The user wants c1."), text("Looking."), tool_use("get_customer", {"customer_id": "c1"}),
              append=False)


@pytest.mark.parametrize(("edit", "said", "block"), [
    (lambda c: c.pop(0), "block(s) dropped: thinking (response content[0])", 0),
    (lambda c: c[0].update(signature="Eq-forged"), "signature changed in the thinking block", 0),
    (lambda c: c[0].pop("signature"), "signature dropped in the thinking block", 0),
    (lambda c: c[1].update(text="Looking it up."), "text edited in the text block", 1),
    (lambda c: c.insert(2, {"type": "text", "text": " "}), "block(s) added: text at content[2]", 2),
])
def test_h001_the_assistant_message_differs_from_the_response(conv: Conversation, recording: Recording,
                                                              edit: object, said: str, block: int) -> None:
    thinking_turn(conv)
    resend_edited(conv, edit)
    findings = check(recording)
    assert codes(findings) == {"H001"}
    assert said in findings[0].message
    assert (findings[0].step, findings[0].message_index, findings[0].block_index) == (2, 1, block)


def test_h001_normalized_json_compares_equal(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(text(""), text("Looking.") | {"citations": None}, tool_use("get_customer", {"customer_id": "c1"})
              | {"caller": {"type": "direct"}}, append=False)
    # Empty text dropped (the API refuses it), null fields dropped, default caller omitted, cache breakpoint added.
    content = copy.deepcopy(conv.last["content"][1:])  # type: ignore[index]
    del content[0]["citations"]
    del content[1]["caller"]
    content[1]["cache_control"] = {"type": "ephemeral"}
    conv.messages.append({"role": "assistant", "content": content})
    conv.results("Ana")
    conv.call(text("Ana."), append=False)
    conv.messages.append({"role": "assistant", "content": "Ana."})  # a single text block re-sent as a string
    conv.user("Thanks!")
    conv.call(text("You're welcome."))
    assert check(recording, whole_run=True) == []


# H002

def three_steps(conv: Conversation) -> None:
    conv.user("Look up c1, then c2")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results("Ana")
    conv.call(tool_use("get_customer", {"customer_id": "c2"}))
    conv.results("Bo")


def test_h002_an_earlier_tool_result_edited(conv: Conversation, recording: Recording) -> None:
    three_steps(conv)
    conv.messages[2]["content"][0]["content"] = "Ana (VIP)"
    conv.call(text("Ana and Bo."))
    findings = check(recording)
    assert codes(findings) == {"H002"}
    assert (findings[0].step, findings[0].message_index, findings[0].block_index) == (3, 2, 0)
    assert "content changed in the tool_result block" in findings[0].message


def test_h002_declared_context_management_or_projection_allows_edits(recording: Recording) -> None:
    conv = recording.conversation(extra={"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
                                  headers={"anthropic-beta": "context-management-2025-06-27"})
    three_steps(conv)
    conv.messages[2]["content"][0]["content"] = "[cleared]"
    conv.call(text("Ana and Bo."))
    assert check(recording, whole_run=True) == []
    plain = Recording()
    edited = plain.conversation()
    three_steps(edited)
    edited.messages[2]["content"][0]["content"] = "[summarised]"
    edited.call(text("Ana and Bo."))
    assert check(plain, whole_run=True, options={"history_projection": True}) == []


def test_h002_a_moving_cache_breakpoint_is_not_an_edit(conv: Conversation, recording: Recording) -> None:
    conv.user("Tell me a joke")
    conv.call(text("Why did the loop stop? end_turn."))
    conv.user(text("Another") | {"cache_control": {"type": "ephemeral"}})
    conv.call(text("No."))
    conv.messages[2] = {"role": "user", "content": "Another"}
    conv.user(text("A last one") | {"cache_control": {"type": "ephemeral"}})
    conv.call(text("Fine."))
    assert len(recording.trace().threads) == 1
    assert check(recording, whole_run=True) == []


# H003

def test_h003_two_user_messages_in_a_row(conv: Conversation, recording: Recording) -> None:
    conv.user("Hi")
    conv.user("Look up c1")
    conv.call(text("Hello."))
    findings = check(recording)
    assert codes(findings) == set() and codes(findings, "warning") == {"H003"}
    assert findings[0].message_index == 1 and "the API merges them into one valid turn" in findings[0].message


def test_h003_crewai_sends_its_tool_results_then_a_text_message(conv: Conversation, recording: Recording) -> None:
    # crewAI's shape: the tool_results in one user message, then its own text-only user message.
    conv.user("Look up customer c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results('{"name": "Ana"}')
    conv.user("Now give your final answer.")
    conv.call(text("c1 is Ana."))
    findings = check(recording, whole_run=True)
    assert [(f.code, f.severity, f.message_index) for f in findings] == [("H003", "warning", 3)]


def test_h003_text_before_a_tool_result_once_merged_is_an_error(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up customer c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    uses = conv.tool_uses()
    conv.user("Here is what the tool said:")
    conv.messages.append({"role": "user", "content": [result(uses[0]["id"], '{"name": "Ana"}')]})
    conv.call(text("c1 is Ana."))
    findings = [f for f in check(recording, whole_run=True) if f.code == "H003"]
    assert [(f.severity, f.message_index) for f in findings] == [("error", 3)]
    assert "text before a tool_result" in findings[0].message


def test_h003_a_first_message_that_is_not_a_mapping_says_what_it_is(recording: Recording) -> None:
    conv = recording.conversation()
    conv.messages.append(None)  # type: ignore[arg-type]
    conv.user("Hi")
    conv.call(text("Hello."))
    messages = [f.message for f in check(recording) if f.code == "H003" and f.message_index == 0]
    assert messages == ["the first message is null, not a message object; a conversation opens with a user message"]


def test_h003_a_dropped_final_answer_says_to_append_it_not_to_merge_the_user_turns(
    conv: Conversation, recording: Recording,
) -> None:
    # A loop that appends the assistant turn only while it runs tools: the end_turn answer
    # never joins `messages`, and a caller that asks a follow-up sends two user turns in a row.
    conv.user("How many lines in README.md?")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results("42")
    conv.call(text("42 lines."), append=False)
    conv.user("Is that a lot?")
    conv.call(text("No."))
    findings = check(recording)
    assert [(f.code, f.step, f.message_index) for f in findings] == [("H003", 3, 3)]
    assert "step 2's response (end_turn) was never appended" in findings[0].message
    assert "merge" not in findings[0].message


def test_h003_a_conversation_opening_with_the_assistant(conv: Conversation, recording: Recording) -> None:
    conv.messages.append({"role": "assistant", "content": "How can I help?"})
    conv.user("Look up c1")
    conv.call(text("Hello."))
    assert codes(check(recording)) == {"H003"}


def test_h002_a_sliding_window_drops_the_oldest_messages(recording: Recording) -> None:
    conv = recording.conversation(key="agent")
    conv.user("Look up c1")
    conv.call(text("c1 is Ana."))
    conv.user("And c2?")
    conv.call(text("c2 is Bo."))
    conv.messages = conv.messages[2:]
    conv.user("And c3?")
    conv.call(text("c3 is Cy."))
    findings = check(recording)
    assert codes(findings) == {"H002"}
    assert "messages[0:2] of step 2's request were dropped" in findings[0].message
    assert check(recording, options={"history_projection": True}) == []
