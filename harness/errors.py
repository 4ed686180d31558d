"""Errors the harness raises, drawn once.

    HarnessError                 anything the harness refuses to do, with a message that points at the fix
    ├── UsageError               a harness function called with arguments that cannot work together
    │                            (also a ValueError: a mode without its cassette, an unknown record mode)
    ├── InputError               a file the user gave cannot be read (names file, line, key, expectation)
    │   ├── CassetteError        a recording that is not readable traffic
    │   │   └── NotARecording    a file no recording format claims (a folder scan skips and lists it)
    │   ├── ScenarioError        a scenario file that does not validate
    │   └── ScriptError          a scripted model's script that does not validate
    ├── NoMatchingInteraction    replay: a request no cassette holds (shows the diff to the closest)
    ├── UnplayedInteractions     replay/scripted: recorded or scripted answers left unused
    ├── ScriptExhausted          scripted: requests came after the script had no step left for them
    ├── DeadlinePassed           a model call refused: the run's deadline (limits.wall_time_s, --timeout) passed
    ├── SecretLeak               record: the written file would contain the API key; nothing kept
    ├── MissingApiKey            live/record: ANTHROPIC_API_KEY is not set
    ├── MalformedReply           a judge or simulated user answered without the structured reply asked
    │                            for (the message shows the raw reply)
    └── ToolUseNotFound          task.run_tool without an id: no answer of the run asks for that call
                                 (also a LookupError)

`harness` commands print any HarnessError as one line and exit 2; anything else is a defect of the
harness and keeps its traceback.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base class: the harness refused, and the message says how to fix it."""


class UsageError(HarnessError, ValueError):
    """A harness function was called with arguments that cannot work together.

    A ValueError too, as Python code expects of a bad argument.
    """


class InputError(HarnessError):
    """A file given by the user cannot be used."""

    def __init__(self, path: str, problem: str, *, line: int | None = None, key: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.line = line
        self.key = key
        where = path if line is None else f"{path}:{line}"
        if key:
            where += f": {key}"
        super().__init__(f"{where}: {problem}")


class CassetteError(InputError):
    """A recording that cannot be read as HTTP traffic."""


class NotARecording(CassetteError):
    """A file that no recording format claims: named directly it is an error, met in a folder it is skipped."""


class ScenarioError(InputError):
    """A scenario file that does not validate."""


class ScriptError(InputError):
    """A script for the scripted model that does not validate."""


class NoMatchingInteraction(HarnessError):
    """Replay got a request that no recorded interaction matches."""


class UnplayedInteractions(HarnessError):
    """Recorded or scripted answers were left unused at the end of a run."""


class ScriptExhausted(HarnessError):
    """Requests arrived after the script had no step left for them."""


class DeadlinePassed(HarnessError):
    """A model call came after its run's deadline (`limits.wall_time_s`, `--timeout`); it was refused."""


class SecretLeak(HarnessError):
    """A file about to be written contains the API key; it was not kept."""


class MissingApiKey(HarnessError):
    """A mode that talks to the API was chosen without ANTHROPIC_API_KEY."""


class MalformedReply(HarnessError):
    """The harness's own model (a judge, a simulated user) did not give the structured reply asked for."""


class ToolUseNotFound(HarnessError, LookupError):
    """`task.run_tool` was given no tool_use id, and no answer of the run asks for that tool call."""

    def __init__(self, message: str, *, open_uses: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.open_uses = open_uses
        """The tool_use blocks still open, as `name id`: what the call could have answered."""
