"""A run's deadline, enforced: `limits.wall_time_s` (or `--timeout`) ends a run that overruns it.

The run's clock starts where rule B003 starts it, at its first model call (at the agent's start
while it has made none), and B003's margin applies, so a call the harness refuses is always one
B003 names. From the deadline (and that margin) on, every new model call of the run is refused. A
call already under way is let finish; the agent then has `GRACE_S` to return. One still running
after that is stopped: a command is killed with every process it started, a Python agent (a thread
cannot be killed) is left behind, its later calls refused, and the run ends as outcome `limit`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import anthropic

from ..agents import Task
from ..checks._limits import deadline_slack
from ..errors import DeadlinePassed
from ..results import ExpectationResult
from ..trace import Outcome
from ..transport import Capture

GRACE_S = 2.0
"""How long an agent has past its deadline (and past the end of a call under way then) to return."""
LONGEST_CALL_S = 600.0
"""A call under way at the deadline holds the stop back at most this long: the SDK's own request timeout."""
_KILLED_RETURN_S = 5.0
"""How long a stopped agent (a killed command) is waited for to hand back its run."""

T = TypeVar("T")

_left_running: list[threading.Thread] = []
"""Python agents a deadline stopped but could not end (a thread cannot be killed)."""


def agents_left_running() -> bool:
    """Whether an agent the deadline stopped is still running in this process."""
    _left_running[:] = [thread for thread in _left_running if thread.is_alive()]
    return bool(_left_running)


class CallRefused(DeadlinePassed, anthropic.AnthropicError):
    """A call past the deadline as the SDK must see it: an AnthropicError, which the SDK hands to the
    agent as is instead of retrying it. Over the run's endpoint it is a 500 with `x-should-retry: false`."""


@dataclass(frozen=True)
class Deadline:
    """How long a run may take, and which setting said so."""

    seconds: float
    setting: str
    """`limits.wall_time_s` (the scenario's) or `timeout` (the command line's `--timeout`)."""

    @staticmethod
    def of(wall_time_s: float | None, timeout_s: float | None) -> Deadline | None:
        """The tighter of the scenario's wall time and the command's timeout, if either is set."""
        given = [Deadline(s, name)
                 for s, name in ((wall_time_s, "limits.wall_time_s"), (timeout_s, "timeout")) if s is not None]
        return min(given, key=lambda d: d.seconds) if given else None

    @property
    def said(self) -> str:
        """`limits.wall_time_s=1s` or `--timeout 60s`: the setting as the user wrote it."""
        if self.setting == "limits.wall_time_s":
            return f"limits.wall_time_s={self.seconds:g}s"
        return f"--timeout {self.seconds:g}s"


class DeadlineGate:
    """One run's deadline: admits or refuses its model calls, and stops the agent if it overruns."""

    def __init__(self, deadline: Deadline, task: Task, capture: Capture) -> None:
        self.deadline = deadline
        self._task = task
        self._capture = capture
        self._lock = threading.Lock()
        self.refused: list[float] = []
        """When (seconds into the run) each refused call was tried."""
        self.stopped_at: float | None = None
        """When the harness stopped the agent, if it had to."""

    @property
    def enforced(self) -> bool:
        """The harness had to act: a call was refused or the agent stopped."""
        return bool(self.refused) or self.stopped_at is not None

    def elapsed(self) -> float:
        """Seconds on the run's clock: since its first model call, or since the agent started."""
        first = self._capture.first_started_at
        return time.time() - first if first is not None else self._task.elapsed()

    def admit(self) -> None:
        """Before a model call goes out: DeadlinePassed once the deadline is behind."""
        elapsed = self.elapsed()
        # B003's own margin: a call refused here is always one B003 names.
        if elapsed <= self.deadline.seconds + deadline_slack(self.deadline.seconds):
            return
        with self._lock:
            self.refused.append(elapsed)
        raise CallRefused(
            f"the run's deadline has passed ({elapsed:.1f}s into the run, {self.deadline.said}): the harness "
            "refuses every model call from now on; check the elapsed time before each call and stop"
        )

    def run(self, body: Callable[[], T]) -> T | None:
        """`body()` (the agent's run) in a thread of its own, waited for until the deadline allows;
        its value, or None when the agent overran and was stopped."""
        done: list[T] = []
        failure: list[BaseException] = []

        def target() -> None:
            try:
                done.append(body())
            except BaseException as exc:  # noqa: B036 - handed to the waiting thread, never printed
                failure.append(exc)

        thread = threading.Thread(target=target, name=f"{threading.current_thread().name}-agent", daemon=True)
        thread.start()
        while thread.is_alive():
            wait = self._until_stop()
            if wait <= 0:
                break
            thread.join(min(wait, 0.5))
        if thread.is_alive():
            self.stopped_at = self.elapsed()
            # A command is killed, and hands its run back at once; a Python agent cannot be, and is left behind.
            if self._task._stop():
                thread.join(_KILLED_RETURN_S)
            if thread.is_alive():
                _left_running.append(thread)
        if failure:
            raise failure[0]
        return done[0] if done and self.stopped_at is None else None

    def _until_stop(self) -> float:
        """Seconds left before the agent must be stopped."""
        deadline = self.deadline.seconds
        elapsed = self.elapsed()
        if elapsed < deadline:
            return deadline - elapsed + GRACE_S
        in_flight, idle_for = self._capture.activity()
        if in_flight and elapsed < deadline + LONGEST_CALL_S:
            return 0.1  # a call started before the deadline is let finish; look again shortly
        # The grace runs from the deadline, or from the end of the last call if that came later.
        return GRACE_S - min(idle_for, elapsed - deadline)

    def outcome(self) -> Outcome:
        """The run's outcome when the harness enforced the deadline."""
        return Outcome(status="limit", limit="wall_time", reason=self.describe())

    def describe(self) -> str:
        said = self.deadline.said
        parts = []
        if self.refused:
            parts.append(
                f"refused {len(self.refused)} model call(s) the agent tried past {said} "
                f"(the first {self.refused[0]:.1f}s into the run)"
            )
        if self.stopped_at is not None:
            parts.append(f"stopped the agent, still running {self.stopped_at:.1f}s into the run, past {said}")
        return f"the harness {' and '.join(parts)}; a loop checks the elapsed time before every call and stops itself"

    def expectation(self, expected_codes: frozenset[str], found: frozenset[str]) -> ExpectationResult:
        """The run failed to keep to its deadline, unless overrunning it is what the scenario is about
        (it expects B003 and got it)."""
        if "B003" in expected_codes and "B003" in found:
            return ExpectationResult(self.deadline.setting, True, f"{self.describe()}; B003 expected")
        return ExpectationResult(self.deadline.setting, False, self.describe())
