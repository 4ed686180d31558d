"""Agent loops transcribed from TypeScript guides, on the official SDK, judged from their wire alone.

Each agent (tests/node/orchestration.mjs, minimal_loop.mjs, antipatterns.mjs: transcriptions with the types
stripped) runs against `harness serve` on a script of tests/node/scripts/, Polly.JS records the
HAR, and `harness check` must give exactly the verdict the original code deserves: nothing for a
correct loop, the right code for each anti-pattern, and the coordinator's parallel subagents
(`Promise.all`, no thread header) rebuilt into one thread each. Every recording is checked twice:
as a whole run from the wire alone (`--whole-run`), and with the outcome node reported
(`--outcome completed` when the agent returned, `error` when it threw), as a user who ran it would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from node_agents import SCRIPTS, NodeRun, check, requires_node, run_agent

from harness.trace import load_trace

pytestmark = requires_node

SUPPORT_QUESTION = "Can C-42 get a refund for order O-7?"


@dataclass(frozen=True)
class Case:
    script: str
    agent: str
    question: str
    answer: str | None
    """What the agent returns (stdout), or None when it throws."""
    wire: list[str]
    """Error codes of `--whole-run`, from the wire alone."""
    outcome: list[str] = field(default_factory=list)
    """Error codes once the outcome node reported is given (`--outcome`); default: same as `wire`."""
    error: str = ""
    """What the agent throws (stderr), when answer is None."""


CASES = {
    # runAgentLoop as written: parallel calls, a handler that throws (is_error: true), end_turn.
    "orchestration-runAgentLoop": Case(
        "orchestration-support", "orchestration.mjs#supportAgent", SUPPORT_QUESTION,
        "I escalated your case (ticket T-1); an agent will contact you.", wire=[], outcome=[]),
    # It throws on max_tokens before running the cut tool_use: right. From the wire alone a whole
    # run that ends on a cut answer may have returned it, so L005; told it raised, nothing.
    "orchestration-runAgentLoop-max_tokens": Case(
        "orchestration-max-tokens", "orchestration.mjs#supportAgent", SUPPORT_QUESTION, None,
        wire=["L005"], outcome=[], error="unexpected stop_reason: max_tokens"),
    # It throws on pause_turn too, where the turn must be re-sent: a real defect of the original loop.
    "orchestration-runAgentLoop-pause_turn": Case(
        "orchestration-pause-turn", "orchestration.mjs#supportAgent", SUPPORT_QUESTION, None,
        wire=["L003"], outcome=["L003"], error="unexpected stop_reason: pause_turn"),
    # The minimal agenticLoop: Promise.all over the tools, a dated pre-4.6 model id (no R005).
    "minimal-loop-agenticLoop": Case(
        "minimal-loop-tools", "minimal_loop.mjs#ask", "How many lines do README.md, setup.py and main.py have?",
        "Each file has 42 lines.", wire=[], outcome=[]),
    # It pushes the assistant turn only inside the while, so the final answer never joins
    # `messages`: a caller that keeps the conversation going sends two user turns in a row.
    "minimal-loop-agenticLoop-follow-up": Case(
        "minimal-loop-follow-up", "minimal_loop.mjs#askTwice", "How many lines does README.md have? || Is that a lot?",
        "README.md has 42 lines.\nYes, 42 lines is short.", wire=["H003"], outcome=["H003"]),
    # It only tests for tool_use, so a max_tokens cut comes back as the answer.
    "minimal-loop-agenticLoop-max_tokens": Case(
        "minimal-loop-max-tokens", "minimal_loop.mjs#ask", "How many lines does README.md have?",
        "The file README.md has 42 li", wire=["L005"], outcome=["L005"]),
    # Anti-pattern 1: "finished" in a text that comes with a tool_use ends the loop there...
    "antipattern-text-stop": Case(
        "antipattern-text-stop", "antipatterns.mjs#textStop", SUPPORT_QUESTION,
        "I finished with the customer; now I look the order up.", wire=["L002"], outcome=["L002"]),
    # ...and an end_turn without a keyword is called again with nothing new: a request that ends on
    # the assistant's answer, a prefill that claude-opus-4-8 (like every model from 4.6 on) refuses.
    "antipattern-text-no-stop": Case(
        "antipattern-text-no-stop", "antipatterns.mjs#textStop", SUPPORT_QUESTION,
        "Task complete.", wire=["L001", "R008"], outcome=["L001", "R008"]),
    # Anti-pattern 2: the cap of 10 stops the loop on a tool_use and returns as if done.
    "antipattern-cap-only": Case(
        "antipattern-cap-only", "antipatterns.mjs#capOnly", SUPPORT_QUESTION, "", wire=["L002"], outcome=["L002"]),
    # Anti-pattern 3: the tool ran, its result never joined the history, so the next request ends on
    # the assistant's tool_use: a prefill the model refuses, as well as a missing tool_result.
    "antipattern-no-tool-results": Case(
        "antipattern-no-tool-results", "antipatterns.mjs#noToolResults", SUPPORT_QUESTION,
        "I do not know what get_customer returned.", wire=["L002", "R008"], outcome=["L002", "R008"]),
}


def steps_in(script: Path) -> int:
    return sum(1 for line in script.read_text(encoding="utf-8").splitlines() if line.startswith("- "))


def assert_every_step_played(run: NodeRun, script: Path) -> None:
    # A step left unplayed means the agent stopped earlier than the script assumes, and the verdict
    # would be about another run than the one the case describes.
    assert run.server_status == 0, run.server_err
    assert f"all {steps_in(script)} steps were played" in run.server_err, run.server_err


def findings(report: dict[str, object]) -> list[tuple[str, str]]:
    found = report["findings"]
    assert isinstance(found, list)
    return sorted((f["code"], f["severity"]) for f in found)


@pytest.mark.parametrize("name", list(CASES))
def test_a_transcribed_agent_gets_the_verdict_its_code_deserves(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    case = CASES[name]
    script = SCRIPTS / f"{case.script}.yaml"
    run = run_agent(script, tmp_path, agent=case.agent, question=case.question)

    if case.answer is None:
        assert run.agent.returncode == 1, run.agent.stdout + run.agent.stderr
        assert case.error in run.agent.stderr, run.agent.stderr
    else:
        assert run.agent.returncode == 0, run.agent.stderr
        assert run.agent.stdout.strip() == case.answer, run.agent.stdout
    assert_every_step_played(run, script)

    # No warnings either: on these whole runs every finding is a verdict, not a doubt.
    _, wire_report = check(run.har, capsys, "--whole-run")
    assert findings(wire_report) == [(code, "error") for code in case.wire], wire_report["findings"]
    outcome = "completed" if case.answer is not None else "error"
    status, report = check(run.har, capsys, "--outcome", outcome)
    assert findings(report) == [(code, "error") for code in case.outcome], report["findings"]
    assert status == (1 if case.outcome else 0)


def test_the_coordinators_parallel_subagents_are_rebuilt_into_their_own_threads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # runCoordinator: a decomposition call, three runAgentLoop subagents under Promise.all (two
    # of them with the same system prompt and brief), a consolidation call. Nothing on the wire
    # links the decomposition to the consolidation (each is a fresh one-message conversation), so
    # the right reconstruction is five threads: those two alone, and one per subagent.
    script = SCRIPTS / "orchestration-coordinator.yaml"
    run = run_agent(script, tmp_path, agent="orchestration.mjs#runCoordinator", question=SUPPORT_QUESTION)

    assert run.agent.returncode == 0, run.agent.stderr
    assert run.agent.stdout.strip() == "Customer C-42 verified by all three subagents; the refund may be requested."
    assert_every_step_played(run, script)
    # The scripted model's delay made the subagents' answers arrive out of order: the case is concurrent.
    served = [line.split("-> step ")[1].split()[0] for line in run.server_err.splitlines() if "-> step " in line]
    assert served != sorted(served, key=int), run.server_err

    for options in (["--whole-run"], ["--outcome", "completed"]):
        status, report = check(run.har, capsys, *options)
        # No M001: every subagent starts from its brief, not from the coordinator's history.
        assert (report["threads"], report["calls"], findings(report), status) == (5, 8, [], 0), report["findings"]

    trace = load_trace(run.har, whole_run=True)
    systems = [str(trace.calls[t.calls[0]].request["system"]).split("\n")[0] for t in trace.threads]
    assert sorted(systems) == sorted([
        "You are a coordinator. Return JSON with the tasks for subagents.",
        "You are a verification agent.", "You are a refunds agent.", "You are a verification agent.",
        "Consolidate the subagents' results into one coherent answer.",
    ])
    subagents = [t for t in trace.threads if len(t.calls) == 2]
    assert len(subagents) == 3
    for thread in subagents:
        first, second = (trace.calls[i] for i in thread.calls)
        # The thread's second call re-sends its own first answer and answers its own tool_use id:
        # a thread stitched from two subagents' calls would carry the other one's id.
        assert second.request["system"] == first.request["system"]
        assert second.messages[:2] == [first.messages[0], {"role": "assistant", "content": first.content}]
        assert [b["tool_use_id"] for b in second.messages[2]["content"]] == [first.content[0]["id"]]


def test_a_subagent_retried_while_its_siblings_run_keeps_one_call_and_one_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # The first subagent to ask gets a 529 with retry-after 0.3s; the SDK retries it after its
    # siblings' requests went out, so the retry is not next to its failed attempt in the HAR.
    script = SCRIPTS / "orchestration-coordinator-retry.yaml"
    run = run_agent(script, tmp_path, agent="orchestration.mjs#runCoordinator", question=SUPPORT_QUESTION)

    assert run.agent.returncode == 0, run.agent.stderr
    assert run.agent.stdout.strip() == "No subagent found a problem."
    assert_every_step_played(run, script)
    status, report = check(run.har, capsys, "--outcome", "completed")
    assert (report["threads"], report["calls"], findings(report), status) == (5, 5, [], 0), report["findings"]
    trace = load_trace(run.har, whole_run=True)
    retried = [c for c in trace.calls if len(c.attempts) > 1]
    assert [[a.status for a in c.attempts] for c in retried] == [[529, 200]]
