"""Agents as commands: a program in any language, started once per run against the run's endpoint.

The process gets ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY (the run's endpoint and its placeholder
key) and HARNESS_TASK (a JSON file with the task); the last line it prints is its final answer.
Everything it sends passes through the endpoint, so the run is judged from the wire exactly as a
Python agent's. A command that cannot start, fails, hangs or prints garbage is that run's error
outcome, saying the command, its exit status and the end of its stderr; other runs go on.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..scenario._model import AgentCommand
from ..trace._model import Outcome
from ._task import Task

STDERR_LINES = 20
"""How many of the last lines of a failed command's stderr its error outcome quotes."""
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
             "HARNESS_TASK": str(task_file)}
        )
        return env

    def _run(self, env: dict[str, str], task: Task) -> Outcome:
        try:
            # A session of its own: the timeout kills the whole process group, grandchildren too.
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
        # Past the run's deadline (limits.wall_time_s, --timeout) the harness stops the run: the same kill.
        unhook = task._when_stopped(lambda: _kill_group(process))
        try:
            out, err = _communicate(process, self.spec.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            out, err = _drain(process)
            return self._error(
                f"did not finish within timeout_s={self.spec.timeout_s:g}; killed with its process group", err
            )
        finally:
            unhook()
            # What the command started and left behind ends with it: the run is over.
            _kill_group(process)
        if process.returncode != 0:
            return self._error(_how_it_ended(process.returncode), err)
        return self._outcome(out, err)

    def ran_and_failed(self, outcome: Outcome) -> bool:
        """The outcome is this command's own failure after it started (a non-zero exit, or no answer
        printed), not a failure to start it or a timeout."""
        return outcome.status == "error" and outcome.reason.startswith(
            (f"agent command `{self.shown}` {_EXITED} ", f"agent command `{self.shown}` {_KILLED} ")
        )

    def _outcome(self, out: bytes, err: bytes) -> Outcome:
        try:
            text = out.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._garbage(f"printed bytes that are not UTF-8 on stdout ({exc.reason} at byte {exc.start})", err)
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

    def _garbage(self, what: str, stderr: bytes) -> Outcome:
        return self._error(f"{_EXITED} 0 but {what}", stderr)

    def _error(self, what: str, stderr: bytes = b"") -> Outcome:
        reason = f"agent command `{self.shown}` {what}"
        tail = _tail(stderr)
        if tail:
            reason += f"\nlast lines of its stderr:\n{tail}"
        return Outcome(status="error", reason=reason)


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


def _communicate(process: subprocess.Popen[bytes], timeout_s: float) -> tuple[bytes, bytes]:
    """Its stdout and stderr once it exits. A child it left behind may hold the pipes open: once the
    command itself has exited, that child gets `_LEFT_OPEN_S` to finish printing, then the group is
    killed, rather than waiting on it until `timeout_s` and calling a finished command hung."""
    deadline = time.monotonic() + timeout_s
    while True:
        # Retrying communicate after its timeout loses no output (subprocess documents it).
        left = deadline - time.monotonic()
        if left <= 0:
            raise subprocess.TimeoutExpired(process.args, timeout_s)
        try:
            return process.communicate(timeout=min(left, _POLL_S))
        except subprocess.TimeoutExpired:
            if process.poll() is not None:
                break
    try:
        return process.communicate(timeout=_LEFT_OPEN_S)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return _drain(process)


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


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # it ended meanwhile (and its number may now be someone else's)


def _drain(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What the killed process had printed; a grandchild that left the group may hold the pipes open."""
    try:
        return process.communicate(timeout=_KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        return b"", b""


def _tail(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", errors="replace").rstrip().splitlines()
    return "\n".join(f"  {line}" for line in lines[-STDERR_LINES:])


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
