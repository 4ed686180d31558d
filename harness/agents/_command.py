"""Agents as commands: a program in any language, started once per run against the run's endpoint.

The process gets ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY (the run's endpoint and its placeholder
key) and HARNESS_TASK (a JSON file with the task); the last line it prints is its final answer.
Everything it sends passes through the endpoint, so the run is judged from the wire exactly as a
Python agent's. A command that cannot start, fails, hangs or prints garbage is that run's error
outcome, saying the command, its exit status and the end of its stderr; other runs go on.
Its output is read as it comes and only the ends are kept (`STDOUT_KEPT_BYTES`, `STDERR_KEPT_BYTES`):
a command may print without limit, the harness's memory is bounded.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..scenario._model import AgentCommand
from ..trace._model import Outcome
from ._processes import RUN_TAG, RunProcesses, new_tag
from ._task import Task

STDERR_LINES = 20
"""How many of the last lines of a failed command's stderr its error outcome quotes."""
STDOUT_KEPT_BYTES = 1024 * 1024
"""The end of a command's stdout the harness keeps: its last line, the final answer, must fit in it."""
STDERR_KEPT_BYTES = 64 * 1024
"""The end of a command's stderr the harness keeps, for the lines its error outcome quotes."""
_READ_BYTES = 64 * 1024
_QUOTED_LINE_CHARS = 300
_STATUSES = ("completed", "limit", "refused", "error")
_LIMITS = ("steps", "tokens", "wall_time", "tool_errors")
_KILL_GRACE_S = 5.0
_POLL_S = 0.5
"""How often a command still printing is checked for having exited with its pipes held open."""
_LEFT_OPEN_S = 1.0
_EXITED = "exited with status"
_KILLED = "was killed by"


class CommandAgent:
    """The agent function of one scenario's `agent: {command: ...}` (called as `agent(client, task)`)."""

    def __init__(self, spec: AgentCommand, *, folder: Path, scenario: str) -> None:
        self.spec = spec
        self.cwd = (folder / spec.cwd).resolve()
        self.scenario = scenario

    def __repr__(self) -> str:
        return f"CommandAgent({self.shown})"

    @property
    def shown(self) -> str:
        """The command as a person would type it."""
        return shlex.join(self.spec.command)

    def __call__(self, client: Any, task: Task) -> Outcome:
        if task.base_url is None:
            return self._error("the run has no endpoint to point the command at (task.base_url is not set)")
        with tempfile.TemporaryDirectory(prefix="harness-task-") as folder:
            task_file = Path(folder) / "task.json"
            task_file.write_text(json.dumps(self.task_document(task), ensure_ascii=False, indent=2), encoding="utf-8")
            return self._run(self._environment(task, task_file), task)

    def task_document(self, task: Task) -> dict[str, Any]:
        """What HARNESS_TASK holds: the request fields, the user turns, the limits, the scenario, the case."""
        request = task.request_params()
        headers = request.pop("extra_headers", None)
        document: dict[str, Any] = {
            "request": request,
            "turns": task.turns,
            "limits": {name: value for name, value in asdict(task.limits).items() if value is not None},
            "scenario": self.scenario,
            "case": {"model": task.model, "effort": task.effort},
            "tools_url": f"{task.base_url}/harness/tools",
        }
        if task.simulated_user is not None:
            document["user_url"] = f"{task.base_url}/harness/user"
        if headers:
            document["headers"] = headers
        return document

    def _environment(self, task: Task, task_file: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_AUTH_TOKEN",)}
        env.update(self.spec.env)
        env.update(
            {"ANTHROPIC_BASE_URL": str(task.base_url), "ANTHROPIC_API_KEY": task.api_key,
             "HARNESS_TASK": str(task_file), RUN_TAG: new_tag()}
        )
        return env

    def _run(self, env: dict[str, str], task: Task) -> Outcome:
        try:
            # A session of its own: its process group, and the run tag its processes inherit, find
            # what it started, to be killed with it.
            process = subprocess.Popen(
                self.spec.command, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        except FileNotFoundError:
            where = "" if self.cwd.is_dir() else f"; its cwd {self.cwd} does not exist"
            return self._error(f"command not found: {self.spec.command[0]!r} (cwd {self.cwd}{where})")
        except PermissionError:
            return self._error(f"{self.spec.command[0]!r} is not executable")
        except OSError as exc:
            return self._error(f"could not start: {exc}")
        processes = RunProcesses(process, env[RUN_TAG])
        # Past the run's deadline (limits.wall_time_s, --timeout) the harness stops the run: the same kill.
        unhook = task._when_stopped(processes.kill)
        try:
            output = _collect(process, self.spec.timeout_s, processes.kill)
        finally:
            unhook()
            # What the command started and left behind ends with it: the run is over.
            processes.kill()
        if output.timed_out:
            return self._error(
                f"did not finish within timeout_s={self.spec.timeout_s:g}; killed with every process it started",
                output.err,
            )
        if process.returncode != 0:
            return self._error(_how_it_ended(process.returncode), output.err)
        return self._outcome(output)

    def ran_and_failed(self, outcome: Outcome) -> bool:
        """The outcome is this command's own failure after it started (a non-zero exit, or no answer
        printed), not a failure to start it or a timeout."""
        return outcome.status == "error" and outcome.reason.startswith(
            (f"agent command `{self.shown}` {_EXITED} ", f"agent command `{self.shown}` {_KILLED} ")
        )

    def _outcome(self, output: _Output) -> Outcome:
        out, err = output.out, output.err
        kept = out.data
        skipped = 0
        if out.cut:
            # The kept end starts mid-line: only the whole lines after its first break count.
            skipped = kept.find(b"\n") + 1
            if skipped == 0 or not kept[skipped:].strip():
                return self._garbage(
                    f"printed {_size(out.total)} on stdout and its last line is longer than the "
                    f"{_size(out.keep)} the harness keeps: the final answer must be a line shorter than that", err
                )
        try:
            text = kept[skipped:].decode("utf-8")
        except UnicodeDecodeError as exc:
            at = out.total - len(kept) + skipped + exc.start
            return self._garbage(f"printed bytes that are not UTF-8 on stdout ({exc.reason} at byte {at})", err)
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return self._garbage("printed nothing on stdout: its last line must be the final answer", err)
        last = lines[-1].strip()
        if not last.startswith("{"):
            return Outcome(status="completed", final_text=last)
        try:
            said = json.loads(last)
        except ValueError as exc:
            return self._garbage(f"its last line starts like JSON but is not: {exc} ({_cut(last)})", err)
        problem = _outcome_problem(said)
        if problem is not None:
            return self._garbage(f"its last line is not an outcome: {problem} ({_cut(last)})", err)
        return Outcome(
            status=said["outcome"], final_text=said.get("text"),
            reason=str(said.get("reason") or ""), limit=said.get("limit")
        )

    def _garbage(self, what: str, stderr: _Tail) -> Outcome:
        return self._error(f"{_EXITED} 0 but {what}", stderr)

    def _error(self, what: str, stderr: _Tail | None = None) -> Outcome:
        reason = f"agent command `{self.shown}` {what}"
        tail = _quoted(stderr) if stderr is not None else ""
        if stderr is not None and tail:
            cut = f" (of {_size(stderr.total)}, the last {_size(stderr.keep)} kept)" if stderr.cut else ""
            reason += f"\nlast lines of its stderr{cut}:\n{tail}"
        return Outcome(status="error", reason=reason)


class _Tail:
    """The last `keep` bytes a stream carried, and how many it carried in all."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.total = 0
        self._buffer = bytearray()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self._buffer += data
        if len(self._buffer) > 2 * self.keep:  # trimmed once per `keep` bytes, not on every read
            del self._buffer[: -self.keep]

    @property
    def data(self) -> bytes:
        return bytes(self._buffer[-self.keep:])

    @property
    def cut(self) -> bool:
        """Its beginning was not kept."""
        return self.total > self.keep


@dataclass
class _Output:
    """What a command printed (the ends of it), and whether it ran past its timeout."""

    out: _Tail = field(default_factory=lambda: _Tail(STDOUT_KEPT_BYTES))
    err: _Tail = field(default_factory=lambda: _Tail(STDERR_KEPT_BYTES))
    timed_out: bool = False


def _outcome_problem(said: Any) -> str | None:
    if not isinstance(said, dict):
        return "a JSON object was expected"
    unknown = sorted(set(said) - {"outcome", "text", "reason", "limit"})
    if unknown:
        return f"unknown key(s) {', '.join(unknown)}; valid keys: outcome, text, reason, limit"
    if said.get("outcome") not in _STATUSES:
        return f"`outcome` must be one of {', '.join(_STATUSES)}, got {said.get('outcome')!r}"
    if said.get("text") is not None and not isinstance(said["text"], str):
        return "`text` must be a string"
    if said.get("limit") is not None and said["limit"] not in _LIMITS:
        return f"`limit` must be one of {', '.join(_LIMITS)}, got {said['limit']!r}"
    return None


def _collect(process: subprocess.Popen[bytes], timeout_s: float, kill: Callable[[], None]) -> _Output:
    """Read its stdout and stderr as they come, keeping their ends, until it exits and they close.

    Past `timeout_s` it is killed with every process it started (`kill`, `timed_out`). A child it left
    behind may hold the pipes open: once the command itself has exited, that child gets `_LEFT_OPEN_S`
    to finish printing, then is killed, rather than waiting on it until `timeout_s` and calling a
    finished command hung. After a kill, what still holds the pipes gets `_KILL_GRACE_S`.
    """
    assert process.stdout is not None and process.stderr is not None
    output = _Output()
    tails = {process.stdout.fileno(): output.out, process.stderr.fileno(): output.err}
    deadline = time.monotonic() + timeout_s
    exited = killed = False
    with selectors.DefaultSelector() as selector:
        for fd in tails:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                if killed:
                    break  # a process the kill could not find holds the pipes: it is not waited for
                output.timed_out = not exited
                kill()
                killed, deadline = True, time.monotonic() + _KILL_GRACE_S
                continue
            for key, _ in selector.select(min(left, _POLL_S)):
                data = os.read(key.fd, _READ_BYTES)
                if data:
                    tails[key.fd].add(data)
                else:
                    selector.unregister(key.fd)
            if not exited and process.poll() is not None:
                exited, deadline = True, min(deadline, time.monotonic() + _LEFT_OPEN_S)
    process.stdout.close()
    process.stderr.close()
    if not killed:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            # It closed its output but ran on past timeout_s.
            output.timed_out = True
            kill()
    process.wait()
    return output


def _how_it_ended(returncode: int) -> str:
    """A non-zero exit, or the signal that ended it (subprocess says -6 for SIGABRT: say the signal,
    as a shell would; -9 is often the kernel's out-of-memory killer)."""
    if returncode > 0:
        return f"{_EXITED} {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = "a signal"
    return f"{_KILLED} {name} (signal {-returncode})"


def _quoted(stderr: _Tail) -> str:
    """The last lines of its stderr, indented, each cut to a readable length."""
    kept = stderr.data
    if stderr.cut and b"\n" in kept:
        kept = kept[kept.index(b"\n") + 1:]  # the first kept line is a piece of one
    lines = kept.decode("utf-8", errors="replace").rstrip().splitlines()
    return "\n".join(f"  {_cut(line, _QUOTED_LINE_CHARS)}" for line in lines[-STDERR_LINES:])


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{count} bytes"


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
