"""Deliberately buggy agents: the reference loop with one classic mistake each, to prove each rule catches it.

Use them as `harness.agents.buggy.<name>` (or `agent: buggy.<name>` in a scenario). Each one is a
subclass of the reference loop with one hook overridden, a few lines long; `@buggy_agent(CODE)` turns
the class into an agent named after it, whose `breaks` is the code of the rule (docs/rules.md) its
mistake violates (the class is named in lower case because that name is the agent's).
`BUGGY_AGENTS` lists them all by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
from anthropic.types import Message, ToolUseBlock

from ..trace._model import Outcome
from ._reference import Action, AgentLoop, Coordinator, text_of
from ._task import Task, ToolResult

__all__ = [
    "BUGGY_AGENTS",
    "BuggyAgent",
    "buggy_agent",
    "compaction_without_beta",
    "continues_after_end_turn",
    "dated_model_id",
    "done_when_text",
    "drops_parallel_results",
    "ends_on_pause_turn",
    "error_without_is_error",
    "ignores_circuit_breaker",
    "ignores_step_limit",
    "ignores_token_budget",
    "ignores_unknown_tool",
    "inherits_coordinator_history",
    "iteration_cap_only",
    "keeps_only_text",
    "legacy_output_format",
    "parallel_side_effects",
    "refund_without_verification",
    "resends_bad_request",
    "results_in_separate_messages",
    "retries_failing_tool",
    "retries_refusal",
    "runs_cut_tool_use",
    "skips_approval_gate",
    "strict_inside_schema",
    "strips_thinking",
    "text_before_results",
    "top_level_effort",
    "truncates_old_results",
    "unknown_stop_as_success",
    "unknown_tool_as_success",
]

Runner = type[AgentLoop] | type[Coordinator]


class BuggyAgent:
    """An agent `(client, task) -> Outcome` that commits one mistake; `breaks` is the rule's code."""

    def __init__(self, name: str, runner: Runner, breaks: str) -> None:
        self.name = name
        self.runner = runner
        self.breaks = breaks
        self.__doc__ = runner.__doc__
        self.__name__ = name
        self.__qualname__ = name

    def __call__(self, client: anthropic.Anthropic, task: Task) -> Outcome:
        return self.runner(task).run(client)

    def __repr__(self) -> str:
        return f"<buggy agent {self.name} breaks {self.breaks}>"


BUGGY_AGENTS: dict[str, BuggyAgent] = {}
"""Every buggy agent by name."""


def buggy_agent(breaks: str) -> Callable[[Runner], BuggyAgent]:
    """Turn a loop class into a buggy agent named after the class, that breaks rule `breaks`."""

    def register(runner: Runner) -> BuggyAgent:
        agent = BuggyAgent(runner.__name__, runner, breaks)
        BUGGY_AGENTS[agent.name] = agent
        return agent

    return register


# -- T: tool protocol ------------------------------------------------------------------------------


@buggy_agent("T001")
class drops_parallel_results(AgentLoop):
    """Answers only the first of several parallel tool_use blocks.

    A response may ask for several tools at once; every one of them needs its result, or the API
    refuses the next request and the model reasons on half the data.
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        return super().result_blocks(tool_uses, results)[:1]


@buggy_agent("T002")
class results_in_separate_messages(AgentLoop):
    """Sends each tool_result in a user message of its own.

    All results of one turn belong in the single user message right after it.
    """

    def add_tool_results(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> Outcome | None:
        stop = super().add_tool_results(tool_uses, results)
        blocks = self.messages.pop()["content"]
        self.messages.extend({"role": "user", "content": [block]} for block in blocks)
        return stop


@buggy_agent("T003")
class text_before_results(AgentLoop):
    """Puts its own text before the tool_results.

    In the user message that answers a turn, the tool_result blocks come first.
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        return [{"type": "text", "text": "Here is what the tools returned:"},
                *super().result_blocks(tool_uses, results)]


@buggy_agent("T005")
class error_without_is_error(AgentLoop):
    """Returns a tool's failure as if it were a normal result, without `is_error`.

    A failed tool's result carries is_error: true, so that the model knows to correct course.
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        blocks = super().result_blocks(tool_uses, results)
        for block in blocks:
            block.pop("is_error", None)
        return blocks


@buggy_agent("T006")
class ignores_unknown_tool(AgentLoop):
    """Gives no tool_result for a tool it has no handler for.

    A tool the model invented still gets a result: an error saying the tool is unknown.
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        blocks = super().result_blocks(tool_uses, results)
        return [block for use, block in zip(tool_uses, blocks, strict=True) if use.name in self.task.handlers]


@buggy_agent("T006")
class unknown_tool_as_success(AgentLoop):
    """Answers a tool it has no handler for as if it had run: a `null` result without `is_error`.

    A dispatcher with a do-nothing default tells the model that a tool it invented worked; the
    answer to an unknown tool is an error result.
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        blocks = super().result_blocks(tool_uses, results)
        for use, block in zip(tool_uses, blocks, strict=True):
            if use.name not in self.task.handlers:
                block["content"] = "null"
                block.pop("is_error", None)
        return blocks


@buggy_agent("T007")
class retries_failing_tool(AgentLoop):
    """Keeps going however many tool errors come in a row.

    A tool that failed three times in a row will likely fail again; a loop without that limit
    can retry forever.
    """

    def tool_error_limit(self) -> int | None:
        return None


@buggy_agent("T008")
class parallel_side_effects(AgentLoop):
    """Runs every tool of a turn concurrently, the ones with side effects too.

    Tools whose order matters or that have side effects run one at a time (or the request sets
    disable_parallel_tool_use).
    """

    def sequential_tools(self) -> frozenset[str]:
        return frozenset()


# -- H: history integrity --------------------------------------------------------------------------


@buggy_agent("H001")
class strips_thinking(AgentLoop):
    """Rebuilds the assistant message by hand, leaving the thinking blocks out.

    The response's content goes into the history whole: thinking blocks keep their signatures,
    and a turn rebuilt by hand loses them.
    """

    def assistant_message(self, response: Message) -> dict[str, Any]:
        message = super().assistant_message(response)
        message["content"] = [b for b in message["content"] if b["type"] not in {"thinking", "redacted_thinking"}]
        return message


@buggy_agent("H001")
class keeps_only_text(AgentLoop):
    """Keeps only the text of each answer in the history (drops compaction and every other block).

    Keeping only the text of an answer drops its compaction and server tool blocks, which the
    API needs back as they came.
    """

    def assistant_message(self, response: Message) -> dict[str, Any]:
        return {"role": "assistant", "content": text_of(response)}


@buggy_agent("H002")
class truncates_old_results(AgentLoop):
    """Cuts old tool_results out of the history it keeps, client-side, with nothing declared.

    Editing old results in place destroys context for good; shrinking the history belongs to a
    declared projection or to server-side context management.
    """

    def history(self) -> list[dict[str, Any]]:
        for message in self.messages[:-1]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result":
                    block["content"] = "[old result removed]"
        return super().history()


# -- L: loop control -------------------------------------------------------------------------------


@buggy_agent("L002")
class done_when_text(AgentLoop):
    """Decides the task is done when the answer has text, whatever the stop_reason.

    A response can hold text and tool_use blocks together: text is no sign that the task is
    done, the stop_reason is.
    """

    def after_response(self, response: Message) -> Action:
        action = super().after_response(response)
        if text_of(response):
            return Outcome(status="completed", reason="the answer has text", final_text=text_of(response))
        return action


@buggy_agent("L001")
class continues_after_end_turn(AgentLoop):
    """Calls the model once more after `end_turn`, with no new human turn, "to be sure it is done".

    end_turn means the model has finished: the loop stops there.
    """

    double_checked = False

    def on_end_turn(self, response: Message) -> Action:
        if not self.double_checked:
            self.double_checked = True
            return None
        return super().on_end_turn(response)


@buggy_agent("L003")
class ends_on_pause_turn(AgentLoop):
    """Takes `pause_turn` for the end of the task and returns the partial text.

    pause_turn means the server paused a long turn; the loop calls again with the paused content
    appended to resume it.
    """

    def on_pause_turn(self, response: Message) -> Action:
        return Outcome(status="completed", reason="paused", final_text=text_of(response))


@buggy_agent("L004")
class retries_refusal(AgentLoop):
    """Re-sends the refused request unchanged, hoping for another answer.

    A refusal is not retried in a loop: log it, tell the user clearly and stop.
    """

    retried = False

    def on_refusal(self, response: Message) -> Action:
        if not self.retried:
            self.retried = True
            self.messages.pop()
            return None
        return super().on_refusal(response)


@buggy_agent("L005")
class runs_cut_tool_use(AgentLoop):
    """Runs the tool_use of a response cut by `max_tokens`, whose input may be truncated.

    max_tokens is an error to handle (raise max_tokens or split the task): the input of a cut
    tool_use may be truncated.
    """

    def on_max_tokens(self, response: Message) -> Action:
        return self.on_tool_use(response)


@buggy_agent("L006")
class unknown_stop_as_success(AgentLoop):
    """Returns success for a stop_reason it does not know (e.g. `model_context_window_exceeded`).

    An unexpected stop_reason is an error, never a success.
    """

    def on_other(self, response: Message) -> Action:
        return Outcome(status="completed", reason=str(response.stop_reason), final_text=text_of(response))


# -- B: limits -------------------------------------------------------------------------------------


@buggy_agent("B004")
class iteration_cap_only(AgentLoop):
    """Uses the iteration cap as the stop and reports the cut run as completed.

    An iteration cap is a safety net, not the way a loop stops: a run it cuts ends with the model
    still asking for tools, and must say the task is unfinished.
    """

    def stopped(self, limit: str, reason: str) -> Outcome:
        return Outcome(status="completed", reason="done", final_text=self.last_text)


@buggy_agent("B001")
class ignores_step_limit(AgentLoop):
    """Has no step limit: it loops for as long as the model keeps asking for tools.

    A step limit turns an endless loop into an error you can see.
    """

    def step_limit(self) -> int | None:
        return None


@buggy_agent("B002")
class ignores_token_budget(AgentLoop):
    """Never adds up the tokens it spends, so the budget never stops it.

    A token budget caps what a task may spend: add up input, output and both cache fields after
    every call.
    """

    def token_budget(self) -> int | None:
        return None


# -- R: request shape ------------------------------------------------------------------------------


@buggy_agent("R001")
class top_level_effort(AgentLoop):
    """Sends `effort` at the top level of the request.

    effort is generally available and goes in output_config, not at the top level.
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        output_config = params.pop("output_config", {})
        params["effort"] = output_config.pop("effort", "high")
        if output_config:
            params["output_config"] = output_config
        return params


@buggy_agent("R002")
class compaction_without_beta(AgentLoop):
    """Asks for server-side compaction without its beta header.

    Server-side compaction needs its beta header, compact-2026-01-12.
    """

    def headers(self, params: dict[str, Any]) -> dict[str, str]:
        return {k: v for k, v in self.task.extra_headers.items() if k.lower() != "anthropic-beta"}


@buggy_agent("R004")
class strict_inside_schema(AgentLoop):
    """Puts `strict: true` inside the tool's `input_schema`.

    strict: true is a field of the tool itself, next to a schema with additionalProperties: false
    and required; inside input_schema it is not where the API reads it.
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        params["tools"] = [
            {**{k: v for k, v in tool.items() if k != "strict"},
             "input_schema": {**tool["input_schema"], "strict": True}}
            for tool in params.get("tools", [])
        ]
        return params


@buggy_agent("R005")
class dated_model_id(AgentLoop):
    """Pins a 4.6+ model with a date suffix.

    From generation 4.6 on, model ids have no date suffix.
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        params["model"] = f"{params['model']}-20260501"
        return params


@buggy_agent("R006")
class legacy_output_format(AgentLoop):
    """Asks for structured output with the legacy top-level `output_format`.

    Structured output goes in output_config.format; the legacy output_format and its beta header
    only work during a transition period.
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        output_config = params.pop("output_config", {})
        params["output_format"] = output_config.pop("format", {"type": "json_schema", "schema": {"type": "object"}})
        if output_config:
            params["output_config"] = output_config
        return params


# -- E: errors -------------------------------------------------------------------------------------


@buggy_agent("E002")
class resends_bad_request(AgentLoop):
    """Re-sends a request the API rejected with 400, unchanged.

    A validation error is fixed, not retried: only transient errors are.
    """

    def call_model(self, client: anthropic.Anthropic) -> Message:
        try:
            return super().call_model(client)
        except anthropic.BadRequestError:
            return super().call_model(client)


# -- M: multi-agent --------------------------------------------------------------------------------


@buggy_agent("M001")
class inherits_coordinator_history(Coordinator):
    """Starts every subagent from the coordinator's conversation instead of a clean brief.

    Subagents do not inherit the coordinator's history: everything they need is written into
    their brief.
    """

    def subagent_history(self) -> list[dict[str, Any]]:
        return list(self.main.messages)


# -- W: workflow policies --------------------------------------------------------------------------


@buggy_agent("W001")
class refund_without_verification(AgentLoop):
    """Trusts the prompt to verify the customer: its dispatcher has no prerequisite guard.

    A prerequisite is enforced by the dispatcher, not left to the model: process_refund without
    get_customer first.
    """

    def policies(self) -> dict[str, Any]:
        return {k: v for k, v in self.task.policies.items() if k != "prerequisites"}


@buggy_agent("W002")
class skips_approval_gate(AgentLoop):
    """Runs an irreversible tool without waiting for the approval tool.

    An irreversible action is proposed, approved, and only then run.
    """

    def policies(self) -> dict[str, Any]:
        return {k: v for k, v in self.task.policies.items() if k != "approvals"}


@buggy_agent("W003")
class ignores_circuit_breaker(AgentLoop):
    """Keeps calling a tool whose circuit is open.

    A tool that keeps failing can trap the agent in endless retries; an open circuit rejects
    calls at once.
    """

    def policies(self) -> dict[str, Any]:
        return {k: v for k, v in self.task.policies.items() if k != "circuit_breakers"}
