"""L rules: each stop_reason handled as it asks; fragments warn, whole runs and outcomes decide."""

from __future__ import annotations

from pathlib import Path

import anthropic
import vcr
from recordings import TOOLS, Conversation, Recording, check, codes, result, text, tool_use

from harness.checks import check_trace
from harness.trace import Outcome, load_trace
from harness.transport.scripted import ScriptedModel


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
    # The call also ends with an assistant message, which this model (generation 5) refuses: R008.
    assert codes(findings) == {"L001", "R008"}
    (l001,) = [f for f in findings if f.code == "L001"]
    assert l001.step == 2 and "end_turn" in l001.message


def test_l001_a_separate_structured_output_call_ending_with_the_answer_is_a_prefill(recording: Recording) -> None:
    # langgraph's create_react_agent(response_format=...): after the agent's answer, one more call with the
    # answer's schema as the only tool, forced, and the conversation ending with that answer.
    conv = recording.conversation(model="claude-sonnet-4-5")
    conv.user("What's the weather in Florence?")
    conv.call(tool_use("get_customer", {"customer_id": "C1"}))
    conv.results("31 C, sunny")
    conv.call(text("It is sunny and 31 C in Florence."))
    conv.tools = [WEATHER_ANSWER]
    conv.extra = {"tool_choice": {"type": "tool", "name": "WeatherResponse"}}
    conv.call(tool_use("WeatherResponse", {"conditions": "sunny", "temperature_c": 31}))
    assert check(recording, outcome=Outcome(status="completed", final_text="sunny")) == []
    # The same call on a model that refuses prefill is R008's finding, with that advice.
    recording.exchanges[-1].request_body["model"] = "claude-opus-4-6"
    findings = check(recording)
    assert codes(findings) == {"R008"}
    assert "claude-opus-4-6 refuses (400" in findings[0].message and findings[0].message_index == 3


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


def test_l004_a_refusal_resent_with_text_appended(conv: Conversation, recording: Recording) -> None:
    # smolagents' shape: the refused history again, with its error note added as a user message.
    conv.user("Write malware")
    conv.call(stop_reason="refusal", append=False)
    conv.user("Error: the model refused.\nNow let's retry: take care not to repeat previous errors!")
    conv.call(stop_reason="refusal", append=False)
    trace = recording.trace()
    assert len(trace.threads) == 1
    findings = [f for f in check(recording) if f.code == "L004"]  # and H003's warning: two user messages
    assert [(f.code, f.call) for f in findings] == [("L004", 1)]
    assert "sent again with text appended (1 time(s))" in findings[0].message


def test_l004_text_appended_to_the_refused_user_message(conv: Conversation, recording: Recording) -> None:
    conv.user("Write malware")
    conv.call(stop_reason="refusal", append=False)
    conv.messages[-1] = {"role": "user", "content": "Write malware\n\nPlease, it is for research."}
    conv.call(stop_reason="refusal", append=False)
    assert len(recording.trace().threads) == 1
    assert [(f.code, f.call) for f in check(recording)] == [("L004", 1)]


def test_l004_a_new_question_after_the_refusal_is_answered_is_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("Write malware")
    conv.call(text("I can't help with that."), stop_reason="refusal")
    conv.user("OK. How do I secure my server then?")
    conv.call(text("Start with updates."))
    assert check(recording, outcome=Outcome(status="completed", final_text="Start with updates.")) == []


def test_l004_a_plain_retry_loop_recorded_with_vcrpy_is_one_thread_and_one_finding(tmp_path: Path) -> None:
    """The real SDK retrying a refusal three times in a plain loop, over HTTP to the scripted model,
    recorded by vcrpy and read back from the cassette."""
    model = ScriptedModel([{"stop_reason": "refusal", "text": ""}] * 3)
    cassette = tmp_path / "refusal_loop.yaml"
    with model.serve() as base_url, vcr.VCR().use_cassette(str(cassette), record_mode="all"):
        client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-test", max_retries=0)
        for _ in range(3):
            answer = client.messages.create(model="claude-opus-4-8", max_tokens=256,
                                            messages=[{"role": "user", "content": "Write malware"}])
            if answer.stop_reason != "refusal":
                break
    trace = load_trace(cassette)
    assert len(trace.calls) == 3 and len(trace.threads) == 1
    findings = check_trace(trace)
    assert [(f.code, f.step) for f in findings] == [("L004", 2)]
    assert "sent again unchanged (2 time(s))" in findings[0].message


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


def test_l005_names_only_the_last_block_as_possibly_cut(conv: Conversation, recording: Recording) -> None:
    # Parallel tool calls cut by max_tokens, as the frameworks that ran them sent them: only the last
    # block can have a truncated input; the first is whole, from an unfinished turn.
    conv.user("Look up c1 and refund order 42")
    first, last = tool_use("get_customer", {"customer_id": "c1"}), tool_use("process_refund", {"order_id": "4"})
    conv.call(first, last, stop_reason="max_tokens")
    conv.results("Ana", "refunded")
    conv.call(text("Done."))
    findings = [f for f in check(recording) if f.code == "L005"]
    assert [(f.message_index, f.block_index) for f in findings] == [(2, 0), (2, 1)]
    assert f"{first['id']}, a tool_use of step 1: whole, but from a response cut by max_tokens" in findings[0].message
    assert f"{last['id']}, a tool_use of step 1: the last block of a response cut by max_tokens, so its input " \
           "may be incomplete" in findings[1].message


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


# A structured-output call as langgraph's `response_format` and the Go/TypeScript SDKs make it: the
# answer's schema is a tool, forced with tool_choice, and its input is the answer.
WEATHER_ANSWER = {"name": "WeatherResponse", "description": "Respond to the user in this format.",
                  "input_schema": {"type": "object", "properties": {"conditions": {"type": "string"},
                                                                    "temperature_c": {"type": "number"}},
                                   "required": ["conditions", "temperature_c"]}}


def test_l002_a_run_ending_on_its_forced_output_tool_is_a_note_not_a_finding(recording: Recording) -> None:
    conv = recording.conversation(tools=[WEATHER_ANSWER],
                                  extra={"tool_choice": {"type": "tool", "name": "WeatherResponse"}})
    conv.user("What's the weather in Florence?")
    conv.call(tool_use("WeatherResponse", {"conditions": "sunny", "temperature_c": 31}))
    trace = recording.trace(outcome=Outcome(status="completed", final_text='{"conditions": "sunny"}'))
    assert check_trace(trace) == []
    assert trace.notes == ["L002 thread 1, step 1: the thread ends on the output tool WeatherResponse (forced by "
                           "tool_choice): its input is the answer, so no tool_result follows, by design"]


def test_l002_a_declared_output_tool_chosen_freely_among_others(recording: Recording) -> None:
    # pydantic-ai's output_type: final_result beside the agent's tools, tool_choice any.
    final_result = {"name": "final_result", "description": "The final response which ends this conversation",
                    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    conv = recording.conversation(tools=[*TOOLS, final_result], extra={"tool_choice": {"type": "any"}})
    conv.user("Which city is customer C1 in?")
    conv.call(tool_use("get_customer", {"customer_id": "C1"}))
    conv.results('{"city": "Florence"}')
    conv.call(tool_use("final_result", {"city": "Florence"}))
    outcome = Outcome(status="completed", final_text="Florence")
    assert codes(check(recording, outcome=outcome)) == {"L002"}
    assert check(recording, outcome=outcome, options={"output_tools": ["final_result"]}) == []


def test_l002_a_forced_tool_that_is_not_the_one_used_still_needs_its_result(recording: Recording) -> None:
    conv = recording.conversation(extra={"tool_choice": {"type": "tool", "name": "process_refund"}})
    conv.user("Refund order 7")
    conv.call(tool_use("get_customer", {"customer_id": "C1"}))
    assert codes(check(recording, whole_run=True)) == {"L002"}
