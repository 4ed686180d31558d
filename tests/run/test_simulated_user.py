"""Simulated users: the next user turn after each final answer, scripted or played by a model whose
calls are recorded, replayed and scripted like the agent's but kept out of its trace."""

from __future__ import annotations

import pytest
from run_support import LOOKUP, Project

from harness.cli import main
from harness.results import read_results
from harness.trace import load_trace

PERSONA = f"""name: chat
prompt: Where is order O1?
{LOOKUP}user:
  persona: You are customer C1. Ask where O1 is, then ask when it arrived. Then you are done.
  model: claude-haiku-4-5
  max_turns: 3
expect:
  outcome: completed
  final_text: {{contains: Monday}}
mode: scripted
script:
  - tool_use: {{name: lookup_order, input: {{order_id: O1}}}}
  - text: Order O1 was delivered.
  - {{thread: user, tool_use: {{name: user_turn, input: {{message: When did it arrive?, done: false}}}}}}
  - text: It arrived on Monday.
  - {{thread: user, tool_use: {{name: user_turn, input: {{done: true}}}}}}
"""


def run(project: Project, *args: str) -> int:
    return main(["run", *args, "--fresh", "--results", str(project.results), "--report", str(project.root / "report")])


@pytest.mark.parametrize("agent", ["reference", "reference-async"])
def test_a_persona_user_converses_and_its_calls_stay_out_of_the_agents_trace(project: Project, agent: str) -> None:
    path = project.scenario("chat", f"agent: {agent}\n{PERSONA}")
    assert run(project, str(path), "--record") == 0
    [result] = read_results(project.results)
    assert result.status == "passed", result.reasons()
    assert result.trace is not None and result.harness_trace is not None
    # The agent's trace: one conversation of three calls, the user's reply a human turn in it.
    assert result.steps == 3 and len(result.trace.threads) == 1
    last = result.trace.calls[-1].request["messages"]
    assert [m["content"] for m in last if m["role"] == "user" and isinstance(m["content"], str)] == [
        "Where is order O1?", "When did it arrive?"]
    # The user's own calls: marked, with its model, and shown the conversation as the user had it.
    own = result.harness_trace.exchanges
    assert [e.harness_role for e in own] == ["user", "user"]
    assert own[0].request_body["model"] == "claude-haiku-4-5"
    assert own[0].request_body["tool_choice"] == {"type": "tool", "name": "user_turn"}
    prompt = own[1].request_body["messages"][0]["content"]
    assert "USER: Where is order O1?\n\nASSISTANT: Order O1 was delivered.\n\nUSER: When did it arrive?" in prompt
    assert prompt.index("ASSISTANT: It arrived on Monday.") > prompt.index("USER: When did it arrive?")

    # Recorded into the cassette, marked, and replayed offline with the agent's answers.
    cassette = project.root / "cassettes" / "chat.yaml"
    assert cassette.read_text().count("x-harness-role:") == 2
    assert run(project, str(path), "--mode", "replay") == 0
    [replayed] = read_results(project.results)
    assert replayed.status == "passed" and replayed.steps == 3
    assert replayed.harness_trace is not None and len(replayed.harness_trace.calls) == 2

    # Reading the cassette as a recording: the user's calls are noted, not checked as the agent's.
    trace = load_trace(cassette)
    assert len(trace.calls) == 3 and len(trace.threads) == 1
    assert "2 simulated-user call(s) are the harness's own (header x-harness-role) and were not checked" in trace.notes


def test_a_changed_persona_no_longer_replays(project: Project) -> None:
    path = project.scenario("chat", PERSONA)
    assert run(project, str(path), "--record") == 0
    path.write_text(path.read_text().replace("Then you are done.", "Then say thanks."))
    assert run(project, str(path), "--mode", "replay") == 2
    [result] = read_results(project.results)
    assert result.status == "error" and result.error is not None
    assert "no recorded interaction matches" in result.error and "system" in result.error


def test_max_turns_ends_the_conversation_without_asking_the_user_again(project: Project) -> None:
    body = PERSONA.replace("max_turns: 3", "max_turns: 1").replace(
        "  - {thread: user, tool_use: {name: user_turn, input: {done: true}}}\n", "")
    assert run(project, str(project.scenario("chat", body))) == 0
    [result] = read_results(project.results)
    assert result.status == "passed" and result.harness_trace is not None
    assert len(result.harness_trace.calls) == 1


def test_a_malformed_user_reply_is_a_harness_error_showing_the_raw_reply(project: Project) -> None:
    body = PERSONA.replace(
        "{thread: user, tool_use: {name: user_turn, input: {message: When did it arrive?, done: false}}}",
        "{thread: user, text: 'Sure! As the customer I would ask: when did it arrive?'}")
    assert run(project, str(project.scenario("chat", body))) == 2
    [result] = read_results(project.results)
    assert result.status == "error" and result.error is not None
    assert "the simulated user (claude-haiku-4-5) did not call the user_turn tool" in result.error
    assert "raw reply: " in result.error and "As the customer I would ask" in result.error


def test_a_user_turn_without_message_or_done_is_malformed(project: Project) -> None:
    body = PERSONA.replace("input: {message: When did it arrive?, done: false}", "input: {done: false}")
    assert run(project, str(project.scenario("chat", body))) == 2
    [result] = read_results(project.results)
    assert result.error is not None and "answered user_turn without a message and without done: true" in result.error


def test_a_scripted_user_replies_from_its_list_and_calls_no_model(project: Project) -> None:
    body = f"""name: chat
prompt: Where is order O1?
{LOOKUP}user:
  script: [When did it arrive?]
expect:
  final_text: {{contains: Monday}}
mode: scripted
script:
  - tool_use: {{name: lookup_order, input: {{order_id: O1}}}}
  - text: Order O1 was delivered.
  - text: It arrived on Monday.
"""
    assert run(project, str(project.scenario("chat", body))) == 0
    [result] = read_results(project.results)
    assert result.status == "passed" and result.steps == 3 and result.harness_trace is None


@pytest.mark.parametrize(
    ("user", "says"),
    [
        ("{persona: a customer, scrip: [x]}",
         "user.scrip: unknown key; valid keys: persona, model, effort, max_turns, max_tokens"),
        ("{script: [hi], max_turns: 2}", "user.max_turns: unknown key; valid keys: script"),
        ("{persona: a customer, max_turns: 0}", "user.max_turns: Input should be greater than or equal to 1"),
        ("{script: []}", "user.script: List should have at least 1 item"),
    ],
)
def test_a_bad_user_key_names_its_line_and_the_valid_keys(
    project: Project, capsys: pytest.CaptureFixture[str], user: str, says: str
) -> None:
    path = project.scenario("chat", f"prompt: hi\nuser: {user}\n")
    assert run(project, str(path)) == 2
    assert f"{path}:3: {says}" in capsys.readouterr().err


def test_an_agent_in_any_language_asks_the_simulated_user_over_http(project: Project) -> None:
    body = """name: chat
agent: 'tests.run.run_support:http_conversing_agent'
prompt: Where is order O1?
user:
  persona: You are customer C1. Ask when it arrived, then you are done.
expect:
  final_text: {equals: It arrived on Monday.}
mode: scripted
script:
  - text: Order O1 was delivered.
  - {thread: user, tool_use: {name: user_turn, input: {message: When did it arrive?, done: false}}}
  - text: It arrived on Monday.
  - {thread: user, tool_use: {name: user_turn, input: {done: true}}}
"""
    assert run(project, str(project.scenario("chat", body))) == 0
    [result] = read_results(project.results)
    assert result.status == "passed", result.reasons()
    assert result.steps == 2 and result.harness_trace is not None and len(result.harness_trace.calls) == 2
    # The scenario's model plays the user when the persona names none.
    assert result.harness_trace.exchanges[0].request_body["model"] == "claude-sonnet-5"


def test_each_case_meets_its_own_simulated_user(project: Project) -> None:
    body = """name: chat
prompt: Where is order O1?
cases:
  - {id: early, vars: {ask: When did it arrive?}}
  - {id: late, vars: {ask: Why was it late?}}
user:
  script: ['{{ ask }}']
mode: scripted
script:
  - text: Order O1 was delivered.
  - text: Noted.
"""
    assert run(project, str(project.scenario("chat", body))) == 0
    asked = {}
    for result in read_results(project.results):
        assert result.trace is not None
        asked[result.case] = result.trace.calls[-1].request["messages"][-1]["content"]
    assert asked == {"early": "When did it arrive?", "late": "Why was it late?"}
