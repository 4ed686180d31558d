"""T rules: one tool_result per tool_use, in the next user message, first; unique ids; errors flagged."""

from __future__ import annotations

from recordings import Conversation, Recording, check, codes, result, text, tool_use


def three_parallel(conv: Conversation) -> list[dict]:
    conv.user("Refund orders 1, 2 and 3 of customer c1")
    conv.call(text("Checking the customer three times."),
              *(tool_use("get_customer", {"customer_id": "c1"}) for _ in range(3)))
    return conv.tool_uses()


# T001

def test_t001_the_second_of_three_parallel_results_is_missing(conv: Conversation, recording: Recording) -> None:
    uses = three_parallel(conv)
    conv.user(result(uses[0]["id"]), result(uses[2]["id"]))
    conv.call(text("Done."))
    findings = check(recording)
    assert codes(findings) == {"T001"}
    assert uses[1]["id"] in findings[0].message and "2nd of 3" in findings[0].message
    assert (findings[0].step, findings[0].message_index) == (2, 2)


def test_t001_duplicated_and_unknown_ids(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    tool_use_id = conv.tool_uses()[0]["id"]
    conv.user(result(tool_use_id), result(tool_use_id), result("toolu_made_up"))
    conv.call(text("Done."))
    findings = check(recording)
    assert codes(findings) == {"T001"}
    messages = " | ".join(f.message for f in findings)
    assert "2 tool_results for tool_use" in messages and "unknown tool_use id toolu_made_up" in messages
    assert [f.block_index for f in findings if "unknown" in f.message] == [2]


def test_t001_every_parallel_call_answered_is_fine(conv: Conversation, recording: Recording) -> None:
    three_parallel(conv)
    conv.results("a", "b", "c")
    conv.call(text("Done."))
    assert check(recording, whole_run=True) == []


# T002

def test_t002_a_result_sent_in_a_later_user_message(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1 and c2")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}), tool_use("get_customer", {"customer_id": "c2"}))
    first, second = conv.tool_uses()
    conv.user(result(first["id"], "Ana"))
    conv.messages.append({"role": "assistant", "content": [text("Waiting for the second.")]})
    conv.user(result(second["id"], "Bo"))
    conv.call(text("Ana and Bo."))
    findings = check(recording)
    assert codes(findings) == {"T002"}
    assert second["id"] in findings[0].message and findings[0].message_index == 4


# T003

def test_t003_text_before_the_tool_results(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.user(text("Here is what the tool said:"), result(conv.tool_uses()[0]["id"], "Ana"))
    conv.call(text("Ana."))
    findings = check(recording)
    assert codes(findings) == {"T003"}
    assert (findings[0].message_index, findings[0].block_index) == (2, 1)


def test_t003_text_after_the_tool_results_is_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.user(result(conv.tool_uses()[0]["id"], "Ana"), text("Also check her last order."))
    conv.call(text("Ana."))
    assert check(recording, whole_run=True) == []


# T004

def test_t004_a_tool_use_id_reused_in_the_thread(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1 twice")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}, "toolu_dup"))
    conv.results("Ana")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}, "toolu_dup"))
    conv.results("Ana")
    conv.call(text("Ana."))
    findings = check(recording)
    assert codes(findings) == {"T004"}
    assert findings[0].step == 2 and "toolu_dup" in findings[0].message


# T005

def test_t005_an_error_text_without_is_error_is_a_warning_on_the_wire(conv: Conversation,
                                                                       recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results('{"error": "TIMEOUT: get_customer did not answer in 5000ms"}')
    conv.call(text("The lookup timed out."))
    findings = check(recording)
    assert codes(findings) == set() and codes(findings, "warning") == {"T005"}


def test_t005_a_failed_execution_without_is_error_is_an_error(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.ran(conv.tool_uses()[0], 0.1, 0.3, is_error=True, output="customer service down")
    conv.results("customer service down")
    conv.call(text("It failed."))
    findings = check(recording)
    assert codes(findings) == {"T005"}
    assert "get_customer failed (boom)" in findings[0].message


def test_t005_failures_flagged_with_is_error_are_fine(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.ran(conv.tool_uses()[0], 0.1, 0.3, is_error=True, output="Error: boom")
    conv.results("Error: boom", errors=[0])
    conv.call(text("It failed."))
    assert check(recording, whole_run=True) == []


# T006

def test_t006_an_undeclared_tool_answered_without_is_error(conv: Conversation, recording: Recording) -> None:
    conv.user("Delete c1")
    conv.call(tool_use("delete_customer", {"customer_id": "c1"}))
    conv.results("deleted")
    conv.call(text("Deleted."))
    findings = check(recording)
    assert codes(findings) == {"T006"}
    assert "'delete_customer'" in findings[0].message and findings[0].message_index == 2


def test_t006_undeclared_tool_answered_with_an_error_and_server_tools_are_fine(recording: Recording) -> None:
    conv = recording.conversation(tools=[
        {"type": "web_search_20250305", "name": "web_search"},
        {"type": "memory_20250818", "name": "memory"},
    ])
    conv.user("Where do I live?")
    conv.call({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "me"}},
              {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
              tool_use("memory", {"command": "view"}), tool_use("delete_customer", {}))
    conv.results("Mexico City", "Error: unknown tool 'delete_customer'", errors=[1])
    conv.call(text("Mexico City."))
    assert check(recording, whole_run=True) == []


def test_t006_a_fragment_ending_on_an_undeclared_tool_warns(conv: Conversation, recording: Recording) -> None:
    conv.user("Delete c1")
    conv.call(tool_use("delete_customer", {"customer_id": "c1"}))
    assert codes(check(recording), "warning") == {"L002", "T006"}


# T007

def failing_run(conv: Conversation, errors: int) -> None:
    conv.user("Look up c1")
    for _ in range(errors):
        conv.call(tool_use("get_customer", {"customer_id": "c1"}))
        conv.results("Error: service down", errors=[0])
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results("Ana")
    conv.call(text("Ana."))


def test_t007_a_fourth_consecutive_tool_error(conv: Conversation, recording: Recording) -> None:
    failing_run(conv, 4)
    findings = check(recording)
    assert codes(findings) == {"T007"}
    assert findings[0].step == 5 and "4 consecutive tool errors" in findings[0].message


def test_t007_three_errors_then_a_success_and_a_raised_limit_are_fine(conv: Conversation,
                                                                       recording: Recording) -> None:
    failing_run(conv, 3)
    assert check(recording, whole_run=True) == []
    assert check(recording, whole_run=True, options={"max_consecutive_tool_errors": 5}) == []


def test_t007_the_limit_comes_from_the_option(conv: Conversation, recording: Recording) -> None:
    failing_run(conv, 2)
    assert codes(check(recording, options={"max_consecutive_tool_errors": 1})) == {"T007"}


# T008

def parallel_refunds(conv: Conversation) -> tuple[dict, dict]:
    conv.user("Refund orders 1 and 2 of c1")
    conv.call(tool_use("process_refund", {"order_id": "1", "customer_id": "c1"}),
              tool_use("process_refund", {"order_id": "2", "customer_id": "c1"}))
    first, second = conv.tool_uses()
    conv.results("refunded", "refunded")
    conv.call(text("Both refunded."))
    return first, second


def test_t008_a_sequential_tool_overlapping_another(conv: Conversation, recording: Recording) -> None:
    first, second = parallel_refunds(conv)
    conv.ran(first, 1.0, 2.0)
    conv.ran(second, 1.5, 2.5)
    findings = check(recording, options={"sequential_tools": ["process_refund"]})
    assert codes(findings) == {"T008"}
    assert second["id"] in findings[0].message and findings[0].step == 1


def test_t008_one_after_the_other_or_parallel_disabled_is_fine(recording: Recording) -> None:
    conv = recording.conversation()
    first, second = parallel_refunds(conv)
    conv.ran(first, 1.0, 2.0)
    conv.ran(second, 2.0, 3.0)
    assert check(recording, whole_run=True, options={"sequential_tools": ["process_refund"]}) == []


def test_t008_disable_parallel_tool_use_exempts_the_request(recording: Recording) -> None:
    conv = recording.conversation(extra={"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}})
    first, second = parallel_refunds(conv)
    conv.ran(first, 1.0, 2.0)
    conv.ran(second, 1.5, 2.5)
    options = {"sequential_tools": ["process_refund"]}
    assert check(recording, whole_run=True, options=options) == []
    assert check(recording, whole_run=True) == []


def test_t006_an_undeclared_tool_left_without_a_result(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1 and delete c2")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}), tool_use("delete_customer", {"customer_id": "c2"}))
    conv.user(result(conv.tool_uses()[0]["id"], "Ana"))
    conv.call(text("Ana."))
    findings = check(recording)
    assert codes(findings) == {"T006"}
    assert "gets no tool_result" in findings[0].message
