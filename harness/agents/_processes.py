"""Every process an agent command started, found so that it ends with its run.

The command runs in a process group of its own, but a process may leave that group: `setsid()` (a
detached child in Node, `setsid`), a background job of a shell with job control (`set -m`; `nohup
... &` alone stays in the group), or a daemon's double fork, whose parent exits so that nothing of
the command's is its ancestor any more. So each run also gives its command a variable of its own,
`HARNESS_RUN_TAG`, which every process it starts inherits. On Linux, killing the run kills its
process group, then every process whose environment carries the tag and every descendant of one,
looking again until none is left (one that forks while it is killed leaves a child the next look
finds).

What this cannot find, said plainly: a process that both drops the variable (started with `env -i`
or an environment of its own) and has no tagged ancestor left; one another program starts on the
command's behalf (`systemd-run`, a Docker container, a process over ssh), which is not its
descendant; and, without /proc (not Linux), anything outside the process group.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import threading
import time

RUN_TAG = "HARNESS_RUN_TAG"
"""The variable, set to a value of each run's own, by which the processes of a run's command are found."""
_ROUNDS = 20
_PAUSE_S = 0.005
"""Between two looks: time for the killed to die (a dying process may still show as running)."""


def new_tag() -> str:
    return secrets.token_hex(8)


_live: set[RunProcesses] = set()
"""The commands of the runs under way in this process, until each is killed at its run's end."""
# Reentrant: a worker's SIGTERM handler (`_workers._end_at_once`) calls `kill_every_run` in the main thread
# between any two of its bytecodes, also while that thread holds the lock (a command's run starting or
# ending there): a plain Lock then waited for itself, and the command outlived the worker killed 2 s later.
_live_lock = threading.RLock()


_ended = False
"""Set by `kill_every_run`, until `allow_runs`: a command that starts after it is killed as it starts."""


def kill_every_run() -> None:
    """Kill the processes of every run still under way in this process, and of any run that starts its
    command from now on (`allow_runs` ends that). For an interrupt (Ctrl-C, SIGTERM): the runs' threads are
    daemons, left without their `finally` as the harness returns, so each command and what it started
    went on running, orphaned, after `harness run` exited 130; and a run under way but short of starting
    its command (its endpoint served, its environment made) started it after this, as the harness exited."""
    global _ended
    with _live_lock:
        _ended = True
        running = list(_live)
    for processes in running:
        processes.kill()


def allow_runs() -> None:
    """Let commands run again (a batch starts): undoes what `kill_every_run` says of commands to come."""
    global _ended
    with _live_lock:
        _ended = False


class RunProcesses:
    """The processes of one command's run: `kill()` ends them all (safe to call again, from any thread)."""

    def __init__(self, process: subprocess.Popen[bytes], tag: str) -> None:
        self.process = process
        self._marker = f"{RUN_TAG}={tag}\0".encode()
        # Only a process started since the command can be one of its: the others' environments are not read.
        self._since = _start_ticks(process.pid)
        with _live_lock:
            _live.add(self)
            ended = _ended
        if ended:  # started after an interrupt killed every run: it is one of them
            self.kill()

    def kill(self) -> None:
        with _live_lock:
            _live.discard(self)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is empty (and its number may now be someone else's)
        # The command itself, should it have left its group: Popen signals only a process not yet reaped.
        self.process.kill()
        for _ in range(_ROUNDS):
            found = self._find()
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass  # ended meanwhile
            time.sleep(_PAUSE_S)

    def _find(self) -> set[int]:
        """The live processes that carry the tag, and their descendants."""
        try:
            names = os.listdir("/proc")
        except OSError:
            return set()  # no /proc: the process group is all that can be found
        parents: dict[int, int] = {}
        tagged: list[int] = []
        for name in names:
            if not name.isdigit():
                continue
            stat = _read(f"/proc/{name}/stat")
            if stat is None:
                continue
            # After the command name, which may hold spaces and parentheses: state, ppid, ..., starttime.
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) < 20 or fields[0] in (b"Z", b"X"):
                continue  # dead, waiting for its parent to reap it: nothing left to kill
            pid = int(name)
            parents[pid] = int(fields[1])
            if int(fields[19]) >= self._since:
                environ = _read(f"/proc/{name}/environ")
                if environ is not None and self._marker in environ:
                    tagged.append(pid)
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        found: set[int] = set()
        while tagged:
            pid = tagged.pop()
            if pid not in found:
                found.add(pid)
                tagged.extend(children.get(pid, ()))
        found.discard(os.getpid())
        return found


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return None  # ended meanwhile, or another user's


def _start_ticks(pid: int) -> int:
    """When the process started, in clock ticks since boot (0, so every process is looked at, if unknown)."""
    stat = _read(f"/proc/{pid}/stat")
    fields = stat[stat.rfind(b")") + 2:].split() if stat is not None else []
    return int(fields[19]) if len(fields) >= 20 else 0
