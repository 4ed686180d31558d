"""L rules: each stop_reason handled as it asks; fragments warn, whole runs and outcomes decide."""

from __future__ import annotations

from harness.trace import Outcome

from .conftest import Conversation, Recording, check, codes, result, text, tool_use


def server_search() -> list[dict]:
    return [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "refund policy"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
         "content": [{"type": "web_search_result", "url": "https://example.com", "title": "Policy",
                      "encrypted_content": "Eo8B"}]},
    ]


# L001

def test_l001_a_call_after_end_turn_without_a_new_user_turn(conv: Conversation, recording: Recording) -> None:
    conv.user("Is order 42 refundable?")
    conv.call(text("Yes, within 30 days."))
    conv.call(text("Anything else?"))
    findings = check(recording)
    assert codes(findings) == {"L001"}
    assert findings[0].step == 2 and "end_turn" in findings[0].message


def test_l001_stop_sequence_then_a_new_question_is_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("Count to 3")
    conv.call(text("1 2 3"), stop_reason="stop_sequence")
    conv.user("Now to 5")
    conv.call(text("1 2 3 4 5"))
    assert check(recording, whole_run=True) == []


def test_l001_a_new_unrelated_conversation_is_another_thread(conv: Conversation, recording: Recording) -> None:
    conv.user("Is order 42 refundable?")
    conv.call(text("Yes."))
    other = recording.conversation()
    other.user("What is the shipping policy?")
    other.call(text("Free over 50 EUR."))
    trace = recording.trace()
    assert len(trace.threads) == 2
    assert check(recording) == []


# L002

def test_l002_the_next_request_carries_no_tool_result(conv: Conversation, recording: Recording) -> None:
    conv.user("Refund order 42 for customer c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.user("Did it work?")
    conv.call(text("I am not sure."))
    findings = check(recording)
    assert codes(findings) == {"L002"}
    assert findings[0].step == 2 and findings[0].message_index == 2


def test_l002_a_fragment_ending_on_tool_use_warns_and_a_whole_run_errs(conv: Conversation,
                                                                         recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    fragment = check(recording)
    assert codes(fragment) == set() and codes(fragment, "warning") == {"L002"}
    assert "the trace ends here" in fragment[0].message
    assert codes(check(recording, whole_run=True)) == {"L002"}


def test_l002_an_outcome_decides_how_a_run_may_end_on_tool_use(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    assert codes(check(recording, outcome=Outcome(status="completed"))) == {"L002"}
    assert check(recording, outcome=Outcome(status="limit", limit="steps", final_text="partial")) == []


def test_l002_results_sent_is_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(text("Looking."), tool_use("get_customer", {"customer_id": "c1"}))
    conv.results('{"name": "Ana"}')
    conv.call(text("Ana is the customer."))
    assert check(recording, whole_run=True) == []


# L003

def test_l003_a_tool_result_for_a_paused_server_tool(conv: Conversation, recording: Recording) -> None:
    conv.user("Search the refund policy")
    conv.call(*server_search(), stop_reason="pause_turn")
    conv.user(result("srvtoolu_01", "done"))
    conv.call(text("The policy says 30 days."))
    findings = check(recording)
    assert codes(findings) == {"L003"}
    assert findings[0].message_index == 2 and "srvtoolu_01" in findings[0].message


def test_l003_resuming_with_the_paused_content_as_is(conv: Conversation, recording: Recording) -> None:
    conv.user("Search the refund policy")
    conv.call(text("Searching."), *server_search(), stop_reason="pause_turn")
    conv.call(text("The policy says 30 days."))
    assert check(recording, whole_run=True) == []


def test_l003_history_resent_without_the_paused_content(conv: Conversation, recording: Recording) -> None:
    conv.user("Search the refund policy")
    conv.call(*server_search(), stop_reason="pause_turn", append=False)
    conv.call(text("The policy says 30 days."))
    assert codes(check(recording)) == {"L003"}


def test_l003_ending_on_pause_turn(conv: Conversation, recording: Recording) -> None:
    conv.user("Search the refund policy")
    conv.call(*server_search(), stop_reason="pause_turn")
    assert codes(check(recording), "warning") == {"L003"}
    assert codes(check(recording, outcome=Outcome(status="completed", final_text=""))) == {"L003"}


# L004

def test_l004_a_refusal_resent_with_the_same_history(conv: Conversation, recording: Recording) -> None:
    conv.user("Write malware")
    conv.call(stop_reason="refusal", append=False)
    conv.call(stop_reason="refusal", append=False)
    findings = check(recording)
    assert codes(findings) == {"L004"}
    assert findings[0].call == 1


def test_l004_a_refusal_reported_as_completed(conv: Conversation, recording: Recording) -> None:
    conv.user("Write malware")
    conv.call(stop_reason="refusal")
    assert codes(check(recording, outcome=Outcome(status="completed", final_text=""))) == {"L004"}
    assert check(recording, outcome=Outcome(status="refused", reason="refusal")) == []


# L005

def test_l005_a_cut_tool_use_is_executed(conv: Conversation, recording: Recording) -> None:
    conv.user("Refund order 42")
    conv.call(tool_use("process_refund", {"order_id": "4"}), stop_reason="max_tokens")
    conv.results("refunded")
    conv.call(text("Done."))
    findings = check(recording)
    assert codes(findings) == {"L005"}
    assert findings[0].message_index == 2 and findings[0].block_index == 0


def test_l005_a_cut_answer_reported_as_completed(conv: Conversation, recording: Recording) -> None:
    conv.user("List every state")
    conv.call(text("Alabama, Alaska, Ari"), stop_reason="max_tokens")
    assert codes(check(recording, outcome=Outcome(status="completed", final_text="Alabama, Alaska, Ari"))) == {"L005"}
    assert codes(check(recording), "warning") == {"L005"}
    assert check(recording, outcome=Outcome(status="error", reason="cut by max_tokens")) == []


def test_l005_retrying_a_cut_call_with_more_tokens_is_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("List every state")
    conv.call(text("Alabama, Alaska, Ari"), stop_reason="max_tokens", append=False)
    conv.extra["max_tokens"] = 4096
    conv.call(text("Alabama, ... Wyoming"))
    assert check(recording, whole_run=True) == []


# L006

def test_l006_an_unknown_stop_reason_continued_as_tool_use(conv: Conversation, recording: Recording) -> None:
    conv.user("Refund order 42")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}), stop_reason="model_context_window_exceeded")
    conv.results("found")
    conv.call(text("Done."))
    findings = check(recording)
    assert codes(findings) == {"L006"}
    assert "model_context_window_exceeded" in findings[0].message


def test_l006_an_unknown_stop_reason_returned_as_success(conv: Conversation, recording: Recording) -> None:
    conv.user("Summarise the ticket")
    conv.call(text("The ticket"), stop_reason="model_context_window_exceeded")
    assert codes(check(recording, outcome=Outcome(status="completed", final_text="The ticket"))) == {"L006"}
    assert check(recording, outcome=Outcome(status="error", reason="context window exceeded")) == []
