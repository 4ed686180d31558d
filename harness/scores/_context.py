"""What a scorer reads: the finished run, with the case it ran and the task it was given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # run results hold scores: importing them here at run time would be a cycle
    import anthropic

    from ..results._model import Usage
    from ..trace._model import Outcome, Trace


@dataclass(frozen=True)
class ToolCall:
    """A tool_use block the model sent, in the order of the trace's calls."""

    name: str
    input: Any


def tool_calls(trace: Trace) -> list[ToolCall]:
    """Every tool_use the model asked for, across threads, in call order."""
    return [
        ToolCall(str(block.get("name")), block.get("input"))
        for call in trace.calls
        for block in call.content
        if block.get("type") == "tool_use"
    ]


@dataclass(frozen=True)
class ScoreContext:
    """One finished run, as every scorer sees it."""

    scenario: str
    scenario_path: str
    """The scenario file; a scorer's own helpers (`custom` comparators) are imported beside it."""
    case: str | None
    """The case's id, None for a scenario without cases."""
    vars: Mapping[str, Any]
    """The case's variables (empty without cases)."""
    model: str
    effort: str | None
    mode: str
    prompt: str | list[str]
    """The user's request as sent: one message, or the user turns in order."""
    system: str | None
    trace: Trace
    outcome: Outcome | None
    usage: Usage
    cost_usd: float | None
    """None when a model of the run has no price."""
    conversation: tuple[tuple[str, str], ...] = ()
    """With a simulated user: the conversation as the user had it, `("user" | "assistant", text)`
    turns, oldest first, the last the agent's final answer. Empty without one."""
    harness_client: Callable[[Literal["judge", "user"]], anthropic.Anthropic] | None = None
    """The run's client for the harness's own calls (`Session.harness_client`): a judge calls its
    model through it, so the calls are recorded, replayed and scripted with the run. None when the
    run is scored outside `harness run`."""

    @property
    def final_text(self) -> str | None:
        return self.outcome.final_text if self.outcome else None

    @property
    def steps(self) -> int:
        """Model calls made."""
        return len(self.trace.calls)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return tool_calls(self.trace)
