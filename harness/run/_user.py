"""Simulated users for multi-turn tasks: after each final answer of the agent, the user's next turn.

A scripted user replies from its list. A persona user is played by a model that reads the
conversation and answers through a forced tool, `user_turn` (`{message, done}`); its calls go
through the run's session as the harness's own (`x-harness-role: user`), so they are recorded,
replayed and scripted like the agent's, and never enter the agent's trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._ask import ask, shorten
from ..agents._task import UserReply
from ..errors import HarnessError, MalformedReply
from ..scenario._model import PersonaUser, Scenario, ScriptedUser

if TYPE_CHECKING:
    import anthropic

    from ..transport import Session

Turn = tuple[str, str]
"""One turn of the conversation as the user had it: who spoke (`user`, `assistant`), and the text."""

USER_TOOL: dict[str, Any] = {
    "name": "user_turn",
    "description": "Send the user's next message to the assistant, or end the conversation.",
    "input_schema": {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "What the user types next (omit when done)."},
            "done": {"type": "boolean", "description": "true when the user has what they came for, or gives up."},
        },
        "required": ["done"],
        "additionalProperties": False,
    },
}

USER_SYSTEM = (
    "You play a user talking to an AI assistant, to test it. Stay in character: write only what this "
    "user would type, in their words, and never help the assistant do its job. Who you are and what "
    "you want:\n\n{persona}\n\nAnswer with the user_turn tool: the user's next message, or done: true "
    "once the user has what they came for (or would give up)."
)


class ScriptedReplies:
    """The replies of a `user: {script: [...]}`, in order; None once they are used up."""

    def __init__(self, spec: ScriptedUser) -> None:
        self._replies = list(spec.script)

    def __call__(self, conversation: Sequence[Turn]) -> str | None:
        return self._replies.pop(0) if self._replies else None


class PersonaReplies:
    """A model playing the user of a `user: {persona, model, max_turns}`."""

    def __init__(self, spec: PersonaUser, model: str, client: Callable[[], anthropic.Anthropic]) -> None:
        """`model`: the spec's, or the scenario's; `client`: the session's harness client for role
        `user`, made on first use (a run whose agent never finishes a turn makes no user call)."""
        self.spec = spec
        self.model = model
        self._client = client
        self.turns = 0
        self.failures: list[HarnessError] = []
        """Malformed replies: the harness's failure, not the agent's, even though the agent's loop
        is what raised it."""

    def __call__(self, conversation: Sequence[Turn]) -> str | None:
        if self.turns >= self.spec.max_turns:
            return None
        try:
            asked = ask(
                self._client(),
                who="the simulated user",
                model=self.model,
                system=USER_SYSTEM.format(persona=self.spec.persona),
                prompt=transcript(conversation),
                tool=USER_TOOL,
                max_tokens=self.spec.max_tokens,
                effort=self.spec.effort,
            )
        except MalformedReply as exc:
            self.failures.append(exc)
            raise
        done, message = asked.answer.get("done"), asked.answer.get("message")
        if done is True:
            return None
        if done is not False or not isinstance(message, str) or not message.strip():
            failure = MalformedReply(
                f"the simulated user ({self.model}) answered user_turn without a message and without "
                f"done: true; raw reply: {shorten(asked.raw)}"
            )
            self.failures.append(failure)
            raise failure
        self.turns += 1
        return message


def transcript(conversation: Sequence[Turn]) -> str:
    """The conversation as the simulated user reads it, oldest turn first."""
    lines = [f"{'USER' if who == 'user' else 'ASSISTANT'}: {text}" for who, text in conversation]
    return "The conversation so far:\n\n" + "\n\n".join(lines) + "\n\nWrite the user's next turn."


def simulated_user(scenario: Scenario, session: Session) -> ScriptedReplies | PersonaReplies | None:
    """The scenario's simulated user for one run, its model calls made through `session`."""
    spec = scenario.user
    if spec is None:
        return None
    if isinstance(spec, ScriptedUser):
        return ScriptedReplies(spec)
    return PersonaReplies(spec, spec.model or scenario.model, lambda: session.harness_client("user"))


def user_failures(user: UserReply | None) -> list[HarnessError]:
    """What went wrong with the simulated user's replies in the run."""
    return list(user.failures) if isinstance(user, PersonaReplies) else []
